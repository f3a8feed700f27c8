# A stand-in peer that reads its own format: --prepare appends a line to
# $MARK (its format), a run fails unless $MARK exists, then runs as ok.sh.
case " $* " in
  *" --check "*) echo "$PEER-fake: 1"; exit 0 ;;
  *" --prepare "*) echo prepared >> "$MARK"; exit 0 ;;
esac
[ -f "$MARK" ] || { echo "FileNotFoundError: $MARK" >&2; exit 1; }
. "$(dirname "$0")/ok.sh"

# A stand-in peer that crashes as a Python script does: a traceback on
# stderr, exit 1 (but passes --check).
case " $* " in *" --check "*) echo "x-fake: 1"; exit 0 ;; esac
echo "Traceback (most recent call last):" >&2
echo "RuntimeError: decoder exploded" >&2
exit 1

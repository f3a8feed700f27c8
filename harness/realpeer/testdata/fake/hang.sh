# A stand-in peer that starts a worker (a child in its process group) and
# hangs, as a DataLoader stuck on its workers would; the worker's pid goes
# to $PIDFILE.
case " $* " in *" --check "*) echo "x-fake: 1"; exit 0 ;; esac
sleep 300 &
echo $! > "$PIDFILE"
wait

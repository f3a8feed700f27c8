# A stand-in peer for the sweep's tests, run by /bin/sh: prints a
# configuration line and the run's line for the --workers and --batches
# it is given (peer name in $PEER).
batches=2 workers=1
while [ $# -gt 0 ]; do
  case "$1" in
    --batches) batches=$2; shift ;;
    --workers) workers=$2; shift ;;
    --check) echo "$PEER-fake: 1"; exit 0 ;;
  esac
  shift
done
echo "$PEER-fake: 1"
echo "BenchmarkRealPeer/peer=$PEER/workers=$workers $batches 1000000 ttfb-ns 123.5 samples/s 0.5 cpu-s"

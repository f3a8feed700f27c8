#!/usr/bin/env bash
# ci/bench-remote.sh OUT [LADDER FLAGS...] — the caching ladder with its
# data in a bucket, for a newcomer (`make bench-remote`): starts the pinned
# S3-compatible server (versitygw, ci/versitygw.sh) on 127.0.0.1 over a
# temporary directory, writes a dataset (REMOTE_N natural JPEGs of
# REMOTE_SIZE², in REMOTE_LAYOUT), uploads it with `headspace dataset
# upload`, runs `headspace ladder --data s3://…` into OUT, and stops the
# server and removes everything it made, whatever happens (nothing is
# left running). The server's random credentials reach headspace the
# standard way (AWS_* variables), so nothing leaves this machine.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:?usage: ci/bench-remote.sh OUT [ladder flags...]}
shift
bin=${BIN:-bin/headspace}
n=${REMOTE_N:-1024}
size=${REMOTE_SIZE:-256}
layout=${REMOTE_LAYOUT:-shards}
gw=$(ci/versitygw.sh)
work=$(mktemp -d "${TMPDIR:-/tmp}/headspace-remote.XXXXXX")
pid=
cleanup() {
  if [ -n "$pid" ]; then kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
export AWS_ACCESS_KEY_ID=headspace AWS_SECRET_ACCESS_KEY=$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')
export AWS_ENDPOINT_URL=http://127.0.0.1:$port AWS_REGION=us-east-1
unset AWS_PROFILE AWS_ENDPOINT_URL_S3
# The listing and the local copy (level local) live and die with the run.
export HEADSPACE_CACHE=$work/cache
mkdir -p "$work/root" "$work/meta"
"$gw" --port "127.0.0.1:$port" --access "$AWS_ACCESS_KEY_ID" --secret "$AWS_SECRET_ACCESS_KEY" \
  --region us-east-1 --keep-alive posix --sidecar "$work/meta" "$work/root" >"$work/server.log" 2>&1 &
pid=$!
for _ in $(seq 100); do
  curl -s -o /dev/null "$AWS_ENDPOINT_URL/" && break
  kill -0 "$pid" 2>/dev/null || { echo "ci/bench-remote.sh: versitygw exited: $(tail -1 "$work/server.log")" >&2; exit 1; }
  sleep 0.1
done
"$bin" dataset write --out "$work/ds" --n "$n" --raw-size "$size" --format jpeg --content natural --layout "$layout"
"$bin" dataset upload --make-bucket "$work/ds" s3://headspace/ds
"$bin" dataset index s3://headspace/ds
"$bin" ladder --data s3://headspace/ds --out "$out" "$@"

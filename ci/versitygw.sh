#!/usr/bin/env bash
# ci/versitygw.sh — prints the path of the pinned S3-compatible server
# (versitygw, Apache-2.0) that the remote-data tests and `make bench-remote`
# start on 127.0.0.1, building it from the Go module proxy into a cached bin
# directory when it is missing (about 2–7 minutes on 2 cores, ~84 MB).
# The pin is here and in harness/s3server (Version); both must agree.
set -euo pipefail
version=v1.8.0
bin="${HEADSPACE_BIN:-${XDG_CACHE_HOME:-$HOME/.cache}/headspace/bin}"
exe="$bin/versitygw-$version"
if [ ! -x "$exe" ]; then
  echo "ci/versitygw.sh: building versitygw $version into $bin" >&2
  mkdir -p "$bin"
  tmp=$(mktemp -d "$bin/.build.XXXXXX")
  trap 'rm -rf "$tmp"' EXIT
  GOBIN="$tmp" GOFLAGS=-mod=mod go install "github.com/versity/versitygw/cmd/versitygw@$version" >&2
  mv "$tmp/versitygw" "$exe"
fi
echo "$exe"

#!/usr/bin/env bash
# ci/peers-env.sh — prints the path of the python of the peers' pinned
# virtual environment (peers/requirements.txt), making it when it is missing.
#
# The env lives at ${XDG_CACHE_HOME:-$HOME/.cache}/headspace/peers-env/<key>,
# <key> the hash of the pins and of the base Python's version, made once a
# machine and reused; every wheel pip downloads is kept beside it
# (…/headspace/wheels, installed from there), so PyPI's Linux torch (the CUDA
# build, several GB) is downloaded once a machine, whatever env needs it.
# The base Python is `python3` on PATH (HEADSPACE_PEERS_PYTHON overrides it).
# Each pinned package is installed on its own, so one that fails does not stop
# the rest; then each is imported in its own process and the env's
# headspace-peers-status.json records, for each, its version or the one-line
# reason it is unavailable (`headspace peer --peers` reads it). Logs go to
# stderr; stdout is the python path alone. `make test` does not use this.
# With --existing it makes nothing: it prints the path if the env is made
# and exits 1 if not (.ci/run runs `make test-peers` only where it is).
set -euo pipefail
case "${1:-}" in ""|--existing) ;; *) echo "ci/peers-env.sh: unknown argument $1 (want none, or --existing)" >&2; exit 2;; esac
root=$(cd "$(dirname "$0")/.." && pwd)
req="${HEADSPACE_PEERS_REQUIREMENTS:-$root/peers/requirements.txt}"  # another list: tests
base="${HEADSPACE_PEERS_PYTHON:-python3}"
base=$(command -v "$base") || { echo "ci/peers-env.sh: no $base on PATH" >&2; exit 2; }
if [ "$(readlink -f "$base")" = "$(readlink -f /usr/bin/python3)" ] && [ -z "${HEADSPACE_PEERS_PYTHON:-}" ]; then
  echo "ci/peers-env.sh: python3 on PATH is the system's /usr/bin/python3; put pyenv's first or set HEADSPACE_PEERS_PYTHON" >&2
  exit 2
fi
pyver=$("$base" -c 'import sys, platform; print(platform.python_implementation(), sys.version.split()[0], platform.machine())')
cache="${XDG_CACHE_HOME:-$HOME/.cache}/headspace"
key=$( { cat "$req"; echo "$pyver"; } | sha256sum | cut -c1-12)
env="${HEADSPACE_PEERS_ENV:-$cache/peers-env/$key}"
py="$env/bin/python"
statuskey=$(sha256sum <"$root/peers/envstatus.py" | cut -c1-12)
# The status: written by the env's python, again when envstatus.py changed.
write_status() {
  "$py" "$root/peers/envstatus.py" "$req" "$env/install-logs" >"$env/headspace-peers-status.json.tmp"
  mv "$env/headspace-peers-status.json.tmp" "$env/headspace-peers-status.json"
  echo "$statuskey" >"$env/.status-key"
}
if [ -f "$env/.complete" ]; then
  if [ "$(cat "$env/.status-key" 2>/dev/null)" != "$statuskey" ] && [ "${1:-}" != --existing ]; then
    echo "ci/peers-env.sh: rewriting $env/headspace-peers-status.json" >&2
    write_status
  fi
  echo "$py"; exit 0
fi
if [ "${1:-}" = --existing ]; then exit 1; fi

wheels="$cache/wheels"
mkdir -p "$(dirname "$env")" "$wheels"
exec 9>"$env.lock"
flock 9   # one maker at a time; a second caller waits, then reuses
if [ -f "$env/.complete" ]; then echo "$py"; exit 0; fi
rm -rf "$env"
echo "ci/peers-env.sh: making $env from $base ($pyver)" >&2
"$base" -m venv "$env" >&2
export PIP_DISABLE_PIP_VERSION_CHECK=1
"$py" -m pip install --upgrade pip >&2
mkdir -p "$env/install-logs"
failed=()
# torch first: several of the others build on it; then each pin on its own.
while read -r pin; do
  name=${pin%%==*}
  echo "ci/peers-env.sh: installing $pin" >&2
  log="$env/install-logs/$name.log"
  # Download into the kept wheels (a file already there is not fetched
  # again), then install from them alone.
  if ! { "$py" -m pip download -d "$wheels" -c "$req" "$pin" && \
         "$py" -m pip install --no-index --find-links "$wheels" -c "$req" "$pin"; } >"$log" 2>&1; then
    echo "ci/peers-env.sh: $pin did not install (log: $log)" >&2
    failed+=("$name")
  fi
done < <(grep -E '^[A-Za-z]' "$req")
write_status
"$py" -m pip freeze >"$env/pip-freeze.txt" 2>/dev/null || true
touch "$env/.complete"
echo "ci/peers-env.sh: made $env${failed:+; did not install: ${failed[*]}}" >&2
echo "$py"

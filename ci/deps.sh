#!/usr/bin/env bash
# ci/deps.sh PACKAGE... — installs the Debian packages the tests need, where
# missing. `make test` calls it with $(TEST_DEBS): a test whose tool is absent
# does not skip, it fails, so the project installs the tool itself (as root,
# or with sudo). On a system without dpkg it names what to install and stops.
set -euo pipefail
missing=()
if ! command -v dpkg-query >/dev/null 2>&1; then
  echo "ci/deps.sh: not a Debian system; install these yourself: $*" >&2
  exit 1
fi
for p in "$@"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
sudo=; [ "$(id -u)" = 0 ] || sudo=sudo
echo "ci/deps.sh: installing Debian's ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
# Another apt may hold the lock (a second checkout's make test): wait for it.
$sudo apt-get -o DPkg::Lock::Timeout=600 update -qq
$sudo apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends "${missing[@]}" >/dev/null

#!/bin/sh
# Installs the Debian packages unwindd needs to build, test and benchmark
# (scripts/requirements.txt names each and what needs it), if missing.
# Idempotent: a no-op (no apt-get at all) when everything is present.
#
# g++-12-multilib brings the 32-bit libstdc++ the -m32 (i386) fixtures link
# with. Not the gcc-multilib metapackage, which conflicts with Debian's
# aarch64 cross compiler (testdata/aarch64/make_fixtures.sh).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
PACKAGES=$(awk '!/^#/ && NF >= 3 { print $3 }' "$here/requirements.txt" | sort -u)
missing=""
for p in $PACKAGES; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing="$missing $p"
  fi
done
[ -z "$missing" ] && exit 0
echo "installing:$missing" >&2
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO=sudo
# The :arm64 -dev packages (--config=aarch64) need the arm64 architecture.
if echo "$missing" | grep -q ':arm64' &&
  ! dpkg --print-foreign-architectures | grep -qx arm64; then
  $SUDO dpkg --add-architecture arm64
fi
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq $missing >/dev/null

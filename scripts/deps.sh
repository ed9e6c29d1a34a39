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
# A package is missing when it is not installed, unless every line that
# names it is a command already on PATH from elsewhere (NodeSource's nodejs
# ships npm and conflicts with Debian's npm package).
missing=""
while read -r kind item p _; do
  [ -n "$p" ] || continue
  case " $missing " in *" $p "*) continue ;; esac
  if dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    continue
  fi
  if [ "$kind" = command ] && command -v "$item" >/dev/null 2>&1 &&
    ! awk -v p="$p" '!/^#/ && $3 == p && $1 != "command"' "$here/requirements.txt" | grep -q .; then
    # Only if no other line needs the package for something else.
    others=$(awk -v p="$p" '!/^#/ && $3 == p && $1 == "command" { print $2 }' "$here/requirements.txt")
    all_there=1
    for c in $others; do command -v "$c" >/dev/null 2>&1 || all_there=0; done
    [ "$all_there" = 1 ] && continue
  fi
  missing="$missing $p"
done <<EOF
$(awk '!/^#/ && NF >= 3' "$here/requirements.txt")
EOF
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

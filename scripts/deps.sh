#!/bin/sh
# Installs the Debian packages unwindd needs to build and test, if missing.
# Idempotent: a no-op (no apt-get at all) when everything is present.
set -eu
PACKAGES="bazel-bootstrap g++ libelf-dev libdw-dev elfutils libabsl-dev \
libprotobuf-dev protobuf-compiler libgrpc++-dev protobuf-compiler-grpc \
libgtest-dev libgmock-dev libbenchmark-dev liblzma-dev libzstd-dev \
liblz4-dev zstd lz4 xz-utils libunwind-dev gdb gcc-12-multilib"
# gcc-12-multilib: the -m32 (i386) fixture variants. Not the gcc-multilib
# metapackage, which conflicts with Debian's aarch64 cross compiler
# (testdata/aarch64/make_fixtures.sh).
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
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq $missing >/dev/null

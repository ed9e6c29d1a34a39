#!/usr/bin/env bash
# Rebuilds the committed aarch64 fixtures in this directory:
#
#   <name>             the program, cross-compiled from src/ with
#                      aarch64-linux-gnu-gcc
#   <name>.core.xz     the core qemu-aarch64-static wrote when it crashed
#                      (qemu_<prog>_<date>_<pid>.core: no NT_FILE, no code
#                      pages; modules come from r_debug/link_map), xz'd
#   <name>.gdb.txt     the golden frames: gdb-multiarch attached to the same
#                      run through qemu's gdbstub, stopped at the SIGSEGV
#   sysroot/lib/       the guest's ld-linux-aarch64.so.1 and libc.so.6, so the
#                      tests need no cross packages (pass --sysroot=sysroot)
#
# Each core and its golden file come from one and the same run: gdb prints
# the frames at the SIGSEGV, then lets qemu deliver it, and qemu dumps the
# core. (qemu-user places the guest at the same addresses every run anyway.)
#
# Usage: bash testdata/aarch64/make_fixtures.sh   (as root or with sudo; it
# installs gcc-aarch64-linux-gnu, qemu-user-static and gdb-multiarch if
# missing). Debian's gcc-multilib conflicts with the cross compiler, which is
# why scripts/deps.sh installs g++-12-multilib for the -m32 fixtures instead.
set -euo pipefail
cd "$(dirname "$0")"
here=$(pwd)

packages="gcc-aarch64-linux-gnu qemu-user-static gdb-multiarch"
missing=""
for p in $packages; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
    missing="$missing $p"
done
if [ -n "$missing" ]; then
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq $missing
fi

cross_sysroot=/usr/aarch64-linux-gnu
mkdir -p sysroot/lib
cp -L "$cross_sysroot/lib/ld-linux-aarch64.so.1" "$cross_sysroot/lib/libc.so.6" \
  sysroot/lib/

# name:source:flags. -g keeps .debug_frame and symbols for gdb; frame
# pointers on and off; pac-ret signs every saved return address.
variants=(
  "threads_O0_fp:threads.c:-O0 -fno-omit-frame-pointer"
  "threads_O2_nofp:threads.c:-O2 -fomit-frame-pointer"
  "threads_O2_pac:threads.c:-O2 -fomit-frame-pointer -mbranch-protection=pac-ret"
  "signal_O0_fp:signal.c:-O0 -fno-omit-frame-pointer"
  "signal_O2_nofp:signal.c:-O2 -fomit-frame-pointer"
)

# qemu's default cpu "max" with SVE off: gdb 13 rejects the SVE record qemu
# 7.2 puts in signal frames ("Invalid vector length in signal frame"), and
# nothing here needs SVE. "max" implements pointer authentication.
cpu=max,sve=off
port=$((20000 + RANDOM % 20000))
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# Runs ./$1 under qemu (cpu $2) with gdb attached; gdb prints the frames at
# the SIGSEGV into $work/gdb.out, then lets qemu deliver it and dump the
# core into $work/run. A fixed argv[0], cwd and environment keep the guest's
# stack at the same addresses whoever runs this, and a directory named
# `core` keeps the kernel from also dumping qemu itself (core_pattern here
# is "core").
run_under_gdb() {
  local name=$1 cpu=$2
  rm -rf "$work/run" && mkdir -p "$work/run/core"
  cp "$here/$name" "$work/run/$name"
  (
    cd "$work/run"
    ulimit -c unlimited
    env -i PATH=/usr/bin:/bin qemu-aarch64-static -cpu "$cpu" -s 65536 \
      -L "$cross_sysroot" -g "$port" "./$name" >/dev/null 2>&1 &
    qemu=$!
    sleep 1
    gdb-multiarch -nx -batch -iex "set debuginfod enabled off" \
      -ex "set sysroot $here/sysroot" -ex "file $here/$name" \
      -ex "target remote :$port" \
      -ex "set backtrace past-main on" -ex "set backtrace past-entry on" \
      -ex "handle SIGUSR1 nostop noprint pass" \
      -ex "handle SIGUSR2 nostop noprint pass" \
      -ex "catch signal SIGSEGV" -ex "continue" \
      -ex "source $here/gdb_frames.py" -ex "continue" \
      >"$work/gdb.out" 2>&1 || true
    wait "$qemu" || true
  )
  port=$((port + 1))
  grep -q '^UWD end' "$work/gdb.out" && ls "$work"/run/qemu_*.core >/dev/null
}

# qemu 7.2's gdbstub sometimes loses a signal sent to another thread while
# gdb is attached (the fixture then times out waiting for that thread and
# exits 1 instead of crashing): try again.
run_until_core() {
  for attempt in 1 2 3 4 5; do
    run_under_gdb "$@" 2>/dev/null && return 0
    echo "$1: attempt $attempt failed, retrying" >&2
  done
  cat "$work/gdb.out" >&2
  exit 1
}

for v in "${variants[@]}"; do
  IFS=: read -r name src flags <<<"$v"
  echo "== $name" >&2
  # shellcheck disable=SC2086
  aarch64-linux-gnu-gcc -g $flags -Wall -o "$name" "src/$src" -pthread
  run_until_core "$name" "$cpu"
  # Mostly zero pages (stacks, heap): compressed they are a few KB. The
  # tests decompress them (xz -dc) before unwinding.
  xz -9 -c "$work"/run/qemu_*.core >"$name.core.xz"
  note="gdb-multiarch frames of $name at its SIGSEGV, from the run that wrote $name.core.xz"
  if [[ "$flags" == *pac-ret* ]]; then
    # qemu 7.2's gdbstub has no pauth feature, so gdb cannot strip the PACs
    # and stops at the first signed return address: check the core really
    # holds signed ones, then take the golden frames from a run of the same
    # binary without pointer authentication (paciasp/autiasp are NOPs there,
    # every address and stack slot is the same), which is what a stripped
    # walk of the core must give.
    grep -qE '^UWD 0x[0-9a-f]{11,} ' "$work/gdb.out" ||
      { echo "$name: no signed return address seen" >&2; exit 1; }
    run_until_core "$name" "$cpu,pauth=off"
    note="gdb-multiarch frames of $name at its SIGSEGV, from a run without pointer authentication (qemu -cpu $cpu,pauth=off; see make_fixtures.sh)"
  fi
  {
    echo "# $note."
    echo "# Per thread: the frame-0 sp, then the pc and function of each frame."
    sed -n 's/^UWD //p' "$work/gdb.out"
  } >"$name.gdb.txt"
done
ls -la "$here" >&2

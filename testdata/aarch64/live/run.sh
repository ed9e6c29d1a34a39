#!/usr/bin/env bash
# Live aarch64 (issue 17): boots a real aarch64 Linux (Debian's arm64 kernel)
# under qemu-system-aarch64 (TCG, -cpu max: pointer authentication included),
# with an initramfs holding busybox, the cross-built `unwind` CLI and
# `capture` sampler, fixture programs cross-compiled from testdata/*.c and
# *.cc, and the arm64 builds of eu-stack and gdb. guest_init.sh, the guest's
# /init, runs `unwind pid`, eu-stack, gdb and the sampler on every fixture
# and prints the results to the serial console; live_test.cc parses them.
#
#   bash testdata/aarch64/live/run.sh                # builds unwind/capture itself
#   bash testdata/aarch64/live/run.sh --unwind=BIN --capture=BIN --out=DIR
#
# Output (DIR, default $cache/run): console.log (the guest's serial console),
# root/ (the initramfs tree: the guest's files, which the host test also uses
# as the sysroot of the samples), initrd.gz, and timing.txt.
#
# Idempotent. Every download goes through apt: `apt-get download` of :arm64
# packages (after `dpkg --add-architecture arm64` and `apt-get update` if the
# arm64 index is missing), unpacked with `dpkg-deb -x` into a cache
# ($UNWINDD_AARCH64_LIVE_CACHE, default /var/tmp/unwindd-aarch64-live), reused
# by later runs. Nothing is installed on the host by this script except the
# arm64 package index; the host tools (qemu-system-arm, the cross compilers)
# come from scripts/requirements.txt.
#
# Exit status: 0 when the guest ran to its end marker, 77 when qemu or the
# cross compiler is missing (the test then skips), 1 otherwise.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../../.." && pwd)
cache=${UNWINDD_AARCH64_LIVE_CACHE:-/var/tmp/unwindd-aarch64-live}
unwind_bin=""
capture_bin=""
out=""
# TCG on 2 shared cores: the whole guest run takes a few minutes; this is the
# bound past which qemu is killed.
timeout_s=900
for arg in "$@"; do
  case "$arg" in
    --unwind=*) unwind_bin=${arg#*=} ;;
    --capture=*) capture_bin=${arg#*=} ;;
    --out=*) out=${arg#*=} ;;
    --timeout=*) timeout_s=${arg#*=} ;;
    *) echo "usage: $0 [--unwind=BIN] [--capture=BIN] [--out=DIR] [--timeout=S]" >&2; exit 2 ;;
  esac
done
out=${out:-$cache/run}

log() { echo "run.sh: $*" >&2; }
skip() { echo "SKIP: $*" >&2; exit 77; }

command -v qemu-system-aarch64 >/dev/null ||
  skip "qemu-system-aarch64 not found (apt-get install qemu-system-arm)"
command -v aarch64-linux-gnu-gcc >/dev/null && command -v aarch64-linux-gnu-g++ >/dev/null ||
  skip "aarch64-linux-gnu-gcc/g++ not found (apt-get install g++-aarch64-linux-gnu)"
for tool in apt-get apt-cache dpkg-deb cpio gzip readelf; do
  command -v "$tool" >/dev/null || { log "$tool not found"; exit 1; }
done

SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO=sudo

# ---- 1. the arm64 package index --------------------------------------------
if ! dpkg --print-foreign-architectures | grep -qx arm64; then
  log "dpkg --add-architecture arm64"
  $SUDO dpkg --add-architecture arm64
fi
if ! apt-cache show busybox-static:arm64 >/dev/null 2>&1; then
  log "apt-get update (arm64 index)"
  $SUDO apt-get update -qq
fi

# ---- 2. packages: the kernel, busybox, eu-stack, gdb and their libraries ----
# The kernel the metapackage points at today (linux-image-6.1.0-N-arm64).
kernel_pkg=$(apt-cache depends linux-image-arm64:arm64 |
  awk '$1 == "Depends:" && $2 ~ /^linux-image-[0-9]/ { sub(/:arm64$/, "", $2); print $2; exit }')
[ -n "$kernel_pkg" ] || { log "cannot resolve linux-image-arm64:arm64"; exit 1; }
# Userland: busybox-static, elfutils (eu-stack), gdb-minimal (gdb without
# Python: the full gdb:arm64 pulls in libpython and its standard library), and
# everything they depend on for arm64. Only the shared libraries the guest's
# programs really load (their DT_NEEDED closure, below) go into the initramfs.
userland=$(apt-cache depends --recurse --no-recommends --no-suggests \
  --no-conflicts --no-breaks --no-replaces --no-enhances --no-pre-depends \
  busybox-static:arm64 elfutils:arm64 gdb-minimal:arm64 2>/dev/null |
  awk '/^[a-z0-9]/ && /:arm64$/ { sub(/:arm64$/, ""); print }' |
  grep -vxE 'dpkg|tar|install-info|debconf|cdebconf' | sort -u)

mkdir -p "$cache/debs"
download() {  # download PKG...: each PKG:arm64 .deb into $cache/debs, once
  local missing=() p
  for p in "$@"; do
    compgen -G "$cache/debs/${p}_*_arm64.deb" >/dev/null ||
      compgen -G "$cache/debs/${p}_*_all.deb" >/dev/null || missing+=("$p:arm64")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  log "apt-get download ${missing[*]}"
  # _apt cannot write into root's cache: let apt download as the caller.
  (cd "$cache/debs" && apt-get download -q=2 -o APT::Sandbox::User=root "${missing[@]}")
}
# shellcheck disable=SC2086
download "$kernel_pkg" $userland

# ---- 3. unpack ----------------------------------------------------------------
unpack() {  # unpack DIR DEB...: a fresh DIR unless it holds exactly these debs
  local dir=$1
  shift
  local stamp
  stamp=$(printf '%s\n' "$@" | xargs -n1 basename | sort | sha256sum | cut -c1-16)
  [ -f "$dir/.stamp-$stamp" ] && return 0
  rm -rf "$dir" && mkdir -p "$dir"
  local deb
  for deb in "$@"; do dpkg-deb -x "$deb" "$dir"; done
  touch "$dir/.stamp-$stamp"
}
kernel_debs=("$cache"/debs/"$kernel_pkg"_*_arm64.deb)
unpack "$cache/kernel" "${kernel_debs[-1]}"
user_debs=()
for p in $userland; do
  for f in "$cache"/debs/"${p}"_*_arm64.deb "$cache"/debs/"${p}"_*_all.deb; do
    [ -f "$f" ] && user_debs+=("$f")
  done
done
unpack "$cache/pkgroot" "${user_debs[@]}"
pkgroot=$cache/pkgroot

vmlinuz=$(ls "$cache"/kernel/boot/vmlinuz-* | tail -1)
config=$(ls "$cache"/kernel/boot/config-* | tail -1)
# What the tests rely on, as the kernel was built.
for opt in CONFIG_ARM64_PTR_AUTH CONFIG_SERIAL_AMBA_PL011_CONSOLE CONFIG_BLK_DEV_INITRD; do
  grep -qx "$opt=y" "$config" || { log "$(basename "$config"): $opt is not =y"; exit 1; }
done

# ---- 4. the project's binaries -------------------------------------------------
if [ -z "$unwind_bin" ] || [ -z "$capture_bin" ]; then
  log "bazel build --config=aarch64 //service:unwind //testdata/aarch64/live:capture"
  (cd "$repo" && bazel build --config=aarch64 //service:unwind //testdata/aarch64/live:capture >&2)
  bin=$(cd "$repo" && bazel info --config=aarch64 bazel-bin 2>/dev/null)
  unwind_bin=${unwind_bin:-$bin/service/unwind}
  capture_bin=${capture_bin:-$bin/testdata/aarch64/live/capture}
fi
for b in "$unwind_bin" "$capture_bin"; do
  readelf -h "$b" 2>/dev/null | grep -q 'AArch64' || { log "$b is not an aarch64 ELF file"; exit 1; }
done

# ---- 5. the guest's tree --------------------------------------------------------
root=$out/root
rm -rf "$root" && mkdir -p "$out" "$root"/{bin,sbin,proc,sys,dev,tmp,fixtures,usr/bin}
cp "$pkgroot/bin/busybox" "$root/bin/busybox"
cp "$here/guest_init.sh" "$root/init"
chmod 755 "$root/init"
cp "$unwind_bin" "$root/bin/unwind"
cp "$capture_bin" "$root/bin/capture"
cp "$pkgroot/usr/bin/eu-stack" "$root/usr/bin/eu-stack"
cp "$pkgroot/usr/bin/gdb" "$root/usr/bin/gdb"
chmod 755 "$root"/bin/* "$root"/usr/bin/*

# Fixtures: the programs the host's end-to-end tests use (testdata/*.c, *.cc:
# threads, signal handlers with an alternate stack and an interrupted leaf,
# deep recursion, stack realignment, C++ exceptions), in four builds each:
# -O0 with frame pointers and -O2 without, each also with
# -mbranch-protection=standard (pac-ret + BTI: every saved return address
# signed). No -g: gdb then unwinds from .eh_frame like the others and shows
# no inline or tail-call frames reconstructed from DWARF, which eu-stack and
# we do not report (the host tests filter those out with gdb's Python API;
# gdb-minimal has none).
variants=(
  "O0_fp:-O0 -fno-omit-frame-pointer"
  "O2_nofp:-O2 -fomit-frame-pointer"
  "O0_fp_pac:-O0 -fno-omit-frame-pointer -mbranch-protection=standard"
  "O2_nofp_pac:-O2 -fomit-frame-pointer -mbranch-protection=standard"
)
for src in threads_c.c signal_handler.c recursion.c realign.c demo.cc cxx_catch.cc; do
  for v in "${variants[@]}"; do
    name=${src%.*}_${v%%:*}
    flags=${v#*:}
    case "$src" in
      *.cc) cc=aarch64-linux-gnu-g++ ;;
      *) cc=aarch64-linux-gnu-gcc ;;
    esac
    # shellcheck disable=SC2086
    $cc $flags -Wall -I"$repo" -o "$root/fixtures/$name" "$repo/testdata/$src" -pthread
  done
done

# The dynamic loader and the DT_NEEDED closure of every dynamic program, from
# the unpacked packages (Debian's arm64 ld.so searches /lib/aarch64-linux-gnu
# and /usr/lib/aarch64-linux-gnu without an ld.so.cache), plus what gdb
# dlopens: libthread_db, to see threads the way it does on a real system.
libdirs=(lib/aarch64-linux-gnu usr/lib/aarch64-linux-gnu)
copy_lib() {  # copy_lib NAME: from pkgroot to the same place in root, once
  local d
  for d in "${libdirs[@]}"; do
    if [ -e "$pkgroot/$d/$1" ]; then
      [ -e "$root/$d/$1" ] && return 0
      mkdir -p "$root/$d"
      cp -L "$pkgroot/$d/$1" "$root/$d/$1"
      needed "$root/$d/$1"
      return 0
    fi
  done
  log "library $1 not found in the unpacked arm64 packages"
  exit 1
}
needed() {  # needed FILE: copy every DT_NEEDED library of FILE
  local lib
  for lib in $(readelf -d "$1" 2>/dev/null | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'); do
    copy_lib "$lib"
  done
}
mkdir -p "$root/lib"
copy_lib ld-linux-aarch64.so.1
ln -sf aarch64-linux-gnu/ld-linux-aarch64.so.1 "$root/lib/ld-linux-aarch64.so.1"
copy_lib libthread_db.so.1
for f in "$root"/usr/bin/* "$root"/fixtures/*; do needed "$f"; done

(cd "$root" && find . | LC_ALL=C sort | cpio -o -H newc --quiet | gzip -1) >"$out/initrd.gz"
log "initramfs $(du -h "$out/initrd.gz" | cut -f1), $(ls "$root/fixtures" | wc -l) fixtures, kernel $(basename "$vmlinuz")"

# ---- 6. boot ---------------------------------------------------------------
# -cpu max: ARMv8.x with pointer authentication (and BTI); pauth-impdef=on
# swaps QARMA for QEMU's cheaper implementation-defined PAC algorithm, which
# makes signing much faster under TCG and changes nothing the tests look at.
# The guest powers off when it is done; panic=-1 with -no-reboot ends qemu if
# /init dies.
rm -f "$out/console.log"
start=$(date +%s.%N)
status=0
timeout --foreground -k 10 "$timeout_s" qemu-system-aarch64 \
  -M virt -cpu max,pauth-impdef=on -smp 2 -m 1G \
  -display none -monitor none -serial "file:$out/console.log" -no-reboot \
  -kernel "$vmlinuz" -initrd "$out/initrd.gz" \
  -append "console=ttyAMA0 quiet loglevel=3 panic=-1 rdinit=/init" </dev/null || status=$?
end=$(date +%s.%N)
awk -v s="$start" -v e="$end" -v q="$status" \
  'BEGIN { printf "boot_and_test_seconds %.1f\nqemu_status %d\n", e - s, q }' >"$out/timing.txt"
cat "$out/timing.txt" >&2
if ! grep -q '^UWD-LIVE end' "$out/console.log" 2>/dev/null; then
  log "the guest did not finish (qemu status $status); last console lines:"
  tail -n 30 "$out/console.log" >&2 || true
  exit 1
fi
log "done: $out/console.log"

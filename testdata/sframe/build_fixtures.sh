#!/bin/sh
# Rebuilds the SFrame fixtures committed in this directory and their golden
# `readelf --sframe` dumps. Not run by the test suite (which only reads the
# committed files); run it after changing a fixture source or to move to newer
# binutils, then commit the results:
#
#   sh testdata/sframe/build_fixtures.sh
#
# Needs gcc and Debian's gcc-aarch64-linux-gnu (which brings this machine's
# binutils 2.40 for aarch64, SFrame v1); fetches binutils 2.44 (trixie,
# SFrame v2) and 2.47 (sid, SFrame v3) for both arches with
# ../shared/tools/newer-binutils.sh into $BINUTILS_CACHE (default
# ~/.cache/unwindd-binutils), without touching the system.
#
# The x86_64 fixtures run on this machine: they are linked by the newer ld
# against this machine's glibc (crt files, libc.so), which only needs what
# ld 2.40 would need too. The aarch64 ones are only parsed by the tests.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
newer=${NEWER_BINUTILS:-$repo/../shared/tools/newer-binutils.sh}
cache=${BINUTILS_CACHE:-$HOME/.cache/unwindd-binutils}

binutils() {  # SUITE TRIPLET -> prints the DEST whose bin/ has as/ld/readelf
  dest=$cache/$1-$2
  [ -x "$dest/bin/as" ] || sh "$newer" "$1" "$dest" "$2" >&2
  echo "$dest"
}

trixie64=$(binutils trixie x86_64-linux-gnu)
sid64=$(binutils sid x86_64-linux-gnu)
trixiea64=$(binutils trixie aarch64-linux-gnu)
sida64=$(binutils sid aarch64-linux-gnu)

# The fixture programs park their threads and are unwound live; no frame
# pointers, so every frame of ours needs unwind info. -g0: small binaries.
X86="-O2 -fomit-frame-pointer -g0 -Wa,--gsframe -I$repo -pthread"
# aarch64: pac-ret so the mangled-RA bit is exercised.
A64="-O2 -g0 -Wa,--gsframe -mbranch-protection=pac-ret -I$repo -pthread"
PIE="-fPIE -pie"
NOPIE="-fno-pie -no-pie"

build() {  # NAME READELF CC FLAGS... SOURCE
  name=$1 readelf=$2; shift 2
  "$@" -o "$here/$name"
  "$readelf" --sframe "$here/$name" > "$here/golden/$name.sframe.txt"
  echo "built $name: $(sed -n 's/^ *Version: //p' "$here/golden/$name.sframe.txt")"
}

src=$repo/testdata
build threads_c_sframe_v1_pie readelf gcc $X86 $PIE "$src/threads_c.c"
build threads_c_sframe_v2_nopie "$trixie64/bin/readelf" \
  gcc -B"$trixie64/bin/" $X86 $NOPIE "$src/threads_c.c"
build threads_c_sframe_v2_pie "$trixie64/bin/readelf" \
  gcc -B"$trixie64/bin/" $X86 $PIE "$src/threads_c.c"
build threads_c_sframe_v3_pie "$sid64/bin/readelf" \
  gcc -B"$sid64/bin/" $X86 $PIE "$src/threads_c.c"
build realign_sframe_v3_nopie "$sid64/bin/readelf" \
  gcc -B"$sid64/bin/" $X86 $NOPIE "$src/realign.c"
build signal_handler_sframe_v3_nopie "$sid64/bin/readelf" \
  gcc -B"$sid64/bin/" $X86 $NOPIE "$src/signal_handler.c"

build threads_c_sframe_v1_aarch64 aarch64-linux-gnu-readelf \
  aarch64-linux-gnu-gcc $A64 "$src/threads_c.c"
build threads_c_sframe_v2_aarch64 "$trixiea64/bin/readelf" \
  aarch64-linux-gnu-gcc -B"$trixiea64/bin/" $A64 "$src/threads_c.c"
build threads_c_sframe_v3_aarch64 "$sida64/bin/readelf" \
  aarch64-linux-gnu-gcc -B"$sida64/bin/" $A64 "$src/threads_c.c"

# The fixture made to disagree: SleeperChain's last SP-based FRE gets a CFA
# offset 8 too large. The planted range goes next to the golden files.
planted=threads_c_sframe_v2_nopie_disagree
func=$(nm "$here/threads_c_sframe_v2_nopie" | awk '$3 == "SleeperChain" {print $1}')
python3 "$here/plant_disagreement.py" "$here/threads_c_sframe_v2_nopie" \
  "$here/$planted" "$func" > "$here/golden/$planted.planted.txt"
chmod +x "$here/$planted"
"$trixie64/bin/readelf" --sframe "$here/$planted" > "$here/golden/$planted.sframe.txt"
echo "planted in $planted: $(cat "$here/golden/$planted.planted.txt")"

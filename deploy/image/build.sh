#!/bin/sh
# Builds unwindd's OCI image (docs/fleet.md "The image") from Debian
# packages and the project's binaries, with no registry: mmdebstrap makes
# the root file system (Debian 12, the packages the binaries need, and
# debuginfod for the store's pod), umoci wraps it as an OCI image layout.
#
#   SOURCE_DATE_EPOCH=1764201600 deploy/image/build.sh OUT BIN_DIR
#
# BIN_DIR holds unwindd, unwind, unwind_remote and unwind_debuginfod
# (bazel-bin/service). OUT/oci is the image layout, tag `latest`; the
# manifest's digest is printed last. The same SOURCE_DATE_EPOCH, binaries
# and package versions give the same digest (image_test.sh checks): every
# mtime is clamped to SOURCE_DATE_EPOCH, logs and caches are left out, the
# user is added without a date, and umoci records no history.
#
# The image runs as uid 10001 (`unwindd`), entrypoint /usr/bin/unwindd.
# Needs root (mmdebstrap --mode=root, umoci), mmdebstrap, umoci, and the
# Debian mirror apt uses here (/etc/apt/sources.list.d/debian.sources).
set -eu
out=$1
bins=$(cd "$2" && pwd)
: "${SOURCE_DATE_EPOCH:=$(git -C "$(dirname "$0")" log -1 --format=%ct 2>/dev/null || echo 0)}"
export SOURCE_DATE_EPOCH
sources=${UNWINDD_IMAGE_SOURCES:-/etc/apt/sources.list.d/debian.sources}
for b in unwindd unwind unwind_remote unwind_debuginfod; do
  [ -x "$bins/$b" ] || { echo "build.sh: no $bins/$b" >&2; exit 1; }
done

# The Debian packages whose libraries the binaries load (ldd), plus
# libdebuginfod1 (dlopen'ed for --debuginfod) and debuginfod itself.
pkgs=$(for b in unwindd unwind_remote unwind_debuginfod; do ldd "$bins/$b"; done |
  awk '$3 ~ /^\// { print $3 }' | sort -u | while read -r lib; do
    real=$(readlink -f "$lib")
    dpkg -S "$real" 2>/dev/null || dpkg -S "/usr$real" 2>/dev/null ||
      dpkg -S "$(echo "$real" | sed 's|^/usr||')" 2>/dev/null
  done | cut -d: -f1 | sort -u | tr '\n' ',')
pkgs="${pkgs}libdebuginfod1,debuginfod,ca-certificates"

rm -rf "$out"
mkdir -p "$out"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cp "$bins/unwindd" "$bins/unwind" "$bins/unwind_remote" "$bins/unwind_debuginfod" "$tmp/"
chmod 0755 "$tmp"/unwind*

mmdebstrap --quiet --mode=root --variant=essential --format=tar \
  --include="$pkgs" \
  --dpkgopt='path-exclude=/usr/share/doc/*' \
  --dpkgopt='path-include=/usr/share/doc/*/copyright' \
  --dpkgopt='path-exclude=/usr/share/man/*' \
  --dpkgopt='path-exclude=/usr/share/info/*' \
  --dpkgopt='path-exclude=/usr/share/locale/*' \
  --customize-hook="copy-in $tmp/unwindd $tmp/unwind $tmp/unwind_remote $tmp/unwind_debuginfod /usr/bin" \
  --customize-hook='echo "unwindd:x:10001:10001:unwindd:/var/lib/unwindd:/usr/sbin/nologin" >> "$1/etc/passwd"' \
  --customize-hook='echo "unwindd:x:10001:" >> "$1/etc/group"' \
  --customize-hook='echo "unwindd:!:::::::" >> "$1/etc/shadow"' \
  --customize-hook='mkdir -p "$1/var/lib/unwindd" "$1/var/cache/unwindd" "$1/run/unwindd" && chown 10001:10001 "$1/var/lib/unwindd" "$1/var/cache/unwindd" "$1/run/unwindd"' \
  --customize-hook='rm -rf "$1"/var/log/* "$1"/var/cache/ldconfig/aux-cache "$1"/etc/machine-id "$1"/var/lib/dbus/machine-id "$1"/etc/.pwd.lock "$1"/etc/passwd- "$1"/etc/group- "$1"/etc/shadow- "$1"/etc/gshadow- "$1"/var/cache/debconf/*-old "$1"/var/lib/dpkg/*-old' \
  bookworm "$tmp/rootfs.tar" "$sources"

# An empty image, its bundle, the root file system in it, repacked as one
# layer; then the configuration. Dates: SOURCE_DATE_EPOCH.
created=$(date -u -d "@$SOURCE_DATE_EPOCH" +%Y-%m-%dT%H:%M:%SZ)
umoci init --layout "$out/oci"
umoci new --image "$out/oci:latest"
umoci unpack --image "$out/oci:latest" "$tmp/bundle" >/dev/null
tar -C "$tmp/bundle/rootfs" --numeric-owner -xpf "$tmp/rootfs.tar"
# Directories tar made or touched after their contents: their mtimes too.
find "$tmp/bundle/rootfs" -newermt "@$SOURCE_DATE_EPOCH" -print0 |
  xargs -0r touch -h -d "@$SOURCE_DATE_EPOCH"
umoci repack --no-history --image "$out/oci:latest" "$tmp/bundle"
umoci config --no-history --image "$out/oci:latest" \
  --created="$created" --author="unwindd" \
  --architecture=amd64 --os=linux \
  --config.user=10001:10001 \
  --config.workingdir=/var/lib/unwindd \
  --config.env=XDG_CACHE_HOME=/var/cache/unwindd \
  --config.entrypoint=/usr/bin/unwindd \
  --config.cmd=--listen=unix:/run/unwindd/unwindd.sock \
  --config.label=org.opencontainers.image.title=unwindd
umoci gc --layout "$out/oci"
# The manifest of tag `latest`: what a registry would call the image digest.
/usr/bin/python3 -c '
import json, sys
index = json.load(open(sys.argv[1] + "/oci/index.json"))
print(index["manifests"][0]["digest"])' "$out"

#!/bin/bash
# Installs the package into a fresh Debian 12 root, as a user would
# (dpkg -i, then apt-get -f install for its dependencies), and there:
# `unwind` unwinds a process it starts (pid, demo, and through unwindd
# with --server: `pid` in unwind's own process, `health` through the
# unwind_remote installed beside it), unwindd
# runs, and the user, units, manual pages and documents are where they
# belong.
#
#   install_test.sh PACKAGE.deb
#
# Needs root and the host's Debian mirror (from its apt sources). The
# pristine base system (debootstrap --variant=minbase bookworm) is kept as a
# tarball: ../shared/tools/fresh-debian.sh's ($FRESH_CACHE/base.tar, default
# /var/tmp/fresh-debian) when it exists, else our own in
# $UNWINDD_DEB_CACHE (default /var/tmp/unwindd-deb-test), made once
# (~1-2 min) and unpacked anew for every run.
set -euo pipefail
deb=$(readlink -f "$1")
[ "$(id -u)" -eq 0 ] || { echo "install_test: needs root"; exit 1; }
cache=${UNWINDD_DEB_CACHE:-/var/tmp/unwindd-deb-test}
fresh=${FRESH_CACHE:-/var/tmp/fresh-debian}/base.tar
root=$cache/run/root
mkdir -p "$cache"

mirror=$(grep -rhoE '^URIs: *[^ ]+/debian/?$|^deb +[^ ]+/debian/? +bookworm ' \
  /etc/apt/sources.list.d/ /etc/apt/sources.list 2>/dev/null | head -1 |
  sed -E 's/^URIs: *//; s/^deb +//; s/ .*//' || true)
if [ -f "$fresh" ]; then
  base=$fresh
else
  base=$cache/base.tar
  if [ ! -f "$base" ]; then
    [ -n "$mirror" ] || { echo "install_test: no Debian mirror in the host's apt sources"; exit 1; }
    command -v debootstrap >/dev/null || { echo "install_test: needs debootstrap (scripts/deps.sh)"; exit 1; }
    rm -rf "$cache/base"
    debootstrap --variant=minbase bookworm "$cache/base" "$mirror" > "$cache/debootstrap.log" 2>&1 ||
      { tail -5 "$cache/debootstrap.log"; exit 1; }
    tar -C "$cache/base" -cf "$base.tmp" . && mv "$base.tmp" "$base"
    rm -rf "$cache/base"
  fi
fi

cleanup() {
  if [ -d "$root/proc" ]; then
    # Whatever the checks left running inside the root.
    for p in /proc/[0-9]*; do
      [ "$(readlink "$p/root" 2>/dev/null)" = "$root" ] && kill -9 "${p#/proc/}" 2>/dev/null || true
    done
  fi
  for m in dev/pts dev sys proc; do umount -l "$root/$m" 2>/dev/null || true; done
}
trap cleanup EXIT
# Never delete through a mount that is still there (the host's /dev, /sys).
still_mounted() { grep -q " $cache/run/" /proc/mounts; }
cleanup
still_mounted && { echo "install_test: $cache/run still has mounts; not deleting it"; exit 1; }
rm -rf "$cache/run"
mkdir -p "$root"
tar -C "$root" -xf "$base"
rm -f "$root/etc/apt/sources.list"
cp /etc/apt/sources.list.d/*.sources "$root/etc/apt/sources.list.d/" 2>/dev/null || true
[ -f /etc/apt/sources.list ] && cp /etc/apt/sources.list "$root/etc/apt/sources.list"
cp /etc/resolv.conf "$root/etc/resolv.conf" 2>/dev/null || true
mount -t proc proc "$root/proc"
mount --rbind /sys "$root/sys"
mount --rbind /dev "$root/dev"
cp "$deb" "$root/tmp/unwindd.deb"

in_root() { chroot "$root" env -i HOME=/root PATH=/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8 sh -c "$1"; }
fail() { echo "install_test: $*"; exit 1; }

echo "== dpkg -i, apt-get -f install"
in_root 'apt-get update -qq' > "$cache/run/apt-update.log" 2>&1 || { tail -5 "$cache/run/apt-update.log"; fail "apt-get update failed"; }
in_root 'dpkg -i /tmp/unwindd.deb' > "$cache/run/dpkg.log" 2>&1 || true  # its dependencies are missing yet
in_root 'DEBIAN_FRONTEND=noninteractive apt-get -f install -y -qq' > "$cache/run/apt-install.log" 2>&1 ||
  { tail -20 "$cache/run/apt-install.log"; fail "apt-get -f install failed"; }
in_root 'dpkg-query -W -f="\${Status} \${Version}\n" unwindd' | tee "$cache/run/status" | grep -q '^install ok installed' ||
  { cat "$cache/run/dpkg.log"; fail "unwindd is not installed: $(cat "$cache/run/status")"; }
echo "installed: $(cat "$cache/run/status"), $(in_root 'dpkg -L unwindd | wc -l') paths"

echo "== files, user"
for f in /usr/bin/unwind /usr/sbin/unwindd /usr/lib/unwindd/bin/unwind_remote \
         /usr/lib/unwindd/bin/unwind_debuginfod /usr/lib/unwindd/bin/unwind_coredump \
         /usr/share/man/man1/unwind.1.gz /usr/share/man/man8/unwindd.8.gz \
         /lib/systemd/system/unwindd.service /lib/systemd/system/unwindd.socket \
         /usr/lib/sysusers.d/unwindd.conf /usr/share/doc/unwindd/README.md \
         /usr/share/doc/unwindd/docs/cli.md /usr/share/doc/unwindd/changelog.Debian.gz \
         /usr/share/doc/unwindd/changelog.gz /usr/share/doc/unwindd/copyright; do
  [ -e "$root$f" ] || fail "$f is missing"
done
in_root 'getent passwd unwindd' || fail "no user unwindd after the install"
grep -q '^ExecStart=/usr/sbin/unwindd ' "$root/lib/systemd/system/unwindd.service" ||
  fail "unwindd.service does not start /usr/sbin/unwindd"

echo "== unwind pid on a process it starts"
out=$(in_root 'sleep 60 & pid=$!; sleep 0.3; unwind pid $pid; status=$?; kill $pid; exit $status') ||
  fail "unwind pid failed: $out"
echo "$out"
grep -q '^TID ' <<<"$out" && grep -q '^stop: end_of_stack' <<<"$out" ||
  fail "unwind pid printed no whole stack"
grep -q 'libc.so.6+0x' <<<"$out" || fail "no frame in libc"

echo "== unwind demo"
out=$(in_root 'unwind demo') || fail "unwind demo failed: $out"
[ "$(grep -c '^TID ' <<<"$out")" -ge 2 ] || fail "unwind demo printed fewer than 2 threads: $out"
echo "$(grep -c '^TID ' <<<"$out") threads, $(grep -c '^#' <<<"$out") frames"

echo "== unwindd, and unwind --server through it"
# TODO(lead, merge): unwindd --version once the per-command help work adds it.
if in_root 'unwindd --version' > "$cache/run/version" 2>&1; then
  echo "unwindd --version: $(cat "$cache/run/version")"
else
  in_root 'unwindd --help' 2>&1 | grep -q 'usage: unwindd' || fail "unwindd --help does not run"
  echo "unwindd --help runs (no --version yet)"
fi
out=$(in_root 'unwindd --listen=unix:/tmp/u.sock --request-log=none 2>/tmp/unwindd.log & server=$!
  for i in $(seq 50); do [ -S /tmp/u.sock ] && break; sleep 0.1; done
  sleep 60 & pid=$!; sleep 0.3
  unwind --server=unix:/tmp/u.sock pid $pid; status=$?
  [ $status = 0 ] && { unwind --server=unix:/tmp/u.sock health; status=$?; }
  kill $pid; kill $server; wait $server; exit $status') || fail "unwind --server failed: $out"
# pid is unwind's own call (no gRPC), health goes to unwind_remote (gRPC).
grep -q '^stop: end_of_stack' <<<"$out" || fail "unwind --server printed no whole stack: $out"
grep -qx 'SERVING' <<<"$out" || fail "unwind --server health did not answer SERVING: $out"
echo "unwind --server: $(grep -c '^#' <<<"$out") frames, health $(grep -x SERVING <<<"$out")"
cleanup
still_mounted || rm -rf "$root"  # 500 MB; the logs beside it stay
echo "install_test: passed"

#!/usr/bin/env bash
# systemd's coredumpctl and systemd-journal-remote for the systemd-coredump
# tests (docs/crash-pipelines.md "How it is tested"), from Debian's
# packages, unpacked and never installed: installing systemd-coredump would
# point this machine's kernel.core_pattern at it.
#
#   dir=$(bash scripts/systemd_tools.sh)
#   LD_LIBRARY_PATH=$dir/lib "$dir/coredumpctl" --file=x.journal info
#
# `apt-get download` of systemd-coredump, systemd-journal-remote,
# libsystemd-shared (the private library both link, in the same version)
# and libmicrohttpd12 (journal-remote's), `dpkg -x` each, into a cache
# keyed by the version ($UNWINDD_SYSTEMD_CACHE, default
# /var/tmp/unwindd-systemd/VERSION). Prints the directory, which holds
# coredumpctl, systemd-journal-remote and lib/.
#
# Exit 77 (tests skip, with the reason on stderr) only when Debian's
# archive cannot be reached.
set -euo pipefail
command -v apt-get >/dev/null || { echo "systemd_tools: not a Debian system (no apt-get)" >&2; exit 77; }
version=$(apt-cache policy systemd-coredump 2>/dev/null | awk '/Candidate:/ { print $2 }')
if [ -z "$version" ] || [ "$version" = "(none)" ]; then
  if [ "$(id -u)" -eq 0 ]; then apt-get update -qq >/dev/null 2>&1 || true; fi
  version=$(apt-cache policy systemd-coredump 2>/dev/null | awk '/Candidate:/ { print $2 }')
fi
if [ -z "$version" ] || [ "$version" = "(none)" ]; then
  echo "systemd_tools: apt knows no systemd-coredump (run apt-get update)" >&2
  exit 77
fi
cache=${UNWINDD_SYSTEMD_CACHE:-/var/tmp/unwindd-systemd}
dir=$cache/$version
mkdir -p "$cache"
exec 9>"$cache/.lock"
flock -w 600 9 || { echo "systemd_tools: waited 10 min for $cache/.lock" >&2; exit 1; }
if [ -f "$dir/.complete" ]; then
  echo "$dir"
  exit 0
fi
tmp=$dir.partial
rm -rf "$tmp"
mkdir -p "$tmp/debs"
cd "$tmp/debs"
# _apt cannot write here: apt warns and downloads as the caller.
if ! timeout 300 apt-get download -q "systemd-coredump=$version" \
    "systemd-journal-remote=$version" "libsystemd-shared=$version" libmicrohttpd12 \
    >../download.log 2>&1; then
  if grep -qE 'Could not resolve|Failed to fetch|Unable to connect|Temporary failure' ../download.log; then
    echo "systemd_tools: Debian's archive is unreachable: $(grep -m1 -E 'Could not|Failed|Unable|Temporary' ../download.log)" >&2
    exit 77
  fi
  cat ../download.log >&2
  exit 1
fi
for d in *.deb; do dpkg -x "$d" ../root; done
cd "$tmp"
mkdir -p lib
for f in root/usr/lib/x86_64-linux-gnu/systemd/libsystemd-shared-*.so \
  root/usr/lib/x86_64-linux-gnu/libmicrohttpd.so.*; do
  cp -a "$f" lib/
done
ln -sf root/usr/bin/coredumpctl coredumpctl
ln -sf root/lib/systemd/systemd-journal-remote systemd-journal-remote
LD_LIBRARY_PATH=$tmp/lib ./coredumpctl --version >/dev/null ||
  { echo "systemd_tools: the unpacked coredumpctl does not run" >&2; exit 1; }
touch .complete
rm -rf "$dir"
mv "$tmp" "$dir"
echo "$dir"

#!/usr/bin/env bash
# Breakpad's tools for the minidump tests (docs/crash-pipelines.md "How it is
# tested"): npm's `minidump` package (Electron's node-minidump) brings
# prebuilt minidump_stackwalk, minidump_dump and dump_syms for linux-x64
# and the Breakpad source they were built from, from which core2md (a gcore
# core plus copies of /proc/PID files -> a minidump) is built here.
#
#   dir=$(bash scripts/breakpad_tools.sh) && "$dir/bin/minidump_stackwalk" ...
#
# Installed once into a cache keyed by the package's version
# ($UNWINDD_BREAKPAD_CACHE, default /var/tmp/unwindd-breakpad/minidump-VERSION,
# ~25 MB, ~2 minutes on 2 cores the first time) and reused after; a lock
# lets concurrent tests wait for one install. Prints the directory, which
# holds bin/{minidump_stackwalk,minidump_dump,dump_syms,core2md}.
#
# Exit 77 (tests skip, with the reason on stderr) only when the npm
# registry cannot be reached; any other failure is an error (exit 1).
# `--ignore-scripts`: the package's preinstall wants yarn and would build
# the tools it already ships.
set -euo pipefail
scripts=$(cd "$(dirname "$0")" && pwd)
version=0.26.0
cache=${UNWINDD_BREAKPAD_CACHE:-/var/tmp/unwindd-breakpad}
dir=$cache/minidump-$version
mkdir -p "$cache"
exec 9>"$cache/.lock"
flock -w 1200 9 || { echo "breakpad_tools: waited 20 min for $cache/.lock" >&2; exit 1; }
if [ -f "$dir/.complete" ]; then
  echo "$dir"
  exit 0
fi
# An unreachable registry is remembered for 10 minutes: every test case
# asks, and each npm attempt takes minutes to give up.
unreachable=$cache/.unreachable
if [ -n "$(find "$unreachable" -mmin -10 2>/dev/null)" ]; then
  cat "$unreachable" >&2
  exit 77
fi
command -v npm >/dev/null || { echo "breakpad_tools: npm is missing (apt-get install npm)" >&2; exit 1; }
tmp=$dir.partial
rm -rf "$tmp"
mkdir -p "$tmp"
cd "$tmp"
echo '{"private": true}' >package.json
status=0
bash "$scripts/npm_install.sh" breakpad_tools "minidump@$version" 2>npm_install.err || status=$?
if [ $status -ne 0 ]; then
  cat npm_install.err >&2
  [ $status -ne 77 ] || cp npm_install.err "$unreachable"
  exit $status
fi
rm -f "$unreachable"
pkg=$tmp/node_modules/minidump
mkdir -p build bin
(
  cd build
  timeout 900 nice -n 19 "$pkg/deps/breakpad/configure" CPPFLAGS="-I$pkg/deps" >configure.log 2>&1 ||
    { tail -20 configure.log >&2; exit 1; }
  timeout 1800 nice -n 19 make -j"$(nproc)" CXXFLAGS="-O2 -Wno-error" \
    src/tools/linux/core2md/core2md >make.log 2>&1 || { tail -30 make.log >&2; exit 1; }
)
cp "$pkg"/bin/linux-x64/minidump_stackwalk "$pkg"/bin/linux-x64/minidump_dump \
  "$pkg"/bin/linux-x64/dump_syms build/src/tools/linux/core2md/core2md bin/
chmod 0755 bin/*
# The prebuilt tools must run here (glibc, libstdc++): print their usage.
for t in minidump_stackwalk minidump_dump; do
  "bin/$t" >/dev/null 2>&1 || [ $? -le 2 ] || { echo "breakpad_tools: bin/$t does not run" >&2; exit 1; }
done
rm -rf build/src/processor build/src/common  # objects no test needs
touch .complete
rm -rf "$dir"
mv "$tmp" "$dir"
echo "$dir"

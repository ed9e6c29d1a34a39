#!/usr/bin/env bash
# Runs the whole test suite (what README.md and .ci/run call), then prints a
# closing "N passed, N failed" line counted from Bazel's per-target results.
set -uo pipefail
cd "$(dirname "$0")/.."
# Install what is missing, then check, before building anything, that every
# command and library the suite needs is there: one line per missing item,
# with its package, beats dozens of link failures.
sh scripts/deps.sh || echo "scripts/deps.sh failed; checking what is missing" >&2
sh scripts/check_deps.sh || { echo "0 passed, 0 failed (missing dependencies)"; exit 1; }
log=$(mktemp)
bazel test //... "$@" 2>&1 | tee "$log"
rc=$?
passed=$(grep -cE '^//[^ ]+ +(\(cached\) )?PASSED' "$log")
failed=$(grep -cE '^//[^ ]+ +(\(cached\) )?(FAILED|TIMEOUT|NO STATUS|INCOMPLETE)' "$log")
rm -f "$log"
echo "$passed passed, $failed failed"
[ "$passed" -gt 0 ] || exit 1
exit "$rc"

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
trap 'rm -f "$log"' EXIT
bazel test //... "$@" 2>&1 | tee "$log"
rc=$?
# Then the sanitizers (docs/testing.md "Sanitizers and fuzzing"), with every report
# fatal: ASan+UBSan over the unit and service tests (the fuzz targets'
# corpus replays included), TSan over proc/ and service/. UNWINDD_SANITIZERS=0
# skips them (a quick local run).
if [ "${UNWINDD_SANITIZERS:-1}" != 0 ]; then
  bazel test --config=asan //arch/... //memory/... //proc/... //unwinder/... \
    //service/... //tools/... "$@" 2>&1 | tee -a "$log"
  asan_rc=${PIPESTATUS[0]}
  [ "$rc" -eq 0 ] && rc=$asan_rc
  # Not the tests that run gRPC: Debian's gRPC is uninstrumented and hands
  # buffers between its threads through synchronization TSan cannot see
  # (docs/testing.md "Sanitizers and fuzzing"), which makes ~100 reports inside it.
  tsan_tests=$(bazel query 'tests(//proc/... + //service/...) except
      rdeps(//proc/... + //service/..., "//third_party/system:grpc++")' 2>/dev/null)
  # shellcheck disable=SC2086
  bazel test --config=tsan $tsan_tests "$@" 2>&1 | tee -a "$log"
  tsan_rc=${PIPESTATUS[0]}
  [ "$rc" -eq 0 ] && rc=$tsan_rc
fi
passed=$(grep -cE '^//[^ ]+ +(\(cached\) )?PASSED' "$log")
failed=$(grep -cE '^//[^ ]+ +(\(cached\) )?(FAILED|TIMEOUT|NO STATUS|INCOMPLETE)' "$log")
echo "$passed passed, $failed failed"
[ "$passed" -gt 0 ] || exit 1
exit "$rc"

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
sanitizers=${UNWINDD_SANITIZERS:-1}
# The packages of the unwinder and the service; the sanitizers run their
# tests (ASan those of tools/ too).
code_dirs=(arch memory proc unwinder service)
code_patterns=()
for d in "${code_dirs[@]}"; do code_patterns+=("//$d/..."); done
# The ASan run's scope. The tests it runs run there only, under
# ASan+UBSan, the stricter of the two builds: compiling and running them
# with gcc too cost a cold run minutes. gcc still builds every target of
# //... (every library and binary users build) and runs the tests outside
# that scope: the fixtures of testdata/ against eu-stack, gdb, perf and
# the other tools, the package, the fleet, the docs.
asan_patterns=("${code_patterns[@]}" //tools/...)
# Bazel's union of target patterns: "//a/... + //b/...".
union() { local u; u=$(printf ' + %s' "$@"); echo "${u# + }"; }
asan_scope=$(union "${asan_patterns[@]}")
asan_tests="tests($asan_scope) except attr(tags, 'no_asan', tests($asan_scope))"
skip=()
if [ "$sanitizers" != 0 ]; then
  # Should the query fail, gcc runs every test: slower, but nothing is lost.
  # Tests tagged asan_skips_cases run in both: some of their cases skip
  # themselves under ASan.
  if asan_run=$(bazel query "($asan_tests) except
      attr(tags, 'asan_skips_cases', tests($asan_scope))" 2>/dev/null) &&
      [ -n "$asan_run" ]; then
    for t in $asan_run; do skip+=("-$t"); done
  else
    echo "bazel query of the ASan run's tests failed; gcc runs every test" >&2
  fi
fi
bazel test "$@" -- //... "${skip[@]}" 2>&1 | tee "$log"
rc=${PIPESTATUS[0]}
# Then the sanitizers (docs/testing.md "Sanitizers and fuzzing"), with every report
# fatal: ASan+UBSan over the tests of its scope (the fuzz targets' corpus
# replays included), TSan over the threaded ones. UNWINDD_SANITIZERS=0
# skips them (a quick local run, in which gcc runs every test).
if [ "$sanitizers" != 0 ]; then
  bazel test --config=asan "$@" -- "${asan_patterns[@]}" 2>&1 | tee -a "$log"
  asan_rc=${PIPESTATUS[0]}
  [ "$rc" -eq 0 ] && rc=$asan_rc
  # TSan reports races between threads, so it runs the tests that start
  # threads or link a source that does (found by grep, so a new one joins
  # without a list to keep up); a test that never starts one gives it
  # nothing to find. Not the tests that run gRPC: Debian's gRPC is
  # uninstrumented and hands buffers between its threads through
  # synchronization TSan cannot see (docs/testing.md "Sanitizers and
  # fuzzing"), which makes ~100 reports inside it.
  tsan_scope=$(union "${code_patterns[@]}")
  threaded=$(grep -rlE 'std::(j)?thread|pthread_create|std::async' \
      --include=*.cc --include=*.h "${code_dirs[@]}" | sort | paste -sd+ -)
  tsan_tests=$(bazel query "tests($tsan_scope) intersect rdeps($tsan_scope, $threaded)
      except rdeps($tsan_scope, \"//third_party/system:grpc++\")" 2>/dev/null)
  [ -n "$tsan_tests" ] || { echo "no tests for TSan: the query failed" >&2; rc=1; }
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

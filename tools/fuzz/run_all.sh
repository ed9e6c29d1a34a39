#!/usr/bin/env bash
# Runs every fuzz target (tools/fuzz.bzl's cc_fuzz_target) for N executions
# each, one after the other at nice 10 (the machine is shared), starting
# from its committed corpus, and prints one row per target:
#
#   bash tools/fuzz/run_all.sh 10000000            # the issue's 10M each
#   bash tools/fuzz/run_all.sh 1000000 //proc:procfs_fuzzer
#   FUZZ_MAX_SECONDS=600 bash tools/fuzz/run_all.sh 1000000   # or 10 min each
#
#   target                              execs   exec/s   cov    ft  time_s  crashes
#   //proc:procfs_fuzzer              1000000    41234   812  2301      24        0
#
# Each target's flags are its <name>.options (-max_len, ...) plus
# -timeout=1 (an input slower than 1 s is a hang), -rss_limit_mb=2048 and
# leak detection (ASan's LeakSanitizer, on by default). New inputs go to a
# scratch directory, never to the committed corpus; anything found is left
# in fuzz-artifacts/<target>/ (crash-*, timeout-*, leak-*, oom-*) with the
# fuzzer's log, and the script exits 1. To merge new coverage into the
# committed corpora afterwards: tools/fuzz/minimize_corpus.sh.
#
# A timeout-* found while other jobs starve the fuzzer of CPU (it runs at
# nice 10) may be no hang at all: rerun it alone, `BIN ARTIFACT` prints
# the time it takes. On a machine that busy, FUZZ_TIMEOUT=10 (seconds, 1
# by default) still catches a real hang without stopping the run at the
# first stall of the host. ASan's periodic return of freed memory to the kernel
# (madvise of its size classes every 5 s) is off: on a loaded VM whose page
# tables the host shadows, one such call stalled a 29 ms input past the
# 1 s limit; the 2 GiB RSS limit still bounds memory.
set -uo pipefail
cd "$(dirname "$0")/../.."
runs=${1:?usage: run_all.sh N_EXECS [TARGET...]}
shift
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  mapfile -t targets < <(bazel query 'attr(tags, "fuzz_target", //...)' 2>/dev/null)
fi
bazel build --config=fuzz "${targets[@]}" \
  $(printf '%s_options ' "${targets[@]}") >/dev/null 2>&1 ||
  { echo "build failed: bazel build --config=fuzz ${targets[*]}" >&2; exit 1; }
bin=$(bazel info --config=fuzz bazel-bin 2>/dev/null)
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
status=0
printf '%-40s %10s %8s %6s %7s %7s %8s\n' target execs exec/s cov ft time_s crashes
for t in "${targets[@]}"; do
  pkg=${t#//}; pkg=${pkg%%:*}; name=${t##*:}
  corpus="$pkg/testdata/fuzz/$name"
  art="fuzz-artifacts/$name"
  mkdir -p "$art" "$scratch/$name"
  log="$art/fuzz.log"
  start=$(date +%s)
  # This run's findings only: an artifact an earlier run left in $art
  # (kept for whoever looks at it) is not counted again.
  : >"$scratch/$name.start"
  # shellcheck disable=SC2046
  ASAN_OPTIONS=${ASAN_OPTIONS:-allocator_release_to_os_interval_ms=-1} \
  nice -n 10 "$bin/$pkg/$name" -runs="$runs" -timeout="${FUZZ_TIMEOUT:-1}" -rss_limit_mb=2048 \
    -max_total_time="${FUZZ_MAX_SECONDS:-0}" -print_final_stats=1 -artifact_prefix="$art/" \
    $(cat "$bin/$pkg/$name.options") "$scratch/$name" "$corpus" >"$log" 2>&1
  rc=$?
  secs=$(( $(date +%s) - start ))
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  eps=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
  cov=$(grep -oE 'cov: [0-9]+' "$log" | tail -1 | cut -d' ' -f2)
  ft=$(grep -oE 'ft: [0-9]+' "$log" | tail -1 | cut -d' ' -f2)
  crashes=$(find "$art" -newer "$scratch/$name.start" \( -name 'crash-*' -o \
    -name 'timeout-*' -o -name 'leak-*' -o -name 'oom-*' \) | wc -l)
  [ "$rc" -ne 0 ] && [ "$crashes" -eq 0 ] && crashes="rc=$rc"
  printf '%-40s %10s %8s %6s %7s %7s %8s\n' "$t" "${execs:-?}" "${eps:-?}" \
    "${cov:-?}" "${ft:-?}" "$secs" "$crashes"
  [ "$crashes" != 0 ] && status=1
done
exit "$status"

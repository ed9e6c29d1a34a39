#!/usr/bin/env bash
# Side-by-side unwinding speed on the same live threads, in one run:
#   per stack: unwindd vs libdw (dwfl_getthread_frames) vs libunwind-ptrace,
#              each attached once to the same stopped thread, N unwinds;
#   whole command: `unwind pid` vs `eu-stack -p` on the same process.
# floor_us is not an unwinder: one PTRACE_GETREGSET and one 512-byte
# process_vm_readv of the same thread, the least any of them pays per stack.
# Exits non-zero if any peer's frames differ from ours.
#
#   bazel run -c opt //testdata/bench:compare [-- ITERATIONS [RUNS]]
set -euo pipefail
ITER=${1:-1000}
RUNS=${2:-20}
cd "${RUNFILES_DIR:-$0.runfiles}/unwindd" 2>/dev/null || cd "$(dirname "$0")/compare.runfiles/unwindd"
B=testdata/bench
unset DEBUGINFOD_URLS
status=0
pids=()
cleanup() { for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null || true; done; }
trap cleanup EXIT

start() {  # start PROGRAM: runs it, waits for its "ready" line; sets $pid
  local out; out=$(mktemp)
  "$1" >"$out" 2>/dev/null &
  pid=$!
  pids+=("$pid")
  for _ in $(seq 200); do grep -q ready "$out" && break; sleep 0.05; done
  sleep 0.2
  rm -f "$out"
}

run_driver() {  # run_driver DRIVER PID TID -> "ns frames..."
  local out; out=$("$B/$1" "$2" "$3" "$ITER")
  echo "$(sed -n 's/^ns_per_stack //p' <<<"$out") $(sed -n 's/^frames //p' <<<"$out")"
}

printf '%-24s %7s %6s %9s %12s %12s %12s %9s %9s\n' program tid frames \
  floor_us unwindd_us libdw_us libunwind_us libdw/us libunw/us
for prog in demo threads_c_O2_nofp_pie recursion_O2_nofp_pie; do
  start "testdata/$prog"
  for task in /proc/"$pid"/task/*; do
    tid=${task##*/}
    read -r floor_ns _ <<<"$(run_driver floor_driver "$pid" "$tid")"
    read -r ours_ns ours <<<"$(run_driver unwindd_driver "$pid" "$tid")"
    read -r dw_ns dw <<<"$(run_driver libdw_driver "$pid" "$tid")"
    read -r lu_ns lu <<<"$(run_driver libunwind_driver "$pid" "$tid")"
    for peer in dw lu; do
      if [[ "${!peer}" != "$ours" ]]; then
        echo "FRAMES DIFFER for $prog tid $tid: ours vs $peer" >&2
        echo "  ours: $ours" >&2
        echo "  $peer:   ${!peer}" >&2
        status=1
      fi
    done
    n=$(wc -w <<<"$ours")
    awk -v p="$prog" -v t="$tid" -v n="$n" -v f="$floor_ns" -v o="$ours_ns" -v d="$dw_ns" -v l="$lu_ns" \
      'BEGIN { printf "%-24s %7d %6d %9.1f %12.1f %12.1f %12.1f %8.1fx %8.1fx\n", p, t, n, f/1000, o/1000, d/1000, l/1000, d/o, l/o }'
  done
done

# Whole command: process start, attach, unwind every thread, print.
start testdata/demo
t0=$(date +%s%N); for _ in $(seq "$RUNS"); do service/unwind pid "$pid" >/dev/null; done; t1=$(date +%s%N)
for _ in $(seq "$RUNS"); do eu-stack -p "$pid" >/dev/null 2>&1; done; t2=$(date +%s%N)
awk -v a=$(( (t1 - t0) / RUNS )) -v b=$(( (t2 - t1) / RUNS )) -v th="$(ls /proc/"$pid"/task | wc -l)" \
  'BEGIN { printf "\nwhole command, %d-thread demo: unwind pid %.2f ms, eu-stack -p %.2f ms, eu-stack/unwind %.1fx\n", th, a/1e6, b/1e6, b/a }'
exit $status

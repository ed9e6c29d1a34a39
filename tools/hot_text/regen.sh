#!/bin/bash
# Regenerates service/hot_text.ld, the order in which the static `unwind`
# lays out the code and read-only data its one-shot commands touch
# (tools/hot_text/hot_text.py says how; docs/speed.md why). Run it after a
# change that moves what `unwind pid` runs (new code on its path, another
# glibc or Abseil), then commit the script; //tools/hot_text:hot_text_test
# fails when the layout has fallen behind the code.
#
#   tools/hot_text/regen.sh
#
# The commands: `unwind --help`, `unwind pid` of four fixtures, in process
# and through an unwindd on a Unix socket, `unwind core` and `unwind
# minidump` of a gcore and a minidump of the C fixture, and `unwind perf`
# (pprof and text) of a short recording.
# Traces the optimized build (-c opt, what the speed figures measure) and
# the default one (`bazel run //service:unwind`). Needs valgrind, perf and
# gcore (scripts/requirements.txt). Takes about eight minutes.
set -euo pipefail
cd "$(dirname "$0")/../.."
work=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  [[ -n "${KEEP_WORK:-}" ]] && echo "kept $work" >&2 || rm -rf "$work"
}
trap cleanup EXIT

# C, C++, signal frames, deep recursion: what `unwind pid` meets.
fixtures=(threads_c_O2_nofp_pie demo_O2_nofp_pie signal_handler_O2_nofp_pie recursion_O2_nofp_pie)
bazel build //service:unwindd //testdata/perf:perf_busy_O2_nofp_pie "${fixtures[@]/#/\/\/testdata:}"
bin=$(bazel info bazel-bin)
# `unwind perf` of a short recording of a busy program (~1 MB: lackey's
# trace of reading it is ~100 MB).
timeout -s INT 0.4 perf record -q -e cpu-clock -F 300 --call-graph dwarf,8192 \
  -o "$work/perf.data" -- "$bin/testdata/perf/perf_busy_O2_nofp_pie" >/dev/null 2>&1 || true
for f in "${fixtures[@]}"; do
  "$bin/testdata/$f" >/dev/null 2>&1 &
  pids+=($!)
done
fixture_pids=("${pids[@]}")
# `unwind --server=unix:... pid` asks a running unwindd itself.
"$bin/service/unwindd" --listen="unix:$work/sock" 2>/dev/null &
pids+=($!)
sleep 1
# `unwind core` of the C fixture, as a crash pipeline runs it.
gcore -o "$work/core" "${fixture_pids[0]}" >/dev/null 2>&1
core=$work/core.${fixture_pids[0]}

# Links `unwind` of compilation mode $1 again, with a map (same inputs,
# same layout) into $work/$1/, then traces its commands there.
trace_mode() {
  local mode=$1 dir=$work/$1
  mkdir -p "$dir"
  bazel build -c "$mode" //service:unwind
  local execroot params
  execroot=$(bazel info -c "$mode" execution_root)
  bazel aquery -c "$mode" 'mnemonic("CppLink", //service:unwind)' --output=jsonproto >"$dir/aquery.json"
  params=$(python3 -c '
import json, sys
args = json.load(open(sys.argv[1]))["actions"][0]["arguments"]
print([a for a in args if a.startswith("@")][-1])' "$dir/aquery.json")
  # The params file names the output; a later -o wins.
  (cd "$execroot" && /usr/bin/gcc "$params" -o "$dir/unwind" -Wl,-Map="$dir/unwind.map" 2>"$dir/link.log") ||
    { cat "$dir/link.log" >&2; exit 1; }

  # A minidump of the C fixture, written by the first build traced.
  [[ -f "$work/mini.dmp" ]] ||
    "$dir/unwind" pid --minidump="$work/mini.dmp" "${fixture_pids[0]}" >/dev/null 2>&1
  traces=()
  trace() {
    valgrind --tool=lackey --trace-mem=yes --log-file="$dir/trace.$1" "$dir/unwind" "${@:2}" >/dev/null 2>&1 || true
    traces+=("$dir/trace.$1")
  }
  trace help --help
  trace pid_c pid "${fixture_pids[0]}"
  trace pid_cxx pid --json "${fixture_pids[1]}"
  trace pid_signal pid "${fixture_pids[2]}"
  trace pid_deep pid "${fixture_pids[3]}"
  trace server --server="unix:$work/sock" pid "${fixture_pids[0]}"
  trace core core "$core"
  trace minidump minidump "$work/mini.dmp"
  trace perf_pprof perf "$work/perf.data" --format=pprof -o /dev/null
  trace perf_text perf "$work/perf.data" -o /dev/null
  # Then the page faults of runs at full speed: what valgrind's slower runs
  # missed (a thread not yet stopped when first polled), and the string
  # functions glibc picks for this CPU rather than valgrind's.
  faults() {
    perf record -q -e page-faults -c 1 -d -o "$dir/faults.data" -- "$dir/unwind" "$@" >/dev/null 2>&1 || true
    perf script -i "$dir/faults.data" -F ip,addr 2>/dev/null |
      awk '{ print "I  " $1; print "I  " $2 }' >>"$dir/faults.txt"
  }
  for _ in $(seq 10); do
    faults --help
    for p in "${fixture_pids[@]}"; do faults pid "$p"; done
    faults --server="unix:$work/sock" pid "${fixture_pids[0]}"
    faults core "$core"
    faults minidump "$work/mini.dmp"
    faults perf "$work/perf.data" --format=pprof -o /dev/null
  done
  traces+=("$dir/faults.txt")
  args+=(--map "$dir/unwind.map" "${traces[@]}")
}

args=()
trace_mode opt
trace_mode fastbuild
python3 tools/hot_text/hot_text.py service/hot_text.ld "${args[@]}"

#!/usr/bin/env bash
# The recording corpus of compare.sh (section "corpus"): perf.data files of
# many shapes, recorded here and now from the programs in corpus/, and what
# reading each one costs `unwind perf`, `perf script` and `cat`.
#
#   corpus.sh OUT_DIR SECONDS RUNS [NAME...]
#
# Run from compare's runfiles root (compare.sh does). Records each
# recording of the table below (all, or the NAMEs given) into OUT_DIR, then
# prints one row per recording: its size and samples; the CPU time (user +
# system, every thread) of `unwind perf --format=pprof`, of `perf script -F
# ip --no-inline` (its reader and its unwinder, printing addresses only)
# and of `cat FILE` (reading every byte once: the floor), each the median
# of RUNS runs taken in turn by wall_runs; the ratios; the page faults and
# peak RSS of each; and the server path: the recording sent through one
# unwindd (started here for the whole table, on a temporary Unix socket)
# by perf_replay, as a profiler backend sends samples (UnwindSnapshotBatches,
# batches of 64, the mapping tables once), every answer checked against an
# in-process unwind of the same sample: samples per CPU-second of the
# server (utime + stime; the median of RUNS passes after a warm-up pass)
# and its µs per sample; beside it the same samples' floors, what any
# server costs for their bytes: unwindd answering each with an error
# without unwinding it (perf_replay --floor) and a process that only reads
# them from a plain Unix socket (--socket-floor). Last, one line of scaling: the largest recording
# read with --jobs=2 on both cores against all its threads on one
# (taskset -c 0), wall time. Keeps OUT_DIR's recordings for the caller.
#
# What the corpus varies, because each changes the cost: the stack copy (8
# to 64 KiB), the depth (5 to 500 frames) and frame size (16 B to 2 KiB),
# threads (1 to 64), the language and runtime (C, C++ throwing exceptions,
# Go, Rust), frame pointers or not, one process or the whole system.
set -euo pipefail
OUT=$1
SECONDS_EACH=$2
RUNS=$3
shift 3
B=testdata/bench
C=testdata/bench/corpus
mkdir -p "$OUT"
pids=()
server_pid=
server_dir=
cleanup() { for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null || true; done; }
stop_server() {
  [[ -n "$server_pid" ]] && { kill "$server_pid" 2>/dev/null; wait "$server_pid" 2>/dev/null || true; }
  [[ -n "$server_dir" ]] && rm -rf "$server_dir"
  server_pid=; server_dir=
}
trap 'cleanup; stop_server' EXIT

# Go and Rust are built here, from their sources, with Debian's compilers
# (Bazel 4 has no rules for them offline).
build_go() {
  [[ -x "$OUT/corpus_go" ]] && return
  GOCACHE="$OUT/gocache" GOPATH="$OUT/gopath" GOFLAGS=-mod=mod \
    go build -o "$OUT/corpus_go" "$C/corpus_go.go"
}
build_rust() {
  [[ -x "$OUT/corpus_rust" ]] && return
  /usr/bin/rustc -C opt-level=2 -g -o "$OUT/corpus_rust" "$C/corpus_rust.rs"
}

start() {  # start CMD...: runs it, waits for its "ready" line; sets $pid
  local out; out=$(mktemp)
  "$@" >"$out" 2>/dev/null &
  pid=$!
  pids+=("$pid")
  for _ in $(seq 200); do grep -q ready "$out" && break; sleep 0.05; done
  rm -f "$out"
}

stop_all() {
  cleanup
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  pids=()
}

# record NAME STACK_BYTES SCOPE: SCOPE is "-p PID[,PID...]" or "-a".
record() {
  # shellcheck disable=SC2086
  perf record -q -e cpu-clock -F 4000 --call-graph "dwarf,$2" $3 -o "$OUT/$1.data" \
    -- sleep "$SECONDS_EACH" >/dev/null 2>&1
}

# name | stack copy | program (started, recorded with -p) or "system"
CORPUS="
c_qsort         16384  $C/corpus_c_O2_nofp_pie 1 12 20 256 qsort
c_shallow       8192   $C/corpus_c_O2_nofp_pie 1 3 5 16
c_deep          65528  $C/corpus_c_O2_nofp_pie 1 400 500 16
c_large_frames  32768  $C/corpus_c_O2_nofp_pie 2 10 40 2048
c_fp_64threads  16384  $C/corpus_c_O2_fp_pie 64 5 30 256 qsort
cxx_exceptions  16384  $C/corpus_cxx_O2_nofp_pie 2 24
go              16384  @go 4 60
rust            16384  @rust 2 60
system_wide     16384  system
"

# wanted NAME [WANTED...]: true when no WANTED is given or NAME is one.
wanted() {
  local n=$1; shift
  [[ $# -eq 0 ]] && return 0
  for w in "$@"; do [[ $w == "$n" ]] && return 0; done
  return 1
}

names=()
while read -r name stack prog args; do
  [[ -z "$name" ]] && continue
  wanted "$name" ${@+"$@"} || continue
  names+=("$name")
  [[ -s "$OUT/$name.data" ]] && continue
  case "$prog" in
    @go) build_go; start "$OUT/corpus_go" $args; record "$name" "$stack" "-p $pid" ;;
    @rust) build_rust; start "$OUT/corpus_rust" $args; record "$name" "$stack" "-p $pid" ;;
    system)
      # Several programs at once, and whatever else runs on the machine.
      build_go; build_rust
      start "$C/corpus_c_O2_nofp_pie" 1 12 20 256 qsort
      start "$C/corpus_cxx_O2_nofp_pie" 1 24
      start "$OUT/corpus_go" 2 60
      start "$OUT/corpus_rust" 1 60
      record "$name" "$stack" "-a" ;;
    *) # shellcheck disable=SC2086
       start "$prog" $args; record "$name" "$stack" "-p $pid" ;;
  esac
  stop_all
done <<<"$CORPUS"

# The server for the server columns: the real unwindd on a socket of its
# own. As root it keeps only the capabilities it needs (the caller is root
# too, so it may open every file a recording names); as another user it
# has none and opens files as that user, who recorded them.
server_dir=$(mktemp -d)
service/unwindd --listen="unix:$server_dir/unwindd.sock" --request-log=none \
  2>"$server_dir/stderr.log" &
server_pid=$!
for _ in $(seq 200); do [[ -S "$server_dir/unwindd.sock" ]] && break; sleep 0.05; done

printf '%-15s %6s %7s | %9s %9s %6s | %9s %6s | %7s %7s %7s | %7s %7s %7s | %9s %7s | %9s %9s\n' \
  recording MB samples "ours ms" "perf ms" "x perf" "cat ms" "x cat" \
  "flt us" "flt perf" "flt cat" "rss us" "rss prf" "rss cat" "srv smp/s" "srv us" \
  "floor s/s" "sock s/s"
for name in "${names[@]}"; do
  f="$OUT/$name.data"
  samples=$(service/unwind perf "$f" --format=json -o - 2>/dev/null | grep -c '"pid"' || true)
  cat "$f" >/dev/null  # in the page cache for every command alike
  "$B/wall_runs" "$RUNS" -- service/unwind perf "$f" --format=pprof -o /dev/null \
    -- perf script -F ip --no-inline -i "$f" -- cat "$f" >"$OUT/w"
  # The server path: "result k=v ..." is perf_replay's last line; a
  # failure (an error answer, frames that differ) shows as "fail".
  srv=$("$B/perf_replay" --server="unix:$server_dir/unwindd.sock" --server-pid="$server_pid" \
    --check --passes="$RUNS" "$f" 2>"$OUT/$name.replay.err" | sed -n 's/^result //p' || true)
  [[ -z "$srv" ]] && sed 's/^/  /' "$OUT/$name.replay.err" >&2
  # The floors: the same samples answered without being unwound, and only
  # read from a socket.
  floor=$("$B/perf_replay" --server="unix:$server_dir/unwindd.sock" --server-pid="$server_pid" \
    --floor --passes="$RUNS" "$f" 2>>"$OUT/$name.replay.err" |
    sed -n 's/^result .*samples_per_server_cpu_s=\([0-9]*\).*/\1/p' || true)
  sock=$("$B/perf_replay" --socket-floor --passes="$RUNS" "$f" 2>>"$OUT/$name.replay.err" |
    sed -n 's/^result .*samples_per_server_cpu_s=\([0-9]*\).*/\1/p' || true)
  awk -v name="$name" -v mb="$(( $(stat -c %s "$f") / 1048576 ))" -v n="$samples" -v srv="$srv" \
    -v floor="${floor:-fail}" -v sock="${sock:-fail}" '
    { for (i = 1; i < NF; i += 2) v[NR, $i] = $(i + 1) }
    END {
      o = v[1, "cpu_us"] / 1000; p = v[2, "cpu_us"] / 1000; c = v[3, "cpu_us"] / 1000
      split(srv, kv, " "); for (i in kv) { split(kv[i], e, "="); s[e[1]] = e[2] }
      printf "%-15s %6d %7d | %9.1f %9.1f %5.1fx | %9.1f %5.2fx | %7d %7d %7d | %7d %7d %7d | %9s %7s | %9s %9s\n",
        name, mb, n, o, p, p / o, c, o / c, v[1, "faults"], v[2, "faults"], v[3, "faults"],
        v[1, "maxrss_kb"] / 1024, v[2, "maxrss_kb"] / 1024, v[3, "maxrss_kb"] / 1024,
        srv == "" ? "fail" : s["samples_per_server_cpu_s"], srv == "" ? "fail" : s["server_us_per_sample"],
        floor, sock
    }' "$OUT/w"
done
echo "(CPU: median of $RUNS runs, user + system; flt: minor page faults; rss: peak RSS, MiB;"
echo " srv: through unwindd by perf_replay, samples per server CPU-second and server µs per"
echo " sample, median of $RUNS passes after a warm-up; every answer checked against in-process;"
echo " floor: the same samples answered by unwindd without being unwound, samples per server"
echo " CPU-second; sock: only read from a plain Unix socket, samples per reader CPU-second)"

# Scaling on the largest recording: `--jobs=2` free on both cores and with
# every thread on one (taskset -c 0), taken in turn, wall time, median of
# at least 11 runs each (a run is a few tenths of a second).
largest=
for name in "${names[@]}"; do
  if [[ -z "$largest" ]] || (( $(stat -c %s "$OUT/$name.data") > $(stat -c %s "$OUT/$largest.data") )); then
    largest=$name
  fi
done
if [[ -n "$largest" ]]; then
  f="$OUT/$largest.data"
  "$B/wall_runs" "$(( RUNS > 11 ? RUNS : 11 ))" -- service/unwind perf "$f" --format=pprof --jobs=2 -o /dev/null \
    -- taskset -c 0 service/unwind perf "$f" --format=pprof --jobs=2 -o /dev/null >"$OUT/scaling"
  awk -v name="$largest" -v mb="$(( $(stat -c %s "$f") / 1048576 ))" '
    { for (i = 1; i < NF; i += 2) v[NR, $i] = $(i + 1) }
    END {
      two = v[1, "median_us"] / 1e6; one = v[2, "median_us"] / 1e6
      printf "scaling on the largest recording (%s, %d MB), wall, --jobs=2: one core (taskset -c 0) %.3f s, two cores %.3f s (%.2fx)\n", name, mb, one, two, one / two
    }' "$OUT/scaling"
fi

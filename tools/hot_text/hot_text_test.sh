#!/bin/bash
# The static `unwind` runs its one-shot commands from one contiguous run of
# code (.text.hot_path, laid out by service/hot_text.ld): at least 90% of
# the code pages `unwind --help` and `unwind pid` execute lie in it. Fails
# when the layout is not applied, or has fallen behind the code: then run
# tools/hot_text/regen.sh and commit the script it writes.
#
#   hot_text_test.sh [--skip]   (--skip: a build that does not apply it)
set -euo pipefail
if [[ "${1:-}" == --skip ]]; then
  echo "SKIP: this build (sanitizers, fuzzing, cross) links unwind without the layout"
  exit 0
fi
runfiles=${TEST_SRCDIR:-$PWD/..}/${TEST_WORKSPACE:-unwindd}
unwind=$runfiles/service/unwind
fixture=$runfiles/testdata/threads_c_O2_nofp_pie
pages=$runfiles/tools/hot_text/code_pages.py
work=${TEST_TMPDIR:-$(mktemp -d)}

"$fixture" >"$work/fixture.out" 2>&1 &
target=$!
trap 'kill $target 2>/dev/null || true' EXIT
# It prints "ready" once every thread is parked.
for _ in $(seq 100); do
  grep -q '^ready$' "$work/fixture.out" && break
  sleep 0.1
done
grep -q '^ready$' "$work/fixture.out" || { echo "FAIL: the fixture did not get ready"; exit 1; }

valgrind --tool=lackey --trace-mem=yes --log-file="$work/help.trace" "$unwind" --help >/dev/null
valgrind --tool=lackey --trace-mem=yes --log-file="$work/pid.trace" "$unwind" pid "$target" >"$work/pid.out"
grep -q "^TID $target:" "$work/pid.out" || { echo "FAIL: unwind pid under valgrind"; cat "$work/pid.out"; exit 1; }

fail=0
for run in help pid; do
  line=$(python3 "$pages" "$unwind" "$work/$run.trace") || { echo "FAIL: $line"; exit 1; }
  read -r total inside outside <<<"$line"
  echo "$run: $inside of $total code pages in .text.hot_path; outside: ${outside:-none}"
  if [[ -z "$total" || $((inside * 100)) -lt $((total * 90)) ]]; then
    echo "FAIL: $run: fewer than 90% (tools/hot_text/regen.sh rewrites service/hot_text.ld)"
    fail=1
  fi
done
exit $fail

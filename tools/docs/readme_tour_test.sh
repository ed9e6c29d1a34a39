#!/bin/bash
# Runs the README's tour: every ```sh block marked
# "<!-- example: run by //tools/docs:readme_tour_test -->", in order, in a
# scratch directory, with `unwind` on PATH (//service:unwind, whose helper
# binaries sit beside its real path). A command that fails fails the test.
set -euo pipefail
ws="$TEST_SRCDIR/$TEST_WORKSPACE"
work=$(mktemp -d "${TEST_TMPDIR:-/tmp}/tour.XXXXXX")
mkdir -p "$work/bin"
ln -s "$(readlink -f "$ws/service/unwind")" "$work/bin/unwind"
awk '/<!-- example: run by \/\/tools\/docs:readme_tour_test -->/ { want = 1; next }
     want && /^```sh/ { inblock = 1; want = 0; n++; print "echo \"== block " n "\""; next }
     inblock && /^```/ { inblock = 0; next }
     inblock { print }
     !/^[ \t]*$/ { want = want && /^```/ }' "$ws/README.md" > "$work/tour.sh"
blocks=$(grep -c '^echo "== block' "$work/tour.sh" || true)
[ "$blocks" -ge 3 ] || { echo "found $blocks tour blocks in README.md, expected 3"; cat "$work/tour.sh"; exit 1; }
cat "$work/tour.sh"
cd "$work"
# Background processes the blocks start are killed by the blocks; make sure.
trap 'jobs -p | xargs -r kill 2>/dev/null || true' EXIT
PATH="$work/bin:$PATH" bash -euo pipefail -x "$work/tour.sh" > "$work/out.txt" 2>&1 || {
  status=$?; tail -40 "$work/out.txt"; echo "the README tour failed (exit $status)"; exit 1; }
tail -20 "$work/out.txt"
# What the blocks wrote must be real output, not empty files.
for f in stacks.json crash.json crash.dmp stacks.folded profile.pb.gz busy.pb.gz; do
  [ -s "$f" ] || { echo "the tour left no $f"; exit 1; }
done
python3 -c 'import json,sys; d=json.load(open("stacks.json")); assert d["threads"][0]["frames"], d' ||
  { echo "stacks.json has no frames"; exit 1; }
grep -q 'stop: ' "$work/out.txt" || { echo "no unwind pid text output in the tour"; exit 1; }
echo "README tour: $blocks blocks ran"

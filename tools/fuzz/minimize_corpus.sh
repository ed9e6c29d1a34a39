#!/usr/bin/env bash
# Merges inputs into a fuzz target's committed corpus, keeping only those
# that add coverage (libFuzzer -merge=1), and rewrites the corpus with the
# minimal set:
#
#   bash tools/fuzz/minimize_corpus.sh //proc:procfs_fuzzer [MORE_INPUT_DIR...]
#
# Seeds for every target come from tools/fuzz/make_seeds.py.
set -euo pipefail
cd "$(dirname "$0")/../.."
t=${1:?usage: minimize_corpus.sh //pkg:name_fuzzer [INPUT_DIR...]}
shift
pkg=${t#//}; pkg=${pkg%%:*}; name=${t##*:}
corpus="$pkg/testdata/fuzz/$name"
bazel build --config=fuzz "$t" "${t}_options" >/dev/null 2>&1
bin=$(bazel info --config=fuzz bazel-bin 2>/dev/null)
new=$(mktemp -d)
trap 'rm -rf "$new"' EXIT
mkdir -p "$corpus"
# shellcheck disable=SC2046
nice -n 10 "$bin/$pkg/$name" -merge=1 -timeout=5 -rss_limit_mb=2048 \
  $(cat "$bin/$pkg/$name.options") "$new" "$corpus" "$@" >"$new.log" 2>&1 ||
  { cat "$new.log" >&2; exit 1; }
rm -f "$corpus"/*
cp "$new"/* "$corpus"/
echo "$corpus: $(ls "$corpus" | wc -l) inputs, $(du -sh "$corpus" | cut -f1)"

#!/bin/sh
# Every relative link and #anchor in README.md, CHANGELOG.md and docs/*.md
# resolves, and every example command block is marked (check_docs.py).
# The files are read in the source tree the runfiles point to, so that a
# document added to docs/ is checked without being listed here.
set -eu
here=$(dirname "$0")
readme=$(readlink -f "$TEST_SRCDIR/$TEST_WORKSPACE/README.md")
root=$(dirname "$readme")
cd "$root"
exec /usr/bin/python3 "$TEST_SRCDIR/$TEST_WORKSPACE/tools/docs/check_docs.py" "$root" \
  README.md CHANGELOG.md docs/*.md

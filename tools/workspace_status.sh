#!/bin/sh
# Bazel's --workspace_status_command (.bazelrc): the commit the binaries are
# built from, for `unwind --version` and `unwindd --version`
# (service/common:version). STABLE_ keys relink what embeds them when they
# change. Outside a git checkout of this project (a source tarball, or one
# unpacked inside some other repository) the commit is "unknown"; a checkout
# with uncommitted changes says "-dirty". Never fails: a failing status
# command would fail the build.
commit=unknown
top=$(git rev-parse --show-toplevel 2>/dev/null) || top=
if [ -n "$top" ] && [ "$(cd "$top" && pwd -P)" = "$(pwd -P)" ]; then
  if c=$(git rev-parse --verify --quiet HEAD 2>/dev/null) && [ -n "$c" ]; then
    commit=$c
    if ! git diff --quiet HEAD -- 2>/dev/null; then commit="$commit-dirty"; fi
  fi
fi
echo "STABLE_UNWINDD_COMMIT $commit"

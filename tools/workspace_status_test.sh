#!/bin/bash
# tools/workspace_status.sh, the commit `unwind --version` prints: the
# checkout's HEAD, "-dirty" with uncommitted changes, and "unknown" outside
# a git checkout or in a directory that is not the checkout's top.
set -u
script=${TEST_SRCDIR:-$PWD/..}/unwindd/tools/workspace_status.sh
tmp=${TEST_TMPDIR:-/tmp}/status.$$
failures=0
expect() {  # expect WANT_REGEX DIR
  local got; got=$(cd "$2" && "$script")
  [[ $got =~ ^STABLE_UNWINDD_COMMIT\ $1$ ]] || { echo "FAIL in $2: '$got'"; failures=$((failures + 1)); }
}
mkdir -p "$tmp/plain" "$tmp/repo/sub"
expect unknown "$tmp/plain"
if command -v git >/dev/null; then
  git -C "$tmp/repo" init -q
  expect unknown "$tmp/repo"  # no commit yet
  echo a > "$tmp/repo/f"
  git -C "$tmp/repo" add f
  git -C "$tmp/repo" -c user.name=t -c user.email=t@t commit -qm one
  head=$(git -C "$tmp/repo" rev-parse HEAD)
  expect "$head" "$tmp/repo"
  expect unknown "$tmp/repo/sub"  # a tree inside someone else's checkout
  echo b > "$tmp/repo/f"
  expect "$head-dirty" "$tmp/repo"
fi
rm -rf "$tmp"
((failures == 0)) && echo PASS
exit $((failures > 0))

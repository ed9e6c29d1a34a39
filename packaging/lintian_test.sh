#!/bin/bash
# lintian on the package: no error, and no warning but the ones listed in
# ALLOWED, each explained in docs/deployment.md "The Debian package".
set -euo pipefail
deb=$1
# tag -> why it is kept (the long form is in docs/deployment.md).
declare -A ALLOWED=(
  [initial-upload-closes-no-bugs]="not uploaded to Debian: there is no ITP bug to close"
)
out=$(lintian --no-cfg --fail-on none --display-level '>=warning' --tag-display-limit 0 "$deb" 2>&1 | grep -v '^N: ' || true)
echo "$out"
status=0
errors=$(grep -c '^E: ' <<<"$out" || true)
[ "$errors" -eq 0 ] || { echo "lintian reports $errors errors"; status=1; }
while read -r level _ tag _; do
  [ "$level" = "W:" ] || continue
  if [ -z "${ALLOWED[$tag]:-}" ]; then
    echo "lintian warning $tag is not one docs/deployment.md explains: fix it, or explain it there and add it to ALLOWED"
    status=1
  fi
done <<<"$out"
[ $status -eq 0 ] && echo "lintian: 0 errors; warnings only of the explained kinds"
exit $status

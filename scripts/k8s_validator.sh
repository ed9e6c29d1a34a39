#!/usr/bin/env bash
# The Kubernetes schema validator for deploy/kubernetes (docs/fleet.md
# "Kubernetes"): npm's kubernetes-models (the API's OpenAPI schemas, checked
# by @kubernetes-models/validate with ajv) and js-yaml, installed once into
# a cache keyed by their versions ($UNWINDD_K8S_CACHE, default
# /var/tmp/unwindd-k8s/VERSIONS, ~10 MB) and reused after; a lock lets
# concurrent tests wait for one install. Prints the node_modules directory.
#
#   modules=$(bash scripts/k8s_validator.sh) &&
#     K8S_NODE_MODULES=$modules node deploy/kubernetes/validate.mjs deploy/kubernetes
#
# Exit 77 (the test skips, with the reason on stderr) only when the npm
# registry cannot be reached; any other failure is an error (exit 1).
set -euo pipefail
scripts=$(cd "$(dirname "$0")" && pwd)
models=5.1.0
jsyaml=4.1.0
cache=${UNWINDD_K8S_CACHE:-/var/tmp/unwindd-k8s}
dir=$cache/kubernetes-models-$models-js-yaml-$jsyaml
mkdir -p "$cache"
exec 9>"$cache/.lock"
flock -w 600 9 || { echo "k8s_validator: waited 10 min for $cache/.lock" >&2; exit 1; }
if [ -f "$dir/.complete" ]; then
  echo "$dir/node_modules"
  exit 0
fi
command -v npm >/dev/null || { echo "k8s_validator: npm is missing (apt-get install npm)" >&2; exit 1; }
tmp=$dir.partial
rm -rf "$tmp"
mkdir -p "$tmp"
cd "$tmp"
echo '{"private": true}' >package.json
# kubernetes-models 5 says it wants node >= 22; Debian 12's node 20 runs
# its CommonJS build (the validator's own test shows it rejects bad input).
status=0
bash "$scripts/npm_install.sh" k8s_validator "kubernetes-models@$models" "js-yaml@$jsyaml" || status=$?
[ $status -eq 0 ] || exit $status
touch .complete
rm -rf "$dir"
mv "$tmp" "$dir"
echo "$dir/node_modules"

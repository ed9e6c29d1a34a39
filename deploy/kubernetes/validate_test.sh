#!/usr/bin/env bash
# deploy/kubernetes validated offline (validate.mjs): every object against
# its Kubernetes schema, and the security fields; then copies of the
# manifests with one field broken each must be refused, so the validator
# can fail.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=${TEST_SRCDIR:-}/${TEST_WORKSPACE:-}
[ -d "$root/deploy/kubernetes" ] || root=$(cd "$here/../.." && pwd)
manifests=$root/deploy/kubernetes
modules=$(bash "$root/scripts/k8s_validator.sh")
rc=$?
if [ "$rc" = 77 ]; then
  echo "SKIPPED: the npm registry is unreachable (scripts/k8s_validator.sh)"
  exit 0
fi
[ "$rc" = 0 ] || { echo "k8s_validator.sh failed ($rc)"; exit 1; }
export K8S_NODE_MODULES=$modules
failed=0
node "$manifests/validate.mjs" "$manifests" || failed=1

# Each mutation must be refused, with its reason.
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mutate() {  # FILE SED-EXPRESSION EXPECTED-TEXT
  rm -rf "$tmp/m" && cp -r "$manifests" "$tmp/m"
  sed -i "$2" "$tmp/m/$1"
  out=$(node "$manifests/validate.mjs" "$tmp/m")
  if [ $? = 0 ] || ! grep -qF "$3" <<<"$out"; then
    echo "FAIL: $1 with '$2' was not refused for '$3':"
    echo "$out"
    failed=1
  else
    echo "refused as it should: $1 '$2' -> $3"
  fi
}
mutate unwindd.yaml 's/readOnlyRootFilesystem: true/readOnlyRootFilesystem: "yes"/' "must be boolean"
mutate unwindd.yaml 's/drop: \[ALL\]/drop: [NET_RAW]/' "Deployment/unwindd container unwindd: drop ALL"
mutate unwindd.yaml 's/runAsUser: 10001/runAsUser: 0/' "runs as uid 0"
mutate unwindd.yaml 's/clusterIP: None/clusterIP: 10.0.0.9/' "not headless"
mutate unwindd.yaml 's/  selector:$/  selectorx:/' "must have required property"
mutate unwindd-node.yaml 's/add: \[SYS_PTRACE\]/add: [SYS_PTRACE, SYS_ADMIN]/' "adds more than SYS_PTRACE"
mutate unwindd-node.yaml 's/privileged: false/privileged: true/' "privileged is not false"
mutate unwindd-node.yaml 's/internalTrafficPolicy: Local/internalTrafficPolicy: Cluster/' "not Local"
mutate debuginfod.yaml 's/type: RuntimeDefault/type: Unconfined/' "seccomp"
mutate namespaces.yaml 's/enforce: restricted/enforce: baseline/' "does not enforce restricted"
if [ "$failed" = 0 ]; then echo "1 passed, 0 failed"; else echo "0 passed, 1 failed"; fi
exit "$failed"

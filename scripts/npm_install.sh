#!/usr/bin/env bash
# npm_install.sh WHO PACKAGE@VERSION... — `npm install` into the current
# directory for a test's helper script (breakpad_tools.sh, k8s_validator.sh),
# its log in npm.log.
#
# Exit 0 when installed; 77 (the test skips, the reason on stderr, prefixed
# with WHO) only when the registry cannot be reached from this machine: no
# network, no DNS, or a TLS certificate this machine does not trust (a
# TLS-intercepting proxy whose CA is not installed, as in a freshly
# debootstrapped root behind one; NODE_EXTRA_CA_CERTS=FILE names it); any
# other failure is an error (exit 1, the log on stderr).
# `--ignore-scripts`: neither package needs its install scripts.
set -euo pipefail
who=$1
shift
# Retries come 2 s then 10 s apart, not npm's 10 s then 60 s: a registry
# this machine cannot reach (or a certificate it does not trust) made each
# of three tests wait ~140 s before skipping, and a test that waits still
# holds one of Bazel's two CPU slots.
if timeout 300 npm install --ignore-scripts --no-audit --no-fund --loglevel=error \
    --fetch-timeout=60000 --fetch-retries=2 --fetch-retry-mintimeout=2000 \
    --fetch-retry-maxtimeout=10000 "$@" >npm.log 2>&1; then
  exit 0
fi
unreachable='ENOTFOUND|ECONNREFUSED|ECONNRESET|ETIMEDOUT|EAI_AGAIN|ENETUNREACH|network'
untrusted='SELF_SIGNED_CERT_IN_CHAIN|UNABLE_TO_GET_ISSUER_CERT|UNABLE_TO_VERIFY_LEAF_SIGNATURE|DEPTH_ZERO_SELF_SIGNED_CERT|CERT_UNTRUSTED'
if grep -qE "$untrusted" npm.log; then
  echo "$who: the npm registry is unreachable: this machine does not trust its TLS certificate ($(grep -m1 -oE "$untrusted" npm.log); a TLS-intercepting proxy? NODE_EXTRA_CA_CERTS=FILE names its CA)" >&2
  exit 77
fi
if grep -qE "$unreachable" npm.log; then
  echo "$who: the npm registry is unreachable: $(grep -m1 -E "$unreachable" npm.log)" >&2
  exit 77
fi
cat npm.log >&2
exit 1

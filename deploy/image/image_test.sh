#!/usr/bin/env bash
# The OCI image (build.sh): built twice with the same SOURCE_DATE_EPOCH, it
# must have the same digest; then runc_smoke.py runs it under runc.
# Building takes about 5 minutes a time (mmdebstrap fetches and unpacks
# ~60 Debian packages), so the test skips unless UNWINDD_IMAGE_TEST=1:
#   bazel test --test_env=UNWINDD_IMAGE_TEST=1 //deploy/image:image_test
set -uo pipefail
if [ "${UNWINDD_IMAGE_TEST:-0}" != 1 ]; then
  echo "SKIPPED: building the image twice takes ~10 minutes and the Debian mirror;" \
    "set UNWINDD_IMAGE_TEST=1 (bazel test --test_env=UNWINDD_IMAGE_TEST=1 //deploy/image:image_test)"
  exit 0
fi
[ "$(id -u)" = 0 ] || { echo "SKIPPED: needs root (mmdebstrap --mode=root, runc)"; exit 0; }
for t in mmdebstrap umoci runc gcore debuginfod readelf; do
  command -v "$t" >/dev/null || { echo "FAIL: $t missing: run scripts/deps.sh"; exit 1; }
done
root=${TEST_SRCDIR:-}/${TEST_WORKSPACE:-}
bins=$(mktemp -d)
work=$(mktemp -d /var/tmp/unwindd-image-test.XXXXXX)
trap 'rm -rf "$bins" "$work"' EXIT
for b in unwindd unwind unwind_remote unwind_debuginfod; do
  cp "$root/service/$b" "$bins/$b"
done
export SOURCE_DATE_EPOCH=1764201600  # 2025-11-27
failed=0
one=$(bash "$root/deploy/image/build.sh" "$work/one" "$bins" 2>"$work/one.log" | tail -1)
two=$(bash "$root/deploy/image/build.sh" "$work/two" "$bins" 2>"$work/two.log" | tail -1)
case "$one" in sha256:*) ;; *) echo "FAIL: the build printed no digest"; tail -20 "$work/one.log"; exit 1 ;; esac
if [ "$one" = "$two" ]; then
  echo "PASS: two builds, one digest: $one"
else
  echo "FAIL: two builds from the same inputs: $one and $two"
  failed=1
fi
/usr/bin/python3 "$root/deploy/image/runc_smoke.py" --image="$work/one/oci" \
  --unwind="$bins/unwind" --fixture="$root/testdata/threads_c_O2_nofp_pie" \
  --workdir="$work/smoke" --capture="$root/deploy/image/capture_samples" \
  --pb2-dir="$root/service/server/python" || failed=1
if [ "$failed" = 0 ]; then echo "1 passed, 0 failed"; else echo "0 passed, 1 failed"; fi
exit "$failed"

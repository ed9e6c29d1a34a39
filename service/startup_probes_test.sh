#!/bin/bash
# The static `unwind` runs no library constructor that probes the CPU at
# start-up: on a VM each `cpuid` traps to the hypervisor (3.5-5 us here),
# and every command pays for it, `--help` included. liblzma's CRC64
# (third_party/system/lzma_crc64.cc) and OpenSSL's libcrypto (SHA-1 now
# comes from libmd) had such constructors. glibc's own start-up probing
# is every program's, the attach floor's too.
set -euo pipefail
bin=${1:?usage: startup_probes_test.sh UNWIND}
syms=$(nm "$bin")
if ! grep -qw 'main' <<<"$syms"; then
  echo "FAIL: $bin has no symbol table to check" >&2
  exit 1
fi
fail=0
for probe in crc64_set_func OPENSSL_cpuid_setup; do
  if grep -qw "$probe" <<<"$syms"; then
    echo "FAIL: $bin links $probe, a constructor that runs cpuid at every start" >&2
    fail=1
  fi
done
[[ $fail == 0 ]] && echo "PASS: no start-up CPU probe besides glibc's"
exit $fail

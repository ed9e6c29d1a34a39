#!/usr/bin/env python3
"""Writes seed inputs for every fuzz target from the committed fixtures.

    python3 tools/fuzz/make_seeds.py SEEDS_DIR

makes SEEDS_DIR/<target>/... in each target's input layout (the comment at
the top of each *_fuzzer.cc). tools/fuzz/minimize_corpus.sh then merges them
into the committed corpora with libFuzzer's -merge=1, which keeps only the
inputs that add coverage. Needs binutils (readelf, objcopy), gcc and zstd;
the whole-walk and snapshot-request seeds come from the built fuzzers
themselves (UNWINDD_WRITE_WALK_SEEDS, UNWINDD_WRITE_SNAPSHOT_SEEDS; their
paths are the optional 2nd and 3rd arguments).
"""
import os
import re
import struct
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

ELF_FIXTURES = [
    # (path, arch bits for the cfi fuzzers: 0 x86_64, 1 aarch64, 2 x86)
    ("testdata/sframe/threads_c_sframe_v2_nopie", 0),
    ("testdata/sframe/threads_c_sframe_v1_pie", 0),
    ("testdata/sframe/threads_c_sframe_v3_pie", 0),
    ("testdata/sframe/realign_sframe_v3_nopie", 0),
    ("testdata/sframe/signal_handler_sframe_v3_nopie", 0),
    ("testdata/sframe/threads_c_sframe_v1_aarch64", 1),
    ("testdata/sframe/threads_c_sframe_v2_aarch64", 1),
    ("testdata/sframe/threads_c_sframe_v3_aarch64", 1),
    ("testdata/core/fixture/crasher", 0),
    ("testdata/aarch64/threads_O2_pac", 1),
    ("testdata/aarch64/signal_O0_fp", 1),
    ("testdata/core/fixture/sysroot/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2", 0),
]


def p8(v):
    return struct.pack("<B", v & 0xFF)


def p16(v):
    return struct.pack("<H", v & 0xFFFF)


def p32(v):
    return struct.pack("<I", v & 0xFFFFFFFF)


def p64(v):
    return struct.pack("<Q", v & 0xFFFFFFFFFFFFFFFF)


def sections(path):
    """{name: (addr, offset, size)} from readelf -SW."""
    out = subprocess.run(["readelf", "-SW", path], capture_output=True,
                         text=True, check=True).stdout
    found = {}
    for line in out.splitlines():
        m = re.match(r"\s*\[\s*\d+\]\s+(\S+)\s+\S+\s+([0-9a-f]+)\s+([0-9a-f]+)\s+([0-9a-f]+)", line)
        if m:
            found[m.group(1)] = tuple(int(g, 16) for g in m.groups()[1:])
    return found


def section_bytes(path, name):
    s = sections(path).get(name)
    if s is None:
        return None, None
    with open(path, "rb") as f:
        f.seek(s[1])
        return s[0], f.read(s[2])


def function_addresses(path, n=8):
    """Up to n function start addresses (symbols of type FUNC with a size)."""
    out = subprocess.run(["readelf", "-sW", path], capture_output=True,
                         text=True).stdout
    addrs = []
    for line in out.splitlines():
        f = line.split()
        if len(f) >= 8 and f[3] == "FUNC" and f[2] != "0":
            a = int(f[1], 16)
            if a and a not in addrs:
                addrs.append(a)
    return addrs[:n]


def write(d, name, data):
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


def pcs_block(pcs, fmt):
    return p8(len(pcs)) + b"".join(fmt(pc) for pc in pcs)


def cfi_seeds(out):
    d = os.path.join(out, "cfi_section_fuzzer")
    for path, arch in ELF_FIXTURES:
        full = os.path.join(ROOT, path)
        secs = sections(full)
        eh_addr, eh = section_bytes(full, ".eh_frame")
        hdr_addr, hdr = section_bytes(full, ".eh_frame_hdr")
        if eh is None:
            continue
        text = secs.get(".text", (0,))[0]
        got = secs.get(".got", (0,))[0]
        pcs = [a + 4 for a in function_addresses(full)]
        base = os.path.basename(path)
        write(d, base + ".eh", p8(arch << 1) + p64(eh_addr) + p64(hdr_addr or 0) +
              p64(text) + p64(got) + pcs_block(pcs, p64) +
              p16(len(hdr or b"")) + (hdr or b"") + eh[:60000])
    # .debug_frame: gcc writes it instead of .eh_frame without unwind tables.
    with tempfile.TemporaryDirectory() as tmp:
        src = os.path.join(tmp, "f.c")
        obj = os.path.join(tmp, "f.o")
        with open(src, "w") as f:
            f.write("int g(int);\nint f(int x) { return g(x) * 3 + g(x + 1); }\n"
                    "int h(int *p, int n) { int s = 0; for (int i = 0; i < n; i++) s += g(p[i]); return s; }\n")
        for flags, arch, m in ((["-m64"], 0, "64"), (["-m32"], 2, "32")):
            if subprocess.run(["gcc", "-g", "-O2", "-fno-asynchronous-unwind-tables",
                               "-c", src, "-o", obj] + flags).returncode != 0:
                continue
            _, df = section_bytes(obj, ".debug_frame")
            if df:
                write(d, "debug_frame_" + m, p8(1 | (arch << 1)) + p64(0) * 4 +
                      pcs_block([0x4, 0x20], p64) + p16(0) + df)


def sframe_seeds(out):
    d = os.path.join(out, "sframe_fuzzer")
    c = os.path.join(out, "check_sframe_fuzzer")
    for path, arch in ELF_FIXTURES:
        full = os.path.join(ROOT, path)
        addr, sf = section_bytes(full, ".sframe")
        if sf is None:
            continue
        pcs = [a + 4 - addr for a in function_addresses(full)]
        base = os.path.basename(path)
        write(d, base, p64(addr) + pcs_block(pcs, p32) + sf)
        # check_sframe_fuzzer's templates: 0 x86_64 v2 non-PIE, 1 aarch64 v3.
        if base in ("threads_c_sframe_v2_nopie", "threads_c_sframe_v3_aarch64"):
            write(c, base, p8(0 if arch == 0 else 1) + sf)
    _, sf = section_bytes(os.path.join(ROOT, "testdata/sframe/threads_c_sframe_v2_nopie_disagree"), ".sframe")
    write(c, "threads_c_sframe_v2_nopie_disagree", p8(0) + sf)


def module_seeds(out):
    d = os.path.join(out, "module_fuzzer")
    for i, (path, _) in enumerate(ELF_FIXTURES):
        full = os.path.join(ROOT, path)
        if os.path.getsize(full) > 131072 - 100:
            continue
        pcs = [a + 4 for a in function_addresses(full)]
        with open(full, "rb") as f:
            image = f.read()
        write(d, os.path.basename(path), pcs_block(pcs, p64) + p8(i % 6) + image)


def cfa_vm_seeds(out):
    d = os.path.join(out, "cfa_vm_fuzzer")
    regs64 = [0x1000 * (r + 1) for r in range(17)]
    regs64[7] = 0x7ffd0000  # rsp
    regs64[6] = 0x7ffd0040  # rbp
    regs64[16] = 0x401000   # rip

    def seed(name, flags, caf, daf, ra, initial, insns, regs, mem, sp_mem=True):
        body = p8(flags | (0x20 if sp_mem else 0)) + p8(caf) + p8(daf) + p8(ra)
        body += p64(0x401000) + p32(0x100) + p32(0x20)
        body += p16(len(initial)) + initial + p16(len(insns)) + insns
        body += p64((1 << len(regs)) - 1) + b"".join(p64(r) for r in regs)
        body += p64(0) + (p16(0) if sp_mem else p64(0x7ffd0000)) + mem
        write(d, name, body)

    stack = b"".join(p64(0x402000 + 8 * i) for i in range(32))
    # x86_64: CFA = rsp+8, RA at CFA-8; push rbp; mov rsp,rbp.
    x86_cie = bytes([0x0c, 7, 8, 0x90, 1])
    x86_fde = bytes([0x41, 0x0e, 16, 0x86, 2, 0x43, 0x0d, 6, 0x48, 0x0c, 7, 8])
    seed("x86_64_prologue", 0, 1, 0x78, 16, x86_cie, x86_fde, regs64, stack)
    # The PLT's DW_CFA_def_cfa_expression (gcc/ld's pltN template).
    plt = bytes([0x0e, 16, 0x4a, 0x0f, 11, 0x77, 8, 0x80, 0, 0x3f, 0x1a, 0x3b, 0x2a, 0x33, 0x24, 0x22])
    seed("x86_64_plt_expression", 0, 1, 0x78, 16, x86_cie, plt, regs64, stack)
    # remember/restore state, val_expression, expression, undefined RA.
    misc = bytes([0x0a, 0x41, 0x0e, 32, 0x16, 3, 2, 0x77, 8, 0x10, 6, 3, 0x76, 0x10, 0x06,
                  0x0b, 0x42, 0x07, 16])
    seed("x86_64_state_expr", 0, 1, 0x78, 16, x86_cie, misc, regs64, stack)
    # aarch64: CFA = sp, negate_ra_state, stp x29, x30.
    regs_a64 = [0x1000 * (r + 1) for r in range(35)]
    regs_a64[31] = 0x7ffd0000
    regs_a64[32] = 0x400100
    a64_cie = bytes([0x0c, 31, 0])
    a64_fde = bytes([0x41, 0x2d, 0x41, 0x0e, 16, 0x9d, 2, 0x9e, 1, 0x44, 0x0a, 0xdd, 0xde, 0x0e, 0, 0x0b])
    seed("aarch64_pac", 1, 4, 0x78, 30, a64_cie, a64_fde, regs_a64, stack)
    # i386: CFA = esp+4, RA at CFA-4.
    regs32 = [0x1000 * (r + 1) for r in range(9)]
    regs32[4] = 0x7ffd0000
    regs32[8] = 0x8049000
    seed("x86_signal", 2 | 4, 1, 0x7c, 8, bytes([0x0c, 4, 4, 0x88, 1]),
         bytes([0x41, 0x0e, 8, 0x85, 2, 0x42, 0x0d, 5]), regs32,
         b"".join(p32(0x8049100 + 4 * i) for i in range(32)))


def procfs_seeds(out):
    d = os.path.join(out, "procfs_fuzzer")
    for name in ("maps", "stat", "status"):
        with open("/proc/self/" + name, "rb") as f:
            write(d, name, p8(0) + f.read()[:8000])
    write(d, "maps_tricky", p8(3) + b"Pid" +
          b"7f0000000000-7f0000001000 r-xp 00000000 fd:01 1234  /a b/with space (deleted)\n"
          b"7ffd0000-7ffd1000 rw-p 00000000 00:00 0  [stack]\n"
          b"ffffffffff600000-ffffffffff601000 --xp 00000000 00:00 0  [vsyscall]\n")
    write(d, "stat_tricky", p8(0) + b"42 (a) b (c)) S 1 42 42 0 -1 4194560 0 0\n")


def core_seeds(out):
    d = os.path.join(out, "core_target_fuzzer")
    core = os.path.join(ROOT, "testdata/core/fixture/core")
    with open(core, "rb") as f:
        raw = f.read()
    write(d, "fixture_core_head", raw[:65536])
    write(d, "fixture_core.zst", subprocess.run(["zstd", "-19", "-c", core], capture_output=True,
                                               check=True).stdout)
    for name in sorted(os.listdir(os.path.join(ROOT, "testdata/aarch64"))):
        if name.endswith(".core.xz"):
            with open(os.path.join(ROOT, "testdata/aarch64", name), "rb") as f:
                write(d, name, f.read())


def walk_seeds(out, fuzzer):
    d = os.path.join(out, "unwind_walk_fuzzer")
    os.makedirs(d, exist_ok=True)
    env = dict(os.environ, UNWINDD_WRITE_WALK_SEEDS=d)
    subprocess.run([fuzzer], env=env, check=True)


def snapshot_seeds(out, fuzzer):
    d = os.path.join(out, "snapshot_request_fuzzer")
    os.makedirs(d, exist_ok=True)
    env = dict(os.environ, UNWINDD_WRITE_SNAPSHOT_SEEDS=d)
    subprocess.run([fuzzer], env=env, check=True)


def main():
    out = os.path.abspath(sys.argv[1])
    cfi_seeds(out)
    cfa_vm_seeds(out)
    sframe_seeds(out)
    module_seeds(out)
    procfs_seeds(out)
    core_seeds(out)
    walk = os.path.join(ROOT, "bazel-bin/unwinder/unwind_walk_fuzzer")
    if len(sys.argv) > 2:
        walk = sys.argv[2]
    walk_seeds(out, walk)
    snapshot = os.path.join(ROOT, "bazel-bin/service/server/snapshot_request_fuzzer")
    if len(sys.argv) > 3:
        snapshot = sys.argv[3]
    snapshot_seeds(out, snapshot)


if __name__ == "__main__":
    main()

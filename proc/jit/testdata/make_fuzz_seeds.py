#!/usr/bin/env python3
"""Writes the seed corpora of //proc/jit:jitdump_fuzzer and
//proc/jit:gdb_jit_fuzzer (each in its fuzzer's input layout):

    python3 proc/jit/testdata/make_fuzz_seeds.py proc/jit/testdata/fuzz

gdb_jit_fuzzer: relocatable objects compiled by clang-14 for x86_64, i386
and aarch64 (the shape lli-14 registers: .rela.eh_frame / .rel.eh_frame),
their allocated sections given load addresses as LLVM's JIT linkers patch
them, each behind a descriptor and a list (one entry, two, a loop, 32-bit
pointers). jitdump_fuzzer: dumps with every record type, as node writes
them (UNWINDING_INFO before its CODE_LOAD), byte-swapped, cut short.
"""
import os
import struct
import subprocess
import sys
import tempfile

SRC = r"""
volatile int stop;
__attribute__((noinline)) int leaf(int d) { while (!stop) {} return d; }
__attribute__((noinline)) int rec(int d) { if (d == 0) return leaf(d) + 1; return rec(d - 1) * 3 + d; }
int main(void) { return rec(5); }
"""

BASE = 0x10000


def compile_object(target, tmp):
    src = os.path.join(tmp, "rec.c")
    with open(src, "w") as f:
        f.write(SRC)
    out = os.path.join(tmp, "rec-%s.o" % target)
    subprocess.check_call(["clang-14", "--target=" + target, "-O1", "-fomit-frame-pointer",
                           "-fasynchronous-unwind-tables", "-c", src, "-o", out])
    return open(out, "rb").read()


def place_sections(obj, load):
    """Sets sh_addr of every SHF_ALLOC section, one page apart from `load`."""
    b = bytearray(obj)
    is64 = b[4] == 2
    if is64:
        shoff = struct.unpack_from("<Q", b, 0x28)[0]
        shentsize, shnum = struct.unpack_from("<HH", b, 0x3a)
    else:
        shoff = struct.unpack_from("<I", b, 0x20)[0]
        shentsize, shnum = struct.unpack_from("<HH", b, 0x2e)
    addr = load
    for i in range(shnum):
        at = shoff + i * shentsize
        if is64:
            flags = struct.unpack_from("<Q", b, at + 8)[0]
            if flags & 2:
                struct.pack_into("<Q", b, at + 16, addr)
                addr += 0x1000
        else:
            flags = struct.unpack_from("<I", b, at + 8)[0]
            if flags & 2:
                struct.pack_into("<I", b, at + 12, addr)
                addr += 0x1000
    return bytes(b)


def descriptor_memory(objs, word, loop=False):
    """Memory from BASE: descriptor, entries at +0x40 each, symfiles after."""
    fmt = "<Q" if word == 8 else "<I"
    entries_at = BASE + 0x40
    sym_at = BASE + 0x400
    mem = bytearray(0x400)
    struct.pack_into("<II", mem, 0, 1, 1)
    struct.pack_into(fmt, mem, 8, entries_at)
    struct.pack_into(fmt, mem, 8 + word, entries_at)
    addrs = []
    for o in objs:
        addrs.append(sym_at)
        sym_at += (len(o) + 15) & ~15
    for i, o in enumerate(objs):
        e = 0x40 + 0x40 * i
        nxt = entries_at + 0x40 * (i + 1) if i + 1 < len(objs) else (entries_at if loop else 0)
        prv = entries_at + 0x40 * (i - 1) if i > 0 else 0
        struct.pack_into(fmt, mem, e, nxt)
        struct.pack_into(fmt, mem, e + word, prv)
        struct.pack_into(fmt, mem, e + 2 * word, addrs[i])
        struct.pack_into("<Q", mem, e + 3 * word, len(o))
    for o in objs:
        mem += o
        mem += b"\0" * (((len(o) + 15) & ~15) - len(o))
    return bytes(mem)


def jitdump(records, swap=False, elf_mach=62):
    e = ">" if swap else "<"
    out = struct.pack(e + "IIIIIIQQ", 0x4A695444, 1, 40, elf_mach, 0, 4242, 1000, 0)
    for r in records:
        out += r(e)
    return out


def load(addr, code, index, name, time=10):
    def f(e):
        body = struct.pack(e + "IIQQQQ", 4242, 4243, addr, addr, len(code), index)
        body += name + b"\0" + code
        return struct.pack(e + "IIQ", 0, 16 + len(body), time) + body
    return f


def unwinding(eh, hdr, mapped):
    def f(e):
        data = eh + hdr
        pad = (-len(data)) % 8
        body = struct.pack(e + "QQQ", len(data), len(hdr), mapped) + data + b"\0" * pad
        return struct.pack(e + "IIQ", 4, 16 + len(body), 5) + body
    return f


def move(old, new, size, index):
    def f(e):
        body = struct.pack(e + "IIQQQQQ", 4242, 4243, new, old, new, size, index)
        return struct.pack(e + "IIQ", 1, 16 + len(body), 20) + body
    return f


def debug_info(addr):
    def f(e):
        body = struct.pack(e + "QQ", addr, 1) + struct.pack(e + "QII", addr, 1, 0) + b"x.js\0"
        return struct.pack(e + "IIQ", 2, 16 + len(body), 15) + body
    return f


def close():
    return lambda e: struct.pack(e + "IIQ", 3, 16, 30)


def eh_for(code_size):
    """.eh_frame + .eh_frame_hdr for code at 0 with the data at ALIGN8(size)."""
    cie = bytes([1, ord('z'), ord('R'), 0, 1, 0x78, 16, 1, 0x1b, 0x0c, 7, 8, 0x90, 1, 0, 0])
    cie = struct.pack("<II", len(cie) + 4, 0) + cie
    eh_at = (code_size + 7) & ~7
    fde_at = eh_at + len(cie)
    pc = -(fde_at + 8)
    body = struct.pack("<IiI", len(cie) + 4, pc, code_size) + bytes([0, 0x41, 0x0e, 16, 0, 0, 0, 0])
    fde = struct.pack("<I", len(body)) + body
    eh = cie + fde + b"\0\0\0\0"
    hdr_at = eh_at + len(eh)
    hdr = bytes([1, 0x1b, 0x03, 0x3b]) + struct.pack("<iIii", eh_at - (hdr_at + 4), 1,
                                                      0 - hdr_at, fde_at - hdr_at)
    return eh, hdr


def main():
    out = sys.argv[1]
    g = os.path.join(out, "gdb_jit_fuzzer")
    j = os.path.join(out, "jitdump_fuzzer")
    os.makedirs(g, exist_ok=True)
    os.makedirs(j, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        x64 = place_sections(compile_object("x86_64-linux-gnu", tmp), 0x7f0000000000)
        i386 = place_sections(compile_object("i386-linux-gnu", tmp), 0xf7000000)
        a64 = place_sections(compile_object("aarch64-linux-gnu", tmp), 0x7f0000100000)
    seeds = {
        "x86_64_one": b"\x00" + descriptor_memory([x64], 8),
        "x86_64_two_loop": b"\x00" + descriptor_memory([x64, a64], 8, loop=True),
        "i386_one": b"\x01" + descriptor_memory([i386], 4),
        "aarch64_tight": b"\x02" + descriptor_memory([a64, a64, a64], 8),
        "x86_64_direct": b"\x04" + x64,
        "i386_direct": b"\x05" + i386,
    }
    for name, data in seeds.items():
        with open(os.path.join(g, name), "wb") as f:
            f.write(data)
    code = bytes([0x55, 0x48, 0x89, 0xe5, 0x90, 0x90, 0x5d, 0xc3]) * 4
    eh, hdr = eh_for(len(code))
    dumps = {
        "node_like": jitdump([unwinding(eh, hdr, 1), load(0x7f0000001000, code, 1, b"JS:*fib"),
                              unwinding(b"", b"", 0), load(0x7f0000002000, code, 2, b"JS:~g"),
                              debug_info(0x7f0000002000), move(0x7f0000002000, 0x7f0000003000, len(code), 2),
                              close()]),
        "swapped": jitdump([load(0x1000, code, 1, b"f"), close()], swap=True),
        "i386": jitdump([unwinding(eh, hdr, 1), load(0x8000000, code, 1, b"f")], elf_mach=3),
    }
    cut = dumps["node_like"][:len(dumps["node_like"]) - 37]
    dumps["cut_short"] = cut
    for name, data in dumps.items():
        with open(os.path.join(j, name), "wb") as f:
            f.write(data)


if __name__ == "__main__":
    main()

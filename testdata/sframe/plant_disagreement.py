#!/usr/bin/env python3
"""Plants one wrong CFA offset in a copy of an SFrame v2/v3 binary.

    plant_disagreement.py IN OUT FUNCTION_ADDRESS

Finds the .sframe FDE of the function starting at FUNCTION_ADDRESS (hex),
takes its widest FRE whose CFA offset is 1-byte SP-based and adds 8 to
that offset, writes the result to OUT, and prints "<pc_lo> <pc_hi> <old> <new>"
(hex file addresses of the range the FRE covers, then the offsets) so the
check-sframe test knows exactly which disagreement to expect. Only what
build_fixtures.sh needs: little-endian ELF64, SFrame v2 or v3, ADDR1 FREs.
"""
import struct
import sys


def sections(elf):
    shoff, = struct.unpack_from('<Q', elf, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from('<HHH', elf, 0x3a)
    heads = [struct.unpack_from('<IIQQQQIIQQ', elf, shoff + i * shentsize)
             for i in range(shnum)]
    strtab = heads[shstrndx]
    for h in heads:
        name_off = strtab[4] + h[0]
        name = elf[name_off:elf.index(b'\0', name_off)].decode()
        yield name, h[3], h[4], h[5]  # name, addr, offset, size


def main():
    src, dst, func = sys.argv[1], sys.argv[2], int(sys.argv[3], 16)
    elf = bytearray(open(src, 'rb').read())
    addr, off, size = next((a, o, s) for n, a, o, s in sections(elf)
                           if n == '.sframe')
    magic, ver, flags, abi, ffp, fra, aux, nfde, nfre, frelen, fdeoff, freoff = \
        struct.unpack_from('<HBBBbbBIIIII', elf, off)
    assert magic == 0xdee2 and ver in (2, 3), (hex(magic), ver)
    hdr = 28 + aux
    fde_size = 20 if ver == 2 else 16
    for i in range(nfde):
        at = off + hdr + fdeoff + i * fde_size
        if ver == 2:
            start, fsize, fre_off, nfres, info = struct.unpack_from('<iIIIB', elf, at)
        else:
            start, fsize, fre_off = struct.unpack_from('<qII', elf, at)
        base = (at - off) if flags & 4 else 0
        if addr + base + start != func:
            continue
        fres = off + hdr + freoff + fre_off
        if ver == 3:
            nfres, info = struct.unpack_from('<HB', elf, fres)
            fres += 5
        assert info & 0xf == 0, 'only ADDR1 FREs are supported'
        spans, p = [], fres
        for _ in range(nfres):
            fstart, finfo = elf[p], elf[p + 1]
            count, wsize = (finfo >> 1) & 0xf, (finfo >> 5) & 3
            spans.append((fstart, finfo, p + 2))
            p += 2 + count * (1 << wsize)
        ends = [s[0] for s in spans[1:]] + [fsize]
        candidates = [(end - fstart, fstart, end, word)
                      for (fstart, finfo, word), end in zip(spans, ends)
                      if finfo & 1 and (finfo >> 5) & 3 == 0
                      and (finfo >> 1) & 0xf >= 1]
        if candidates:
            _, fstart, end, word = max(candidates)
            old = struct.unpack_from('<b', elf, word)[0]
            struct.pack_into('<b', elf, word, old + 8)
            open(dst, 'wb').write(elf)
            print('%x %x %d %d' % (func + fstart, func + end, old, old + 8))
            return
    sys.exit('no patchable FRE for function 0x%x' % func)


if __name__ == '__main__':
    main()

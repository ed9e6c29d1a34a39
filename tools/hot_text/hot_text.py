#!/usr/bin/python3
"""Writes the linker script that lays out the code and data a one-shot
`unwind` command touches in one contiguous run each (service/hot_text.ld).

  hot_text.py OUT.ld --map LINK_MAP TRACE... [--map LINK_MAP TRACE...]...

LINK_MAP is the linker's map of an `unwind` binary (-Wl,-Map), and each
TRACE after it the addresses one command run on that same binary touched:
the memory trace of valgrind --tool=lackey --trace-mem=yes, or lines
"I ADDR" of the code and data addresses of its page faults in runs
outside valgrind (perf record -e page-faults -d), which take paths
valgrind's slower runs do not (a thread not yet stopped when first
polled) and the CPU's own string functions. Every input section of .text,
.rodata, .data or .bss that a traced instruction executed in, loaded from
or stored to goes into the script, in the order the runs first touched
them: code into an output section .text.hot_path inserted before .text,
read-only data into .rodata.hot_path before .rodata, data into
.data.hot_path after .data and .bss.hot_path before .bss (a write to a
data page is a fault of its own, with no fault-around). .data.rel.ro
stays in RELRO, and a data section over 16 KiB where it is. Several maps (the optimized build, and the default fastbuild
that `bazel run //service:unwind` gives, whose -O0 code calls what -O2
inlines) make one script: the sections of the first, then those the next
adds. tools/hot_text/regen.sh runs the whole thing; docs/speed.md says
why (a page fault per 64 KiB of code first run).

A section is named by its name alone when no other input section of any
of the maps has that name (-ffunction-sections code: .text.<mangled
name>), and by archive member and name otherwise (glibc's plain .text,
one function per object).
glibc picks one of a string function's variants (memmove-avx512-...,
memmove-evex-..., memmove-sse2-...) for the CPU it runs on, so a variant
that ran brings all of its family along.
"""
import os
import re
import sys
from bisect import bisect_right

# A kept input section in a BFD or gold map: the name on its own line when
# it is long, then address, size and file.
_ONE_LINE = re.compile(r'^ (\S+)\s+0x([0-9a-f]+)\s+0x([0-9a-f]+)\s+(\S.*)$')
_NAME_ONLY = re.compile(r'^ (\S+)\s*$')
_REST = re.compile(r'^\s+0x([0-9a-f]+)\s+0x([0-9a-f]+)\s+(\S.*)$')
_MEMBER = re.compile(r'^(.*)\((.*)\)$')
# Each kind of input section: its name prefix, and where its output
# section goes. Data goes after .data, not before: GNU ld ends RELRO at the
# page where the first output section after .got starts, so hot data there
# would be made read-only with it.
_KINDS = (('.text', 'text', 'BEFORE .text'), ('.rodata', 'rodata', 'BEFORE .rodata'),
          ('.data', 'data', 'AFTER .data'), ('.bss', 'bss', 'BEFORE .bss'))
# A table of data larger than this stays where it is: the few of its pages
# a command touches fault wherever they lie, and in the hot range it would
# push the rest apart.
_MAX_DATA_SECTION = 16 << 10
# What the default script's .data.rel.ro takes (inside RELRO): stays there.
_RELRO = '.data.rel.ro'
# glibc's multiarch variants: <function>-<isa>[-...].o
_VARIANT = re.compile(r'^([a-z0-9_]+)-(sse|ssse3|avx|evex|erms)')


def kind_of(name):
    if name == _RELRO or name.startswith(_RELRO + '.'):
        return None
    for prefix, kind, _ in _KINDS:
        if name == prefix or name.startswith(prefix + '.'):
            return kind
    return None


def read_map(path):
    """(address, size, section name, file) of every kept .text*/.rodata*
    input section, sorted by address."""
    sections = []
    pending = None
    with open(path) as f:
        for line in f:
            line = line.rstrip('\n')
            m = _ONE_LINE.match(line)
            if m:
                name, addr, size, file = m.group(1), int(m.group(2), 16), int(m.group(3), 16), m.group(4)
                pending = None
            else:
                m = _NAME_ONLY.match(line)
                if m:
                    pending = m.group(1)
                    continue
                m = _REST.match(line)
                if not (m and pending):
                    pending = None
                    continue
                name, addr, size, file = pending, int(m.group(1), 16), int(m.group(2), 16), m.group(3)
                pending = None
            kind = kind_of(name)
            if kind in ('data', 'bss') and size > _MAX_DATA_SECTION:
                continue
            if addr and size and kind and not file.startswith('load address'):
                sections.append((addr, size, name, file))
    sections.sort()
    return sections


def touched(traces):
    """Addresses executed (I), loaded or stored (L, S, M), in first-touch
    order."""
    seen = set()
    order = []
    for path in traces:
        with open(path) as f:
            for line in f:
                if line[:2] not in ('I ', ' L', ' S', ' M'):
                    continue
                try:
                    addr = int(line[3:].split(',', 1)[0], 16)
                except ValueError:
                    continue
                if addr not in seen:
                    seen.add(addr)
                    order.append(addr)
    return order


def pattern(name, file, shared_names):
    if name not in shared_names:
        return '*(%s)' % name
    m = _MEMBER.match(file)
    if m:
        return '*%s:%s(%s)' % (os.path.basename(m.group(1)), m.group(2), name)
    return '*%s(%s)' % (os.path.basename(file), name)


def family_of(section):
    """(archive, function) of a glibc string function variant's code, else
    None."""
    m = _MEMBER.match(section[3])
    v = _VARIANT.match(m.group(2)) if m else None
    if v and kind_of(section[2]) == 'text':
        return (m.group(1), v.group(1))
    return None


def shared_names(sections):
    """The section names more than one of `sections` has."""
    count = {}
    for s in sections:
        count[s[2]] = count.get(s[2], 0) + 1
    return {n for n, c in count.items() if c > 1}


def pick_sections(sections, traces, shared, picked, seen, size):
    """Appends to `picked` the patterns of the `sections` (one map's) that
    `traces` touched, skipping patterns already `seen`. A name in `shared`
    is qualified by its archive member."""
    starts = [s[0] for s in sections]
    done = set()

    def pick(i):
        if i in done:
            return
        done.add(i)
        s = sections[i]
        kind = kind_of(s[2])
        p = pattern(s[2], s[3], shared)
        if p not in seen:
            seen.add(p)
            picked[kind].append(p)
            size[kind] += s[1]

    # Each variant family's members.
    families = {}
    for i, s in enumerate(sections):
        family = family_of(s)
        if family:
            families.setdefault(family, []).append(i)
    for addr in touched(traces):
        i = bisect_right(starts, addr) - 1
        if i < 0:
            continue
        s = sections[i]
        if not s[0] <= addr < s[0] + s[1] or i in done:
            continue
        pick(i)
        for j in families.get(family_of(s), []):
            pick(j)


def main(argv):
    if len(argv) < 5 or argv[2] != '--map':
        sys.exit(__doc__)
    groups = []
    for arg in argv[2:]:
        if arg == '--map':
            groups.append([])
        else:
            groups[-1].append(arg)
    picked = {kind: [] for _, kind, _ in _KINDS}
    size = {kind: 0 for _, kind, _ in _KINDS}
    seen = set()
    for group in groups:
        if len(group) < 2:
            sys.exit('--map needs a map and at least one trace')
    maps = [read_map(group[0]) for group in groups]
    # Shared in any build: a name one build has once may name several
    # sections in the other, which the bare name would all take.
    shared = set()
    for sections in maps:
        shared |= shared_names(sections)
    for sections, group in zip(maps, groups):
        pick_sections(sections, group[1:], shared, picked, seen, size)
    with open(argv[1], 'w') as out:
        out.write('/* Generated by tools/hot_text/regen.sh: do not edit.\n'
                  '   The input sections one-shot `unwind` commands touch, in the order\n'
                  '   they first touch them: %d code sections, %d read-only data\n'
                  '   sections, %d data and %d zero-initialized data sections. */\n' %
                  (len(picked['text']), len(picked['rodata']), len(picked['data']),
                   len(picked['bss'])))
        for _, kind, where in _KINDS:
            out.write('SECTIONS\n{\n  .%s.hot_path :\n  {\n' % kind)
            for p in picked[kind]:
                out.write('    %s\n' % p)
            out.write('  }\n}\nINSERT %s;\n' % where)
    print('%d code sections (%d bytes in the map that traced them first), '
          '%d read-only data sections (%d bytes), %d data sections (%d bytes), '
          '%d zero-initialized data sections (%d bytes)' %
          (len(picked['text']), size['text'], len(picked['rodata']), size['rodata'],
           len(picked['data']), size['data'], len(picked['bss']), size['bss']))


if __name__ == '__main__':
    main(sys.argv)

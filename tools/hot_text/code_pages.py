#!/usr/bin/python3
"""How many of the code pages a run executed lie in .text.hot_path.

  code_pages.py BINARY TRACE...

TRACE is valgrind --tool=lackey --trace-mem=yes output of BINARY. Prints
one line per trace, "PAGES INSIDE OUTSIDE_PAGES...", and exits 1 if the
binary has no .text.hot_path.
"""
import re
import subprocess
import sys

_SECTION = re.compile(
    r'^\s*\[\s*\d+\]\s+(\S+)\s+\S+\s+([0-9a-f]+)\s+[0-9a-f]+\s+([0-9a-f]+)\s+\S+\s+(\S+)')


def code_sections(binary):
    out = subprocess.run(['readelf', '-SW', binary], capture_output=True, text=True,
                         check=True).stdout
    sections = {}
    for line in out.splitlines():
        m = _SECTION.match(line)
        if m and 'X' in m.group(4):
            sections[m.group(1)] = (int(m.group(2), 16), int(m.group(3), 16))
    return sections


def main(argv):
    sections = code_sections(argv[1])
    if '.text.hot_path' not in sections:
        print('%s has no .text.hot_path' % argv[1])
        return 1
    lo, size = sections['.text.hot_path']
    for trace in argv[2:]:
        pages = set()
        with open(trace) as f:
            for line in f:
                if not line.startswith('I '):
                    continue
                addr = int(line[3:].split(',', 1)[0], 16)
                if any(s <= addr < s + n for s, n in sections.values()):
                    pages.add(addr >> 12)
        outside = sorted(p for p in pages if not lo >> 12 <= p <= (lo + size - 1) >> 12)
        print(len(pages), len(pages) - len(outside), ' '.join(hex(p << 12) for p in outside))
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv))

#!/usr/bin/python3
"""hot_text.py over a hand-written map and traces: which sections it picks,
in which order, and how it names them."""
import os
import sys
import tempfile
import unittest

# hot_text.py beside this file in the runfiles; no __pycache__ written
# into the source tree the runfiles link to.
sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hot_text  # noqa: E402

# GNU ld's map format: a short name and its numbers on one line, a long
# name on a line of its own; discarded sections at address 0.
MAP = """\
Discarded input sections

 .text._ZN3fooEv
                0x0000000000000000       0x10 obj/a.o

Linker script and memory map

 .text          0x0000000000401000      0x100 /usr/lib/libc.a(malloc.o)
                0x0000000000401000                malloc
 .text          0x0000000000401100       0x80 /usr/lib/libc.a(free.o)
 .text._ZN3fooEv
                0x0000000000401180       0x40 obj/liba.a(a.o)
 .text._ZN3barEv
                0x00000000004011c0       0x40 obj/liba.a(a.o)
 .text.evex     0x0000000000401200       0x40 /usr/lib/libc.a(memmove-evex-unaligned-erms.o)
 .text.avx      0x0000000000401240       0x40 /usr/lib/libc.a(memmove-avx-unaligned-erms.o)
 .text.sse2     0x0000000000401280       0x40 /usr/lib/libc.a(memmove-sse2-unaligned-erms.o)
 .text.evex     0x00000000004012c0       0x40 /usr/lib/libc.a(memset-evex-unaligned-erms.o)
 .text.avx      0x0000000000401300       0x40 /usr/lib/libc.a(memset-avx-unaligned-erms.o)
 .rodata.str1.1
                0x0000000000402000       0x20 obj/liba.a(a.o)
 .rodata.str1.1
                0x0000000000402020       0x20 obj/libb.a(b.o)
 .data.rel.ro   0x0000000000402800       0x10 obj/liba.a(a.o)
 .data          0x0000000000403000       0x10 obj/liba.a(a.o)
 .data          0x0000000000403010       0x10 obj/libb.a(b.o)
 .bss           0x0000000000404000      0x100 obj/liba.a(a.o)
 .bss._ZN3big5tableE
                0x0000000000405000    0x40000 obj/libb.a(b.o)
"""


class HotTextTest(unittest.TestCase):

    def setUp(self):
        self.dir = tempfile.mkdtemp()
        self.map = self.write('unwind.map', MAP)

    def write(self, name, text):
        path = os.path.join(self.dir, name)
        with open(path, 'w') as f:
            f.write(text)
        return path

    def script(self, *groups):
        out = os.path.join(self.dir, 'out.ld')
        argv = ['hot_text.py', out]
        for group in groups:
            argv += ['--map'] + list(group)
        hot_text.main(argv)
        with open(out) as f:
            return f.read()

    def test_map_keeps_kept_text_rodata_data_and_bss(self):
        names = [(s[0], s[2]) for s in hot_text.read_map(self.map)]
        self.assertIn((0x401180, '.text._ZN3fooEv'), names)
        self.assertIn((0x403010, '.data'), names)
        self.assertIn((0x404000, '.bss'), names)
        # RELRO data stays where the default script puts it, and so does
        # a large table.
        self.assertNotIn('.data.rel.ro', [n for _, n in names])
        self.assertNotIn('.bss._ZN3big5tableE', [n for _, n in names])
        self.assertEqual(len(names), 14)

    def test_stored_data_goes_first_in_its_own_sections(self):
        # A store and a load name the member (two objects have .data).
        trace = self.write('t', ' S 00404010,8\n S 00403014,4\n L 00403004,4\n'
                                ' M 00402804,8\n')
        script = self.script([self.map, trace])
        lines = [l.strip() for l in script.splitlines() if l.startswith('    ')]
        self.assertEqual(lines, ['*libb.a:b.o(.data)', '*liba.a:a.o(.data)', '*(.bss)'])
        self.assertIn('.data.hot_path :', script)
        self.assertIn('INSERT AFTER .data;', script)
        self.assertIn('.bss.hot_path :', script)
        self.assertIn('INSERT BEFORE .bss;', script)

    def test_first_touch_order_and_names(self):
        # bar before malloc before foo: the order of first touch, whatever
        # the addresses; a load in shared-name rodata names the member.
        trace = self.write('t', 'I  004011c4,4\nI  00401010,8\nI  00401184,2\n'
                                'I  004011c8,4\n L 00402024,1\n')
        script = self.script([self.map, trace])
        lines = [l.strip() for l in script.splitlines() if l.startswith('    ')]
        self.assertEqual(lines, [
            '*(.text._ZN3barEv)',
            '*libc.a:malloc.o(.text)',
            '*(.text._ZN3fooEv)',
            '*libb.a:b.o(.rodata.str1.1)',
        ])
        self.assertIn('INSERT BEFORE .text;', script)
        self.assertIn('INSERT BEFORE .rodata;', script)

    def test_a_string_function_variant_brings_its_family(self):
        trace = self.write('t', 'I  00401244,4\n')
        script = self.script([self.map, trace])
        self.assertIn('*libc.a:memmove-avx-unaligned-erms.o(.text.avx)', script)
        self.assertIn('*libc.a:memmove-evex-unaligned-erms.o(.text.evex)', script)
        # A name no other kept section has needs no member.
        self.assertIn('*(.text.sse2)', script)
        self.assertNotIn('memset', script)

    def test_addresses_outside_every_section_pick_nothing(self):
        trace = self.write('t', 'I  00400000,4\nI  00401380,4\nI  00500000,4\nnoise\n')
        script = self.script([self.map, trace])
        self.assertEqual([l for l in script.splitlines() if l.startswith('    ')], [])

    def test_a_second_map_adds_only_what_the_first_lacks(self):
        first = self.write('t1', 'I  00401184,4\n')
        second = self.write('t2', 'I  004011c4,4\nI  00401184,4\n')
        script = self.script([self.map, first], [self.map, second])
        lines = [l.strip() for l in script.splitlines() if l.startswith('    ')]
        self.assertEqual(lines, ['*(.text._ZN3fooEv)', '*(.text._ZN3barEv)'])

    def test_a_name_shared_in_any_map_is_qualified_in_all(self):
        # .text.sse2 is one section in the first map, two in the second.
        other = self.write('other.map', MAP + (
            ' .text.sse2     0x0000000000401400       0x40 '
            '/usr/lib/libc.a(strlen-sse2.o)\n'))
        trace = self.write('t', 'I  00401284,4\n')
        script = self.script([self.map, trace], [other, trace])
        self.assertIn('*libc.a:memmove-sse2-unaligned-erms.o(.text.sse2)', script)
        self.assertNotIn('*(.text.sse2)', script)

    def test_every_address_counts_however_close(self):
        # Two 8-byte functions in one 16-byte granule: both are picked.
        close = MAP.replace(
            ' .text._ZN3barEv\n                0x00000000004011c0       0x40',
            ' .text._ZN3barEv\n                0x00000000004011c0        0x8 obj/liba.a(a.o)\n'
            ' .text._ZN3bazEv\n                0x00000000004011c8        0x8')
        m = self.write('close.map', close)
        trace = self.write('t', 'I  004011c0,4\nI  004011c8,4\n')
        script = self.script([m, trace])
        self.assertIn('*(.text._ZN3barEv)', script)
        self.assertIn('*(.text._ZN3bazEv)', script)


if __name__ == '__main__':
    unittest.main()

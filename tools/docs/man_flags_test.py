#!/usr/bin/python3
"""The manual pages and --help name the same flags (issue 27).

    man_flags_test.py UNWIND UNWINDD unwind.1 unwindd.8

For each program, the flags of its --help (for unwind also each command's
own help, `unwind help COMMAND` or `unwind COMMAND --help`, where those
exist) must all appear in its manual page, and every flag the page
documents must appear in the help. The page's EXAMPLES and SEE ALSO are
left out (they show other programs' flags: perf record --call-graph).
Prints every difference with what to do, and exits 1 if there is one.
"""
import re
import subprocess
import sys

LONG = re.compile(r'(?<![\w-])--[a-z][a-z0-9-]*[a-z0-9]')
SHORT = re.compile(r'(?<![\w$-])-[a-zA-Z](?![\w-])')

# Flags a page may document that --help does not name (none today).
NOT_YET_IN_HELP = {'unwind': set(), 'unwindd': set()}


def run(argv):
    p = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       stdin=subprocess.DEVNULL, timeout=30)
    return p.returncode, p.stdout.decode('utf-8', 'replace')


def flags(text):
    return set(LONG.findall(text)) | set(SHORT.findall(text))


def help_text(binary, name):
    rc, text = run([binary, '--help'])
    texts = [text]
    if name == 'unwind':
        # The commands the help names, and those known today (a help that
        # lists them in another layout still gets each one's help read).
        commands = set(re.findall(r'(?m)^\s*(?:usage:)?\s*unwind\s+([a-z][a-z-]+)', text))
        commands |= {'pid', 'demo', 'core', 'minidump', 'coredump', 'check-sframe', 'perf',
                     'profile', 'health', 'stats'}
        for c in sorted(commands):
            for argv in ([binary, 'help', c], [binary, c, '--help']):
                rc, t = run(argv)
                if rc == 0:
                    texts.append(t)
    return '\n'.join(texts)


def man_text(path):
    roff = open(path, encoding='utf-8').read()
    # Leave out EXAMPLES and SEE ALSO.
    roff = re.sub(r'(?ms)^\.SH "?(EXAMPLES|SEE ALSO)"?$.*?(?=^\.SH |\Z)', '', roff)
    roff = re.sub(r'(?m)^\.\\".*$', '', roff)          # comments
    roff = re.sub(r'\\f[BIRP]|\\&|\\\(aq', '', roff)    # font changes, zero-width
    return roff.replace('\\-', '-')


def main():
    unwind, unwindd, unwind_man, unwindd_man = sys.argv[1:5]
    problems = []
    for name, binary, page, section, source in (
            ('unwind', unwind, unwind_man, 1, 'docs/man/unwind.1.scd'),
            ('unwindd', unwindd, unwindd_man, 8, 'docs/man/unwindd.8.scd')):
        in_help = flags(help_text(binary, name))
        in_man = flags(man_text(page))
        if len(in_help) < 5 or len(in_man) < 5:
            problems.append('%s: found only %d flags in --help and %d in the page: the parsing is broken'
                            % (name, len(in_help), len(in_man)))
        for f in sorted(in_help - in_man):
            problems.append('%s --help names %s, which %s(%d) does not document: add it to %s'
                            % (name, f, name, section, source))
        for f in sorted(in_man - in_help - NOT_YET_IN_HELP[name]):
            problems.append('%s(%d) documents %s, which %s --help does not name: add it to the help, '
                            'or remove it from %s' % (name, section, f, name, source))
        print('%s: %d flags in --help, %d in %s(%d)' % (name, len(in_help), len(in_man), name, section))
    for p in problems:
        print(p)
    return 1 if problems else 0


if __name__ == '__main__':
    sys.exit(main())

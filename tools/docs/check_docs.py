#!/usr/bin/python3
"""Checks README.md and docs/*.md (issue 27): every document in docs/ is
linked from README.md, every relative link resolves
to a file in the repository, every #anchor to a heading of the file it
names (GitHub's anchor rules), and every example command block is marked
as run by a test or as illustrative.

    check_docs.py REPO_ROOT FILE.md...

A link or block inside an HTML comment is not checked (the rows of
documents that do not exist yet are kept that way until they do).

Example blocks: a fenced block whose info string is sh, bash, shell or
console, or any of whose lines starts with "$ ", must follow a comment
line

    <!-- example: illustrative -->
    <!-- example: run by //package:target -->   (or: run by WHAT, free text)

and a //package:target must be a rule in that package's BUILD.bazel. Prints one line per problem (FILE:LINE: what) and exits
1 if there is any.
"""
import os
import re
import sys
import unicodedata

LINK = re.compile(r'(!?)\[((?:[^\[\]]|\[[^\]]*\])*)\]\(\s*<?([^)\s>]*)>?(?:\s+"[^"]*")?\s*\)')
FENCE = re.compile(r'^(\s*)(```+|~~~+)\s*([^\s`]*)')
EXAMPLE = re.compile(r'^\s*<!--\s*example:\s*(.*?)\s*-->\s*$')


def slug(heading):
    """GitHub's anchor for a heading's text."""
    text = re.sub(r'!?\[([^\]]*)\]\([^)]*\)', r'\1', heading)  # links -> their text
    text = re.sub(r'<[^>]+>', '', text)                         # inline HTML
    text = text.strip().lower()
    out = []
    for ch in text:
        cat = unicodedata.category(ch)
        if ch in ' -' or ch == '_' or cat[0] in 'LN':
            out.append('-' if ch == ' ' else ch)
        # everything else (punctuation, backticks, symbols) is dropped
    return ''.join(out)


def strip_comments(lines):
    """Lines with HTML comments blanked out (kept as empty lines so that
    line numbers stay right), outside fenced code."""
    out, in_comment, fence = [], False, None
    for line in lines:
        m = FENCE.match(line)
        if not in_comment and m:
            if fence is None:
                fence = m.group(2)
            elif m.group(2).startswith(fence[0]) and len(m.group(2)) >= len(fence):
                fence = None
            out.append(line)
            continue
        if fence is not None:
            out.append(line)
            continue
        text, res = line, ''
        while text:
            if in_comment:
                end = text.find('-->')
                if end < 0:
                    text = ''
                else:
                    text, in_comment = text[end + 3:], False
            else:
                start = text.find('<!--')
                if start < 0:
                    res, text = res + text, ''
                else:
                    res, text, in_comment = res + text[:start], text[start + 4:], True
        out.append(res)
    return out


def headings(path, cache={}):
    if path in cache:
        return cache[path]
    anchors, seen, fence = set(), {}, None
    with open(path, encoding='utf-8') as f:
        lines = f.read().split('\n')
    for line in strip_comments(lines):
        m = FENCE.match(line)
        if m:
            fence = None if fence else m.group(2)
            continue
        if fence:
            continue
        h = re.match(r'^ {0,3}#{1,6}\s+(.*?)\s*#*\s*$', line)
        if not h:
            continue
        s = slug(h.group(1))
        n = seen.get(s, 0)
        seen[s] = n + 1
        anchors.add(s if n == 0 else '%s-%d' % (s, n))
    # Explicit anchors: <a id="x"> / <a name="x">.
    for m in re.finditer(r'<a\s+(?:id|name)="([^"]+)"', '\n'.join(lines)):
        anchors.add(m.group(1))
    cache[path] = anchors
    return anchors


def rule_exists(root, label):
    m = re.match(r'^//([^:]*):?(.*)$', label)
    if not m:
        return False
    pkg, name = m.group(1), m.group(2) or os.path.basename(m.group(1))
    build = os.path.join(root, pkg, 'BUILD.bazel')
    if not os.path.exists(build):
        return False
    with open(build, encoding='utf-8') as f:
        return re.search(r'name\s*=\s*"%s"' % re.escape(name), f.read()) is not None


def check(root, md, problems):
    rel = os.path.relpath(md, root)
    with open(md, encoding='utf-8') as f:
        raw = f.read().split('\n')
    lines = strip_comments(raw)
    fence, last_text = None, ''
    for no, (line, orig) in enumerate(zip(lines, raw), 1):
        m = FENCE.match(line)
        if m:
            if fence is None:
                fence = m.group(2)
                info = m.group(3).lower()
                body = []
                for later in raw[no:]:
                    if later.lstrip().startswith(fence):
                        break
                    body.append(later)
                prompt = any(b.lstrip().startswith('$ ') for b in body)
                if info in ('sh', 'bash', 'shell', 'console') or prompt:
                    e = EXAMPLE.match(last_text)
                    if not e:
                        problems.append('%s:%d: example block without "<!-- example: illustrative -->" '
                                        'or "<!-- example: run by //pkg:test -->" on the line before it' % (rel, no))
                    else:
                        what = e.group(1)
                        if what != 'illustrative':
                            by = re.match(r'^run by\s+(\S+)', what)
                            if not by:
                                problems.append('%s:%d: example mark "%s" is neither "illustrative" nor "run by ..."' % (rel, no, what))
                            elif by.group(1).startswith('//'):
                                if not rule_exists(root, by.group(1)):
                                    problems.append('%s:%d: example is said to be run by %s, which is no rule' % (rel, no, by.group(1)))
            elif m.group(2).startswith(fence[0]) and len(m.group(2)) >= len(fence):
                fence = None
            last_text = orig
            continue
        if orig.strip():
            last_text = orig
        if fence:
            continue
        # Inline code spans are not links.
        text = re.sub(r'(`+)(.+?)\1', lambda c: ' ' * len(c.group(0)), line)
        for lm in LINK.finditer(text):
            target = lm.group(3)
            if not target or re.match(r'^[a-z][a-z0-9+.-]*:', target, re.I):
                continue  # http:, https:, mailto:, file:
            path, _, anchor = target.partition('#')
            dest = md if not path else os.path.normpath(os.path.join(os.path.dirname(md), path))
            if path and not os.path.exists(dest):
                problems.append('%s:%d: link to %s: no such file' % (rel, no, target))
                continue
            if anchor:
                if not dest.endswith('.md') or os.path.isdir(dest):
                    continue
                if anchor not in headings(dest):
                    problems.append('%s:%d: link to %s: %s has no heading with anchor #%s' %
                                    (rel, no, target, os.path.relpath(dest, root), anchor))


def main():
    root = os.path.abspath(sys.argv[1])
    problems = []
    files = sys.argv[2:]
    for md in files:
        check(root, os.path.join(root, md) if not os.path.isabs(md) else md, problems)
    # Every document in docs/ is reachable from the front page's table.
    readme = os.path.join(root, 'README.md')
    if os.path.exists(readme):
        with open(readme, encoding='utf-8') as f:
            linked = set(m.group(3).partition('#')[0] for m in LINK.finditer('\n'.join(strip_comments(f.read().split('\n')))))
        for name in sorted(os.listdir(os.path.join(root, 'docs'))):
            if name.endswith('.md') and 'docs/' + name not in linked:
                problems.append('README.md: docs/%s is not linked from the table of documents: add a row for it' % name)
    for p in problems:
        print(p)
    print('%d files, %d problems' % (len(files), len(problems)))
    return 1 if problems else 0


if __name__ == '__main__':
    sys.exit(main())

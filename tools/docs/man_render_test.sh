#!/bin/sh
# Renders each manual page given as an argument with groff's warnings on
# (-ww) and with man -l, as a user's `man` would; any warning fails.
set -eu
status=0
for page in "$@"; do
  warnings=$(groff -man -Tutf8 -ww -z "$page" 2>&1) || { echo "$page: groff failed"; status=1; }
  if [ -n "$warnings" ]; then
    echo "$page: groff warns:"; echo "$warnings"; status=1
  fi
  out=$(MANWIDTH=80 man -l "$page" 2>&1 >/dev/null) || { echo "$page: man -l failed: $out"; status=1; }
  [ -z "$out" ] || { echo "$page: man -l warns: $out"; status=1; }
  MANWIDTH=80 man -l "$page" 2>/dev/null | grep -q '^NAME' || { echo "$page: no NAME section"; status=1; }
  lines=$(MANWIDTH=80 man -l "$page" 2>/dev/null | wc -l)
  echo "$page: $lines lines, no warnings"
done
exit $status

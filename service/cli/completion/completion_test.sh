#!/bin/bash
# unwind.bash sourced in bash: the completions a user gets for a few
# command lines, and, for every command, exactly the flags that
# `unwind COMMAND --help` lists (so the two cannot drift apart).
set -u
root=${TEST_SRCDIR:-$PWD/..}/unwindd
unwind=$root/service/unwind
# shellcheck source=/dev/null
source "$root/service/cli/completion/unwind.bash" || exit 1
failures=0

fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

# complete WORD... : COMPREPLY for the command line WORD... (the last word
# is the one being completed), space-joined and sorted.
complete_line() {
  COMP_WORDS=("$@")
  COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
  COMPREPLY=()
  _unwind
  printf '%s\n' "${COMPREPLY[@]}" | sort | tr '\n' ' ' | sed 's/ $//'
}

expect() {  # expect WANT WORD...
  local want=$1; shift
  local got; got=$(complete_line "$@")
  [[ $got == "$want" ]] || fail "[$*]: got '$got', want '$want'"
}

[[ $(complete -p unwind) == "complete -F _unwind unwind" ]] || fail "not registered"

tmp=${TEST_TMPDIR:-/tmp}/completion.$$
mkdir -p "$tmp/sysroot" && : > "$tmp/core.1234" && : > "$tmp/perf.data"

expect "core coredump" unwind co
expect "check-sframe" unwind check
expect "--format=" unwind pid 1 --form
expect "json text" unwind demo --format ""
expect "--format=json --format=text" unwind demo --format=
expect "core-backtrace json text" unwind core c --format = ""
expect "folded json perf-script pprof" unwind perf p --format ""
expect "pprof" unwind profile --format pp
expect "--sources=eh_frame,debug_frame" unwind pid 1 --sources=eh_frame,de
expect "--server= --sources= --stop-timeout= --symbols" unwind --server unix:/s pid 1 --s
expect "--tls-ca= --tls-cert= --tls-key=" unwind --tls
expect "$tmp/core.1234" unwind core "$tmp/core"
expect "$tmp/perf.data" unwind perf "$tmp/perf"
expect "$tmp/perf.data" unwind profile -o "$tmp/perf"
expect "$tmp/sysroot" unwind core c --sysroot "$tmp/sys"
expect "" unwind core c ""
expect "perf pid profile" unwind help p
expect "--force --format=" unwind perf p --fo
expect "$$" unwind pid "$$"

# The flags of a usage text: on each description line ("  --flag=X ...",
# "  -o FILE, --output=FILE  ..."), the flags before the description.
help_flags() {
  "$unwind" "$@" | grep -E '^  -' | sed -E 's/^  //; s/  .*//' |
    grep -oE '(^|[ ,])--?[a-z][a-z-]*=?' | sed -E 's/^[ ,]//' | sort -u | tr '\n' ' '
}
for cmd in pid demo core minidump coredump perf profile check-sframe health stats help; do
  want=$(help_flags "$cmd" --help; echo)
  want=$(printf '%s\n' $want --help | sort -u | tr '\n' ' ')
  got=$(printf '%s\n' $(_unwind_command_flags "$cmd") | sort -u | tr '\n' ' ')
  [[ $got == "$want" ]] || fail "$cmd flags: completion '$got', help '$want'"
done
want=$(printf '%s\n' $(help_flags --help) | sort -u | tr '\n' ' ')
got=$(printf '%s\n' $_unwind_global_flags | sort -u | tr '\n' ' ')
# --help's own line is "-h, --help": -h is not offered.
want=${want/-h /}
[[ $got == "$want" ]] || fail "global flags: completion '$got', help '$want'"
# Every command the overview lists is completed.
for cmd in $("$unwind" --help | sed -nE 's/^  unwind ([a-z-]+) .*/\1/p'); do
  [[ " $_unwind_commands " == *" $cmd "* ]] || fail "command $cmd not completed"
done

rm -rf "$tmp"
if ((failures > 0)); then echo "$failures failures"; exit 1; fi
echo PASS

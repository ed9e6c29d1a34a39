# bash completion for unwind(1): commands, each command's flags (the same
# as `unwind COMMAND --help` lists: completion_test.sh keeps them equal),
# flag values, and files for core, minidump, perf and check-sframe.
# Installed as /usr/share/bash-completion/completions/unwind; to try it
# from a checkout: source service/cli/completion/unwind.bash

_unwind_commands="pid demo core minidump coredump perf profile check-sframe health stats help"
_unwind_global_flags="--server= --tls-ca= --tls-cert= --tls-key= --version --help"

_unwind_walk_flags="--max-frames= --sources="
_unwind_binaries_flags="--debug-dir= --debuginfod= --no-debuginfod --debuginfod-timeout= --debuginfod-max-bytes= --symbols"
_unwind_files_flags="--exe= --sysroot= --path-map= --tid="
_unwind_minidump_out_flags="--minidump= --minidump-stack-bytes="
_unwind_sampling_flags="-o --output= -f --force --jobs= $_unwind_walk_flags"

# The flags of COMMAND ($1), --help included.
_unwind_command_flags() {
  local f=""
  case "$1" in
    pid) f="--tid= --format= --stop-timeout= $_unwind_walk_flags $_unwind_binaries_flags $_unwind_minidump_out_flags" ;;
    demo) f="--format= $_unwind_walk_flags $_unwind_binaries_flags" ;;
    core) f="--format= $_unwind_files_flags $_unwind_walk_flags $_unwind_binaries_flags $_unwind_minidump_out_flags" ;;
    minidump) f="--format= $_unwind_files_flags $_unwind_walk_flags $_unwind_binaries_flags" ;;
    coredump) f="--file= --directory= --format= $_unwind_files_flags $_unwind_walk_flags $_unwind_binaries_flags $_unwind_minidump_out_flags" ;;
    perf) f="--format= --pid= --tid= --comm= --sysroot= $_unwind_sampling_flags" ;;
    profile) f="--pid= --duration= --frequency= --format= $_unwind_sampling_flags" ;;
    stats) f="--format=" ;;
    check-sframe|health|help) f="" ;;
  esac
  echo "$f --help"
}

# The values --format takes with COMMAND ($1).
_unwind_formats() {
  case "$1" in
    pid|demo) echo "text json" ;;
    core|minidump|coredump) echo "text json core-backtrace" ;;
    perf) echo "perf-script json pprof folded" ;;
    profile) echo "pprof folded json perf-script" ;;
    stats) echo "text json" ;;
  esac
}

# Completions of a flag's VALUE ($2) for FLAG ($1) with COMMAND ($3).
_unwind_values() {
  local flag=$1 cur=$2 cmd=$3
  case "$flag" in
    --format)
      compgen -W "$(_unwind_formats "$cmd")" -- "$cur" ;;
    --sources)
      # A comma-separated list: complete its last element.
      local head="" last=$cur
      if [[ $cur == *,* ]]; then head=${cur%,*},; last=${cur##*,}; fi
      compgen -P "$head" -W "eh_frame debug_frame sframe fp" -- "$last" ;;
    --server)
      compgen -W "unix:/run/unwindd.sock unix: tcp:" -- "$cur" ;;
    --pid|--tid)
      compgen -W "$(cd /proc 2>/dev/null && compgen -G '[0-9]*')" -- "$cur" ;;
    --sysroot|--debug-dir|--directory)
      compgen -d -- "$cur" ;;
    --exe|--minidump|--file|--output|-o|--tls-ca|--tls-cert|--tls-key)
      compgen -f -- "$cur" ;;
  esac
}

_unwind() {
  local cur=${COMP_WORDS[COMP_CWORD]} prev=""
  (( COMP_CWORD > 0 )) && prev=${COMP_WORDS[COMP_CWORD-1]}
  COMPREPLY=()

  # The command: the first word that is neither a flag nor a flag's value
  # (`--flag VALUE`; `--flag=VALUE` may come as three words, "=" between,
  # when COMP_WORDBREAKS holds "=").
  local cmd="" i w nargs=0
  for (( i = 1; i < COMP_CWORD; i++ )); do
    w=${COMP_WORDS[i]}
    if [[ $w == "=" ]]; then (( i++ )); continue; fi
    if [[ $w == -o || ( $w == --* && $w != *=* && ${COMP_WORDS[i+1]-} != "=" &&
          " $_unwind_global_flags $(_unwind_command_flags "$cmd") " == *" $w= "* ) ]]; then
      (( i++ )); continue
    fi
    [[ $w == -* ]] && continue
    if [[ -z $cmd ]]; then cmd=$w; else (( nargs++ )); fi
  done

  # A flag's value: "--flag=VAL" as one word, as "--flag" "=" "VAL", or
  # "--flag VAL".
  local flag="" val="" prefix=""
  if [[ $cur == --*=* ]]; then
    flag=${cur%%=*}; val=${cur#*=}; prefix="$flag="
  elif [[ $cur == "=" ]]; then
    flag=$prev; val=""
  elif [[ $prev == "=" ]] && (( COMP_CWORD >= 2 )); then
    flag=${COMP_WORDS[COMP_CWORD-2]}; val=$cur
  elif [[ $prev == -o || ( $prev == --* && $prev != *=* &&
          " $_unwind_global_flags $(_unwind_command_flags "$cmd") " == *" $prev= "* ) ]]; then
    flag=$prev; val=$cur
  fi
  if [[ -n $flag ]]; then
    local v
    while IFS= read -r v; do
      [[ -n $v ]] && COMPREPLY+=("$prefix$v")
    done < <(_unwind_values "$flag" "$val" "$cmd")
    case "$flag" in
      --exe|--minidump|--file|--output|-o|--tls-*|--sysroot|--debug-dir|--directory)
        type compopt &>/dev/null && compopt -o filenames 2>/dev/null ;;
    esac
    return 0
  fi

  if [[ $cur == -* ]]; then
    local flags
    if [[ -z $cmd ]]; then
      flags=$_unwind_global_flags
    else
      flags="$(_unwind_command_flags "$cmd") --server= --tls-ca= --tls-cert= --tls-key="
    fi
    COMPREPLY=($(compgen -W "$flags" -- "$cur"))
    # --flag= waits for its value.
    if [[ ${#COMPREPLY[@]} -eq 1 && ${COMPREPLY[0]} == *= ]]; then
      type compopt &>/dev/null && compopt -o nospace 2>/dev/null
    fi
    return 0
  fi

  if [[ -z $cmd ]]; then
    COMPREPLY=($(compgen -W "$_unwind_commands" -- "$cur"))
    return 0
  fi
  (( nargs > 0 )) && return 0  # every command takes at most one argument
  case "$cmd" in
    core|minidump|check-sframe|perf)
      type compopt &>/dev/null && compopt -o filenames 2>/dev/null
      COMPREPLY=($(compgen -f -- "$cur")) ;;
    pid)
      COMPREPLY=($(compgen -W "$(cd /proc 2>/dev/null && compgen -G '[0-9]*')" -- "$cur")) ;;
    help)
      COMPREPLY=($(compgen -W "${_unwind_commands% help}" -- "$cur")) ;;
  esac
  return 0
}

complete -F _unwind unwind

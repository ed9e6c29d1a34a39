#!/bin/sh
# Checks that every command and library in scripts/requirements.txt is
# present, before anything is built. Prints one line per missing item, naming
# the Debian package to install, and exits 1 if any is missing:
#
#   missing: eu-stack (command; tests: the live and core oracle) -- apt-get install elfutils
set -eu
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
printf 'int main() { return 0; }\n' >"$tmp/empty.cc"

links() {  # links [-m32] FLAGS...: 0 when g++ links an empty program with them
  command -v g++ >/dev/null 2>&1 &&
    g++ "$@" -x c++ "$tmp/empty.cc" -o "$tmp/a.out" >/dev/null 2>&1
}

# One link with every library first; item by item only if that fails.
all=$(awk '!/^#/ && $1 == "link" { printf "%s ", $2 }' "$here/requirements.txt")
# shellcheck disable=SC2086
links $all && libs_ok=1 || libs_ok=0

status=0
while read -r kind item package needed; do
  case "$kind" in
    command) command -v "$item" >/dev/null 2>&1 && continue ;;
    link) { [ "$libs_ok" = 1 ] || links "$item"; } && continue ;;
    link32) links -m32 "$item" && continue ;;
    python) /usr/bin/python3 -c "import $item" >/dev/null 2>&1 && continue ;;
    link-aarch64)
      command -v aarch64-linux-gnu-g++ >/dev/null 2>&1 &&
        aarch64-linux-gnu-g++ -static -x c++ "$tmp/empty.cc" "$item" \
          -o "$tmp/a.out" >/dev/null 2>&1 && continue ;;
    file) [ -e "$item" ] && continue ;;
    *) continue ;;
  esac
  echo "missing: $item ($kind; $needed) -- apt-get install $package" >&2
  status=1
done <<EOF2
$(grep -v '^#' "$here/requirements.txt")
EOF2
exit "$status"

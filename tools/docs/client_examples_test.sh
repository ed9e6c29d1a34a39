#!/bin/bash
# docs/examples/unwind_process.py against a real unwindd on a scratch Unix
# socket: its frames must be the ones `unwind pid` prints for the same
# process (frame 0's address aside: a thread stopped in a system call may
# show the call's instruction or the one after it from one stop to the next).
set -euo pipefail
ws="$TEST_SRCDIR/$TEST_WORKSPACE"
# Under /tmp, not $TEST_TMPDIR: a Unix socket's path must fit in 108
# bytes, and Bazel's output base can be longer than that.
tmp=$(mktemp -d /tmp/unwindd-clients.XXXXXX)
sock="$tmp/unwindd.sock"
"$ws/service/unwindd" --listen="unix:$sock" --request-log=none 2> "$tmp/unwindd.log" &
server=$!
sleep 60 &
target=$!
trap 'kill $server $target 2>/dev/null || true; rm -rf "$tmp"' EXIT
for _ in $(seq 100); do [ -S "$sock" ] && break; sleep 0.1; done
[ -S "$sock" ] || { echo "unwindd did not create $sock"; cat "$tmp/unwindd.log"; exit 1; }
sleep 0.2  # let sleep(1) reach nanosleep
/usr/bin/python3 "$ws/docs/examples/unwind_process.py" "unix:$sock" "$target" \
  "$ws/tools/docs/python/proto" > "$tmp/python.txt"
"$ws/service/unwind" pid "$target" > "$tmp/cli.txt"
normalise() { grep -E '^(TID|#|stop:)' | sed -E 's/^#0  0x[0-9a-f]+ ([^+]*)\+0x[0-9a-f]+/#0  (frame 0) \1/'; }
normalise < "$tmp/cli.txt" > "$tmp/cli.frames"
normalise < "$tmp/python.txt" > "$tmp/python.frames"
cat "$tmp/python.txt"
if ! diff -u "$tmp/cli.frames" "$tmp/python.frames"; then
  echo "the Python client's frames differ from unwind pid's"; exit 1
fi
frames=$(grep -c '^#' "$tmp/python.frames")
[ "$frames" -ge 2 ] || { echo "only $frames frames"; exit 1; }
echo "unwind_process.py: $frames frames, equal to unwind pid's"

# The Go example cannot be compiled here (no Go gRPC module in an offline
# build): it must at least parse and be gofmt-clean.
go_example="$ws/docs/examples/go/main.go"
unformatted=$(gofmt -l -e "$go_example" 2>&1) || { echo "$unformatted"; echo "the Go example does not parse"; exit 1; }
[ -z "$unformatted" ] || { echo "the Go example is not gofmt-formatted: $unformatted"; exit 1; }
echo "go/main.go: parses, gofmt-clean"

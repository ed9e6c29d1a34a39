#!/bin/busybox sh
# /init of the live aarch64 guest (run.sh builds the initramfs around it).
# For every program in /fixtures: start it, wait for "ready" and for every
# thread to block in a system call, then, one tool after the other (each
# ptraces the process): `unwind pid` (JSON), the TracerPid of every thread
# afterwards, eu-stack, gdb (MI frame lists: they carry the PC of every
# frame, the signal trampoline's included), and the sampler `capture`
# (snapshot_text.h). Everything goes to the serial console between markers
# that live_test.cc parses:
#
#   UWD-LIVE begin kernel=6.1.0-56-arm64
#   UWD-LIVE hwcap paca=1 pacg=1 bti=1
#   UWD-LIVE fixture threads_c_O2_nofp_pac pid=123 threads=5
#   UWD-BLOCK unwind threads_c_O2_nofp_pac    ... tool stdout ...
#   UWD-BLOCK-END unwind threads_c_O2_nofp_pac rc=0
#   UWD-BLOCK unwind-stderr threads_c_O2_nofp_pac ... UWD-BLOCK-END ...
#   UWD-LIVE tracer threads_c_O2_nofp_pac after=unwind tid=124 tracerpid=0
#   UWD-BLOCK unwind-fp ... (frame-pointer builds: --sources=fp,eh_frame)
#   ... the same for eu-stack, gdb and capture ...
#   UWD-LIVE done threads_c_O2_nofp_pac
#   UWD-LIVE end fixtures=24 uptime=123.45
#
# Then it powers the machine off.
/bin/busybox --install -s /bin
export PATH=/bin:/sbin:/usr/bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev 2>/dev/null
mount -t tmpfs tmpfs /tmp
# gdb wants a home and a terminal type; nothing else is configured.
export HOME=/tmp TERM=dumb

echo "UWD-LIVE begin kernel=$(uname -r)"
features=$(grep -m1 '^Features' /proc/cpuinfo)
has() { case " $features " in *" $1 "*) echo 1 ;; *) echo 0 ;; esac; }
echo "UWD-LIVE hwcap paca=$(has paca) pacg=$(has pacg) bti=$(has bti)"

# block KIND NAME CMD...: CMD's stdout and stderr as two blocks.
block() {
  kind=$1 name=$2
  shift 2
  "$@" >/tmp/out 2>/tmp/err
  rc=$?
  echo "UWD-BLOCK $kind $name"
  cat /tmp/out
  echo "UWD-BLOCK-END $kind $name rc=$rc"
  echo "UWD-BLOCK $kind-stderr $name"
  cat /tmp/err
  echo "UWD-BLOCK-END $kind-stderr $name rc=$rc"
}

# tracers NAME PID AFTER: TracerPid of every thread (0: nobody ptraces it).
tracers() {
  for t in /proc/$2/task/*; do
    tp=$(sed -n 's/^TracerPid:[[:space:]]*//p' "$t/status")
    echo "UWD-LIVE tracer $1 after=$3 tid=${t##*/} tracerpid=$tp"
  done
}

# all_blocked PID: every thread is in a system call (/proc/TID/syscall
# starts with the call's number, not "running").
all_blocked() {
  for t in /proc/$1/task/*; do
    read -r nr rest <"$t/syscall" || return 1
    [ "$nr" = running ] && return 1
  done
  return 0
}

count=0
for f in /fixtures/*; do
  name=${f##*/}
  # A file of its own, made here before the fixture starts: with one file
  # for all, the first grep could run before the fixture's shell had
  # truncated it and read the last fixture's "ready".
  out=/tmp/fixture.$name.out
  : >"$out"
  "$f" >"$out" 2>&1 &
  pid=$!
  i=0
  while ! grep -q '^ready' "$out" && [ $i -lt 600 ]; do
    sleep 0.1
    i=$((i + 1))
  done
  i=0
  while ! all_blocked $pid && [ $i -lt 100 ]; do
    sleep 0.1
    i=$((i + 1))
  done
  echo "UWD-LIVE fixture $name pid=$pid threads=$(ls /proc/$pid/task | wc -l) ready=$(grep -c '^ready' "$out")"
  block unwind $name /bin/unwind pid $pid --format=json --max-frames=4096
  tracers $name $pid unwind
  # Frame-pointer builds: also through their {x29, x30} frame records first
  # (signed x30s included), CFI only where there is no record.
  case $name in
    *_fp*) block unwind-fp $name /bin/unwind pid $pid --format=json \
             --max-frames=4096 --sources=fp,eh_frame ;;
  esac
  block eu-stack $name eu-stack -n 0 -p $pid
  block gdb $name gdb -nx -batch -p $pid \
    -ex "set debuginfod enabled off" \
    -ex "set backtrace past-main on" -ex "set backtrace past-entry on" \
    -ex "set backtrace limit unlimited" \
    -ex 'thread apply all interpreter-exec mi "-stack-list-frames"'
  tracers $name $pid gdb
  # The sampler prints its own "UWD-SNAP begin/end" block.
  /bin/capture $pid 2>/tmp/err
  echo "UWD-LIVE capture $name rc=$?"
  cat /tmp/err
  tracers $name $pid capture
  kill -9 $pid
  wait $pid 2>/dev/null
  echo "UWD-LIVE done $name"
  count=$((count + 1))
done

echo "UWD-LIVE end fixtures=$count uptime=$(cut -d' ' -f1 /proc/uptime)"
sync
poweroff -f

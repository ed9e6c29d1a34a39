// `capture PID [--stack-bytes=N]`: a profiler-style sample of every thread of
// a live process, printed as snapshot_text.h lines. Built for aarch64
// (--config=aarch64) and run inside the qemu-system guest of run.sh, where
// the serial console is the only way out; live_test.cc unwinds the samples
// on the x86_64 host with proc::SnapshotTarget and checks that they give the
// frames `unwind pid` gave in the guest.
//
// The process is stopped through proc::AttachLive (PTRACE_SEIZE +
// PTRACE_INTERRUPT, registers from PTRACE_GETREGSET NT_PRSTATUS) and detached
// before anything is printed. While it is stopped this also reads
// NT_ARM_PAC_MASK with its own PTRACE_GETREGSET, so the test can check the
// mask LiveTarget reported against the kernel's.
#include <sys/ptrace.h>
#include <sys/uio.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <memory>
#include <string>

#include "absl/strings/numbers.h"
#include "absl/strings/match.h"
#include "absl/strings/strip.h"
#include "arch/aarch64/pac.h"
#include "proc/live_target.h"
#include "testdata/aarch64/live/snapshot_text.h"

namespace unwindd::testdata::live {
namespace {

// struct user_pac_mask (arch/arm64/include/uapi/asm/ptrace.h): two u64,
// data_mask then insn_mask, in the target's (little-endian) byte order.
std::optional<arch::PacMask> RawPacMask(pid_t tid) {
  alignas(8) std::array<uint8_t, arch::aarch64::kUserPacMaskSize> buf{};
  iovec iov = {buf.data(), buf.size()};
  if (ptrace(PTRACE_GETREGSET, tid,
             reinterpret_cast<void*>(uintptr_t{arch::aarch64::kNtArmPacMask}),
             &iov) != 0 ||
      iov.iov_len != buf.size()) {
    std::fprintf(stderr, "capture: NT_ARM_PAC_MASK of %d: %s\n", tid,
                 std::strerror(errno));
    return std::nullopt;
  }
  arch::PacMask m;
  std::memcpy(&m.data_mask, buf.data(), 8);
  std::memcpy(&m.insn_mask, buf.data() + 8, 8);
  return m;
}

absl::StatusOr<Capture> CaptureProcess(pid_t pid, uint64_t stack_bytes) {
  absl::StatusOr<std::unique_ptr<proc::Target>> target = proc::AttachLive(pid, {});
  if (!target.ok()) return target.status();
  proc::Target& t = **target;
  Capture c;
  c.pid = pid;
  c.pac_target = t.pac_mask();
  c.pac_raw = RawPacMask(pid);
  c.mappings = t.mappings();
  for (const proc::Mapping& m : c.mappings) {
    if (m.path != "[vdso]") continue;
    c.vdso.resize(m.end - m.start);
    c.vdso_address = m.start;
    if (!t.memory().ReadFully(m.start, absl::MakeSpan(c.vdso)).ok()) c.vdso.clear();
  }
  for (pid_t tid : t.Threads()) {
    absl::StatusOr<arch::RegisterSet> regs = t.InitialRegisters(tid);
    if (!regs.ok()) {
      std::fprintf(stderr, "capture: thread %d: %s\n", tid,
                   std::string(regs.status().message()).c_str());
      continue;
    }
    CapturedThread ct;
    ct.tid = tid;
    ct.registers = *regs;
    ct.stack_address = regs->sp();
    // From SP to the end of its mapping, at most stack_bytes (perf's
    // PERF_SAMPLE_STACK_USER copies the same way, from SP up).
    uint64_t end = ct.stack_address;
    for (const proc::Mapping& m : c.mappings) {
      if (m.Contains(ct.stack_address)) {
        end = ct.stack_address + std::min(stack_bytes, m.end - ct.stack_address);
      }
    }
    ct.stack.resize(end - ct.stack_address);
    ct.stack.resize(t.memory().Read(ct.stack_address, absl::MakeSpan(ct.stack)));
    c.threads.push_back(std::move(ct));
  }
  return c;  // ~Target detaches from every thread
}

int Main(int argc, char** argv) {
  pid_t pid = 0;
  uint64_t stack_bytes = 256 << 10;
  for (int i = 1; i < argc; ++i) {
    absl::string_view a = argv[i];
    if (absl::ConsumePrefix(&a, "--stack-bytes=")) {
      if (!absl::SimpleAtoi(a, &stack_bytes) || stack_bytes > kMaxCaptureBytes) {
        std::fprintf(stderr, "capture: bad --stack-bytes\n");
        return 2;
      }
    } else if (pid != 0 || !absl::SimpleAtoi(a, &pid) || pid <= 0) {
      std::fprintf(stderr, "usage: capture PID [--stack-bytes=N]\n");
      return 2;
    }
  }
  if (pid == 0) {
    std::fprintf(stderr, "usage: capture PID [--stack-bytes=N]\n");
    return 2;
  }
  absl::StatusOr<Capture> c = CaptureProcess(pid, stack_bytes);
  if (!c.ok()) {
    std::fprintf(stderr, "capture: %s\n", std::string(c.status().message()).c_str());
    return 1;
  }
  std::cout << FormatCapture(*c) << std::flush;
  return 0;
}

}  // namespace
}  // namespace unwindd::testdata::live

int main(int argc, char** argv) {
  return unwindd::testdata::live::Main(argc, argv);
}

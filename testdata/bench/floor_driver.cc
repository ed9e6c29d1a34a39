// The least any out-of-process unwinder must pay per stack of a stopped
// thread: one PTRACE_GETREGSET for the registers and one process_vm_readv
// of the stack (here 512 bytes, less than any real walk reads). compare.sh
// prints it beside the unwinders, so a ratio that cannot reach 10x on a
// shallow stack shows why: the two system calls cost more than a tenth of
// the peer's whole unwind.
#include <elf.h>
#include <sys/ptrace.h>
#include <sys/uio.h>
#include <sys/user.h>

#include <cstdio>

#include "testdata/bench/driver_common.h"

int main(int argc, char** argv) {
  unwindd::bench::DriverArgs a = unwindd::bench::ParseDriverArgs(argc, argv);
  unwindd::bench::StopThread(a.tid);
  user_regs_struct regs;
  iovec regs_iov = {&regs, sizeof(regs)};
  static char stack[512];
  uint64_t start = unwindd::bench::NowNs();
  for (int i = 0; i < a.iterations; ++i) {
    if (ptrace(PTRACE_GETREGSET, a.tid, reinterpret_cast<void*>(NT_PRSTATUS),
               &regs_iov) != 0) {
      std::perror("PTRACE_GETREGSET");
      return 1;
    }
    iovec local = {stack, sizeof(stack)};
    iovec remote = {reinterpret_cast<void*>(regs.rsp), sizeof(stack)};
    if (process_vm_readv(a.pid, &local, 1, &remote, 1, 0) <= 0) {
      std::perror("process_vm_readv");
      return 1;
    }
  }
  uint64_t total = unwindd::bench::NowNs() - start;
  unwindd::bench::ResumeThread(a.tid);
  unwindd::bench::PrintResult({}, total, a.iterations);
  return 0;
}

// A proc::Target for the calling thread of the current process, for tests
// that unwind themselves and compare with an independent unwinder (libgcc's,
// through glibc's backtrace()).
//
//   arch::RegisterSet regs;
//   UNWINDD_CAPTURE_X86_64_REGISTERS(regs);
//   SelfTarget target(regs);
//   ProcessStacks s = UnwindTarget(target, cache, {});
#ifndef UNWINDD_UNWINDER_TESTING_SELF_TARGET_H_
#define UNWINDD_UNWINDER_TESTING_SELF_TARGET_H_

#include <unistd.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "arch/register_set.h"
#include "memory/factories.h"
#include "proc/maps.h"
#include "proc/target.h"

namespace unwindd::unwinder::testing {

// Stores the thread's general registers, as they are at this very
// instruction, into `regs` (DWARF numbering). Storing through one pointer
// register keeps every value consistent with the captured rip and rsp, even
// the register that holds the pointer.
#define UNWINDD_CAPTURE_X86_64_REGISTERS(regs)                                 \
  do {                                                                         \
    uint64_t unwindd_raw_[17];                                                 \
    asm volatile(                                                              \
        "movq %%rax, 0(%0)\n\tmovq %%rdx, 8(%0)\n\tmovq %%rcx, 16(%0)\n\t"     \
        "movq %%rbx, 24(%0)\n\tmovq %%rsi, 32(%0)\n\tmovq %%rdi, 40(%0)\n\t"   \
        "movq %%rbp, 48(%0)\n\tmovq %%rsp, 56(%0)\n\tmovq %%r8, 64(%0)\n\t"    \
        "movq %%r9, 72(%0)\n\tmovq %%r10, 80(%0)\n\tmovq %%r11, 88(%0)\n\t"    \
        "movq %%r12, 96(%0)\n\tmovq %%r13, 104(%0)\n\tmovq %%r14, 112(%0)\n\t" \
        "movq %%r15, 120(%0)\n\t"                                              \
        "leaq 0(%%rip), %%rax\n\tmovq %%rax, 128(%0)\n\t"                      \
        :                                                                      \
        : "r"(unwindd_raw_)                                                    \
        : "rax", "memory");                                                    \
    (regs) = ::unwindd::arch::RegisterSet(::unwindd::arch::Arch::kX86_64);     \
    for (int unwindd_i_ = 0; unwindd_i_ < 17; ++unwindd_i_) {                  \
      (regs).Set(unwindd_i_, unwindd_raw_[unwindd_i_]);                        \
    }                                                                          \
  } while (0)

class SelfTarget : public proc::Target {
 public:
  explicit SelfTarget(const arch::RegisterSet& regs)
      : regs_(regs),
        memory_(memory::CreateProcessMemory(getpid())),
        mappings_(proc::ReadMaps(getpid()).value_or(std::vector<proc::Mapping>{})) {}

  arch::Arch arch() const override { return arch::Arch::kX86_64; }
  pid_t pid() const override { return getpid(); }
  std::vector<pid_t> Threads() const override { return {gettid()}; }
  absl::StatusOr<arch::RegisterSet> InitialRegisters(pid_t) override { return regs_; }
  memory::Memory& memory() override { return *memory_; }
  const std::vector<proc::Mapping>& mappings() const override { return mappings_; }
  std::vector<std::string> FileCandidates(const proc::Mapping& m) const override {
    if (!m.IsFileBacked()) return {};
    return {m.path};
  }

 private:
  arch::RegisterSet regs_;
  std::unique_ptr<memory::Memory> memory_;
  std::vector<proc::Mapping> mappings_;
};

}  // namespace unwindd::unwinder::testing

#endif  // UNWINDD_UNWINDER_TESTING_SELF_TARGET_H_

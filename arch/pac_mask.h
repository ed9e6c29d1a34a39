// The pointer-authentication masks a target may report (aarch64's
// NT_ARM_PAC_MASK), as a plain value that generic code (targets, the step
// loop) can hold without knowing aarch64. See arch/aarch64/pac.h.
#ifndef UNWINDD_ARCH_PAC_MASK_H_
#define UNWINDD_ARCH_PAC_MASK_H_

#include <cstdint>

namespace unwindd::arch {

// struct user_pac_mask (arch/arm64/include/uapi/asm/ptrace.h): the bits of
// a data / instruction pointer that hold the PAC.
struct PacMask {
  uint64_t data_mask = 0;
  uint64_t insn_mask = 0;

  friend bool operator==(const PacMask& a, const PacMask& b) {
    return a.data_mask == b.data_mask && a.insn_mask == b.insn_mask;
  }
};

}  // namespace unwindd::arch

#endif  // UNWINDD_ARCH_PAC_MASK_H_

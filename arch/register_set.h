// Register values of one frame, indexed by DWARF register number, with a
// validity bit per register (a register whose value is unknown, e.g. one the
// CFI marks undefined, is invalid rather than zero).
//
//   RegisterSet regs(Arch::kX86_64);
//   regs.Set(7, sp);
//   if (regs.Valid(6)) fp = regs.Get(6);
#ifndef UNWINDD_ARCH_REGISTER_SET_H_
#define UNWINDD_ARCH_REGISTER_SET_H_

#include <array>
#include <cstdint>

#include "arch/arch.h"

namespace unwindd::arch {

class RegisterSet {
 public:
  RegisterSet() = default;
  explicit RegisterSet(Arch arch) : arch_(arch) {}

  Arch arch() const { return arch_; }
  const ArchInfo& info() const { return GetArchInfo(arch_); }

  bool Valid(int reg) const {
    return reg >= 0 && reg < kMaxRegisters && ((valid_ >> reg) & 1);
  }
  // The value, or 0 if invalid or out of range.
  uint64_t Get(int reg) const { return Valid(reg) ? values_[reg] : 0; }
  // Ignored for registers we do not track.
  void Set(int reg, uint64_t value) {
    if (reg < 0 || reg >= kMaxRegisters) return;
    values_[reg] = value & mask();
    valid_ |= uint64_t{1} << reg;
  }
  void Invalidate(int reg) {
    if (reg >= 0 && reg < kMaxRegisters) valid_ &= ~(uint64_t{1} << reg);
  }
  void Clear() { valid_ = 0; }
  // No register valid, of `arch`: as RegisterSet(arch) without rewriting
  // the values (nothing reads an invalid register's).
  void Reset(Arch arch) {
    arch_ = arch;
    valid_ = 0;
  }
  // Invalidates every register whose bit is clear in `bits`.
  void KeepValid(uint64_t bits) { valid_ &= bits; }
  // The stored value of a register the caller knows is valid and in range
  // (the hot path, after its own Valid check).
  uint64_t GetUnchecked(int reg) const { return values_[reg]; }
  // Sets a register in range to a value already within the address width.
  void SetUnchecked(int reg, uint64_t value) {
    values_[reg] = value;
    valid_ |= uint64_t{1} << reg;
  }

  uint64_t pc() const { return Get(info().pc); }
  uint64_t sp() const { return Get(info().sp); }
  void set_pc(uint64_t v) { Set(info().pc, v); }
  void set_sp(uint64_t v) { Set(info().sp, v); }

  // Values are truncated to the target's pointer width (x86: 32 bits).
  uint64_t mask() const {
    return info().address_size == 4 ? 0xffffffffu : ~uint64_t{0};
  }

 private:
  Arch arch_ = Arch::kX86_64;
  uint64_t valid_ = 0;
  std::array<uint64_t, kMaxRegisters> values_{};
};

}  // namespace unwindd::arch

#endif  // UNWINDD_ARCH_REGISTER_SET_H_

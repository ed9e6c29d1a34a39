#include "arch/pac.h"

#include "arch/aarch64/pac.h"

namespace unwindd::arch {

uint64_t CodeAddressMask(Arch arch, const std::optional<PacMask>& pac) {
  switch (arch) {
    case Arch::kAArch64:
      return aarch64::CodeAddressMask(pac);
    case Arch::kX86_64:
    case Arch::kX86:
      return 0;
  }
  return 0;
}

uint64_t StripCodeAddress(Arch arch, uint64_t addr, uint64_t mask) {
  if (mask == 0) return addr;
  switch (arch) {
    case Arch::kAArch64:
      return aarch64::StripCode(addr, mask);
    case Arch::kX86_64:
    case Arch::kX86:
      return addr;
  }
  return addr;
}

}  // namespace unwindd::arch

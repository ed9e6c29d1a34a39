#include "arch/pac.h"

#include "arch/arch_ops.h"

namespace unwindd::arch {

uint64_t CodeAddressMask(Arch arch, const std::optional<PacMask>& pac) {
  const ArchOps& ops = GetArchOps(arch);
  return ops.code_address_mask != nullptr ? ops.code_address_mask(pac) : 0;
}

uint64_t StripCodeAddress(Arch arch, uint64_t addr, uint64_t mask) {
  if (mask == 0) return addr;
  const ArchOps& ops = GetArchOps(arch);
  return ops.strip_code_address != nullptr ? ops.strip_code_address(addr, mask)
                                           : addr;
}

}  // namespace unwindd::arch

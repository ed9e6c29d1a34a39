// Removing non-address bits (aarch64 pointer-authentication codes) from code
// addresses, for any target architecture: the step loop calls this on every
// recovered return address without knowing which arch signs them.
//
//   const uint64_t mask = CodeAddressMask(regs.arch(), target.pac_mask());
//   caller.set_pc(StripCodeAddress(regs.arch(), caller.pc(), mask));
//
// The rule is gdb's and libunwind's: on aarch64 always strip (a return
// address is signed exactly when Row::ra_signed or SFrame's mangled-RA bit
// says so, but stripping an unsigned user address changes nothing, and
// stripping always also covers PACs the unwind info does not mention, such
// as a signed x30 restored from a signal frame).
#ifndef UNWINDD_ARCH_PAC_H_
#define UNWINDD_ARCH_PAC_H_

#include <cstdint>
#include <optional>

#include "arch/arch.h"
#include "arch/pac_mask.h"

namespace unwindd::arch {

// The non-address bits of a code address of `arch`, given what the target
// reported (nullopt: nothing; aarch64 then assumes a 48-bit address space).
// 0 on x86 and x86_64, which have no such bits.
uint64_t CodeAddressMask(Arch arch, const std::optional<PacMask>& pac);

// `addr` without the bits in `mask` (aarch64's bit-55 rule); unchanged when
// mask is 0.
uint64_t StripCodeAddress(Arch arch, uint64_t addr, uint64_t mask);

}  // namespace unwindd::arch

#endif  // UNWINDD_ARCH_PAC_H_

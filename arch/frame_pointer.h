// The frame-pointer chain of each ABI, as data: where a frame record sits
// relative to the frame pointer, so a frame-pointer unwinder can walk any
// target arch without knowing it.
//
//   const FramePointerRule& r = GetFramePointerRule(regs.arch());
//   uint64_t fp = regs.Get(r.fp);
//   caller_fp = Read(fp + r.saved_fp_offset);  caller_pc = Read(fp + r.ra_offset);
//   caller_sp = fp + r.caller_sp_offset;
//
// x86_64 / i386 (`push %rbp; mov %rsp,%rbp`): the record {saved rbp, return
// address} is at the *top* of the frame, so the caller's sp is exactly past
// it. aarch64 (AAPCS64 §6.2.3, `stp x29, x30, [sp, #-N]!; mov x29, sp`):
// the record {saved x29, saved x30} is at the *bottom* of the frame, so
// fp + 16 is only a lower bound of the caller's sp (what framehop and the
// kernel's unwinder use too; no rule of the caller's frame depends on it
// except through its own CFA). aarch64 return addresses read from a record
// may be PAC-signed: strip them (arch/pac.h).
#ifndef UNWINDD_ARCH_FRAME_POINTER_H_
#define UNWINDD_ARCH_FRAME_POINTER_H_

#include <cstdint>

#include "arch/arch.h"

namespace unwindd::arch {

struct FramePointerRule {
  int fp;                    // DWARF number of the frame pointer
  int64_t saved_fp_offset;   // caller's fp is at fp + this
  int64_t ra_offset;         // return address is at fp + this
  int64_t caller_sp_offset;  // caller's sp is fp + this (see above)
  // Leaf frames (frame 0 only): where the return address lives before a
  // function has pushed its record: a register (aarch64 x30) or -1 if it
  // is on the stack at sp (x86).
  int leaf_ra_register;
  // caller_sp_offset gives the caller's exact sp (x86: the record is at the
  // top of the frame) or only a lower bound (aarch64: at the bottom).
  bool caller_sp_exact;
};

const FramePointerRule& GetFramePointerRule(Arch arch);

}  // namespace unwindd::arch

#endif  // UNWINDD_ARCH_FRAME_POINTER_H_

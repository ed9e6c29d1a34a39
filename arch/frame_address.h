// Where a frame is, as the unwinder learned it: either the exact address of
// the instruction the thread was executing (frame 0, and the frame a signal
// interrupted), or a return address read from a stack or register, which
// points after a call (framehop's FrameAddress { InstructionPointer,
// ReturnAddress }). Whether to look up "address - 1" is decided here and
// nowhere else.
//
//   FrameAddress a = FrameAddress::ReturnAddress(ra);
//   row = module.FindRow(a.Rebased(load_bias), policy);   // file addresses
//   ... a.LookupAddress() ...   // ra - 1: inside the call instruction
//
// The address space (target or file) is the caller's to track; Rebased()
// moves between them.
#ifndef UNWINDD_ARCH_FRAME_ADDRESS_H_
#define UNWINDD_ARCH_FRAME_ADDRESS_H_

#include <cstdint>

namespace unwindd::arch {

class FrameAddress {
 public:
  // Where the thread is: frame 0, or the interrupted PC a signal frame holds.
  static constexpr FrameAddress InstructionPointer(uint64_t pc) {
    return FrameAddress(pc, false);
  }
  // A caller's return address: the instruction after its call.
  static constexpr FrameAddress ReturnAddress(uint64_t ra) {
    return FrameAddress(ra, true);
  }

  // The address as the thread has it (what frames print).
  constexpr uint64_t address() const { return address_; }
  constexpr bool is_return_address() const { return return_address_; }
  constexpr bool is_instruction_pointer() const { return !return_address_; }

  // The address whose unwind information describes this frame. A return
  // address may point past the last instruction of a call to a noreturn
  // function, or to the first instruction of another function or FDE, so
  // its call instruction (address - 1) is looked up instead.
  constexpr uint64_t LookupAddress() const {
    return return_address_ && address_ != 0 ? address_ - 1 : address_;
  }

  // The same kind of address, `bias` lower (target -> file address space:
  // file address = target address - load bias).
  constexpr FrameAddress Rebased(uint64_t bias) const {
    return FrameAddress(address_ - bias, return_address_);
  }

  friend constexpr bool operator==(const FrameAddress& a, const FrameAddress& b) {
    return a.address_ == b.address_ && a.return_address_ == b.return_address_;
  }

 private:
  constexpr FrameAddress(uint64_t address, bool return_address)
      : address_(address), return_address_(return_address) {}

  uint64_t address_;
  bool return_address_;
};

}  // namespace unwindd::arch

#endif  // UNWINDD_ARCH_FRAME_ADDRESS_H_

#include "arch/prologue.h"

#include "arch/arch_ops.h"

namespace unwindd::arch {

bool KeepsFramePointer(Arch arch, absl::Span<const uint8_t> code, FrameAddress at) {
  return GetArchOps(arch).keeps_frame_pointer(code, at);
}

}  // namespace unwindd::arch

#include "arch/prologue.h"

#include "arch/arch_ops.h"

namespace unwindd::arch {

bool KeepsFramePointer(Arch arch, absl::Span<const uint8_t> code,
                       uint64_t pc_offset, bool exact_pc) {
  return GetArchOps(arch).keeps_frame_pointer(code, pc_offset, exact_pc);
}

}  // namespace unwindd::arch

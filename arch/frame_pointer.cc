#include "arch/frame_pointer.h"

#include "arch/arch_ops.h"

namespace unwindd::arch {

const FramePointerRule& GetFramePointerRule(Arch arch) {
  return GetArchOps(arch).frame_pointer;
}

}  // namespace unwindd::arch

#include "arch/frame_pointer.h"

namespace unwindd::arch {
namespace {

constexpr FramePointerRule kX86_64Rule = {/*fp=*/6, 0, 8, 16, -1};
constexpr FramePointerRule kX86Rule = {/*fp=*/5, 0, 4, 8, -1};
constexpr FramePointerRule kAArch64Rule = {/*fp=*/29, 0, 8, 16,
                                           /*leaf_ra_register=*/30};

}  // namespace

const FramePointerRule& GetFramePointerRule(Arch arch) {
  switch (arch) {
    case Arch::kX86_64:
      return kX86_64Rule;
    case Arch::kX86:
      return kX86Rule;
    case Arch::kAArch64:
      return kAArch64Rule;
  }
  return kX86_64Rule;
}

}  // namespace unwindd::arch

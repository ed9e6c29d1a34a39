// One frame of a walk, as UnwindRegisters and UnwindTarget give it.
#ifndef UNWINDD_UNWINDER_FRAME_H_
#define UNWINDD_UNWINDER_FRAME_H_

#include <cstdint>

#include "unwinder/method.h"

namespace unwindd::unwinder {

struct Frame {
  uint64_t pc = 0;
  uint64_t sp = 0;
  Method method = Method::kInitial;
  // -1 if no module maps pc; else, from UnwindTarget, an index into
  // ProcessStacks::modules, and from UnwindRegisters, one into the
  // AddressSpace's modules().
  int module = -1;
  uint64_t rel_pc = 0;   // pc - load bias (file address), when module >= 0
  // pc's offset in the mapped file (FileOffsetOf), when module >= 0; set by
  // UnwindTarget, not by UnwindRegisters.
  uint64_t file_offset = 0;
};

}  // namespace unwindd::unwinder

#endif  // UNWINDD_UNWINDER_FRAME_H_

// How a frame was recovered, and why a walk stopped: the names of the output
// contract (DESIGN.md), shared by the CLI's JSON and the gRPC enums.
#ifndef UNWINDD_UNWINDER_METHOD_H_
#define UNWINDD_UNWINDER_METHOD_H_

#include <cstdint>

#include "absl/strings/string_view.h"

namespace unwindd::unwinder {

enum class Method : uint8_t {
  kInitial,       // frame 0: the thread's registers
  kEhFrame,       // .eh_frame CFI
  kDebugFrame,    // .debug_frame CFI
  kSframe,        // .sframe
  kFramePointer,  // frame-pointer chain
  kSignal,        // restored from a kernel signal frame
};

enum class StopReason {
  kEndOfStack,     // the return address is undefined (outermost frame) or 0
  kNoUnwindInfo,   // no module or no unwind information for the PC
  kMemoryError,    // the stack or a saved register could not be read
  kMaxFrames,      // the frame limit was reached
  kLoop,           // no progress: the same frame again, or the CFA went down
  kBadUnwindInfo,  // malformed or unsupported unwind information
  kThreadGone,     // the thread exited before it could be unwound
};

absl::string_view MethodName(Method m);
absl::string_view StopReasonName(StopReason r);

}  // namespace unwindd::unwinder

#endif  // UNWINDD_UNWINDER_METHOD_H_

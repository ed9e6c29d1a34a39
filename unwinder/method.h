// How a frame was recovered, and why a walk stopped: the names of the output
// contract (DESIGN.md), shared by the CLI's JSON and the gRPC enums, and
// the one mapping from an error status to a stop reason.
//
//   out.stop = StopForStatus(StopPhase::kStep, applied.status());
#ifndef UNWINDD_UNWINDER_METHOD_H_
#define UNWINDD_UNWINDER_METHOD_H_

#include <cstdint>

#include "absl/status/status.h"
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
  kCancelled,      // the caller gave up (cancelled, deadline, shutdown)
};

absl::string_view MethodName(Method m);
absl::string_view StopReasonName(StopReason r);

// What the walk was doing when an error came back.
enum class StopPhase : uint8_t {
  kRegisters,  // getting the thread's initial registers from the target
  kStep,       // finding and applying unwind information for a frame
};

// Why a walk stops on a non-OK `s` (DESIGN.md "Errors" gives the codes):
//
//   code                        kRegisters       kStep
//   Cancelled, DeadlineExceeded cancelled        cancelled
//   NotFound                    thread_gone      no_unwind_info
//                               (it exited)      (no module, FDE or source)
//   OutOfRange                  memory_error     memory_error (unreadable)
//   anything else               memory_error     bad_unwind_info (DataLoss,
//                               (the registers   Unimplemented, a row whose
//                               could not be     CFA rule is missing or needs
//                               read)            a register without a value)
StopReason StopForStatus(StopPhase phase, const absl::Status& s);

}  // namespace unwindd::unwinder

#endif  // UNWINDD_UNWINDER_METHOD_H_

#include "unwinder/method.h"

namespace unwindd::unwinder {

absl::string_view MethodName(Method m) {
  switch (m) {
    case Method::kInitial:
      return "initial";
    case Method::kEhFrame:
      return "eh_frame";
    case Method::kDebugFrame:
      return "debug_frame";
    case Method::kSframe:
      return "sframe";
    case Method::kFramePointer:
      return "frame_pointer";
    case Method::kSignal:
      return "signal";
  }
  return "unknown";
}

absl::string_view StopReasonName(StopReason r) {
  switch (r) {
    case StopReason::kEndOfStack:
      return "end_of_stack";
    case StopReason::kNoUnwindInfo:
      return "no_unwind_info";
    case StopReason::kMemoryError:
      return "memory_error";
    case StopReason::kMaxFrames:
      return "max_frames";
    case StopReason::kLoop:
      return "loop";
    case StopReason::kBadUnwindInfo:
      return "bad_unwind_info";
    case StopReason::kThreadGone:
      return "thread_gone";
    case StopReason::kCancelled:
      return "cancelled";
  }
  return "unknown";
}

StopReason StopForStatus(StopPhase phase, const absl::Status& s) {
  switch (s.code()) {
    case absl::StatusCode::kCancelled:
    case absl::StatusCode::kDeadlineExceeded:
      return StopReason::kCancelled;
    case absl::StatusCode::kNotFound:
      return phase == StopPhase::kRegisters ? StopReason::kThreadGone
                                            : StopReason::kNoUnwindInfo;
    case absl::StatusCode::kOutOfRange:
      return StopReason::kMemoryError;
    default:
      return phase == StopPhase::kRegisters ? StopReason::kMemoryError
                                            : StopReason::kBadUnwindInfo;
  }
}

}  // namespace unwindd::unwinder

// Which unwind-info sources the step loop may use, and in which order: the
// `--sources=LIST` of the CLI and UnwindOptions::sources of the API.
//
//   absl::StatusOr<SourcePolicy> p = SourcePolicy::Parse("sframe,eh_frame");
//   for (Source s : p->sources()) ...   // kSframe, then kEhFrame
//
// For each frame, the module's sources are tried in policy order and the
// first that covers the PC answers; the frame's Method names it. The default
// is eh_frame, debug_frame, sframe, fp: the compiler's CFI first, SFrame
// where there is no CFI, frame pointers where there is neither.
#ifndef UNWINDD_UNWINDER_SOURCE_POLICY_H_
#define UNWINDD_UNWINDER_SOURCE_POLICY_H_

#include <array>
#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"

namespace unwindd::unwinder {

enum class Source : uint8_t {
  kEhFrame,       // .eh_frame (through .eh_frame_hdr when present)
  kDebugFrame,    // .debug_frame
  kSframe,        // .sframe (SFrame v1, v2, v3)
  kFramePointer,  // the frame-pointer chain ("fp")
};

// "eh_frame", "debug_frame", "sframe", "fp".
absl::string_view SourceName(Source s);

class SourcePolicy {
 public:
  static constexpr int kMaxSources = 4;

  // eh_frame, debug_frame, sframe, fp.
  SourcePolicy();

  // A comma-separated, ordered, non-empty list of distinct source names.
  // InvalidArgument naming the offending entry otherwise.
  static absl::StatusOr<SourcePolicy> Parse(absl::string_view list);
  // The given sources in order (duplicates dropped). For tests and callers
  // that build a policy in code.
  static SourcePolicy Of(absl::Span<const Source> sources);

  absl::Span<const Source> sources() const {
    return absl::MakeConstSpan(sources_.data(), size_);
  }
  bool Contains(Source s) const;
  // The sources that come after `s` (all of them if `s` is not listed).
  SourcePolicy After(Source s) const;
  // A small number unique to this ordered list, for cache keys.
  uint16_t Code() const;
  // "eh_frame,debug_frame,sframe,fp".
  std::string ToString() const;

  friend bool operator==(const SourcePolicy& a, const SourcePolicy& b) {
    return a.Code() == b.Code();
  }

 private:
  std::array<Source, kMaxSources> sources_{};
  uint8_t size_ = 0;
};

}  // namespace unwindd::unwinder

#endif  // UNWINDD_UNWINDER_SOURCE_POLICY_H_

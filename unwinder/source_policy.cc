#include "unwinder/source_policy.h"

#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"

namespace unwindd::unwinder {
namespace {

constexpr Source kAll[] = {Source::kEhFrame, Source::kDebugFrame,
                           Source::kSframe, Source::kFramePointer};

}  // namespace

absl::string_view SourceName(Source s) {
  switch (s) {
    case Source::kEhFrame:
      return "eh_frame";
    case Source::kDebugFrame:
      return "debug_frame";
    case Source::kSframe:
      return "sframe";
    case Source::kFramePointer:
      return "fp";
  }
  return "unknown";
}

SourcePolicy::SourcePolicy() {
  for (Source s : kAll) sources_[size_++] = s;
}

SourcePolicy SourcePolicy::Of(absl::Span<const Source> sources) {
  SourcePolicy p;
  p.size_ = 0;
  for (Source s : sources) {
    if (p.Contains(s) || p.size_ >= kMaxSources) continue;
    p.sources_[p.size_++] = s;
  }
  return p;
}

absl::StatusOr<SourcePolicy> SourcePolicy::Parse(absl::string_view list) {
  std::vector<Source> out;
  for (absl::string_view name : absl::StrSplit(list, ',')) {
    const Source* found = nullptr;
    for (const Source& s : kAll) {
      if (SourceName(s) == name) found = &s;
    }
    if (found == nullptr) {
      return absl::InvalidArgumentError(
          absl::StrCat("unknown unwind source '", name,
                       "' (choose from eh_frame, debug_frame, sframe, fp)"));
    }
    for (Source s : out) {
      if (s == *found) {
        return absl::InvalidArgumentError(
            absl::StrCat("unwind source '", name, "' listed twice"));
      }
    }
    out.push_back(*found);
  }
  return Of(out);
}

bool SourcePolicy::Contains(Source s) const {
  for (Source t : sources()) {
    if (t == s) return true;
  }
  return false;
}

SourcePolicy SourcePolicy::After(Source s) const {
  // Written in place: a step that tries the next source calls this, and a
  // vector here was an allocation each time.
  SourcePolicy rest;
  rest.size_ = 0;
  bool seen = !Contains(s);
  for (Source t : sources()) {
    if (seen) rest.sources_[rest.size_++] = t;
    if (t == s) seen = true;
  }
  return rest;
}

uint16_t SourcePolicy::Code() const {
  // Base-5 digits: 0 ends the list, 1..4 name a source.
  uint16_t code = 0;
  for (Source s : sources()) code = code * 5 + static_cast<uint16_t>(s) + 1;
  return code;
}

std::string SourcePolicy::ToString() const {
  return absl::StrJoin(sources(), ",", [](std::string* out, Source s) {
    absl::StrAppend(out, SourceName(s));
  });
}

}  // namespace unwindd::unwinder

#include "service/cli/profile/profile.h"

#include <algorithm>
#include <limits>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_format.h"

namespace unwindd::profile {
namespace {

bool IsHex(absl::string_view s) {
  return std::all_of(s.begin(), s.end(), [](char c) {
    return absl::ascii_isxdigit(static_cast<unsigned char>(c));
  });
}

bool AddOverflows(int64_t a, int64_t b) {
  int64_t sum;
  return __builtin_add_overflow(a, b, &sum);
}

}  // namespace

Profile::Profile(ValueType weight, ProfileLimits limits)
    : weight_type_(std::move(weight)), limits_(limits) {}

absl::StatusOr<int> Profile::AddModule(const Module& module) {
  if (module.start >= module.limit) {
    return absl::InvalidArgumentError(
        absl::StrFormat("module %s: empty address range [0x%x, 0x%x)",
                        module.path, module.start, module.limit));
  }
  if (module.build_id.size() % 2 != 0 || !IsHex(module.build_id)) {
    return absl::InvalidArgumentError(
        absl::StrFormat("module %s: build-id \"%s\" is not an even number of "
                        "hex digits",
                        module.path, absl::CHexEscape(module.build_id)));
  }
  Module normalized = module;
  absl::AsciiStrToLower(&normalized.build_id);
  if (auto it = module_index_.find(normalized); it != module_index_.end()) {
    return it->second;
  }
  if (modules_.size() >= limits_.max_modules) {
    return absl::ResourceExhaustedError(
        absl::StrFormat("more than %u modules", limits_.max_modules));
  }
  const int index = static_cast<int>(modules_.size());
  modules_.push_back(normalized);
  module_index_.emplace(std::move(normalized), index);
  return index;
}

absl::Status Profile::CheckFrame(const Frame& frame, bool kernel) const {
  if (frame.return_address && frame.address == 0) {
    return absl::InvalidArgumentError("a return address of 0");
  }
  if (frame.module == kNoModule) return absl::OkStatus();
  if (frame.module < 0 ||
      static_cast<size_t>(frame.module) >= modules_.size() ||
      frame.module == kernel_module_) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "frame 0x%x refers to module %d, which AddModule did not return",
        frame.address, frame.module));
  }
  const Module& m = modules_[frame.module];
  const uint64_t lookup = frame.LookupAddress();
  if (lookup < m.start || lookup >= m.limit) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s frame 0x%x (looked up at 0x%x) is outside its module %s "
        "[0x%x, 0x%x)",
        kernel ? "kernel" : "user", frame.address, lookup, m.path, m.start,
        m.limit));
  }
  return absl::OkStatus();
}

void Profile::KernelModule(uint64_t lo, uint64_t hi) {
  // limit is exclusive; the top address of the address space cannot be
  // covered, and pprof does not mind a location on its mapping's limit.
  const uint64_t limit =
      hi == std::numeric_limits<uint64_t>::max() ? hi : hi + 1;
  if (kernel_module_ == kNoModule) {
    kernel_module_ = static_cast<int>(modules_.size());
    Module m;
    m.path = kKernelModulePath;
    m.start = lo;
    m.limit = limit;
    m.file_found = false;
    // Not in module_index_: its range grows, and no caller can name it.
    modules_.push_back(std::move(m));
  } else {
    Module& m = modules_[kernel_module_];
    m.start = std::min(m.start, lo);
    m.limit = std::max(m.limit, limit);
  }
}

absl::Status Profile::AddSample(const ThreadLabels& thread,
                                absl::Span<const Frame> user_frames,
                                absl::Span<const Frame> kernel_frames,
                                const SampleValues& values, size_t* stack) {
  // Everything is checked before anything changes, so that a failed call
  // leaves the profile as it was.
  if (absl::Status s = CheckValues(values); !s.ok()) return s;
  const size_t depth = user_frames.size() + kernel_frames.size();
  if (depth > limits_.max_depth) {
    return absl::ResourceExhaustedError(absl::StrFormat(
        "a stack of %u frames (more than %u)", depth, limits_.max_depth));
  }
  bool implicit_kernel = false;
  uint64_t kernel_lo = std::numeric_limits<uint64_t>::max();
  uint64_t kernel_hi = 0;
  for (const Frame& f : kernel_frames) {
    if (absl::Status s = CheckFrame(f, /*kernel=*/true); !s.ok()) return s;
    if (f.module == kNoModule) {
      implicit_kernel = true;
      kernel_lo = std::min(kernel_lo, f.LookupAddress());
      kernel_hi = std::max(kernel_hi, f.LookupAddress());
    }
  }
  for (const Frame& f : user_frames) {
    if (absl::Status s = CheckFrame(f, /*kernel=*/false); !s.ok()) return s;
  }
  // The common case in a long profile: a stack seen before. It is one only
  // if its labels and every location are known already.
  auto location_of = [&](const Frame& f, bool kernel) {
    return Location{f.LookupAddress(),
                    kernel && f.module == kNoModule ? kernel_module_ : f.module,
                    kernel};
  };
  Stack key;
  key.locations.reserve(depth);
  bool known = !(implicit_kernel && kernel_module_ == kNoModule);
  if (auto it = label_set_index_.find(thread);
      known && it != label_set_index_.end()) {
    key.label_set = it->second;
  } else {
    known = false;
  }
  auto probe = [&](absl::Span<const Frame> frames, bool kernel) {
    for (const Frame& f : frames) {
      if (!known) return;
      auto it = location_index_.find(location_of(f, kernel));
      if (it == location_index_.end()) {
        known = false;
      } else {
        key.locations.push_back(it->second);
      }
    }
  };
  probe(kernel_frames, /*kernel=*/true);
  probe(user_frames, /*kernel=*/false);
  if (known) {
    if (auto it = stack_index_.find(key); it != stack_index_.end()) {
      SampleValues& sum = samples_[it->second].values;
      sum.count += values.count;
      sum.weight += values.weight;
      totals_.count += values.count;
      totals_.weight += values.weight;
      if (stack != nullptr) *stack = it->second;
      return absl::OkStatus();
    }
  }

  // A new stack. Capacity is checked as if every frame were a new location,
  // so that the interning below cannot fail half-way.
  if (samples_.size() >= limits_.max_stacks) {
    return absl::ResourceExhaustedError(
        absl::StrFormat("more than %u distinct stacks", limits_.max_stacks));
  }
  if (locations_.size() + depth > limits_.max_locations) {
    return absl::ResourceExhaustedError(
        absl::StrFormat("more than %u locations", limits_.max_locations));
  }
  if (label_sets_.size() >= limits_.max_label_sets &&
      !label_set_index_.contains(thread)) {
    return absl::ResourceExhaustedError(absl::StrFormat(
        "more than %u distinct pid/tid/comm labels", limits_.max_label_sets));
  }
  if (implicit_kernel && kernel_module_ == kNoModule &&
      modules_.size() >= limits_.max_modules) {
    return absl::ResourceExhaustedError(
        absl::StrFormat("more than %u modules", limits_.max_modules));
  }

  if (implicit_kernel) KernelModule(kernel_lo, kernel_hi);
  auto [labels_it, new_labels] =
      label_set_index_.try_emplace(thread, label_sets_.size());
  if (new_labels) label_sets_.push_back(thread);
  key.label_set = labels_it->second;
  key.locations.clear();
  auto intern = [&](absl::Span<const Frame> frames, bool kernel) {
    for (const Frame& f : frames) {
      const Location loc = location_of(f, kernel);
      auto [it, inserted] = location_index_.try_emplace(loc, locations_.size());
      if (inserted) locations_.push_back(loc);
      key.locations.push_back(it->second);
    }
  };
  intern(kernel_frames, /*kernel=*/true);
  intern(user_frames, /*kernel=*/false);
  auto [stack_it, inserted] =
      stack_index_.try_emplace(std::move(key), samples_.size());
  if (stack != nullptr) *stack = stack_it->second;
  if (inserted) {
    samples_.push_back({&stack_it->first, values});
  } else {  // not reached: the probe above found every known stack
    SampleValues& sum = samples_[stack_it->second].values;
    sum.count += values.count;
    sum.weight += values.weight;
  }
  totals_.count += values.count;
  totals_.weight += values.weight;
  return absl::OkStatus();
}

absl::Status Profile::CheckValues(const SampleValues& values) const {
  if (values.count < 0 || values.weight < 0) {
    return absl::InvalidArgumentError(
        absl::StrFormat("negative sample values (count %d, weight %d)",
                        values.count, values.weight));
  }
  // A stack's sums never exceed the totals, so this one check covers both.
  if (AddOverflows(totals_.count, values.count) ||
      AddOverflows(totals_.weight, values.weight)) {
    return absl::OutOfRangeError("sample values overflow int64");
  }
  return absl::OkStatus();
}

absl::Status Profile::AddToStack(size_t stack, const SampleValues& values) {
  if (stack >= samples_.size()) {
    return absl::OutOfRangeError(absl::StrFormat("no stack %u", stack));
  }
  if (absl::Status s = CheckValues(values); !s.ok()) return s;
  SampleValues& sum = samples_[stack].values;
  sum.count += values.count;
  sum.weight += values.weight;
  totals_.count += values.count;
  totals_.weight += values.weight;
  return absl::OkStatus();
}

}  // namespace unwindd::profile

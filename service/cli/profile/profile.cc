#include "service/cli/profile/profile.h"

#include <algorithm>
#include <limits>
#include <optional>

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
  // leaves the profile as it was: the frames, and capacity as if every
  // frame were a new location and node.
  if (absl::Status s = CheckValues(values); !s.ok()) return s;
  const size_t depth = user_frames.size() + kernel_frames.size();
  if (depth > limits_.max_depth) {
    return absl::ResourceExhaustedError(absl::StrFormat(
        "a stack of %u frames (more than %u)", depth, limits_.max_depth));
  }
  bool implicit_kernel = false;
  for (const Frame& f : kernel_frames) {
    if (absl::Status s = CheckFrame(f, /*kernel=*/true); !s.ok()) return s;
    implicit_kernel |= f.module == kNoModule;
  }
  for (const Frame& f : user_frames) {
    if (absl::Status s = CheckFrame(f, /*kernel=*/false); !s.ok()) return s;
  }
  // The common case in a long profile: a stack seen before, whose every
  // node is there already.
  auto known = [&]() -> std::optional<uint32_t> {
    uint32_t node = kRoot;
    auto step = [&](const Frame& f, bool kernel) {
      auto it = child_index_.find(ChildKey{node, f.module, kernel, f.LookupAddress()});
      if (it == child_index_.end()) return false;
      node = it->second;
      return true;
    };
    for (auto it = user_frames.rbegin(); it != user_frames.rend(); ++it) {
      if (!step(*it, false)) return std::nullopt;
    }
    for (auto it = kernel_frames.rbegin(); it != kernel_frames.rend(); ++it) {
      if (!step(*it, true)) return std::nullopt;
    }
    return node;
  }();
  auto labels_known = label_set_index_.find(thread);
  if (known && labels_known != label_set_index_.end() &&
      stack_index_.contains((uint64_t{labels_known->second} << 32) | *known)) {
    return AddToNode(labels_known->second, *known, values, stack);
  }
  if (samples_.size() >= limits_.max_stacks) {
    return absl::ResourceExhaustedError(
        absl::StrFormat("more than %u distinct stacks", limits_.max_stacks));
  }
  if (locations_.size() + depth > limits_.max_locations) {
    return absl::ResourceExhaustedError(
        absl::StrFormat("more than %u locations", limits_.max_locations));
  }
  if (nodes_.size() + depth > limits_.max_nodes) {
    return absl::ResourceExhaustedError(
        absl::StrFormat("more than %u distinct stack prefixes", limits_.max_nodes));
  }
  if (label_sets_.size() >= limits_.max_label_sets && !label_set_index_.contains(thread)) {
    return absl::ResourceExhaustedError(absl::StrFormat(
        "more than %u distinct pid/tid/comm labels", limits_.max_label_sets));
  }
  if (implicit_kernel && kernel_module_ == kNoModule && modules_.size() >= limits_.max_modules) {
    return absl::ResourceExhaustedError(
        absl::StrFormat("more than %u modules", limits_.max_modules));
  }
  absl::StatusOr<uint32_t> labels = LabelSet(thread);
  if (!labels.ok()) return labels.status();
  // Outermost first: the user frames from the last, then the kernel's.
  uint32_t node = kRoot;
  for (auto it = user_frames.rbegin(); it != user_frames.rend(); ++it) {
    absl::StatusOr<uint32_t> child = Child(node, *it, /*kernel=*/false);
    if (!child.ok()) return child.status();
    node = *child;
  }
  for (auto it = kernel_frames.rbegin(); it != kernel_frames.rend(); ++it) {
    absl::StatusOr<uint32_t> child = Child(node, *it, /*kernel=*/true);
    if (!child.ok()) return child.status();
    node = *child;
  }
  return AddToNode(*labels, node, values, stack);
}

absl::StatusOr<uint32_t> Profile::Child(uint32_t parent, const Frame& frame, bool kernel) {
  const ChildKey key{parent, frame.module, kernel, frame.LookupAddress()};
  if (auto it = child_index_.find(key); it != child_index_.end()) return it->second;
  if (parent >= nodes_.size()) {
    return absl::InvalidArgumentError(absl::StrFormat("no stack node %u", parent));
  }
  if (absl::Status s = CheckFrame(frame, kernel); !s.ok()) return s;
  if (nodes_.size() >= limits_.max_nodes) {
    return absl::ResourceExhaustedError(
        absl::StrFormat("more than %u distinct stack prefixes", limits_.max_nodes));
  }
  int module = frame.module;
  if (kernel && module == kNoModule) {
    // Kernel addresses without a module go to one "[kernel.kallsyms]".
    if (kernel_module_ == kNoModule && modules_.size() >= limits_.max_modules) {
      return absl::ResourceExhaustedError(
          absl::StrFormat("more than %u modules", limits_.max_modules));
    }
    KernelModule(key.address, key.address);
    module = kernel_module_;
  }
  const Location loc{key.address, module, kernel};
  auto [loc_it, new_loc] = location_index_.try_emplace(loc, locations_.size());
  if (new_loc) {
    if (locations_.size() >= limits_.max_locations) {
      location_index_.erase(loc_it);
      return absl::ResourceExhaustedError(
          absl::StrFormat("more than %u locations", limits_.max_locations));
    }
    locations_.push_back(loc);
  }
  const uint32_t node = static_cast<uint32_t>(nodes_.size());
  nodes_.push_back({parent, loc_it->second});
  child_index_.emplace(key, node);
  return node;
}

ValueType EventValueType(absl::string_view event) {
  if (event == "cpu-clock" || event == "task-clock") return {"cpu", "nanoseconds"};
  return {event.empty() ? "events" : std::string(event), "count"};
}

std::vector<ValueType> Profile::WeightColumns(std::vector<size_t>* column) const {
  std::vector<ValueType> columns;
  if (column != nullptr) column->assign(label_sets_.size(), 0);
  for (size_t i = 0; i < label_sets_.size(); ++i) {
    const std::string& event = label_sets_[i].event;
    const ValueType type = event.empty() ? weight_type_ : EventValueType(event);
    size_t c = 0;
    while (c < columns.size() && !(columns[c] == type)) ++c;
    if (c == columns.size()) columns.push_back(type);
    if (column != nullptr) (*column)[i] = c;
  }
  if (columns.empty()) columns.push_back(weight_type_);
  return columns;
}

absl::StatusOr<uint32_t> Profile::LabelSet(const ThreadLabels& thread) {
  if (auto it = label_set_index_.find(thread); it != label_set_index_.end()) {
    return it->second;
  }
  if (label_sets_.size() >= limits_.max_label_sets) {
    return absl::ResourceExhaustedError(absl::StrFormat(
        "more than %u distinct pid/tid/comm labels", limits_.max_label_sets));
  }
  // Each event is a value column of every sample: a few.
  if (!thread.event.empty() && !events_.contains(thread.event)) {
    if (events_.size() >= limits_.max_events) {
      return absl::ResourceExhaustedError(
          absl::StrFormat("more than %u distinct events", limits_.max_events));
    }
    events_.insert(thread.event);
  }
  const uint32_t index = static_cast<uint32_t>(label_sets_.size());
  label_sets_.push_back(thread);
  label_set_index_.emplace(thread, index);
  return index;
}

absl::Status Profile::AddToNode(uint32_t label_set, uint32_t node, const SampleValues& values,
                                size_t* stack, uint64_t order) {
  if (label_set >= label_sets_.size() || node >= nodes_.size()) {
    return absl::InvalidArgumentError(
        absl::StrFormat("no label set %u or stack node %u", label_set, node));
  }
  if (absl::Status s = CheckValues(values); !s.ok()) return s;
  const uint64_t key = (uint64_t{label_set} << 32) | node;
  auto it = stack_index_.find(key);
  if (it == stack_index_.end()) {
    if (samples_.size() >= limits_.max_stacks) {
      return absl::ResourceExhaustedError(
          absl::StrFormat("more than %u distinct stacks", limits_.max_stacks));
    }
    it = stack_index_.emplace(key, static_cast<uint32_t>(samples_.size())).first;
    samples_.push_back({label_set, node, {0, 0}, order});
  }
  SampleValues& sum = samples_[it->second].values;
  sum.count += values.count;
  sum.weight += values.weight;
  totals_.count += values.count;
  totals_.weight += values.weight;
  if (stack != nullptr) *stack = it->second;
  return absl::OkStatus();
}

void Profile::StackLocations(uint32_t node, std::vector<uint32_t>* out) const {
  out->clear();
  // Parents always come before their children in nodes_, so this ends.
  while (node != kRoot && node < nodes_.size()) {
    out->push_back(nodes_[node].location);
    node = nodes_[node].parent;
  }
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

void Profile::NameLocation(uint32_t location, std::string name) {
  if (location >= locations_.size()) return;
  if (name.empty()) {
    location_names_.erase(location);
  } else {
    location_names_[location] = std::move(name);
  }
}

absl::string_view Profile::LocationFunction(uint32_t location) const {
  if (auto it = location_names_.find(location); it != location_names_.end()) return it->second;
  if (location >= locations_.size()) return {};
  const int module = locations_[location].module;
  if (module == kNoModule || static_cast<size_t>(module) >= modules_.size()) return {};
  return modules_[module].function;
}

}  // namespace unwindd::profile

// The aggregation model behind the profile outputs (pprof.h, folded.h): a
// Profile is fed one sample at a time (a thread's labels, its stack of
// frames, its values) and merges identical (labels, stack) pairs, so its
// memory grows with the number of distinct stacks, not with the number of
// samples. It knows nothing of perf, gRPC or the unwinder: `unwind perf`
// and `unwind profile` convert their stacks into it.
//
//   Profile profile;  // values: samples/count and cpu/nanoseconds
//   absl::StatusOr<int> libc = profile.AddModule(
//       {.path = "/usr/lib/x86_64-linux-gnu/libc.so.6", .build_id = "8a2b...",
//        .start = 0x7f3a1c836000, .limit = 0x7f3a1c9ab000,
//        .file_offset = 0x26000, .load_bias = 0x7f3a1c810000});
//   Frame stack[] = {{.address = pc, .module = *libc},
//                    {.address = ra, .return_address = true, .module = *exe}};
//   absl::Status s = profile.AddSample({.pid = 42, .tid = 43, .comm = "demo"},
//                                      stack, /*kernel_frames=*/{},
//                                      {.count = 1, .weight = 10'000'000});
//
// Addresses (Frame::address, Module::start/limit) are in the profiled
// process's address space. A frame whose address is a return address
// (every caller frame, except the one right after a signal frame, whose PC
// is exact) is recorded at address - 1, inside the call instruction: that is
// the convention of pprof's own converters (google/perf_data_converter
// subtracts 1 from every callchain entry after the first; pprof's legacy
// parsers "adjust by -1 to land somewhere on the actual call") and of perf
// itself (tools/perf/util/unwind-libunwind-local.c and unwind-libdw.c
// decrement the IP of every non-activation frame, after dwfl_frame_pc()).
// profile.proto's Location.address therefore holds that lookup address, and
// pprof symbolizes it as it is, so a caller gets the line of its call.
//
// Frames must lie in their module: start <= lookup address < limit.
// Errors: InvalidArgument for a malformed module or frame, OutOfRange when a
// value sum would overflow int64, ResourceExhausted past a ProfileLimits
// bound; a failed AddSample adds no sample.
#ifndef UNWINDD_SERVICE_CLI_PROFILE_PROFILE_H_
#define UNWINDD_SERVICE_CLI_PROFILE_PROFILE_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"

namespace unwindd::profile {

inline constexpr int kNoModule = -1;

// What perf and pprof call the kernel image's mapping; kernel frames without
// a module of their own are put in one mapping with this name.
inline constexpr char kKernelModulePath[] = "[kernel.kallsyms]";

// One mapping of a file (or a pseudo-file: "[vdso]") in the process: the
// byte at `start` is the byte at `file_offset` in the file. For pprof to
// symbolize it, give the file's executable mapping exactly as the kernel
// made it (/proc/PID/maps, perf's MMAP2: the PF_X PT_LOAD from its page,
// at that page's file offset), not the module's whole range from its first
// segment: google/pprof (binutils) works from (start, file_offset) and the
// program headers, but `go tool pprof`'s own symbolizer ignores file_offset
// and takes start - (the PF_X segment's p_vaddr) as the load bias
// (pprof_go_tool_test.cc checks both outputs on real binaries).
struct Module {
  std::string path;
  // Hex digits of the ELF NT_GNU_BUILD_ID note (pprof's Mapping.build_id),
  // "" when unknown. Upper case is accepted and written in lower case.
  std::string build_id;
  uint64_t start = 0;  // first address
  uint64_t limit = 0;  // one past the last address
  uint64_t file_offset = 0;
  // address - load_bias is the address in the ELF file's own address space
  // (what addr2line takes; `unwind`'s rel_pc). Used by the folded output.
  std::optional<uint64_t> load_bias;
  // Whether the file was there to unwind with. pprof gets the module either
  // way (it looks files up itself, also by build-id); a missing one is
  // named in a profile comment.
  bool file_found = true;
  // JIT code a runtime announced as one piece (a jitdump's CODE_LOAD): its
  // name, the function of every location in the module. "" for files.
  std::string function;

  bool operator==(const Module&) const = default;
  template <typename H>
  friend H AbslHashValue(H h, const Module& m) {
    return H::combine(std::move(h), m.path, m.build_id, m.start, m.limit,
                      m.file_offset, m.load_bias, m.file_found, m.function);
  }
};

struct Frame {
  uint64_t address = 0;
  // `address` was read as a return address (a caller frame): the frame is
  // recorded at address - 1 (see the file comment).
  bool return_address = false;
  int module = kNoModule;  // an index AddModule returned, or kNoModule

  uint64_t LookupAddress() const {
    return return_address ? address - 1 : address;
  }
};

// The labels of a sample (pprof Sample.label: "pid" and "tid" numeric,
// "comm" a string). Unset fields are left out. `event` is not a label: it
// names what the sample's weight counts (a recording of several events,
// perf record -e cpu-clock,page-faults), and samples of different events
// weigh in different value columns (EventValueType's; "": the profile's
// weight_type()).
struct ThreadLabels {
  std::optional<int64_t> pid;
  std::optional<int64_t> tid;
  std::string comm;
  std::string event;

  bool operator==(const ThreadLabels&) const = default;
  template <typename H>
  friend H AbslHashValue(H h, const ThreadLabels& t) {
    return H::combine(std::move(h), t.pid, t.tid, t.comm, t.event);
  }
};

// A sample's values, summed when stacks merge: the number of samples, and
// their weight in the profile's weight unit (e.g. cpu-clock nanoseconds, or
// the event period). Neither may be negative.
struct SampleValues {
  int64_t count = 1;
  int64_t weight = 0;
};

// pprof's ValueType: what a value measures and in which unit.
struct ValueType {
  std::string type;
  std::string unit;

  bool operator==(const ValueType&) const = default;
};

// What a perf event's periods measure: cpu-clock and task-clock time
// (cpu/nanoseconds, as Go's CPU profiles say), any other event its count
// ("" is "events").
ValueType EventValueType(absl::string_view event);

struct ProfileLimits {
  size_t max_modules = size_t{1} << 16;
  size_t max_locations = size_t{1} << 22;
  size_t max_stacks = size_t{1} << 20;
  size_t max_nodes = size_t{1} << 23;  // distinct stack prefixes
  size_t max_label_sets = size_t{1} << 16;
  size_t max_events = 64;  // distinct ThreadLabels::event
  size_t max_depth = 4096;  // user + kernel frames of one sample
};

class Profile {
 public:
  // A distinct (address, module) pair. `kernel` says it came from the
  // kernel part of a callchain.
  struct Location {
    uint64_t address = 0;  // the lookup address
    int module = kNoModule;
    bool kernel = false;

    bool operator==(const Location&) const = default;
    template <typename H>
    friend H AbslHashValue(H h, const Location& l) {
      return H::combine(std::move(h), l.address, l.module, l.kernel);
    }
  };

  // The stack tree: a node per distinct stack prefix, from the outermost
  // frame in (the root, node 0, is the empty stack). A stack is the path
  // from its leaf node up to the root, so stacks that share their outer
  // frames share nodes, and a stack is recognised one frame at a time.
  struct Node {
    uint32_t parent = 0;
    uint32_t location = 0;  // index into locations(); unused for the root
  };
  static constexpr uint32_t kRoot = 0;

  // A distinct (labels, stack) pair and the sum of its samples' values.
  struct StackSample {
    uint32_t label_set = 0;  // index into label_sets()
    uint32_t node = kRoot;   // the stack's innermost frame in nodes()
    SampleValues values;
    uint64_t first = 0;      // AddToNode's `order` of its first sample
  };

  // `weight` names the second value (the first is always samples/count).
  explicit Profile(ValueType weight = {"cpu", "nanoseconds"},
                   ProfileLimits limits = {});
  Profile(const Profile&) = delete;
  Profile& operator=(const Profile&) = delete;
  Profile(Profile&&) = default;
  Profile& operator=(Profile&&) = default;

  // Returns the index frames refer to this module by. Equal descriptions
  // share one index.
  absl::StatusOr<int> AddModule(const Module& module);

  // One sample. `user_frames` leaf first (frame 0 is where the thread was).
  // `kernel_frames` (leaf first; perf's PERF_SAMPLE_CALLCHAIN kernel part)
  // are newer than the user frames, so they go before them. A kernel frame
  // with kNoModule is put in a "[kernel.kallsyms]" module spanning every
  // such address.
  // `stack`, when given, receives the index in samples() of the stack the
  // sample went to, for AddToStack.
  absl::Status AddSample(const ThreadLabels& thread,
                         absl::Span<const Frame> user_frames,
                         absl::Span<const Frame> kernel_frames,
                         const SampleValues& values, size_t* stack = nullptr);
  // Another sample of the stack samples()[stack] (an index AddSample gave):
  // what a caller that recognises a stack it has seen before calls, at the
  // cost of no frame lookups. OutOfRange for an unknown index, or if the
  // sums would overflow.
  absl::Status AddToStack(size_t stack, const SampleValues& values);

  // Building a stack one frame at a time, outermost first, for callers
  // that know which part of a stack they saw before (prefixes of the last
  // sample of a thread) and want to look up only the rest:
  //   uint32_t node = Profile::kRoot;
  //   for (each frame, outermost first) node = *profile.Child(node, f, kernel);
  //   profile.AddToNode(*profile.LabelSet(thread), node, values);
  // Kernel frames are the innermost (they go after the user frames).
  // Errors as AddSample's, for the frame or labels given.
  absl::StatusOr<uint32_t> Child(uint32_t parent, const Frame& frame, bool kernel);
  absl::StatusOr<uint32_t> LabelSet(const ThreadLabels& thread);
  // One sample of the stack ending at `node` (a node Child returned, or
  // kRoot for an empty stack) with labels `label_set` (LabelSet's);
  // `stack` as AddSample's. `order`: the caller's number for the sample,
  // kept for the stack's first one (MergeProfiles orders by it).
  absl::Status AddToNode(uint32_t label_set, uint32_t node, const SampleValues& values,
                         size_t* stack = nullptr, uint64_t order = 0);
  // The locations of the stack ending at `node`, innermost first.
  void StackLocations(uint32_t node, std::vector<uint32_t>* out) const;

  // Function names for locations in code no file names (JIT code a
  // /tmp/perf-PID.map names), given after the samples, before writing:
  // pprof gives such a location a Line of that Function, folded prints the
  // name. A location in a module with a `function` has that name unless
  // given another.
  void NameLocation(uint32_t location, std::string name);
  // "" when it has none.
  absl::string_view LocationFunction(uint32_t location) const;

  const ValueType& weight_type() const { return weight_type_; }
  // The weight columns a sample's values are written in: one per distinct
  // ValueType of the label sets' events (weight_type() for none), in the
  // order the label sets name them; `column`, when given, receives each
  // label set's index in it.
  std::vector<ValueType> WeightColumns(std::vector<size_t>* column = nullptr) const;
  const std::vector<Module>& modules() const { return modules_; }
  const std::vector<Location>& locations() const { return locations_; }
  const std::vector<ThreadLabels>& label_sets() const { return label_sets_; }
  const std::vector<Node>& nodes() const { return nodes_; }
  // The implicit "[kernel.kallsyms]" module's index, or kNoModule.
  int kernel_module() const { return kernel_module_; }
  // In the order they were first seen.
  const std::vector<StackSample>& samples() const { return samples_; }
  // Sums over every sample added.
  const SampleValues& totals() const { return totals_; }

 private:
  // Non-negative values whose sums stay within int64 (InvalidArgument /
  // OutOfRange otherwise).
  absl::Status CheckValues(const SampleValues& values) const;
  absl::Status CheckFrame(const Frame& frame, bool kernel) const;
  void KernelModule(uint64_t lo, uint64_t hi);

  ValueType weight_type_;
  ProfileLimits limits_;
  std::vector<Module> modules_;
  std::vector<Location> locations_;
  std::vector<ThreadLabels> label_sets_;
  std::vector<StackSample> samples_;
  SampleValues totals_{0, 0};
  int kernel_module_ = kNoModule;  // the implicit "[kernel.kallsyms]"

  // A node's key among its parent's children: the frame's lookup address,
  // the module it was given (kNoModule for an implicit kernel frame) and
  // whether it is a kernel frame.
  struct ChildKey {
    uint32_t parent = 0;
    int32_t module = kNoModule;
    bool kernel = false;
    uint64_t address = 0;

    bool operator==(const ChildKey&) const = default;
    template <typename H>
    friend H AbslHashValue(H h, const ChildKey& k) {
      return H::combine(std::move(h), k.parent, k.module, k.kernel, k.address);
    }
  };

  std::vector<Node> nodes_{Node{}};  // nodes_[kRoot] is the root

  absl::flat_hash_map<Module, int> module_index_;
  absl::flat_hash_map<Location, uint32_t> location_index_;
  absl::flat_hash_map<ThreadLabels, uint32_t> label_set_index_;
  absl::flat_hash_map<ChildKey, uint32_t> child_index_;  // -> nodes_ index
  // (label set << 32 | node) -> samples_ index
  absl::flat_hash_map<uint64_t, uint32_t> stack_index_;
  absl::flat_hash_map<uint32_t, std::string> location_names_;
  absl::flat_hash_set<std::string> events_;  // the label sets' events
};

// Adds the samples of `parts` (profiles of different samples, numbered
// across all of them by AddToNode's `order`) to `out`, stacks in the order
// of their first samples, each part's modules, locations and labels
// translated into `out`'s: the profile one Profile fed every sample in
// that order would be, down to the order of its tables. What several
// threads aggregate side by side is merged this way. Errors: `out`'s
// limits; `out` then holds part of the samples.
absl::Status MergeProfiles(absl::Span<const Profile* const> parts, Profile& out);

}  // namespace unwindd::profile

#endif  // UNWINDD_SERVICE_CLI_PROFILE_PROFILE_H_

// Decoding of single perf.data records (include/uapi/linux/perf_event.h,
// enum perf_event_type) into plain structs, given the perf_event_attr of
// the event that wrote them. Pure functions over bytes: no I/O, no state.
//
//   AttrSet attrs;                        // from the header or HEADER_ATTR
//   const EventAttr* a = attrs.ForRecord(type, record);
//   Sample s;
//   absl::Status st = ParseSample(record, *a, s);
//
// Every span and string_view in the results points into `record` and is
// valid only as long as it. Addresses are in the recorded process's
// address space. Every length is checked against the record and the named
// limits below; malformed records are DataLoss (the caller adds the file
// offset).
#ifndef UNWINDD_PROC_PERF_RECORDS_H_
#define UNWINDD_PROC_PERF_RECORDS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "proc/perf/abi.h"
#include "proc/perf/bytes.h"

namespace unwindd::proc::perf {

// A record is at most 64 KiB (perf_event_header.size is a u16), which
// already bounds every array in it; these limits say what we accept below
// that, and tests check each.
inline constexpr uint64_t kMaxCallchainDepth = 4096;      // ips per sample
inline constexpr uint64_t kMaxStackUserBytes = 65528;     // STACK_USER copy
inline constexpr uint64_t kMaxBranchEntries = 2048;       // BRANCH_STACK nr
inline constexpr uint64_t kMaxReadGroupEntries = 4096;    // READ group nr
inline constexpr uint64_t kRecordHeaderSize = 8;          // perf_event_header

// One perf_event_attr (any published size), its ids and its name.
struct EventAttr {
  uint32_t type = 0;
  uint32_t size = 0;  // as written; 0 means kAttrSizeVer0
  uint64_t config = 0;
  uint64_t sample_period = 0;  // or sample_freq when freq()
  uint64_t sample_type = 0;
  uint64_t read_format = 0;
  uint64_t flags = 0;
  uint64_t branch_sample_type = 0;
  uint64_t sample_regs_user = 0;
  uint32_t sample_stack_user = 0;
  int32_t clockid = 0;  // with use_clockid: the clock of every timestamp
  uint64_t sample_regs_intr = 0;
  std::vector<uint64_t> ids;
  std::string name;  // EVENT_DESC / EVENT_UPDATE, else from type+config

  bool sample_id_all() const { return flags & kAttrFlagSampleIdAll; }
  bool freq() const { return flags & kAttrFlagFreq; }
  // Timestamps are CLOCK_MONOTONIC's (perf record -k mono, or -k 1): what
  // jitdump files use too.
  bool monotonic_clock() const { return (flags & kAttrFlagUseClockid) && clockid == 1; }
};

// Decodes the first `bytes.size()` bytes of a perf_event_attr (smaller
// sizes leave later fields 0, larger ones are read up to what we know).
// DataLoss if shorter than kAttrSizeVer0.
absl::Status ParseEventAttr(absl::Span<const uint8_t> bytes, EventAttr& out);

// "cpu-clock", "cycles", ... for the generic software/hardware events perf
// names the same way; "" otherwise.
std::string DefaultEventName(uint32_t type, uint64_t config);

// The sample_id_all trailer of non-sample records, and the matching
// fields of a sample (struct sample_id in perf_event.h).
struct SampleId {
  uint32_t pid = 0;
  uint32_t tid = 0;
  uint64_t time = 0;
  uint64_t id = 0;
  uint64_t stream_id = 0;
  uint32_t cpu = 0;
  bool has_tid = false;
  bool has_time = false;
  bool has_id = false;
  bool has_cpu = false;
};

// Bytes of the sample_id trailer for this sample_type.
uint64_t SampleIdSize(uint64_t sample_type);
// The trailer at the end of `record` (header included). DataLoss if the
// record is too short for it.
absl::Status ParseSampleIdTrailer(absl::Span<const uint8_t> record,
                                  uint64_t sample_type, SampleId& out);

// PERF_RECORD_SAMPLE, every sample_type field in the kernel's order.
struct Sample {
  uint16_t misc = 0;  // cpumode in the low bits
  uint64_t id = 0;    // IDENTIFIER or ID
  uint64_t ip = 0;
  uint32_t pid = 0;
  uint32_t tid = 0;
  uint64_t time = 0;
  uint64_t addr = 0;
  uint64_t stream_id = 0;
  uint32_t cpu = 0;
  uint64_t period = 0;      // PERIOD; without it, attr.sample_period (perf -c N)
  Bytes read;               // the read_format block, as is
  U64Array callchain;       // kernel + user ips, with PERF_CONTEXT_* markers
  Bytes raw;
  uint64_t branch_nr = 0;
  uint64_t branch_hw_idx = 0;
  Bytes branch_entries;     // branch_nr * 24 bytes (+ counters, if any)
  uint64_t regs_user_abi = 0;  // kRegsAbi*; 0: no registers (kernel thread)
  U64Array regs_user;          // one per set bit of attr.sample_regs_user
  Bytes stack_user;            // the copy starting at the user SP...
  uint64_t stack_user_dyn_size = 0;  // ...of which this many bytes are valid
  uint64_t weight = 0;        // WEIGHT, or WEIGHT_STRUCT's raw u64
  uint64_t data_src = 0;
  uint64_t transaction = 0;
  uint64_t regs_intr_abi = 0;
  U64Array regs_intr;
  uint64_t phys_addr = 0;
  uint64_t cgroup = 0;
  uint64_t data_page_size = 0;
  uint64_t code_page_size = 0;
  Bytes aux;

  // The copy's size as recorded (STACK_USER's size field).
  uint64_t stack_user_size = 0;
  // Non-zero when the reader left the copy in the input file (a sparse
  // read, FileAccess::kSparse): its stack_user_size bytes start at this
  // file offset, and stack_user is empty.
  uint64_t stack_file_offset = 0;

  // The valid part of the stack copy: stack_user's first dyn_size bytes
  // (perf's evsel__parse_sample does the same min()). Empty when the copy
  // is in the file (stack_file_offset).
  absl::Span<const uint8_t> valid_stack() const {
    return stack_user.span().first(
        std::min<uint64_t>(stack_user_dyn_size, stack_user.size()));
  }
  // How many bytes of the copy are valid, wherever it is.
  uint64_t valid_stack_size() const {
    return std::min(stack_user_dyn_size, stack_user_size);
  }
};

// `record` is the whole record (header included) of type
// PERF_RECORD_SAMPLE written by an event with `attr`. With a non-zero
// `stack_file_offset` the record is a sparse reader's: the STACK_USER copy
// was left in the file at that offset, and `record` holds the copy's size
// field followed at once by dyn_size and the fields after it.
absl::Status ParseSample(absl::Span<const uint8_t> record, const EventAttr& attr,
                         Sample& out, uint64_t stack_file_offset = 0);

// Where the STACK_USER copy of a sample starts in its record: the fields
// before it are parsed from `prefix` (the record's first bytes, header
// included); *offset is the copy's first byte in the record and *size its
// size. False when `attr` samples no STACK_USER, the copy is empty, or the
// prefix is too short or malformed (a caller then reads the whole record).
bool LocateStackUser(absl::Span<const uint8_t> prefix, const EventAttr& attr,
                     uint64_t* offset, uint64_t* size);

// The kernel part of a sample's callchain (the addresses after
// PERF_CONTEXT_KERNEL, up to the next marker), innermost first, which is
// what perf prints above the user frames it unwinds; markers are dropped.
std::vector<uint64_t> KernelCallchain(const Sample& s);
// The same, into `out` (cleared first; its buffer kept).
void KernelCallchainInto(const Sample& s, std::vector<uint64_t>& out);
// The user part (after PERF_CONTEXT_USER), into `out` likewise: what the
// kernel found by walking the frame-pointer chain when the recording asked
// for user callchains (perf record -g, --call-graph fp), the sampled PC
// first; empty with --call-graph dwarf, which excludes it.
void UserCallchainInto(const Sample& s, std::vector<uint64_t>& out);

// PERF_RECORD_MMAP and PERF_RECORD_MMAP2.
struct MmapEvent {
  uint32_t pid = 0;
  uint32_t tid = 0;
  uint64_t start = 0;
  uint64_t len = 0;
  uint64_t pgoff = 0;
  bool is_mmap2 = false;
  // MMAP2 without PERF_RECORD_MISC_MMAP_BUILD_ID:
  uint32_t maj = 0;
  uint32_t min = 0;
  uint64_t ino = 0;
  uint64_t ino_generation = 0;
  // MMAP2 with it: the build-id bytes instead of maj..ino_generation.
  Bytes build_id;
  uint32_t prot = 0;   // MMAP2: PROT_*; MMAP: derived from misc
  uint32_t flags = 0;  // MMAP2: MAP_*
  absl::string_view filename;
};

// PERF_RECORD_COMM.
struct CommEvent {
  uint32_t pid = 0;
  uint32_t tid = 0;
  bool exec = false;  // PERF_RECORD_MISC_COMM_EXEC
  absl::string_view comm;
};

// PERF_RECORD_FORK and PERF_RECORD_EXIT.
struct TaskEvent {
  uint32_t pid = 0;
  uint32_t ppid = 0;
  uint32_t tid = 0;
  uint32_t ptid = 0;
  uint64_t time = 0;
};

// PERF_RECORD_LOST.
struct LostEvent {
  uint64_t id = 0;
  uint64_t lost = 0;
};

// PERF_RECORD_THROTTLE / UNTHROTTLE.
struct ThrottleEvent {
  uint64_t time = 0;
  uint64_t id = 0;
  uint64_t stream_id = 0;
};

// `record` is the whole record; `trailer` the bytes of its sample_id
// trailer (0 without sample_id_all), which are not part of the body.
absl::Status ParseMmap(absl::Span<const uint8_t> record, uint64_t trailer,
                       MmapEvent& out);
absl::Status ParseMmap2(absl::Span<const uint8_t> record, uint64_t trailer,
                        MmapEvent& out);
absl::Status ParseComm(absl::Span<const uint8_t> record, uint64_t trailer,
                       CommEvent& out);
absl::Status ParseTask(absl::Span<const uint8_t> record, uint64_t trailer,
                       TaskEvent& out);
absl::Status ParseLost(absl::Span<const uint8_t> record, uint64_t trailer,
                       LostEvent& out);
absl::Status ParseThrottle(absl::Span<const uint8_t> record, uint64_t trailer,
                           ThrottleEvent& out);

// One build-id entry: a HEADER_BUILD_ID feature entry or a pipe-mode
// PERF_RECORD_HEADER_BUILD_ID record (perf's struct build_id_event).
struct BuildIdEntry {
  int32_t pid = 0;
  uint16_t misc = 0;   // cpumode: kernel or user DSO
  std::string build_id;  // lowercase hex
  std::string filename;
};
// `record` is one build_id_event, header included.
absl::Status ParseBuildIdEvent(absl::Span<const uint8_t> record,
                               BuildIdEntry& out);

// Lowercase hex of `bytes`.
std::string HexString(absl::Span<const uint8_t> bytes);

// Every attr of a recording and the id -> attr lookup, the way perf's
// evlist does it (evlist__event2evsel, id_pos and is_pos).
class AttrSet {
 public:
  // InvalidArgument past kMaxAttrs or kMaxIds; attrs whose sample_type
  // disagree on where the id is get a warning from the reader, as in
  // perf's evlist__valid_sample_type.
  absl::Status Add(EventAttr attr);
  // Adds `id` to attr `index` (pipe-mode ID_INDEX, HEADER_ATTR).
  absl::Status AddId(size_t index, uint64_t id);

  size_t size() const { return attrs_.size(); }
  bool empty() const { return attrs_.empty(); }
  const EventAttr& at(size_t i) const { return attrs_[i]; }
  EventAttr& mutable_at(size_t i) { return attrs_[i]; }
  const std::vector<EventAttr>& attrs() const { return attrs_; }
  // The attr whose ids include `id`, or -1.
  int IndexOfId(uint64_t id) const;
  // True if every attr agrees with the first on where the id sits.
  bool IdPositionsAgree() const;

  // The attr that wrote `record` (header included): with one attr, that
  // one; else by the id at the sample's id_pos or the trailer's is_pos.
  // -1 if it cannot be told (unknown id).
  int ForRecord(uint32_t type, absl::Span<const uint8_t> record) const;

  static constexpr size_t kMaxAttrs = 4096;
  static constexpr size_t kMaxIds = size_t{1} << 20;

 private:
  std::vector<EventAttr> attrs_;
  absl::flat_hash_map<uint64_t, int> by_id_;
  size_t total_ids_ = 0;
};

}  // namespace unwindd::proc::perf

#endif  // UNWINDD_PROC_PERF_RECORDS_H_

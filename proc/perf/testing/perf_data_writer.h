// A small perf.data writer for byte-level tests: records, attrs and
// feature sections laid out as perf record writes them (tools/perf/util/
// header.c perf_session__do_write_header; pipe mode's synthesized
// HEADER_ATTR / HEADER_FEATURE records), with every field settable so
// tests can also write what perf never would. Test-only.
//
//   PerfDataWriter w;
//   w.AddAttr(DwarfCallGraphAttr(), {1});
//   w.Add(MmapRecord(...));
//   w.Add(w.SampleRecord(0, spec));
//   std::vector<uint8_t> file = w.FileBytes();
#ifndef UNWINDD_PROC_PERF_TESTING_PERF_DATA_WRITER_H_
#define UNWINDD_PROC_PERF_TESTING_PERF_DATA_WRITER_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/types/span.h"
#include "proc/perf/abi.h"
#include "proc/perf/records.h"

namespace unwindd::proc::perf::testing {

// Little-endian bytes, appended.
class Bytes8 {
 public:
  Bytes8& U8(uint8_t v) { b_.push_back(v); return *this; }
  Bytes8& U16(uint16_t v) { return Le(v, 2); }
  Bytes8& U32(uint32_t v) { return Le(v, 4); }
  Bytes8& U64(uint64_t v) { return Le(v, 8); }
  Bytes8& Raw(absl::Span<const uint8_t> s) {
    b_.insert(b_.end(), s.begin(), s.end());
    return *this;
  }
  // The string, a NUL, then NULs up to a multiple of `align`.
  Bytes8& Str(const std::string& s, size_t align = 8);
  Bytes8& Pad(size_t align) {
    while (b_.size() % align != 0) b_.push_back(0);
    return *this;
  }
  std::vector<uint8_t>& bytes() { return b_; }
  size_t size() const { return b_.size(); }

 private:
  Bytes8& Le(uint64_t v, int n) {
    for (int i = 0; i < n; ++i) b_.push_back(static_cast<uint8_t>(v >> (8 * i)));
    return *this;
  }
  std::vector<uint8_t> b_;
};

// header (type, misc, size = 8 + body) + body.
std::vector<uint8_t> Record(uint32_t type, uint16_t misc,
                            absl::Span<const uint8_t> body);

// perf_event_attr bytes of `size` (kAttrSizeVer0..kAttrSizeVer8 or more)
// with the fields EventAttr has; attr.size is written as `size_field`
// (defaults to `size`).
std::vector<uint8_t> AttrBytes(const EventAttr& a, uint32_t size,
                               int64_t size_field = -1);

// What `perf record -e cpu-clock --call-graph dwarf` asks for on x86_64
// (perf 6.1 here: IP|TID|TIME|ADDR|CALLCHAIN|PERIOD|REGS_USER|STACK_USER|
// DATA_SRC, sample_id_all, regs 0xff0fff, 8 KiB stacks).
EventAttr DwarfCallGraphAttr();

// Values of a sample; only the fields of the attr's sample_type are written.
struct SampleSpec {
  uint16_t misc = kMiscUser;
  uint64_t id = 0;
  uint64_t ip = 0;
  uint32_t pid = 0, tid = 0;
  uint64_t time = 0;
  uint64_t addr = 0;
  uint64_t stream_id = 0;
  uint32_t cpu = 0;
  uint64_t period = 1;
  std::vector<uint64_t> read_values;  // written as is
  std::vector<uint64_t> callchain;
  std::vector<uint8_t> raw;           // written with its u32 size
  uint64_t branch_nr = 0;
  uint64_t branch_hw_idx = 0;         // written with BRANCH_HW_INDEX
  uint64_t regs_abi = kRegsAbiNone;  // kRegsAbi64 with `regs`
  std::vector<uint64_t> regs;         // one per bit of sample_regs_user
  std::vector<uint8_t> stack;         // STACK_USER data (size = its size)
  uint64_t dyn_size = 0;
  uint64_t weight = 0, data_src = 0, transaction = 0;
  uint64_t regs_intr_abi = 0;
  std::vector<uint64_t> regs_intr;
  uint64_t phys_addr = 0, cgroup = 0, data_page_size = 0, code_page_size = 0;
  std::vector<uint8_t> aux;
};
std::vector<uint8_t> SampleRecord(const EventAttr& attr, const SampleSpec& s);

// sample_id trailer for a non-sample record of `attr`.
std::vector<uint8_t> SampleIdTrailer(const EventAttr& attr, uint32_t pid,
                                     uint32_t tid, uint64_t time, uint64_t id);

std::vector<uint8_t> Mmap2Record(const EventAttr& attr, uint32_t pid,
                                 uint32_t tid, uint64_t start, uint64_t len,
                                 uint64_t pgoff, uint32_t prot,
                                 const std::string& file, uint64_t time,
                                 const std::vector<uint8_t>& build_id = {},
                                 uint64_t ino = 0);
std::vector<uint8_t> MmapRecord(const EventAttr& attr, uint32_t pid,
                                uint32_t tid, uint64_t start, uint64_t len,
                                uint64_t pgoff, const std::string& file,
                                uint64_t time, bool data = false);
std::vector<uint8_t> CommRecord(const EventAttr& attr, uint32_t pid,
                                uint32_t tid, const std::string& comm,
                                bool exec, uint64_t time);
// kRecordFork or kRecordExit.
std::vector<uint8_t> TaskRecord(const EventAttr& attr, uint32_t type,
                                uint32_t pid, uint32_t ppid, uint32_t tid,
                                uint32_t ptid, uint64_t time);
std::vector<uint8_t> FinishedRound();
// A build_id_event (feature entry or, with type 67, a pipe record).
std::vector<uint8_t> BuildIdEvent(uint32_t type, uint16_t misc, int32_t pid,
                                  const std::vector<uint8_t>& id,
                                  const std::string& file);
// do_write_string: u32 len (padded to 64), then the padded string.
std::vector<uint8_t> FeatureString(const std::string& s);

class PerfDataWriter {
 public:
  void AddAttr(EventAttr attr, uint32_t attr_size = kAttrSizeVer8) {
    attrs_.push_back({std::move(attr), attr_size});
  }
  void Add(std::vector<uint8_t> record) { records_.push_back(std::move(record)); }
  void AddFeature(int feat, std::vector<uint8_t> payload) {
    features_[feat] = std::move(payload);
  }

  // perf_file_header, attrs (each followed by its ids section), the ids,
  // the data section, the feature section table and the features.
  std::vector<uint8_t> FileBytes() const;
  // perf_pipe_file_header, one HEADER_ATTR per attr, one HEADER_FEATURE
  // per feature, then the records.
  std::vector<uint8_t> PipeBytes() const;

  // Offsets FileBytes() used (for tests that corrupt them).
  static constexpr uint64_t kAttrsOffset = kFileHeaderSize;

 private:
  struct Attr {
    EventAttr attr;
    uint32_t size;
  };
  std::vector<Attr> attrs_;
  std::vector<std::vector<uint8_t>> records_;
  std::map<int, std::vector<uint8_t>> features_;
};

}  // namespace unwindd::proc::perf::testing

#endif  // UNWINDD_PROC_PERF_TESTING_PERF_DATA_WRITER_H_

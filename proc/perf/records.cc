#include "proc/perf/records.h"

#include <algorithm>
#include <bit>
#include <utility>

#include "absl/strings/str_format.h"

namespace unwindd::proc::perf {
namespace {

absl::Status TooShort(absl::string_view what, size_t record_size, size_t at) {
  return absl::DataLossError(absl::StrFormat(
      "%s does not fit in the %d-byte record (at byte %d)", what, record_size,
      at));
}

// The body of a non-sample record: after the header, before the trailer.
absl::Status Body(absl::Span<const uint8_t> record, uint64_t trailer,
                  uint64_t fixed, absl::string_view what,
                  absl::Span<const uint8_t>& body) {
  if (record.size() < kRecordHeaderSize ||
      trailer > record.size() - kRecordHeaderSize ||
      record.size() - kRecordHeaderSize - trailer < fixed) {
    return absl::DataLossError(absl::StrFormat(
        "%s: a %d-byte record cannot hold its %d fixed bytes and a %d-byte "
        "sample_id trailer",
        what, record.size(), fixed, trailer));
  }
  body = record.subspan(kRecordHeaderSize,
                        record.size() - kRecordHeaderSize - trailer);
  return absl::OkStatus();
}

// A NUL-terminated string that fills the rest of a record's body (padded
// to 8 bytes with NULs); without a NUL, the whole rest.
absl::string_view CStringIn(absl::Span<const uint8_t> bytes) {
  const char* p = reinterpret_cast<const char*>(bytes.data());
  size_t n = 0;
  while (n < bytes.size() && p[n] != '\0') ++n;
  return absl::string_view(p, n);
}

// Bytes of a READ block for `read_format` (include/uapi/linux/
// perf_event.h, struct read_format), read at `c`.
bool TakeReadBlock(Cursor& c, uint64_t read_format, absl::Span<const uint8_t> record,
                   absl::Status& error, Bytes& out) {
  const size_t start = c.pos();
  const uint64_t times = ((read_format & kReadTotalTimeEnabled) ? 1 : 0) +
                         ((read_format & kReadTotalTimeRunning) ? 1 : 0);
  const uint64_t per_value = 1 + ((read_format & kReadId) ? 1 : 0) +
                             ((read_format & kReadLost) ? 1 : 0);
  uint64_t words;
  if (read_format & kReadGroup) {
    uint64_t nr;
    if (!c.U64(nr)) {
      error = TooShort("READ group nr", record.size(), c.pos());
      return false;
    }
    if (nr > kMaxReadGroupEntries) {
      error = absl::DataLossError(absl::StrFormat(
          "READ group of %d values (more than %d)", nr, kMaxReadGroupEntries));
      return false;
    }
    words = times + nr * per_value;
  } else {
    words = times + per_value;
  }
  U64Array ignored;
  if (!c.TakeU64s(words, ignored)) {
    error = TooShort("READ values", record.size(), c.pos());
    return false;
  }
  out = Bytes(record.subspan(start, c.pos() - start));
  return true;
}

}  // namespace

absl::Status ParseEventAttr(absl::Span<const uint8_t> bytes, EventAttr& out) {
  if (bytes.size() < kAttrSizeVer0) {
    return absl::DataLossError(absl::StrFormat(
        "perf_event_attr of %d bytes (at least %d)", bytes.size(), kAttrSizeVer0));
  }
  const uint8_t* p = bytes.data();
  auto has = [&](int off, int width) { return bytes.size() >= size_t(off + width); };
  out = EventAttr{};
  out.type = Load32(p + kAttrOffType);
  out.size = Load32(p + kAttrOffSize);
  out.config = Load64(p + kAttrOffConfig);
  out.sample_period = Load64(p + kAttrOffSamplePeriod);
  out.sample_type = Load64(p + kAttrOffSampleType);
  out.read_format = Load64(p + kAttrOffReadFormat);
  out.flags = Load64(p + kAttrOffFlags);
  if (has(kAttrOffBranchSampleType, 8)) {
    out.branch_sample_type = Load64(p + kAttrOffBranchSampleType);
  }
  if (has(kAttrOffSampleRegsUser, 8)) out.sample_regs_user = Load64(p + kAttrOffSampleRegsUser);
  if (has(kAttrOffSampleStackUser, 4)) {
    out.sample_stack_user = Load32(p + kAttrOffSampleStackUser);
  }
  if (has(kAttrOffClockid, 4)) {
    out.clockid = static_cast<int32_t>(Load32(p + kAttrOffClockid));
  }
  if (has(kAttrOffSampleRegsIntr, 8)) out.sample_regs_intr = Load64(p + kAttrOffSampleRegsIntr);
  out.name = DefaultEventName(out.type, out.config);
  return absl::OkStatus();
}

std::string DefaultEventName(uint32_t type, uint64_t config) {
  // tools/perf/util/evsel.c: evsel__hw_names, evsel__sw_names.
  static constexpr const char* kHw[] = {
      "cycles",         "instructions",          "cache-references",
      "cache-misses",   "branches",              "branch-misses",
      "bus-cycles",     "stalled-cycles-frontend", "stalled-cycles-backend",
      "ref-cycles"};
  static constexpr const char* kSw[] = {
      "cpu-clock",      "task-clock",      "page-faults",
      "context-switches", "cpu-migrations", "minor-faults",
      "major-faults",   "alignment-faults", "emulation-faults",
      "dummy",          "bpf-output",      "cgroup-switches"};
  if (type == kTypeHardware && config < std::size(kHw)) return kHw[config];
  if (type == kTypeSoftware && config < std::size(kSw)) return kSw[config];
  return "";
}

uint64_t SampleIdSize(uint64_t t) {
  int n = 0;
  n += (t & kSampleTid) != 0;
  n += (t & kSampleTime) != 0;
  n += (t & kSampleId) != 0;
  n += (t & kSampleStreamId) != 0;
  n += (t & kSampleCpu) != 0;
  n += (t & kSampleIdentifier) != 0;
  return 8 * n;
}

absl::Status ParseSampleIdTrailer(absl::Span<const uint8_t> record, uint64_t t,
                                  SampleId& out) {
  out = SampleId{};
  const uint64_t size = SampleIdSize(t);
  if (record.size() < kRecordHeaderSize || record.size() - kRecordHeaderSize < size) {
    return absl::DataLossError(absl::StrFormat(
        "a %d-byte record cannot hold its %d-byte sample_id trailer",
        record.size(), size));
  }
  // struct sample_id (perf_event.h): tid, time, id, stream_id, cpu,
  // identifier, in this order at the record's end.
  Cursor c(record, record.size() - size);
  uint64_t v;
  if (t & kSampleTid) {
    c.U32(out.pid);
    c.U32(out.tid);
    out.has_tid = true;
  }
  if (t & kSampleTime) {
    c.U64(out.time);
    out.has_time = true;
  }
  if (t & kSampleId) {
    c.U64(out.id);
    out.has_id = true;
  }
  if (t & kSampleStreamId) c.U64(out.stream_id);
  if (t & kSampleCpu) {
    c.U32(out.cpu);
    c.Skip(4);
    out.has_cpu = true;
  }
  if (t & kSampleIdentifier) {
    c.U64(v);
    out.id = v;
    out.has_id = true;
  }
  return absl::OkStatus();
}

namespace {

// ParseSample's fields in the kernel's order. With `locate`, it stops after
// the STACK_USER size field and sets *locate to the offset of the copy's
// first byte (0 when the sample has no STACK_USER field or an empty copy).
absl::Status ParseSampleFields(absl::Span<const uint8_t> record, const EventAttr& attr,
                               uint64_t stack_file_offset, Sample& out,
                               uint64_t* locate) {
  out = Sample{};
  // A recording with a fixed period (perf record -c N) has no PERIOD field:
  // every sample's period is the attr's, as perf script prints it
  // (evsel__parse_sample starts from attr.sample_period).
  out.period = attr.sample_period;
  if (record.size() < kRecordHeaderSize) {
    return TooShort("the header", record.size(), 0);
  }
  out.misc = Load16(record.data() + 4);
  const uint64_t t = attr.sample_type;
  Cursor c(record, kRecordHeaderSize);
  auto need = [&](bool ok, absl::string_view what) -> absl::Status {
    return ok ? absl::OkStatus() : TooShort(what, record.size(), c.pos());
  };
#define PERF_SAMPLE_READ_OR_RETURN(expr, what)      \
  do {                                              \
    absl::Status s_ = need((expr), (what));         \
    if (!s_.ok()) return s_;                        \
  } while (0)
  if (t & kSampleIdentifier) PERF_SAMPLE_READ_OR_RETURN(c.U64(out.id), "IDENTIFIER");
  if (t & kSampleIp) PERF_SAMPLE_READ_OR_RETURN(c.U64(out.ip), "IP");
  if (t & kSampleTid) {
    PERF_SAMPLE_READ_OR_RETURN(c.U32(out.pid) && c.U32(out.tid), "TID");
  }
  if (t & kSampleTime) PERF_SAMPLE_READ_OR_RETURN(c.U64(out.time), "TIME");
  if (t & kSampleAddr) PERF_SAMPLE_READ_OR_RETURN(c.U64(out.addr), "ADDR");
  if (t & kSampleId) PERF_SAMPLE_READ_OR_RETURN(c.U64(out.id), "ID");
  if (t & kSampleStreamId) PERF_SAMPLE_READ_OR_RETURN(c.U64(out.stream_id), "STREAM_ID");
  if (t & kSampleCpu) PERF_SAMPLE_READ_OR_RETURN(c.U32(out.cpu) && c.Skip(4), "CPU");
  if (t & kSamplePeriod) PERF_SAMPLE_READ_OR_RETURN(c.U64(out.period), "PERIOD");
  if (t & kSampleRead) {
    absl::Status error;
    if (!TakeReadBlock(c, attr.read_format, record, error, out.read)) return error;
  }
  if (t & kSampleCallchain) {
    uint64_t nr;
    PERF_SAMPLE_READ_OR_RETURN(c.U64(nr), "CALLCHAIN nr");
    if (nr > kMaxCallchainDepth) {
      return absl::DataLossError(absl::StrFormat(
          "callchain of %d entries (more than %d)", nr, kMaxCallchainDepth));
    }
    PERF_SAMPLE_READ_OR_RETURN(c.TakeU64s(nr, out.callchain), "CALLCHAIN ips");
  }
  if (t & kSampleRaw) {
    // The kernel pads data[] so that the u32 size plus data end 8-aligned;
    // `size` counts the padding (perf's evsel__parse_sample skips `size`).
    uint32_t size;
    absl::Span<const uint8_t> raw;
    PERF_SAMPLE_READ_OR_RETURN(c.U32(size), "RAW size");
    PERF_SAMPLE_READ_OR_RETURN(c.Take(size, raw), "RAW data");
    out.raw = Bytes(raw);
  }
  if (t & kSampleBranchStack) {
    PERF_SAMPLE_READ_OR_RETURN(c.U64(out.branch_nr), "BRANCH_STACK nr");
    if (out.branch_nr > kMaxBranchEntries) {
      return absl::DataLossError(absl::StrFormat(
          "branch stack of %d entries (more than %d)", out.branch_nr,
          kMaxBranchEntries));
    }
    if (attr.branch_sample_type & kBranchHwIndex) {
      PERF_SAMPLE_READ_OR_RETURN(c.U64(out.branch_hw_idx), "BRANCH_STACK hw_idx");
    }
    uint64_t bytes = out.branch_nr * kBranchEntrySize;
    if (attr.branch_sample_type & kBranchCounters) bytes += out.branch_nr * 8;
    absl::Span<const uint8_t> entries;
    PERF_SAMPLE_READ_OR_RETURN(c.Take(bytes, entries), "BRANCH_STACK entries");
    out.branch_entries = Bytes(entries);
  }
  if (t & kSampleRegsUser) {
    PERF_SAMPLE_READ_OR_RETURN(c.U64(out.regs_user_abi), "REGS_USER abi");
    if (out.regs_user_abi != kRegsAbiNone) {
      PERF_SAMPLE_READ_OR_RETURN(
          c.TakeU64s(std::popcount(attr.sample_regs_user), out.regs_user),
          "REGS_USER values");
    }
  }
  if (t & kSampleStackUser) {
    uint64_t size;
    PERF_SAMPLE_READ_OR_RETURN(c.U64(size), "STACK_USER size");
    if (size > kMaxStackUserBytes) {
      return absl::DataLossError(absl::StrFormat(
          "user stack copy of %d bytes (more than %d)", size, kMaxStackUserBytes));
    }
    if (locate != nullptr) {
      *locate = size != 0 ? c.pos() : 0;
      out.stack_user_size = size;
      return absl::OkStatus();
    }
    if (size != 0) {
      out.stack_user_size = size;
      if (stack_file_offset != 0) {
        // Left in the file by the reader: dyn_size follows the size field.
        out.stack_file_offset = stack_file_offset;
      } else {
        absl::Span<const uint8_t> data;
        PERF_SAMPLE_READ_OR_RETURN(c.Take(size, data), "STACK_USER data");
        out.stack_user = Bytes(data);
      }
      PERF_SAMPLE_READ_OR_RETURN(c.U64(out.stack_user_dyn_size), "STACK_USER dyn_size");
      if (out.stack_user_dyn_size > size) {
        // perf: "user stack dump failure" (-EFAULT).
        return absl::DataLossError(absl::StrFormat(
            "user stack dyn_size %d is larger than its %d-byte copy",
            out.stack_user_dyn_size, size));
      }
    }
  }
  if (t & (kSampleWeight | kSampleWeightStruct)) {
    PERF_SAMPLE_READ_OR_RETURN(c.U64(out.weight), "WEIGHT");
  }
  if (t & kSampleDataSrc) PERF_SAMPLE_READ_OR_RETURN(c.U64(out.data_src), "DATA_SRC");
  if (t & kSampleTransaction) {
    PERF_SAMPLE_READ_OR_RETURN(c.U64(out.transaction), "TRANSACTION");
  }
  if (t & kSampleRegsIntr) {
    PERF_SAMPLE_READ_OR_RETURN(c.U64(out.regs_intr_abi), "REGS_INTR abi");
    if (out.regs_intr_abi != kRegsAbiNone) {
      PERF_SAMPLE_READ_OR_RETURN(
          c.TakeU64s(std::popcount(attr.sample_regs_intr), out.regs_intr),
          "REGS_INTR values");
    }
  }
  if (t & kSamplePhysAddr) PERF_SAMPLE_READ_OR_RETURN(c.U64(out.phys_addr), "PHYS_ADDR");
  if (t & kSampleCgroup) PERF_SAMPLE_READ_OR_RETURN(c.U64(out.cgroup), "CGROUP");
  if (t & kSampleDataPageSize) {
    PERF_SAMPLE_READ_OR_RETURN(c.U64(out.data_page_size), "DATA_PAGE_SIZE");
  }
  if (t & kSampleCodePageSize) {
    PERF_SAMPLE_READ_OR_RETURN(c.U64(out.code_page_size), "CODE_PAGE_SIZE");
  }
  if (t & kSampleAux) {
    uint64_t size;
    absl::Span<const uint8_t> aux;
    PERF_SAMPLE_READ_OR_RETURN(c.U64(size), "AUX size");
    PERF_SAMPLE_READ_OR_RETURN(c.Take(size, aux), "AUX data");
    out.aux = Bytes(aux);
  }
#undef PERF_SAMPLE_READ_OR_RETURN
  if (locate != nullptr) *locate = 0;
  return absl::OkStatus();
}

}  // namespace

absl::Status ParseSample(absl::Span<const uint8_t> record, const EventAttr& attr,
                         Sample& out, uint64_t stack_file_offset) {
  return ParseSampleFields(record, attr, stack_file_offset, out, nullptr);
}

bool LocateStackUser(absl::Span<const uint8_t> prefix, const EventAttr& attr,
                     uint64_t* offset, uint64_t* size) {
  if ((attr.sample_type & kSampleStackUser) == 0) return false;
  Sample scratch;
  uint64_t at = 0;
  if (!ParseSampleFields(prefix, attr, 0, scratch, &at).ok() || at == 0) return false;
  *offset = at;
  *size = scratch.stack_user_size;
  return true;
}

std::vector<uint64_t> KernelCallchain(const Sample& s) {
  std::vector<uint64_t> out;
  KernelCallchainInto(s, out);
  return out;
}

namespace {

// The addresses after the `context` marker up to the next marker.
void CallchainPartInto(const Sample& s, uint64_t context, std::vector<uint64_t>& out) {
  out.clear();
  bool in = false;
  for (size_t i = 0; i < s.callchain.size(); ++i) {
    const uint64_t ip = s.callchain[i];
    if (ip >= kContextMax) {
      in = ip == context;
      continue;
    }
    if (in) out.push_back(ip);
  }
}

}  // namespace

void KernelCallchainInto(const Sample& s, std::vector<uint64_t>& out) {
  CallchainPartInto(s, kContextKernel, out);
}

void UserCallchainInto(const Sample& s, std::vector<uint64_t>& out) {
  CallchainPartInto(s, kContextUser, out);
}

absl::Status ParseMmap(absl::Span<const uint8_t> record, uint64_t trailer,
                       MmapEvent& out) {
  out = MmapEvent{};
  absl::Span<const uint8_t> body;
  absl::Status s = Body(record, trailer, 32, "PERF_RECORD_MMAP", body);
  if (!s.ok()) return s;
  Cursor c(body);
  c.U32(out.pid);
  c.U32(out.tid);
  c.U64(out.start);
  c.U64(out.len);
  c.U64(out.pgoff);
  // MMAP has no protection: PERF_RECORD_MISC_MMAP_DATA marks data
  // mappings, the others are executable (PROT_READ 1, PROT_EXEC 4).
  const uint16_t misc = Load16(record.data() + 4);
  out.prot = (misc & kMiscMmapData) ? 1 : (1 | 4);
  out.filename = CStringIn(body.subspan(c.pos()));
  return absl::OkStatus();
}

absl::Status ParseMmap2(absl::Span<const uint8_t> record, uint64_t trailer,
                        MmapEvent& out) {
  out = MmapEvent{};
  out.is_mmap2 = true;
  absl::Span<const uint8_t> body;
  absl::Status s = Body(record, trailer, 64, "PERF_RECORD_MMAP2", body);
  if (!s.ok()) return s;
  Cursor c(body);
  c.U32(out.pid);
  c.U32(out.tid);
  c.U64(out.start);
  c.U64(out.len);
  c.U64(out.pgoff);
  const uint16_t misc = Load16(record.data() + 4);
  if (misc & kMiscMmapBuildId) {
    // { u8 build_id_size; u8 __reserved_1; u16 __reserved_2; u8 build_id[20]; }
    const uint8_t size = body[c.pos()];
    if (size > kBuildIdMaxBytes) {
      return absl::DataLossError(absl::StrFormat(
          "PERF_RECORD_MMAP2 with a %d-byte build-id (at most %d)", size,
          kBuildIdMaxBytes));
    }
    out.build_id = Bytes(body.subspan(c.pos() + 4, size));
    c.Skip(24);
  } else {
    c.U32(out.maj);
    c.U32(out.min);
    c.U64(out.ino);
    c.U64(out.ino_generation);
  }
  c.U32(out.prot);
  c.U32(out.flags);
  out.filename = CStringIn(body.subspan(c.pos()));
  return absl::OkStatus();
}

absl::Status ParseComm(absl::Span<const uint8_t> record, uint64_t trailer,
                       CommEvent& out) {
  out = CommEvent{};
  absl::Span<const uint8_t> body;
  absl::Status s = Body(record, trailer, 8, "PERF_RECORD_COMM", body);
  if (!s.ok()) return s;
  Cursor c(body);
  c.U32(out.pid);
  c.U32(out.tid);
  out.exec = Load16(record.data() + 4) & kMiscCommExec;
  out.comm = CStringIn(body.subspan(8));
  return absl::OkStatus();
}

absl::Status ParseTask(absl::Span<const uint8_t> record, uint64_t trailer,
                       TaskEvent& out) {
  out = TaskEvent{};
  absl::Span<const uint8_t> body;
  absl::Status s = Body(record, trailer, 24, "PERF_RECORD_FORK/EXIT", body);
  if (!s.ok()) return s;
  Cursor c(body);
  c.U32(out.pid);
  c.U32(out.ppid);
  c.U32(out.tid);
  c.U32(out.ptid);
  c.U64(out.time);
  return absl::OkStatus();
}

absl::Status ParseLost(absl::Span<const uint8_t> record, uint64_t trailer,
                       LostEvent& out) {
  out = LostEvent{};
  absl::Span<const uint8_t> body;
  absl::Status s = Body(record, trailer, 16, "PERF_RECORD_LOST", body);
  if (!s.ok()) return s;
  Cursor c(body);
  c.U64(out.id);
  c.U64(out.lost);
  return absl::OkStatus();
}

absl::Status ParseThrottle(absl::Span<const uint8_t> record, uint64_t trailer,
                           ThrottleEvent& out) {
  out = ThrottleEvent{};
  absl::Span<const uint8_t> body;
  absl::Status s = Body(record, trailer, 24, "PERF_RECORD_THROTTLE", body);
  if (!s.ok()) return s;
  Cursor c(body);
  c.U64(out.time);
  c.U64(out.id);
  c.U64(out.stream_id);
  return absl::OkStatus();
}

absl::Status ParseBuildIdEvent(absl::Span<const uint8_t> record,
                               BuildIdEntry& out) {
  out = BuildIdEntry{};
  if (record.size() < kBuildIdEventFixedSize) {
    return absl::DataLossError(absl::StrFormat(
        "build-id entry of %d bytes (at least %d)", record.size(),
        kBuildIdEventFixedSize));
  }
  out.misc = Load16(record.data() + 4);
  out.pid = static_cast<int32_t>(Load32(record.data() + 8));
  const uint8_t* id = record.data() + 12;
  size_t size = kBuildIdMaxBytes;
  if (out.misc & kMiscBuildIdSize) {
    size = id[kBuildIdMaxBytes];
    if (size > kBuildIdMaxBytes) {
      return absl::DataLossError(absl::StrFormat(
          "build-id entry with a %d-byte build-id (at most %d)", size,
          kBuildIdMaxBytes));
    }
  }
  out.build_id = HexString(absl::MakeConstSpan(id, size));
  out.filename = std::string(CStringIn(record.subspan(kBuildIdEventFixedSize)));
  return absl::OkStatus();
}

std::string HexString(absl::Span<const uint8_t> bytes) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string s;
  s.reserve(bytes.size() * 2);
  for (uint8_t b : bytes) {
    s.push_back(kHex[b >> 4]);
    s.push_back(kHex[b & 15]);
  }
  return s;
}

absl::Status AttrSet::Add(EventAttr attr) {
  if (attrs_.size() >= kMaxAttrs) {
    return absl::InvalidArgumentError(
        absl::StrFormat("more than %d event attributes", kMaxAttrs));
  }
  std::vector<uint64_t> ids = std::move(attr.ids);
  attr.ids.clear();
  attrs_.push_back(std::move(attr));
  for (uint64_t id : ids) {
    absl::Status s = AddId(attrs_.size() - 1, id);
    if (!s.ok()) return s;
  }
  return absl::OkStatus();
}

absl::Status AttrSet::AddId(size_t index, uint64_t id) {
  if (index >= attrs_.size()) {
    return absl::InvalidArgumentError(absl::StrFormat("no attr %d", index));
  }
  if (total_ids_ >= kMaxIds) {
    return absl::InvalidArgumentError(
        absl::StrFormat("more than %d event ids", kMaxIds));
  }
  ++total_ids_;
  attrs_[index].ids.push_back(id);
  by_id_.emplace(id, static_cast<int>(index));
  return absl::OkStatus();
}

int AttrSet::IndexOfId(uint64_t id) const {
  auto it = by_id_.find(id);
  return it == by_id_.end() ? -1 : it->second;
}

namespace {

// perf's __perf_evsel__calc_id_pos: the id's index among a sample's u64s.
int IdPos(uint64_t t) {
  if (t & kSampleIdentifier) return 0;
  if (!(t & kSampleId)) return -1;
  int idx = 0;
  if (t & kSampleIp) ++idx;
  if (t & kSampleTid) ++idx;
  if (t & kSampleTime) ++idx;
  if (t & kSampleAddr) ++idx;
  return idx;
}

// perf's __perf_evsel__calc_is_pos: the id's index from the end of a
// non-sample record's trailer.
int IsPos(uint64_t t) {
  if (t & kSampleIdentifier) return 1;
  if (!(t & kSampleId)) return -1;
  int idx = 1;
  if (t & kSampleCpu) ++idx;
  if (t & kSampleStreamId) ++idx;
  return idx;
}

}  // namespace

bool AttrSet::IdPositionsAgree() const {
  for (const EventAttr& a : attrs_) {
    if (IdPos(a.sample_type) != IdPos(attrs_[0].sample_type) ||
        IsPos(a.sample_type) != IsPos(attrs_[0].sample_type) ||
        a.sample_id_all() != attrs_[0].sample_id_all()) {
      return false;
    }
  }
  return true;
}

int AttrSet::ForRecord(uint32_t type, absl::Span<const uint8_t> record) const {
  if (attrs_.empty()) return -1;
  if (attrs_.size() == 1) return 0;
  const EventAttr& first = attrs_[0];
  if (type != kRecordSample && !first.sample_id_all()) return 0;
  if (record.size() < kRecordHeaderSize) return -1;
  const uint64_t n = (record.size() - kRecordHeaderSize) / 8;
  const uint8_t* array = record.data() + kRecordHeaderSize;
  uint64_t id;
  if (type == kRecordSample) {
    int pos = IdPos(first.sample_type);
    if (pos < 0) return 0;
    if (static_cast<uint64_t>(pos) >= n) return -1;
    id = Load64(array + 8 * pos);
  } else {
    int pos = IsPos(first.sample_type);
    if (pos < 0) return 0;
    if (static_cast<uint64_t>(pos) > n) return -1;
    // The trailer is at the record's end (ParseSampleIdTrailer).
    id = Load64(record.data() + record.size() - 8 * pos);
  }
  // Records perf synthesizes itself carry id 0 (evlist__event2evsel).
  if (id == 0) return 0;
  return IndexOfId(id);
}

}  // namespace unwindd::proc::perf

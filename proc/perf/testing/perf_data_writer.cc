#include "proc/perf/testing/perf_data_writer.h"

#include <bit>

namespace unwindd::proc::perf::testing {

Bytes8& Bytes8::Str(const std::string& s, size_t align) {
  b_.insert(b_.end(), s.begin(), s.end());
  b_.push_back(0);
  return Pad(align);
}

std::vector<uint8_t> Record(uint32_t type, uint16_t misc,
                            absl::Span<const uint8_t> body) {
  Bytes8 b;
  b.U32(type).U16(misc).U16(static_cast<uint16_t>(8 + body.size())).Raw(body);
  return std::move(b.bytes());
}

std::vector<uint8_t> AttrBytes(const EventAttr& a, uint32_t size, int64_t size_field) {
  Bytes8 b;
  b.U32(a.type).U32(size_field < 0 ? size : static_cast<uint32_t>(size_field));
  b.U64(a.config).U64(a.sample_period).U64(a.sample_type).U64(a.read_format);
  b.U64(a.flags).U32(0).U32(0).U64(0).U64(0);        // wakeup, bp_type, config1/2
  b.U64(a.branch_sample_type).U64(a.sample_regs_user);  // 72, 80
  b.U32(a.sample_stack_user).U32(0);                  // 88, clockid
  b.U64(a.sample_regs_intr);                          // 96
  std::vector<uint8_t> out = std::move(b.bytes());
  out.resize(size, 0);
  return out;
}

EventAttr DwarfCallGraphAttr() {
  EventAttr a;
  a.type = kTypeSoftware;
  a.config = 0;
  a.size = kAttrSizeVer8;
  a.sample_period = 4000;
  a.sample_type = kSampleIp | kSampleTid | kSampleTime | kSampleAddr |
                  kSampleCallchain | kSamplePeriod | kSampleRegsUser |
                  kSampleStackUser | kSampleDataSrc;
  a.read_format = kReadId | kReadLost;
  a.flags = kAttrFlagFreq | kAttrFlagSampleIdAll | kAttrFlagMmap2 | kAttrFlagCommExec;
  a.sample_regs_user = 0xff0fff;
  a.sample_stack_user = 8192;
  return a;
}

std::vector<uint8_t> SampleRecord(const EventAttr& a, const SampleSpec& s) {
  const uint64_t t = a.sample_type;
  Bytes8 b;
  if (t & kSampleIdentifier) b.U64(s.id);
  if (t & kSampleIp) b.U64(s.ip);
  if (t & kSampleTid) b.U32(s.pid).U32(s.tid);
  if (t & kSampleTime) b.U64(s.time);
  if (t & kSampleAddr) b.U64(s.addr);
  if (t & kSampleId) b.U64(s.id);
  if (t & kSampleStreamId) b.U64(s.stream_id);
  if (t & kSampleCpu) b.U32(s.cpu).U32(0);
  if (t & kSamplePeriod) b.U64(s.period);
  if (t & kSampleRead) {
    for (uint64_t v : s.read_values) b.U64(v);
  }
  if (t & kSampleCallchain) {
    b.U64(s.callchain.size());
    for (uint64_t v : s.callchain) b.U64(v);
  }
  if (t & kSampleRaw) {
    b.U32(static_cast<uint32_t>(s.raw.size())).Raw(s.raw);
  }
  if (t & kSampleBranchStack) {
    b.U64(s.branch_nr);
    if (a.branch_sample_type & kBranchHwIndex) b.U64(s.branch_hw_idx);
    for (uint64_t i = 0; i < s.branch_nr * 3; ++i) b.U64(0x1000 + i);
  }
  if (t & kSampleRegsUser) {
    b.U64(s.regs_abi);
    if (s.regs_abi != 0) {
      for (uint64_t v : s.regs) b.U64(v);
    }
  }
  if (t & kSampleStackUser) {
    b.U64(s.stack.size());
    if (!s.stack.empty()) b.Raw(s.stack).U64(s.dyn_size);
  }
  if (t & (kSampleWeight | kSampleWeightStruct)) b.U64(s.weight);
  if (t & kSampleDataSrc) b.U64(s.data_src);
  if (t & kSampleTransaction) b.U64(s.transaction);
  if (t & kSampleRegsIntr) {
    b.U64(s.regs_intr_abi);
    if (s.regs_intr_abi != 0) {
      for (uint64_t v : s.regs_intr) b.U64(v);
    }
  }
  if (t & kSamplePhysAddr) b.U64(s.phys_addr);
  if (t & kSampleCgroup) b.U64(s.cgroup);
  if (t & kSampleDataPageSize) b.U64(s.data_page_size);
  if (t & kSampleCodePageSize) b.U64(s.code_page_size);
  if (t & kSampleAux) b.U64(s.aux.size()).Raw(s.aux);
  return Record(kRecordSample, s.misc, b.bytes());
}

std::vector<uint8_t> SampleIdTrailer(const EventAttr& a, uint32_t pid, uint32_t tid,
                                     uint64_t time, uint64_t id) {
  Bytes8 b;
  if (!a.sample_id_all()) return {};
  const uint64_t t = a.sample_type;
  if (t & kSampleTid) b.U32(pid).U32(tid);
  if (t & kSampleTime) b.U64(time);
  if (t & kSampleId) b.U64(id);
  if (t & kSampleStreamId) b.U64(0);
  if (t & kSampleCpu) b.U32(0).U32(0);
  if (t & kSampleIdentifier) b.U64(id);
  return std::move(b.bytes());
}

std::vector<uint8_t> Mmap2Record(const EventAttr& a, uint32_t pid, uint32_t tid,
                                 uint64_t start, uint64_t len, uint64_t pgoff,
                                 uint32_t prot, const std::string& file,
                                 uint64_t time, const std::vector<uint8_t>& build_id,
                                 uint64_t ino) {
  Bytes8 b;
  b.U32(pid).U32(tid).U64(start).U64(len).U64(pgoff);
  uint16_t misc = kMiscUser;
  if (!build_id.empty()) {
    misc |= kMiscMmapBuildId;
    b.U8(static_cast<uint8_t>(build_id.size())).U8(0).U16(0);
    std::vector<uint8_t> id = build_id;
    id.resize(20, 0);
    b.Raw(id);
  } else {
    b.U32(254).U32(1).U64(ino).U64(7);
  }
  b.U32(prot).U32(2 /* MAP_PRIVATE */).Str(file);
  b.Raw(SampleIdTrailer(a, pid, tid, time, 0));
  return Record(kRecordMmap2, misc, b.bytes());
}

std::vector<uint8_t> MmapRecord(const EventAttr& a, uint32_t pid, uint32_t tid,
                                uint64_t start, uint64_t len, uint64_t pgoff,
                                const std::string& file, uint64_t time, bool data) {
  Bytes8 b;
  b.U32(pid).U32(tid).U64(start).U64(len).U64(pgoff).Str(file);
  b.Raw(SampleIdTrailer(a, pid, tid, time, 0));
  return Record(kRecordMmap, kMiscUser | (data ? kMiscMmapData : 0), b.bytes());
}

std::vector<uint8_t> CommRecord(const EventAttr& a, uint32_t pid, uint32_t tid,
                                const std::string& comm, bool exec, uint64_t time) {
  Bytes8 b;
  b.U32(pid).U32(tid).Str(comm).Raw(SampleIdTrailer(a, pid, tid, time, 0));
  return Record(kRecordComm, exec ? kMiscCommExec : 0, b.bytes());
}

std::vector<uint8_t> TaskRecord(const EventAttr& a, uint32_t type, uint32_t pid,
                                uint32_t ppid, uint32_t tid, uint32_t ptid,
                                uint64_t time) {
  Bytes8 b;
  b.U32(pid).U32(ppid).U32(tid).U32(ptid).U64(time);
  b.Raw(SampleIdTrailer(a, pid, tid, time, 0));
  return Record(type, 0, b.bytes());
}

std::vector<uint8_t> FinishedRound() { return Record(kRecordFinishedRound, 0, {}); }

std::vector<uint8_t> BuildIdEvent(uint32_t type, uint16_t misc, int32_t pid,
                                  const std::vector<uint8_t>& id,
                                  const std::string& file) {
  Bytes8 b;
  b.U32(static_cast<uint32_t>(pid));
  std::vector<uint8_t> raw = id;
  raw.resize(24, 0);
  if (misc & kMiscBuildIdSize) raw[20] = static_cast<uint8_t>(id.size());
  b.Raw(raw).Str(file, 64);
  return Record(type, misc, b.bytes());
}

std::vector<uint8_t> FeatureString(const std::string& s) {
  Bytes8 str;
  str.Str(s, 64);
  Bytes8 b;
  b.U32(static_cast<uint32_t>(str.size())).Raw(str.bytes());
  return std::move(b.bytes());
}

std::vector<uint8_t> PerfDataWriter::FileBytes() const {
  // Layout: header | attrs | ids | data | feature table | features.
  uint64_t attrs_size = 0;
  for (const Attr& a : attrs_) attrs_size += a.size + 16;
  uint64_t ids_offset = kAttrsOffset + attrs_size;
  uint64_t ids_size = 0;
  for (const Attr& a : attrs_) ids_size += 8 * a.attr.ids.size();
  const uint64_t data_offset = ids_offset + ids_size;
  uint64_t data_size = 0;
  for (const auto& r : records_) data_size += r.size();

  Bytes8 b;
  b.U64(kMagic).U64(kFileHeaderSize);
  b.U64(attrs_.empty() ? kAttrSizeVer8 + 16 : attrs_[0].size + 16);
  b.U64(kAttrsOffset).U64(attrs_size);
  b.U64(data_offset).U64(data_size);
  b.U64(0).U64(0);
  uint64_t bits[4] = {};
  for (const auto& [feat, payload] : features_) bits[feat / 64] |= uint64_t{1} << (feat % 64);
  for (uint64_t w : bits) b.U64(w);
  uint64_t id_at = ids_offset;
  for (const Attr& a : attrs_) {
    b.Raw(AttrBytes(a.attr, a.size));
    b.U64(id_at).U64(8 * a.attr.ids.size());
    id_at += 8 * a.attr.ids.size();
  }
  for (const Attr& a : attrs_) {
    for (uint64_t id : a.attr.ids) b.U64(id);
  }
  for (const auto& r : records_) b.Raw(r);
  uint64_t feat_at = b.size() + 16 * features_.size();
  for (const auto& [feat, payload] : features_) {
    b.U64(feat_at).U64(payload.size());
    feat_at += payload.size();
  }
  for (const auto& [feat, payload] : features_) b.Raw(payload);
  return std::move(b.bytes());
}

std::vector<uint8_t> PerfDataWriter::PipeBytes() const {
  Bytes8 b;
  b.U64(kMagic).U64(kPipeHeaderSize);
  for (const Attr& a : attrs_) {
    Bytes8 body;
    body.Raw(AttrBytes(a.attr, a.size));
    for (uint64_t id : a.attr.ids) body.U64(id);
    b.Raw(Record(kRecordHeaderAttr, 0, body.bytes()));
  }
  for (const auto& [feat, payload] : features_) {
    Bytes8 body;
    body.U64(feat).Raw(payload);
    b.Raw(Record(kRecordHeaderFeature, 0, body.bytes()));
  }
  for (const auto& r : records_) b.Raw(r);
  return std::move(b.bytes());
}

}  // namespace unwindd::proc::perf::testing

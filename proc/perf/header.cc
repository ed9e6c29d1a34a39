#include "proc/perf/header.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace unwindd::proc::perf {
namespace {

bool SectionInFile(const FileSection& s, uint64_t file_size) {
  return s.offset <= file_size && s.size <= file_size - s.offset;
}

// do_write_string: u32 len (the string's NUL-padded size), then len bytes.
absl::Status ReadString(Cursor& c, std::string& out) {
  uint32_t len;
  if (!c.U32(len)) return absl::DataLossError("feature string length is cut off");
  if (len > kMaxFeatureString) {
    return absl::DataLossError(absl::StrFormat(
        "feature string of %d bytes (at most %d)", len, kMaxFeatureString));
  }
  absl::Span<const uint8_t> bytes;
  if (!c.Take(len, bytes)) {
    return absl::DataLossError(absl::StrFormat(
        "feature string of %d bytes runs past its section", len));
  }
  size_t n = 0;
  while (n < bytes.size() && bytes[n] != 0) ++n;
  out.assign(reinterpret_cast<const char*>(bytes.data()), n);
  return absl::OkStatus();
}

absl::Status ParseBuildIds(absl::Span<const uint8_t> payload, RecordingInfo& info) {
  // A sequence of build_id_event, each sized by its header
  // (header.c: perf_header__read_build_ids).
  size_t pos = 0;
  while (payload.size() - pos >= kRecordHeaderSize) {
    const uint16_t size = Load16(payload.data() + pos + 6);
    if (size < kBuildIdEventFixedSize || size > payload.size() - pos) {
      return absl::DataLossError(absl::StrFormat(
          "build-id entry at section byte %d says %d bytes (%d left, at least "
          "%d needed)",
          pos, size, payload.size() - pos, kBuildIdEventFixedSize));
    }
    if (info.build_ids.size() >= kMaxBuildIds) {
      return absl::DataLossError(
          absl::StrFormat("more than %d build-id entries", kMaxBuildIds));
    }
    BuildIdEntry e;
    absl::Status s = ParseBuildIdEvent(payload.subspan(pos, size), e);
    if (!s.ok()) return s;
    info.build_ids.push_back(std::move(e));
    pos += size;
  }
  return absl::OkStatus();
}

// HEADER_EVENT_DESC (header.c: read_event_desc): u32 nr, u32 attr_size,
// then per event the attr, u32 nr_ids, its name and its ids. Names are
// matched to our attrs by id, as perf's process_event_desc does.
absl::Status ParseEventDesc(absl::Span<const uint8_t> payload, AttrSet& attrs) {
  Cursor c(payload);
  uint32_t nr, attr_size;
  if (!c.U32(nr) || !c.U32(attr_size)) {
    return absl::DataLossError("EVENT_DESC header is cut off");
  }
  if (nr > AttrSet::kMaxAttrs || attr_size < kAttrSizeVer0 ||
      attr_size > kMaxFeatureString) {
    return absl::DataLossError(absl::StrFormat(
        "EVENT_DESC with %d events of %d bytes", nr, attr_size));
  }
  for (uint32_t i = 0; i < nr; ++i) {
    uint32_t nr_ids;
    std::string name;
    if (!c.Skip(attr_size) || !c.U32(nr_ids)) {
      return absl::DataLossError(absl::StrFormat("EVENT_DESC event %d is cut off", i));
    }
    absl::Status s = ReadString(c, name);
    if (!s.ok()) return s;
    if (nr_ids > c.remaining() / 8) {
      return absl::DataLossError(absl::StrFormat(
          "EVENT_DESC event %d has %d ids, more than its section holds", i, nr_ids));
    }
    int index = -1;
    for (uint32_t j = 0; j < nr_ids; ++j) {
      uint64_t id;
      c.U64(id);
      if (index < 0) index = attrs.IndexOfId(id);
    }
    // Without ids (one event), the events are in attr order.
    if (index < 0 && nr == attrs.size()) index = static_cast<int>(i);
    if (index >= 0 && !name.empty()) attrs.mutable_at(index).name = std::move(name);
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<FileHeader> ParseFileHeader(absl::Span<const uint8_t> bytes) {
  if (bytes.size() < 16) {
    return absl::DataLossError(absl::StrFormat(
        "perf.data header cut off: %d bytes (a file header is %d, a pipe "
        "header %d)",
        bytes.size(), kFileHeaderSize, kPipeHeaderSize));
  }
  const uint64_t magic = Load64(bytes.data());
  if (magic == kMagicSwapped) {
    return absl::UnimplementedError(
        "perf.data written by a big-endian machine (PERFILE2 byte-swapped) "
        "is not supported");
  }
  if (magic == kMagicV1) {
    return absl::UnimplementedError(
        "perf.data version 1 (\"PERFFILE\") is not supported");
  }
  if (magic != kMagic) {
    return absl::DataLossError(absl::StrFormat(
        "not a perf.data file: magic 0x%016x, expected PERFILE2", magic));
  }
  FileHeader h;
  h.size = Load64(bytes.data() + 8);
  if (h.size == kPipeHeaderSize) {
    return absl::FailedPreconditionError(
        "perf.data in pipe format (header size 16)");
  }
  if (h.size < kFileHeaderSize) {
    return absl::DataLossError(absl::StrFormat(
        "perf.data header says it is %d bytes (at least %d)", h.size,
        kFileHeaderSize));
  }
  if (bytes.size() < kFileHeaderSize) {
    return absl::DataLossError(absl::StrFormat(
        "perf.data header cut off: %d of %d bytes", bytes.size(), kFileHeaderSize));
  }
  Cursor c(bytes, 16);
  c.U64(h.attr_size);
  c.U64(h.attrs.offset);
  c.U64(h.attrs.size);
  c.U64(h.data.offset);
  c.U64(h.data.size);
  c.U64(h.event_types.offset);
  c.U64(h.event_types.size);
  for (int w = 0; w < kFeatureBits / 64; ++w) {
    uint64_t bits;
    c.U64(bits);
    for (int b = 0; b < 64; ++b) {
      if ((bits >> b) & 1) h.features.set(w * 64 + b);
    }
  }
  return h;
}

absl::Status ParsePipeHeader(absl::Span<const uint8_t> bytes) {
  if (bytes.size() < kPipeHeaderSize) {
    return absl::DataLossError(absl::StrFormat(
        "perf pipe header cut off: %d of %d bytes", bytes.size(), kPipeHeaderSize));
  }
  const uint64_t magic = Load64(bytes.data());
  if (magic == kMagicSwapped) {
    return absl::UnimplementedError(
        "perf pipe data from a big-endian machine is not supported");
  }
  if (magic != kMagic) {
    return absl::DataLossError(absl::StrFormat(
        "not perf pipe data: magic 0x%016x, expected PERFILE2", magic));
  }
  const uint64_t size = Load64(bytes.data() + 8);
  if (size != kPipeHeaderSize) {
    return absl::DataLossError(absl::StrFormat(
        "perf pipe header says %d bytes (it is %d)", size, kPipeHeaderSize));
  }
  return absl::OkStatus();
}

absl::StatusOr<absl::Span<const uint8_t>> SpanFileBytes::Get(uint64_t offset,
                                                             uint64_t n) {
  if (offset > s_.size() || n > s_.size() - offset) {
    return absl::DataLossError(absl::StrFormat(
        "[0x%x, +0x%x) is outside the %d-byte file", offset, n, s_.size()));
  }
  return s_.subspan(offset, n);
}

absl::StatusOr<absl::Span<const uint8_t>> PreadFileBytes::Get(uint64_t offset,
                                                              uint64_t n) {
  if (offset > size_ || n > size_ - offset) {
    return absl::DataLossError(absl::StrFormat(
        "[0x%x, +0x%x) is outside the %d-byte file", offset, n, size_));
  }
  scratch_.resize(n);
  uint64_t done = 0;
  while (done < n) {
    ssize_t r = pread(fd_, scratch_.data() + done, n - done,
                      static_cast<off_t>(offset + done));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) {
      return absl::DataLossError(absl::StrFormat(
          "cannot read [0x%x, +0x%x) of the file (%s)", offset, n,
          r < 0 ? std::strerror(errno) : "it is shorter now"));
    }
    done += r;
  }
  return absl::MakeConstSpan(scratch_);
}

absl::Status ParseAttrSection(FileBytes& file, const FileHeader& h,
                              AttrSet& attrs) {
  if (!SectionInFile(h.attrs, file.size())) {
    return absl::DataLossError(absl::StrFormat(
        "attrs section [0x%x, +0x%x) is outside the %d-byte file",
        h.attrs.offset, h.attrs.size, file.size()));
  }
  if (h.attrs.size == 0) return absl::OkStatus();
  if (h.attrs.size > kMaxAttrSectionBytes) {
    return absl::DataLossError(absl::StrFormat(
        "attrs section of %d bytes (at most %d)", h.attrs.size, kMaxAttrSectionBytes));
  }
  if (h.attr_size < kAttrSizeVer0 + 16) {
    return absl::DataLossError(absl::StrFormat(
        "attr entries of %d bytes (at least %d)", h.attr_size, kAttrSizeVer0 + 16));
  }
  const uint64_t nr = h.attrs.size / h.attr_size;
  if (nr > AttrSet::kMaxAttrs) {
    return absl::DataLossError(absl::StrFormat(
        "%d event attributes (at most %d)", nr, AttrSet::kMaxAttrs));
  }
  // perf's read_attr reads entries back to back, each as long as its own
  // attr.size (0: VER0) plus the ids section; we do the same, inside the
  // attrs section.
  // A copy: the ids are read from the file while we go through it.
  absl::StatusOr<absl::Span<const uint8_t>> got = file.Get(h.attrs.offset, h.attrs.size);
  if (!got.ok()) return got.status();
  const std::vector<uint8_t> copy(got->begin(), got->end());
  absl::Span<const uint8_t> section(copy);
  size_t pos = 0;
  for (uint64_t i = 0; i < nr; ++i) {
    const uint64_t at = h.attrs.offset + pos;
    if (section.size() - pos < kAttrSizeVer0) {
      return absl::DataLossError(absl::StrFormat(
          "attr %d at 0x%x is cut off by the end of the attrs section", i, at));
    }
    uint32_t size = Load32(section.data() + pos + kAttrOffSize);
    if (size == 0) size = kAttrSizeVer0;
    if (size < kAttrSizeVer0 || size > section.size() - pos ||
        section.size() - pos - size < 16) {
      return absl::DataLossError(absl::StrFormat(
          "attr %d at 0x%x says it is %d bytes, which with its ids section "
          "does not fit in the attrs section",
          i, at, size));
    }
    EventAttr attr;
    absl::Status s = ParseEventAttr(section.subspan(pos, size), attr);
    if (!s.ok()) return s;
    FileSection ids;
    ids.offset = Load64(section.data() + pos + size);
    ids.size = Load64(section.data() + pos + size + 8);
    pos += size + 16;
    if (!SectionInFile(ids, file.size()) || ids.size % 8 != 0 ||
        ids.size / 8 > AttrSet::kMaxIds) {
      return absl::DataLossError(absl::StrFormat(
          "attr %d at 0x%x: ids [0x%x, +0x%x) are outside the file or not "
          "whole u64s",
          i, at, ids.offset, ids.size));
    }
    absl::StatusOr<absl::Span<const uint8_t>> id_bytes = file.Get(ids.offset, ids.size);
    if (!id_bytes.ok()) return id_bytes.status();
    for (uint64_t j = 0; j < ids.size / 8; ++j) {
      attr.ids.push_back(Load64(id_bytes->data() + 8 * j));
    }
    s = attrs.Add(std::move(attr));
    if (!s.ok()) return absl::DataLossError(s.message());
  }
  return absl::OkStatus();
}

void ParseFeatureSections(FileBytes& file, const FileHeader& h,
                          RecordingInfo& info, AttrSet& attrs,
                          Warnings& warnings) {
  if (h.features.none()) return;
  // perf_header__process_sections: one perf_file_section per set bit, in
  // bit order, right after the data section.
  const uint64_t table = h.data.offset + h.data.size;
  const uint64_t n = h.features.count();
  if (table < h.data.offset || table > file.size() ||
      (file.size() - table) / 16 < n) {
    warnings.Add(absl::StrFormat(
        "feature section table at 0x%x (%d entries) is outside the %d-byte "
        "file: no build-ids or host information",
        table, n, file.size()));
    return;
  }
  absl::StatusOr<absl::Span<const uint8_t>> got = file.Get(table, 16 * n);
  if (!got.ok()) {
    warnings.Add(absl::StrCat("feature section table: ", got.status().message()));
    return;
  }
  const std::vector<uint8_t> sections(got->begin(), got->end());
  uint64_t i = 0;
  for (int feat = 0; feat < kFeatureBits; ++feat) {
    if (!h.features.test(feat)) continue;
    FileSection s;
    s.offset = Load64(sections.data() + 16 * i);
    s.size = Load64(sections.data() + 16 * i + 8);
    ++i;
    if (!SectionInFile(s, file.size())) {
      warnings.Add(absl::StrFormat(
          "feature %d: section [0x%x, +0x%x) is outside the file; skipped",
          feat, s.offset, s.size));
      continue;
    }
    if (s.size > kMaxFeatureBytes) {
      warnings.Add(absl::StrFormat(
          "feature %d: section of %d bytes (at most %d); skipped", feat, s.size,
          kMaxFeatureBytes));
      continue;
    }
    absl::StatusOr<absl::Span<const uint8_t>> payload = file.Get(s.offset, s.size);
    absl::Status st =
        payload.ok() ? ParseFeature(feat, *payload, info, attrs) : payload.status();
    if (!st.ok()) {
      warnings.Add(absl::StrFormat("feature %d at 0x%x: %s; skipped", feat,
                                   s.offset, st.message()));
    }
  }
}

absl::Status ParseFeature(int feat, absl::Span<const uint8_t> payload,
                          RecordingInfo& info, AttrSet& attrs) {
  Cursor c(payload);
  switch (feat) {
    case kFeatBuildId:
      return ParseBuildIds(payload, info);
    case kFeatHostname:
      return ReadString(c, info.hostname);
    case kFeatOsRelease:
      return ReadString(c, info.os_release);
    case kFeatVersion:
      return ReadString(c, info.perf_version);
    case kFeatArch:
      return ReadString(c, info.arch);
    case kFeatCpuDesc:
      return ReadString(c, info.cpu_desc);
    case kFeatNrCpus:
      if (!c.U32(info.nr_cpus_available) || !c.U32(info.nr_cpus_online)) {
        return absl::DataLossError("NRCPUS is cut off");
      }
      return absl::OkStatus();
    case kFeatCmdline: {
      uint32_t nr;
      if (!c.U32(nr)) return absl::DataLossError("CMDLINE count is cut off");
      if (nr > kMaxCmdlineArgs) {
        return absl::DataLossError(absl::StrFormat(
            "CMDLINE of %d arguments (at most %d)", nr, kMaxCmdlineArgs));
      }
      info.cmdline.clear();
      for (uint32_t i = 0; i < nr; ++i) {
        std::string arg;
        absl::Status s = ReadString(c, arg);
        if (!s.ok()) return s;
        info.cmdline.push_back(std::move(arg));
      }
      return absl::OkStatus();
    }
    case kFeatEventDesc:
      return ParseEventDesc(payload, attrs);
    default:
      // TRACING_DATA, topology, caches, PMU mappings, ...: not needed to
      // unwind; their size is known from the section table, so skipping
      // them is safe.
      return absl::OkStatus();
  }
}

}  // namespace unwindd::proc::perf

#include "proc/minidump/reader.h"

#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "arch/le_bytes.h"
#include "memory/file_region_memory.h"
#include "proc/minidump/format.h"

namespace unwindd::proc::minidump {
namespace {

using Bytes = absl::Span<const uint8_t>;

uint16_t U16(Bytes b, size_t off) {
  return static_cast<uint16_t>(arch::LoadLe(b, off, 2));
}
uint32_t U32(Bytes b, size_t off) { return arch::LoadLe32(b, off); }
uint64_t U64(Bytes b, size_t off) { return arch::LoadLe64(b, off); }

Location LocationAt(Bytes b, size_t off) {
  return Location{U32(b, off), U32(b, off + 4)};
}

// The offset of a list's first entry: Breakpad's writer puts `count`
// (u32) right before the entries, but MSVC-built writers align 8-byte
// entries to 8, leaving 4 bytes of padding (Breakpad's minidump.cc
// accepts both). `count` entries of `entry` bytes must fit.
std::optional<size_t> ListStart(uint64_t stream_size, uint64_t count,
                                uint64_t entry) {
  const uint64_t body = count * entry;  // count and entry are bounded
  if (stream_size == 8 + body) return 8;
  if (stream_size >= 4 + body) return 4;
  return std::nullopt;
}

std::string Hex(Bytes b) {
  std::string out;
  out.reserve(b.size() * 2);
  for (uint8_t c : b) absl::StrAppendFormat(&out, "%02x", c);
  return out;
}

std::string StreamName(uint32_t type) {
  return absl::StrFormat("stream 0x%x", type);
}

}  // namespace

std::string Utf16ToUtf8(const std::vector<uint16_t>& units) {
  std::string out;
  out.reserve(units.size());
  auto put = [&](uint32_t cp) {
    if (cp < 0x80) {
      out += static_cast<char>(cp);
    } else if (cp < 0x800) {
      out += static_cast<char>(0xc0 | (cp >> 6));
      out += static_cast<char>(0x80 | (cp & 0x3f));
    } else if (cp < 0x10000) {
      out += static_cast<char>(0xe0 | (cp >> 12));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
      out += static_cast<char>(0x80 | (cp & 0x3f));
    } else {
      out += static_cast<char>(0xf0 | (cp >> 18));
      out += static_cast<char>(0x80 | ((cp >> 12) & 0x3f));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
      out += static_cast<char>(0x80 | (cp & 0x3f));
    }
  };
  for (size_t i = 0; i < units.size(); ++i) {
    const uint16_t u = units[i];
    if (u >= 0xd800 && u < 0xdc00 && i + 1 < units.size() &&
        units[i + 1] >= 0xdc00 && units[i + 1] < 0xe000) {
      put(0x10000 + ((uint32_t{u} - 0xd800) << 10) + (units[i + 1] - 0xdc00));
      ++i;
    } else if (u >= 0xd800 && u < 0xe000) {
      put(0xfffd);
    } else {
      put(u);
    }
  }
  return out;
}

absl::StatusOr<MinidumpFile> MinidumpFile::Read(
    std::shared_ptr<const memory::ScopedFd> fd, uint64_t size,
    std::string name) {
  MinidumpFile f;
  f.fd_ = std::move(fd);
  f.size_ = size;
  f.name_ = std::move(name);
  absl::Status s = f.Parse();
  if (!s.ok()) return s;
  return f;
}

absl::StatusOr<std::vector<uint8_t>> MinidumpFile::ReadRange(
    uint64_t offset, uint64_t size) const {
  if (offset > size_ || size > size_ - offset) {
    return absl::DataLossError(absl::StrFormat(
        "%s: %d bytes at offset 0x%x run past the end of the file (%d bytes)",
        name_, size, offset, size_));
  }
  std::vector<uint8_t> out(size);
  if (size != 0 &&
      memory::PreadFully(fd_->get(), out.data(), size, offset) != size) {
    return absl::DataLossError(absl::StrFormat(
        "%s: cannot read %d bytes at offset 0x%x", name_, size, offset));
  }
  return out;
}

absl::StatusOr<std::vector<uint8_t>> MinidumpFile::ReadLocation(
    Location loc, uint32_t max) const {
  if (loc.size > max) {
    return absl::DataLossError(absl::StrFormat(
        "%s: a %d-byte record at 0x%x is larger than %d bytes", name_,
        loc.size, loc.rva, max));
  }
  return ReadRange(loc.rva, loc.size);
}

absl::StatusOr<std::string> MinidumpFile::ReadString(uint32_t rva) {
  // MDString: u32 byte length (without the terminator), UTF-16LE units.
  absl::StatusOr<std::vector<uint8_t>> head =
      ReadRange(rva, kStringHeaderSize);
  if (!head.ok()) return head.status();
  const uint32_t bytes = U32(*head, 0);
  if (bytes > kMaxStringBytes || bytes % 2 != 0) {
    return absl::DataLossError(absl::StrFormat(
        "%s: string at 0x%x has a bad length %d", name_, rva, bytes));
  }
  // Many records may name the same string: the total is bounded too.
  string_bytes_ += bytes;
  if (string_bytes_ > kMaxTotalStringBytes) {
    return absl::ResourceExhaustedError(absl::StrFormat(
        "%s: more than %d bytes of strings", name_, kMaxTotalStringBytes));
  }
  absl::StatusOr<std::vector<uint8_t>> body =
      ReadRange(uint64_t{rva} + kStringHeaderSize, bytes);
  if (!body.ok()) return body.status();
  std::vector<uint16_t> units(bytes / 2);
  for (size_t i = 0; i < units.size(); ++i) units[i] = U16(*body, 2 * i);
  return Utf16ToUtf8(units);
}

absl::Status MinidumpFile::Parse() {
  absl::StatusOr<std::vector<uint8_t>> header = ReadRange(0, kHeaderSize);
  if (!header.ok() || U32(*header, 0) != kSignature) {
    return absl::DataLossError(
        absl::StrCat(name_, ": not a minidump (no MDMP signature)"));
  }
  if ((U32(*header, 4) & 0xffff) != kVersion) {
    warnings_.push_back(absl::StrFormat("header version 0x%x is not 0x%x",
                                        U32(*header, 4) & 0xffff, kVersion));
  }
  const uint32_t count = U32(*header, 8);
  const uint32_t dir_rva = U32(*header, 12);
  time_date_stamp_ = U32(*header, 20);
  if (count > kMaxStreams) {
    return absl::DataLossError(absl::StrFormat(
        "%s: %d streams (at most %d)", name_, count, kMaxStreams));
  }
  absl::StatusOr<std::vector<uint8_t>> dir =
      ReadRange(dir_rva, uint64_t{count} * kDirectoryEntrySize);
  if (!dir.ok()) {
    return absl::DataLossError(absl::StrCat(
        name_, ": the stream directory is not in the file: ",
        dir.status().message()));
  }
  absl::flat_hash_set<uint32_t> seen;
  std::optional<Location> thread_list;
  for (uint32_t i = 0; i < count; ++i) {
    const size_t at = size_t{i} * kDirectoryEntrySize;
    const uint32_t type = U32(*dir, at);
    const Location loc = LocationAt(*dir, at + 4);
    if (type == 0) continue;  // MD_UNUSED_STREAM: padding entries
    if (!seen.insert(type).second) {
      warnings_.push_back(
          absl::StrCat("a second ", StreamName(type), " is ignored"));
      continue;
    }
    stream_types_.push_back(type);
    switch (type) {
      case kThreadListStream:
        thread_list = loc;
        break;
      case kModuleListStream:
        ReadModules(loc);
        break;
      case kMemoryListStream:
        ReadMemoryList(loc);
        break;
      case kMemory64ListStream:
        ReadMemory64List(loc.size, loc.rva);
        break;
      case kExceptionStream:
        ReadException(loc);
        break;
      case kSystemInfoStream:
        ReadSystemInfo(loc);
        break;
      case kMiscInfoStream:
        ReadMiscInfo(loc);
        break;
      case kLinuxCpuInfo:
        linux_.cpu_info = ReadText(loc, "cpuinfo");
        break;
      case kLinuxProcStatus:
        linux_.proc_status = ReadText(loc, "proc status");
        break;
      case kLinuxLsbRelease:
        linux_.lsb_release = ReadText(loc, "lsb-release");
        break;
      case kLinuxCmdLine:
        linux_.cmdline = ReadText(loc, "cmdline");
        break;
      case kLinuxEnviron:
        linux_.environ = ReadText(loc, "environ");
        break;
      case kLinuxAuxv:
        linux_.auxv = ReadText(loc, "auxv");
        break;
      case kLinuxMaps:
        linux_.maps = ReadText(loc, "maps");
        break;
      case kLinuxDsoDebug:
        ReadDsoDebug(loc);
        break;
      default:
        break;  // streams nothing here needs (handles, Crashpad info, ...)
    }
  }
  if (!thread_list) {
    return absl::DataLossError(absl::StrCat(name_, ": no thread list stream"));
  }
  return ReadThreads(*thread_list);
}

absl::Status MinidumpFile::ReadThreads(Location loc) {
  absl::StatusOr<std::vector<uint8_t>> b =
      ReadLocation(loc, 8 + kMaxThreads * kThreadSize);
  if (!b.ok()) return b.status();
  if (b->size() < 4) {
    return absl::DataLossError(absl::StrCat(name_, ": thread list too short"));
  }
  const uint32_t n = U32(*b, 0);
  std::optional<size_t> start =
      n <= kMaxThreads ? ListStart(b->size(), n, kThreadSize) : std::nullopt;
  if (!start) {
    return absl::DataLossError(absl::StrFormat(
        "%s: the thread list claims %d threads in %d bytes", name_, n,
        b->size()));
  }
  for (uint32_t i = 0; i < n; ++i) {
    const size_t at = *start + size_t{i} * kThreadSize;
    ThreadEntry t;
    t.tid = U32(*b, at);
    const Location stack = LocationAt(*b, at + kThreadStackLocation);
    t.stack = {U64(*b, at + kThreadStackStart), stack.size, stack.rva};
    t.context = LocationAt(*b, at + kThreadContextLocation);
    threads_.push_back(t);
  }
  if (threads_.empty()) {
    return absl::DataLossError(absl::StrCat(name_, ": no threads"));
  }
  return absl::OkStatus();
}

void MinidumpFile::ReadModules(Location loc) {
  absl::StatusOr<std::vector<uint8_t>> b =
      ReadLocation(loc, 8 + kMaxModules * kModuleSize);
  if (!b.ok() || b->size() < 4) {
    warnings_.push_back(absl::StrCat(
        "module list: ", b.ok() ? "too short" : b.status().message()));
    return;
  }
  const uint32_t n = U32(*b, 0);
  std::optional<size_t> start =
      n <= kMaxModules ? ListStart(b->size(), n, kModuleSize) : std::nullopt;
  if (!start) {
    warnings_.push_back(absl::StrFormat(
        "module list: %d modules do not fit in %d bytes", n, b->size()));
    return;
  }
  for (uint32_t i = 0; i < n; ++i) {
    const size_t at = *start + size_t{i} * kModuleSize;
    ModuleEntry m;
    m.base = U64(*b, at);
    m.size = U32(*b, at + kModuleSizeOfImage);
    absl::StatusOr<std::string> name = ReadString(U32(*b, at + kModuleNameRva));
    if (name.ok()) {
      m.name = *std::move(name);
    } else {
      warnings_.push_back(absl::StrFormat("module at 0x%x: name: %s", m.base,
                                          name.status().message()));
    }
    const Location cv = LocationAt(*b, at + kModuleCvRecord);
    m.cv_kind = "none";
    if (cv.size != 0) {
      absl::StatusOr<std::vector<uint8_t>> rec =
          ReadLocation(cv, kMaxCvRecordBytes);
      if (!rec.ok() || rec->size() < 4) {
        warnings_.push_back(absl::StrFormat(
            "module %s: CodeView record: %s", m.name,
            rec.ok() ? "too short" : rec.status().message()));
      } else if (U32(*rec, 0) == kCvSignatureElf) {
        m.cv_kind = "elf";
        m.build_id = Hex(Bytes(*rec).subspan(4));
      } else if (U32(*rec, 0) == kCvSignaturePdb70) {
        m.cv_kind = "pdb70";
      } else {
        m.cv_kind = "unknown";
      }
    }
    modules_.push_back(std::move(m));
  }
}

void MinidumpFile::ReadMemoryList(Location loc) {
  absl::StatusOr<std::vector<uint8_t>> b = ReadLocation(
      loc, static_cast<uint32_t>(8 + kMaxMemoryRanges * kMemoryDescriptorSize));
  if (!b.ok() || b->size() < 4) {
    warnings_.push_back(absl::StrCat(
        "memory list: ", b.ok() ? "too short" : b.status().message()));
    return;
  }
  const uint32_t n = U32(*b, 0);
  std::optional<size_t> start =
      n <= kMaxMemoryRanges ? ListStart(b->size(), n, kMemoryDescriptorSize)
                            : std::nullopt;
  if (!start) {
    warnings_.push_back(absl::StrFormat(
        "memory list: %d ranges do not fit in %d bytes", n, b->size()));
    return;
  }
  for (uint32_t i = 0; i < n; ++i) {
    const size_t at = *start + size_t{i} * kMemoryDescriptorSize;
    const uint64_t start_addr = U64(*b, at);
    const Location data = LocationAt(*b, at + 8);
    if (uint64_t{data.rva} + data.size > size_ ||
        start_addr + data.size < start_addr) {
      warnings_.push_back(absl::StrFormat(
          "memory range at 0x%x: %d bytes at 0x%x are not in the file",
          start_addr, data.size, data.rva));
      continue;
    }
    if (memory_.size() >= kMaxMemoryRanges) break;
    memory_.push_back({start_addr, data.size, data.rva});
  }
}

void MinidumpFile::ReadMemory64List(uint64_t stream_size, uint64_t rva) {
  absl::StatusOr<std::vector<uint8_t>> head =
      ReadRange(rva, kMemory64ListHeaderSize);
  if (!head.ok() || stream_size < kMemory64ListHeaderSize) {
    warnings_.push_back("memory64 list: too short");
    return;
  }
  const uint64_t n = U64(*head, 0);
  uint64_t data = U64(*head, 8);
  if (n > kMaxMemoryRanges ||
      stream_size < kMemory64ListHeaderSize + n * kMemoryDescriptorSize) {
    warnings_.push_back(absl::StrFormat(
        "memory64 list: %d ranges do not fit in %d bytes", n, stream_size));
    return;
  }
  absl::StatusOr<std::vector<uint8_t>> b =
      ReadRange(rva + kMemory64ListHeaderSize, n * kMemoryDescriptorSize);
  if (!b.ok()) {
    warnings_.push_back(absl::StrCat("memory64 list: ", b.status().message()));
    return;
  }
  for (uint64_t i = 0; i < n; ++i) {
    const uint64_t start = U64(*b, i * kMemoryDescriptorSize);
    const uint64_t len = U64(*b, i * kMemoryDescriptorSize + 8);
    // The ranges' bytes follow one another from base_rva.
    if (data > size_ || len > size_ - data || start + len < start) {
      warnings_.push_back(absl::StrFormat(
          "memory64 range at 0x%x: %d bytes at 0x%x are not in the file; "
          "it and the ranges after it are left out",
          start, len, data));
      return;
    }
    if (memory_.size() >= kMaxMemoryRanges) return;
    memory_.push_back({start, len, data});
    data += len;
  }
}

void MinidumpFile::ReadException(Location loc) {
  absl::StatusOr<std::vector<uint8_t>> b = ReadLocation(loc, 4096);
  if (!b.ok() || b->size() < kExceptionStreamSize) {
    warnings_.push_back(absl::StrCat(
        "exception stream: ", b.ok() ? "too short" : b.status().message()));
    return;
  }
  ExceptionInfo e;
  e.tid = U32(*b, 0);
  e.code = U32(*b, kExceptionCode);
  e.flags = U32(*b, kExceptionFlags);
  e.address = U64(*b, kExceptionAddress);
  const uint32_t n = U32(*b, kExceptionNumberParameters);
  for (uint32_t i = 0; i < n && i < kExceptionMaxParameters; ++i) {
    e.parameters.push_back(U64(*b, kExceptionInformation + 8 * size_t{i}));
  }
  e.context = LocationAt(*b, kExceptionContextLocation);
  exception_ = std::move(e);
}

void MinidumpFile::ReadSystemInfo(Location loc) {
  absl::StatusOr<std::vector<uint8_t>> b = ReadLocation(loc, 4096);
  if (!b.ok() || b->size() < kSystemInfoSize) {
    warnings_.push_back(absl::StrCat(
        "system info: ", b.ok() ? "too short" : b.status().message()));
    return;
  }
  SystemInfo s;
  s.cpu_architecture = U16(*b, 0);
  s.processors = (*b)[kSystemInfoNumberOfProcessors];
  s.major_version = U32(*b, kSystemInfoMajorVersion);
  s.minor_version = U32(*b, kSystemInfoMajorVersion + 4);
  s.build_number = U32(*b, kSystemInfoMajorVersion + 8);
  s.platform_id = U32(*b, kSystemInfoPlatformId);
  const uint32_t csd = U32(*b, kSystemInfoCsdVersionRva);
  if (csd != 0) {
    absl::StatusOr<std::string> v = ReadString(csd);
    if (v.ok()) {
      s.csd_version = *std::move(v);
    } else {
      warnings_.push_back(
          absl::StrCat("system info: version string: ", v.status().message()));
    }
  }
  system_info_ = std::move(s);
}

void MinidumpFile::ReadMiscInfo(Location loc) {
  absl::StatusOr<std::vector<uint8_t>> b = ReadLocation(loc, 4096);
  if (!b.ok() || b->size() < 12) {
    warnings_.push_back(absl::StrCat(
        "misc info: ", b.ok() ? "too short" : b.status().message()));
    return;
  }
  if ((U32(*b, 4) & kMiscInfoProcessId) != 0) process_id_ = U32(*b, 8);
}

std::optional<std::string> MinidumpFile::ReadText(Location loc,
                                                  const char* what) {
  absl::StatusOr<std::vector<uint8_t>> b =
      ReadLocation(loc, kMaxTextStreamBytes);
  if (!b.ok()) {
    warnings_.push_back(absl::StrCat(what, ": ", b.status().message()));
    return std::nullopt;
  }
  return std::string(b->begin(), b->end());
}

void MinidumpFile::ReadDsoDebug(Location loc) {
  absl::StatusOr<std::vector<uint8_t>> b = ReadLocation(loc, 4096);
  if (!b.ok()) {
    warnings_.push_back(absl::StrCat("DSO debug: ", b.status().message()));
    return;
  }
  // MDRawDebug64 or MDRawDebug32, told apart by the stream's size.
  const bool is64 = b->size() >= kDebug64Size;
  if (!is64 && b->size() < kDebug32Size) {
    warnings_.push_back("DSO debug: too short");
    return;
  }
  DsoDebug d;
  d.version = U32(*b, 0);
  const uint32_t map = U32(*b, 4);
  const uint32_t count = U32(*b, 8);
  d.brk = is64 ? U64(*b, 16) : U32(*b, 12);
  d.ldbase = is64 ? U64(*b, 24) : U32(*b, 16);
  d.dynamic = is64 ? U64(*b, 32) : U32(*b, 20);
  const size_t entry = is64 ? kLinkMap64Size : kLinkMap32Size;
  if (count > kMaxLinkMapEntries) {
    warnings_.push_back(absl::StrFormat("DSO debug: %d link_map entries", count));
    return;
  }
  absl::StatusOr<std::vector<uint8_t>> list = ReadRange(map, count * entry);
  if (!list.ok()) {
    warnings_.push_back(absl::StrCat("DSO debug: ", list.status().message()));
    return;
  }
  for (uint32_t i = 0; i < count; ++i) {
    const size_t at = size_t{i} * entry;
    LinkMapEntry e;
    e.addr = is64 ? U64(*list, at) : U32(*list, at);
    const uint32_t name = U32(*list, at + (is64 ? 8 : 4));
    e.ld = is64 ? U64(*list, at + 16) : U32(*list, at + 8);
    absl::StatusOr<std::string> s = ReadString(name);
    if (s.ok()) e.name = *std::move(s);
    d.link_map.push_back(std::move(e));
  }
  linux_.dso_debug = std::move(d);
}

}  // namespace unwindd::proc::minidump

#include "proc/minidump/testing/minidump_builder.h"

#include "proc/minidump/context.h"
#include "proc/minidump/format.h"

namespace unwindd::proc::minidump::testing {
namespace {

void Put32(std::vector<uint8_t>& b, size_t off, uint32_t v) {
  if (b.size() < off + 4) b.resize(off + 4);
  StoreU32(b, off, v);
}
void Put64(std::vector<uint8_t>& b, size_t off, uint64_t v) {
  if (b.size() < off + 8) b.resize(off + 8);
  StoreU64(b, off, v);
}

}  // namespace

uint32_t MinidumpBuilder::Add(const std::vector<uint8_t>& bytes) {
  while (blob_.size() % 8 != 0) blob_.push_back(0);
  const uint32_t rva = static_cast<uint32_t>(blob_.size());
  blob_.insert(blob_.end(), bytes.begin(), bytes.end());
  return rva;
}

uint32_t MinidumpBuilder::AddString(const std::string& utf8) {
  std::vector<uint8_t> b;
  Put32(b, 0, static_cast<uint32_t>(2 * utf8.size()));
  for (char c : utf8) {
    b.push_back(static_cast<uint8_t>(c));
    b.push_back(0);
  }
  b.push_back(0);
  b.push_back(0);
  return Add(b);
}

void MinidumpBuilder::Stream(uint32_t type, const std::vector<uint8_t>& bytes) {
  StreamAt(type, static_cast<uint32_t>(bytes.size()), Add(bytes));
}

void MinidumpBuilder::StreamAt(uint32_t type, uint32_t size, uint32_t rva) {
  std::vector<uint8_t> e;
  Put32(e, 0, type);
  Put32(e, 4, size);
  Put32(e, 8, rva);
  dir_.push_back(e);
}

std::vector<uint8_t> MinidumpBuilder::Build() const {
  std::vector<uint8_t> out = blob_;
  while (out.size() % 8 != 0) out.push_back(0);
  const uint32_t dir_rva = static_cast<uint32_t>(out.size());
  for (const std::vector<uint8_t>& e : dir_) out.insert(out.end(), e.begin(), e.end());
  Put32(out, 0, kSignature);
  Put32(out, 4, kVersion);
  Put32(out, 8, static_cast<uint32_t>(dir_.size()));
  Put32(out, 12, dir_rva);
  return out;
}

std::vector<uint8_t> ThreadList(const std::vector<ThreadEntry>& threads, bool padded) {
  std::vector<uint8_t> b;
  Put32(b, 0, static_cast<uint32_t>(threads.size()));
  const size_t start = padded ? 8 : 4;
  b.resize(start + threads.size() * kThreadSize, 0);
  for (size_t i = 0; i < threads.size(); ++i) {
    const size_t at = start + i * kThreadSize;
    Put32(b, at, threads[i].tid);
    Put64(b, at + kThreadStackStart, threads[i].stack.start);
    Put32(b, at + kThreadStackLocation, static_cast<uint32_t>(threads[i].stack.size));
    Put32(b, at + kThreadStackLocation + 4, static_cast<uint32_t>(threads[i].stack.file_offset));
    Put32(b, at + kThreadContextLocation, threads[i].context.size);
    Put32(b, at + kThreadContextLocation + 4, threads[i].context.rva);
  }
  return b;
}

std::vector<uint8_t> ModuleList(const std::vector<RawModule>& modules) {
  std::vector<uint8_t> b;
  Put32(b, 0, static_cast<uint32_t>(modules.size()));
  b.resize(4 + modules.size() * kModuleSize, 0);
  for (size_t i = 0; i < modules.size(); ++i) {
    const size_t at = 4 + i * kModuleSize;
    Put64(b, at, modules[i].base);
    Put32(b, at + kModuleSizeOfImage, modules[i].size);
    Put32(b, at + kModuleNameRva, modules[i].name_rva);
    Put32(b, at + kModuleCvRecord, modules[i].cv.size);
    Put32(b, at + kModuleCvRecord + 4, modules[i].cv.rva);
  }
  return b;
}

std::vector<uint8_t> MemoryList(const std::vector<MemoryRange>& ranges) {
  std::vector<uint8_t> b;
  Put32(b, 0, static_cast<uint32_t>(ranges.size()));
  b.resize(4 + ranges.size() * kMemoryDescriptorSize, 0);
  for (size_t i = 0; i < ranges.size(); ++i) {
    const size_t at = 4 + i * kMemoryDescriptorSize;
    Put64(b, at, ranges[i].start);
    Put32(b, at + 8, static_cast<uint32_t>(ranges[i].size));
    Put32(b, at + 12, static_cast<uint32_t>(ranges[i].file_offset));
  }
  return b;
}

std::vector<uint8_t> SystemInfoStream(uint16_t cpu, uint32_t platform, uint32_t csd_rva) {
  std::vector<uint8_t> b(kSystemInfoSize, 0);
  b[0] = static_cast<uint8_t>(cpu);
  b[1] = static_cast<uint8_t>(cpu >> 8);
  Put32(b, kSystemInfoPlatformId, platform);
  Put32(b, kSystemInfoCsdVersionRva, csd_rva);
  return b;
}

std::vector<uint8_t> ExceptionStream(uint32_t tid, uint32_t code, uint32_t flags,
                                     uint64_t address, Location context) {
  std::vector<uint8_t> b(kExceptionStreamSize, 0);
  Put32(b, 0, tid);
  Put32(b, kExceptionCode, code);
  Put32(b, kExceptionFlags, flags);
  Put64(b, kExceptionAddress, address);
  Put32(b, kExceptionContextLocation, context.size);
  Put32(b, kExceptionContextLocation + 4, context.rva);
  return b;
}

std::vector<uint8_t> ElfCvRecord(const std::string& hex) {
  std::vector<uint8_t> b;
  Put32(b, 0, kCvSignatureElf);
  for (size_t i = 0; i + 1 < hex.size(); i += 2) {
    b.push_back(static_cast<uint8_t>(std::stoi(hex.substr(i, 2), nullptr, 16)));
  }
  return b;
}

std::vector<uint8_t> Text(const std::string& s) { return {s.begin(), s.end()}; }

}  // namespace unwindd::proc::minidump::testing

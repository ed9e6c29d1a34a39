// Hand-built minidumps for tests, byte by byte: well-formed ones and ones
// whose sizes, counts and RVAs lie.
//
//   MinidumpBuilder b;
//   uint32_t ctx = b.Add(WriteContext(regs));
//   b.Stream(kThreadListStream, ThreadList({{.tid = 7, .context = {size, ctx}}}));
//   std::vector<uint8_t> file = b.Build();
#ifndef UNWINDD_PROC_MINIDUMP_TESTING_MINIDUMP_BUILDER_H_
#define UNWINDD_PROC_MINIDUMP_TESTING_MINIDUMP_BUILDER_H_

#include <cstdint>
#include <string>
#include <vector>

#include "proc/minidump/reader.h"

namespace unwindd::proc::minidump::testing {

class MinidumpBuilder {
 public:
  // Raw bytes, 8-aligned; returns their RVA.
  uint32_t Add(const std::vector<uint8_t>& bytes);
  uint32_t AddString(const std::string& utf8);  // MDString, ASCII/UTF-8
  // A stream with `bytes` as its contents.
  void Stream(uint32_t type, const std::vector<uint8_t>& bytes);
  // A directory entry as given (which may point anywhere).
  void StreamAt(uint32_t type, uint32_t size, uint32_t rva);
  // Header, everything added, then the directory.
  std::vector<uint8_t> Build() const;
  uint32_t size() const { return static_cast<uint32_t>(blob_.size()); }

 private:
  std::vector<uint8_t> blob_ = std::vector<uint8_t>(32, 0);
  std::vector<std::vector<uint8_t>> dir_;
};

// Stream payloads, in Breakpad's layout (the count then the entries; with
// `padded`, 4 bytes of padding after the count, as MSVC-built writers do).
std::vector<uint8_t> ThreadList(const std::vector<ThreadEntry>& threads,
                                bool padded = false);
struct RawModule {
  uint64_t base = 0;
  uint32_t size = 0;
  uint32_t name_rva = 0;
  Location cv;
};
std::vector<uint8_t> ModuleList(const std::vector<RawModule>& modules);
std::vector<uint8_t> MemoryList(const std::vector<MemoryRange>& ranges);
std::vector<uint8_t> SystemInfoStream(uint16_t cpu, uint32_t platform,
                                      uint32_t csd_rva = 0);
std::vector<uint8_t> ExceptionStream(uint32_t tid, uint32_t code, uint32_t flags,
                                     uint64_t address, Location context);
// 'BpEL' + the bytes of a hex build-id.
std::vector<uint8_t> ElfCvRecord(const std::string& hex_build_id);
std::vector<uint8_t> Text(const std::string& s);

}  // namespace unwindd::proc::minidump::testing

#endif  // UNWINDD_PROC_MINIDUMP_TESTING_MINIDUMP_BUILDER_H_

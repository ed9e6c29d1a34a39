// A module's separate debug information (issue 15): the debug file that
// `objcopy --only-keep-debug` split off (found beside the file, in a
// build-id directory, or fetched from debuginfod) or the MiniDebugInfo image
// in the file's .gnu_debugdata. Its .debug_frame answers for the module
// when the file itself has none; its .eh_frame, NOBITS in such files, is
// never used (the file's own .eh_frame is).
//
//   DebugInfoLoader loader = MakeDebugInfoLoader(path, recorded, options);
//   module->set_debug_info_loader(loader);   // before the module is shared
//   ...  // the first PC the file's own CFI does not cover loads it, once
//
// Addresses: the debug file's sh_addr/p_vaddr are the file's own unless the
// file was prelinked after the split; `delta` = debug-file address − file
// address, from the two files' lowest PT_LOAD.
#ifndef UNWINDD_UNWINDER_DEBUG_INFO_H_
#define UNWINDD_UNWINDER_DEBUG_INFO_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "arch/arch.h"
#include "unwinder/locate/elf_file.h"
#include "unwinder/locate/locator.h"
#include "unwinder/locate/section_data.h"

namespace unwindd::unwinder {

struct DebugInfo {
  std::string path;  // the debug file; empty for MiniDebugInfo
  std::shared_ptr<const std::vector<uint8_t>> image;  // MiniDebugInfo
  std::string kind;    // locate::KindName: "debug", "minidebuginfo"
  std::string origin;  // locate::OriginName: "build_id_dir", "debuginfod", ...
  bool fetched = false;     // from debuginfod (its cache or a server)
  bool downloaded = false;  // from a server, by this lookup
  absl::Duration took;      // the lookup
  // Opened already (by whoever could: a fetched file may only be readable
  // by the server's own identity); null: open `path` / `image`.
  std::shared_ptr<locate::ElfFile> elf;
};

// Finds a module's debug information; called at most once per module.
using DebugInfoLoader = std::function<absl::StatusOr<DebugInfo>()>;

// The loader for the file at `path` (as opened) recorded by the target as
// `recorded`: unwinder/locate's debug-information locators with `options`
// (the options are copied; options.debuginfod must outlive the loader),
// wanting CFI, allowed to fetch the debuginfo when debuginfod is
// configured: it only runs once the file's own CFI has failed a PC.
DebugInfoLoader MakeDebugInfoLoader(std::string path, std::string recorded,
                                    const locate::LocateOptions& options);

// The opened debug ELF of a module and its decompressed .debug_frame.
class DebugElf {
 public:
  // NotFound when the debug information has no .debug_frame contents;
  // FailedPrecondition when it is for another machine or class;
  // DataLoss / ResourceExhausted / Unimplemented from the section reader.
  static absl::StatusOr<std::unique_ptr<DebugElf>> Open(
      const DebugInfo& info, uint16_t machine, uint8_t elf_class,
      uint64_t file_lowest_vaddr, const std::string& module_name);

  const DebugInfo& info() const { return info_; }
  absl::Span<const uint8_t> debug_frame() const { return debug_frame_; }
  locate::Compression compression() const { return compression_; }
  // Debug-file address minus file address.
  int64_t delta() const { return delta_; }
  // The debug file was truncated while mapped (locate::ElfFile::changed).
  bool changed() const { return elf_ != nullptr && elf_->changed(); }

 private:
  DebugElf() = default;
  DebugInfo info_;
  std::shared_ptr<locate::ElfFile> elf_;
  std::vector<uint8_t> storage_;  // zstd-decompressed bytes
  absl::Span<const uint8_t> debug_frame_;
  locate::Compression compression_ = locate::Compression::kNone;
  int64_t delta_ = 0;
};

}  // namespace unwindd::unwinder

#endif  // UNWINDD_UNWINDER_DEBUG_INFO_H_

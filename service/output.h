// Renders unwound stacks in the CLI's output formats (DESIGN.md "Output
// contract"): eu-stack-like text, and one JSON document.
//
//   std::string json = FormatJson(stacks);
#ifndef UNWINDD_SERVICE_OUTPUT_H_
#define UNWINDD_SERVICE_OUTPUT_H_

#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "unwinder/unwinder.h"

namespace unwindd::service {

// What `unwind core` reports about the core itself (README "Core files"):
// where each file it recorded was found, and what was wrong with the core.
struct CoreSummary {
  struct File {
    std::string path;           // as the core recorded it
    std::string state;          // "found", "missing", "mismatch"
    std::string file;           // the file used, or the one rejected
    std::string build_id;       // what the core recorded ("" if not dumped)
    std::string file_build_id;  // of `file`
  };
  std::string core;         // the CORE argument
  std::string compression;  // "none", "zstd", "xz", "lz4"
  std::string executable;   // recorded path of the main executable
  std::string modules_from; // "nt_file", "link_map", "elf_headers"
  std::vector<File> files;
  std::vector<std::string> warnings;
};

// `core`, when given, adds a top-level "core" object (JSON) or header lines
// (text).
std::string FormatJson(const unwinder::ProcessStacks& stacks,
                       const CoreSummary* core = nullptr);
std::string FormatText(const unwinder::ProcessStacks& stacks,
                       const CoreSummary* core = nullptr);

// `s` as a JSON string literal, quotes included.
std::string JsonString(absl::string_view s);

}  // namespace unwindd::service

#endif  // UNWINDD_SERVICE_OUTPUT_H_

// What `unwind core` and UnwindCore report about a core file itself (docs/cores.md
// "Core files"): where each file it recorded was found, and what was wrong
// with the core. The CLI prints it; the server sends it (common/convert.h).
// `unwind minidump` and `unwind coredump` report the same for a minidump
// and a systemd-coredump entry (docs/crash-pipelines.md), with what the
// file or the journal says about the crash as `metadata`.
//
//   CoreSummary s = SummarizeCore(target->report(), "core.1234.zst");
#ifndef UNWINDD_SERVICE_COMMON_CORE_SUMMARY_H_
#define UNWINDD_SERVICE_COMMON_CORE_SUMMARY_H_

#include <string>
#include <vector>

#include "proc/core_target.h"
#include "proc/minidump/minidump_target.h"
#include "unwinder/unwinder.h"

namespace unwindd::service {

struct CoreSummary {
  struct File {
    std::string path;           // as the core recorded it
    std::string state;          // "found", "missing", "mismatch"
    std::string file;           // the file used, or the one rejected
    std::string build_id;       // what the core recorded ("" if not dumped)
    std::string file_build_id;  // of `file`
    bool fetched = false;       // `file` came from debuginfod
  };
  // "core" or "minidump": the JSON object's key and the text header.
  std::string kind = "core";
  // One fact about the crash: a JSON key, a label for text, its value.
  struct Fact {
    std::string key;    // "command_line"
    std::string label;  // "Command Line"
    std::string value;
  };
  std::string core;         // the CORE argument
  std::string compression;  // "none", "zstd", "xz", "lz4"
  std::string executable;   // recorded path of the main executable
  std::string modules_from; // "nt_file", "link_map", "elf_headers"
  std::vector<File> files;
  std::vector<std::string> warnings;
  // In order: the minidump's system info and Linux streams, or a
  // systemd-coredump entry's fields.
  std::vector<Fact> metadata;
};

// The report of an opened core; `name` is the core file as the caller named
// it (the server opened it as /proc/self/fd/N).
CoreSummary SummarizeCore(const proc::CoreReport& report, std::string name);

// The same for an opened minidump.
CoreSummary SummarizeMinidump(const proc::MinidumpReport& report, std::string name);

// The files the core report could not find on this machine but the
// unwinder then did (a build-id directory, debuginfod: unwinder/locate)
// become "found", with `fetched` when debuginfod gave them, and their
// warnings go.
void NoteFilesFoundWhileUnwinding(const unwinder::ProcessStacks& stacks,
                                  CoreSummary& summary);

}  // namespace unwindd::service

#endif  // UNWINDD_SERVICE_COMMON_CORE_SUMMARY_H_

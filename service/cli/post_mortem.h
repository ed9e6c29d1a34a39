// What `unwind core`, `unwind minidump` and `unwind coredump` share once
// their target is open: unwind every thread, say on stderr what was
// missing, write --minidump=OUT, and print text, JSON or core_backtrace
// (docs/crash-pipelines.md).
//
//   PostMortem pm{.target = target.get(), .summary = SummarizeCore(...)};
//   return RunPostMortem(cmd, **binaries, pm, cancel);
#ifndef UNWINDD_SERVICE_CLI_POST_MORTEM_H_
#define UNWINDD_SERVICE_CLI_POST_MORTEM_H_

#include <atomic>
#include <cstdint>
#include <optional>
#include <string>

#include "proc/minidump/writer.h"
#include "proc/target.h"
#include "service/cli/args.h"
#include "service/cli/binaries.h"
#include "service/common/core_summary.h"

namespace unwindd::service {

struct PostMortem {
  proc::Target* target = nullptr;
  CoreSummary summary;
  // For --minidump=OUT: what the minidump carries besides the target
  // (null: the command cannot write one), and the size to compare it with.
  const proc::minidump::ProcessInfo* minidump_info = nullptr;
  uint64_t compared_bytes = 0;
  std::string compared = "the core";
};

// Exit code: 0, or 1 after printing why on stderr.
int RunPostMortem(const Command& cmd, Binaries& binaries, PostMortem& pm,
                  const std::atomic<bool>* cancel);

}  // namespace unwindd::service

#endif  // UNWINDD_SERVICE_CLI_POST_MORTEM_H_

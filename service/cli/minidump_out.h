// `--minidump=OUT` of `unwind core`, `unwind pid` and `unwind coredump`:
// what the minidump carries besides the target (proc/minidump/writer.h
// ProcessInfo) for each kind of target, and the line on stderr that says
// how its size compares with the core's.
//
//   minidump::ProcessInfo info = CoreProcessInfo(core_target->core());
//   if (int rc = WriteMinidumpReport(target, info, cmd, core_size); rc != 0) ...
#ifndef UNWINDD_SERVICE_CLI_MINIDUMP_OUT_H_
#define UNWINDD_SERVICE_CLI_MINIDUMP_OUT_H_

#include <sys/types.h>

#include <cstdint>
#include <string>

#include "proc/core_file.h"
#include "proc/minidump/writer.h"
#include "proc/target.h"
#include "service/cli/args.h"
#include "unwinder/unwinder.h"

namespace unwindd::service {

// From a core's notes: the command line (NT_PRPSINFO's first 79 bytes)
// and the auxiliary vector (NT_AUXV).
proc::minidump::ProcessInfo CoreProcessInfo(const proc::CoreFile& core);

// From a live process's /proc files, this machine's os-release, cpuinfo
// and uname. Files that cannot be read are left empty.
proc::minidump::ProcessInfo LiveProcessInfo(pid_t pid);

// The bytes a kernel core of `target` would hold at least: its anonymous
// and private writable mappings (coredump_filter's default, 0x33).
uint64_t CoreSizeEstimate(const proc::Target& target);

// Writes cmd.minidump_out and prints on stderr
//   unwind: wrote minidump OUT: 41,216 bytes (5 threads, 12 modules, 38,912
//   stack bytes); the core: 2,506,752 bytes, 60.8x larger
// `compared` names what `compared_bytes` is ("the core", "the core
// estimate"); 0 bytes: no comparison. `stacks` (unwound from `target`)
// say which stacks each thread's frames run on, so that the stack below a
// signal frame on an alternate stack goes in too. Returns the exit code
// (0 or 1).
int WriteMinidumpReport(proc::Target& target, const proc::minidump::ProcessInfo& info,
                        const Command& cmd, const unwinder::ProcessStacks& stacks,
                        uint64_t compared_bytes, const std::string& compared);

}  // namespace unwindd::service

#endif  // UNWINDD_SERVICE_CLI_MINIDUMP_OUT_H_

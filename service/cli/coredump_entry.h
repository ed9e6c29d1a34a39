// `unwind coredump`'s entry point, which only some builds of the CLI have.
// Reading the journal takes libsystemd (sd-journal), which Debian ships as
// a shared library only; the static `unwind` cannot load it (a static
// glibc's dlopen() would load a second glibc with it). So, as for
// debuginfod (remote_exec.h), two definitions of one function, and each
// binary links one:
//   - coredump_exec.cc (`unwind`, `unwind_debuginfod`): execs the sibling
//     `unwind_coredump` with the same arguments;
//   - coredump_command.cc (`unwind_coredump`: the same CLI with glibc and
//     libsystemd shared): does the work.
//
//   return RunCoredumpCommand(cmd, argv, &interrupted);
#ifndef UNWINDD_SERVICE_CLI_COREDUMP_ENTRY_H_
#define UNWINDD_SERVICE_CLI_COREDUMP_ENTRY_H_

#include <atomic>

#include "service/cli/args.h"

namespace unwindd::service {

// Exit code: 0, 1 (an error, printed on stderr); or does not return.
int RunCoredumpCommand(const Command& cmd, char** argv,
                       const std::atomic<bool>* cancel);

}  // namespace unwindd::service

#endif  // UNWINDD_SERVICE_CLI_COREDUMP_ENTRY_H_

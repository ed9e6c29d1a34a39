// RunCoredumpCommand for the builds without libsystemd (coredump_entry.h).
#include "service/cli/coredump_entry.h"
#include "service/cli/remote_exec.h"

namespace unwindd::service {

int RunCoredumpCommand(const Command& cmd, char** argv,
                       const std::atomic<bool>* cancel) {
  return ExecCoredumpTwin(argv);
}

}  // namespace unwindd::service

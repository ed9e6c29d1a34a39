// The signal a thread was handling when a target was captured (a core's
// NT_PRSTATUS pr_cursig and NT_SIGINFO), and the names for printing it.
//
//   SignalInfo s{.number = 11, .code = 1, .fault_address = 0};
//   SignalName(s.number);                // "SIGSEGV"
//   SignalCodeName(s.number, s.code);    // "SEGV_MAPERR"
//
// Numbers are Linux's generic ones (x86, x86_64, aarch64 share them), not
// the host's <signal.h>, so a core from another machine reads the same.
#ifndef UNWINDD_PROC_SIGNAL_INFO_H_
#define UNWINDD_PROC_SIGNAL_INFO_H_

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>

#include "absl/strings/string_view.h"

namespace unwindd::proc {

struct SignalInfo {
  int number = 0;
  // From a siginfo_t (NT_SIGINFO); absent when only pr_cursig is known.
  std::optional<int> code;
  // si_addr, for faults (SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGTRAP raised
  // by the kernel).
  std::optional<uint64_t> fault_address;
  // si_pid / si_uid, for signals sent by a process (kill, tgkill, sigqueue).
  std::optional<pid_t> sender_pid;
  std::optional<uint32_t> sender_uid;
};

// "SIGSEGV"; "SIGRTMIN+3" for real-time signals; "SIG<n>" otherwise.
std::string SignalName(int number);
// "SEGV_MAPERR", "SI_USER", ...; "" when the code has no name we know.
absl::string_view SignalCodeName(int number, int code);

}  // namespace unwindd::proc

#endif  // UNWINDD_PROC_SIGNAL_INFO_H_

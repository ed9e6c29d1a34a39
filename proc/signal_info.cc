#include "proc/signal_info.h"

#include <array>

#include "absl/strings/str_cat.h"
#include "absl/types/span.h"

namespace unwindd::proc {
namespace {

// include/uapi/asm-generic/signal.h (x86 and arm64 use the same numbers).
constexpr std::array<absl::string_view, 32> kNames = {
    "",        "SIGHUP",  "SIGINT",    "SIGQUIT", "SIGILL",    "SIGTRAP",
    "SIGABRT", "SIGBUS",  "SIGFPE",    "SIGKILL", "SIGUSR1",   "SIGSEGV",
    "SIGUSR2", "SIGPIPE", "SIGALRM",   "SIGTERM", "SIGSTKFLT", "SIGCHLD",
    "SIGCONT", "SIGSTOP", "SIGTSTP",   "SIGTTIN", "SIGTTOU",   "SIGURG",
    "SIGXCPU", "SIGXFSZ", "SIGVTALRM", "SIGPROF", "SIGWINCH",  "SIGIO",
    "SIGPWR",  "SIGSYS"};
constexpr int kSigRtMin = 32;
constexpr int kSigRtMax = 64;

}  // namespace

std::string SignalName(int number) {
  if (number > 0 && number < static_cast<int>(kNames.size())) {
    return std::string(kNames[number]);
  }
  if (number >= kSigRtMin && number <= kSigRtMax) {
    return number == kSigRtMin ? "SIGRTMIN"
                               : absl::StrCat("SIGRTMIN+", number - kSigRtMin);
  }
  return absl::StrCat("SIG", number);
}

absl::string_view SignalCodeName(int number, int code) {
  // include/uapi/asm-generic/siginfo.h: codes <= 0 (and SI_KERNEL) mean the
  // same for every signal; positive ones are per signal.
  switch (code) {
    case 0:
      return "SI_USER";
    case 0x80:
      return "SI_KERNEL";
    case -1:
      return "SI_QUEUE";
    case -2:
      return "SI_TIMER";
    case -3:
      return "SI_MESGQ";
    case -4:
      return "SI_ASYNCIO";
    case -5:
      return "SI_SIGIO";
    case -6:
      return "SI_TKILL";
    default:
      break;
  }
  static constexpr absl::string_view kSegv[] = {"SEGV_MAPERR", "SEGV_ACCERR",
                                                "SEGV_BNDERR", "SEGV_PKUERR"};
  static constexpr absl::string_view kBus[] = {"BUS_ADRALN", "BUS_ADRERR",
                                               "BUS_OBJERR", "BUS_MCEERR_AR",
                                               "BUS_MCEERR_AO"};
  static constexpr absl::string_view kIll[] = {
      "ILL_ILLOPC", "ILL_ILLOPN", "ILL_ILLADR", "ILL_ILLTRP",
      "ILL_PRVOPC", "ILL_PRVREG", "ILL_COPROC", "ILL_BADSTK"};
  static constexpr absl::string_view kFpe[] = {
      "FPE_INTDIV", "FPE_INTOVF", "FPE_FLTDIV", "FPE_FLTOVF",
      "FPE_FLTUND", "FPE_FLTRES", "FPE_FLTINV", "FPE_FLTSUB"};
  static constexpr absl::string_view kTrap[] = {"TRAP_BRKPT", "TRAP_TRACE",
                                                "TRAP_BRANCH", "TRAP_HWBKPT"};
  auto pick = [code](absl::Span<const absl::string_view> names) {
    return code >= 1 && code <= static_cast<int>(names.size()) ? names[code - 1]
                                                               : "";
  };
  switch (number) {
    case 11:
      return pick(kSegv);
    case 7:
      return pick(kBus);
    case 4:
      return pick(kIll);
    case 8:
      return pick(kFpe);
    case 5:
      return pick(kTrap);
    default:
      return "";
  }
}

}  // namespace unwindd::proc

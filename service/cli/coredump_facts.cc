#include "service/cli/coredump_facts.h"

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "absl/time/time.h"
#include "proc/coredump/core_source.h"
#include "proc/signal_info.h"

namespace unwindd::service {

std::vector<CoreSummary::Fact> CoredumpFacts(const proc::coredump::CoredumpEntry& e) {
  std::vector<CoreSummary::Fact> out;
  auto add = [&](const char* key, const char* label, std::optional<std::string> v) {
    if (v) out.push_back({key, label, *std::move(v)});
  };
  // coredumpctl.c print_info(), in its order.
  std::optional<std::string> pid = e.Get("COREDUMP_PID");
  std::optional<std::string> comm = e.Get("COREDUMP_COMM");
  add("pid", "PID", pid);
  add("comm", "COMM", comm);
  add("uid", "UID", e.Get("COREDUMP_UID"));
  add("gid", "GID", e.Get("COREDUMP_GID"));
  if (std::optional<std::string> sig = e.Get("COREDUMP_SIGNAL")) {
    std::optional<int64_t> n = e.Number("COREDUMP_SIGNAL");
    // coredumpctl: "11 (SEGV)" for a core; the raw reason for a backtrace.
    std::string v = *sig;
    if (n && e.is_coredump() && *n > 0 && *n < 65) {
      v = absl::StrCat(*sig, " (",
                       absl::StripPrefix(proc::SignalName(static_cast<int>(*n)), "SIG"), ")");
    }
    out.push_back({"signal", e.is_coredump() ? "Signal" : "Reason", v});
  }
  if (std::optional<int64_t> usec = e.Number("COREDUMP_TIMESTAMP")) {
    const absl::Time t = absl::FromUnixMicros(*usec);
    out.push_back({"timestamp", "Timestamp",
                   absl::FormatTime("%a %Y-%m-%d %H:%M:%S UTC", t, absl::UTCTimeZone())});
  }
  add("command_line", "Command Line", e.Get("COREDUMP_CMDLINE"));
  add("executable", "Executable", e.Get("COREDUMP_EXE"));
  add("control_group", "Control Group", e.Get("COREDUMP_CGROUP"));
  add("unit", "Unit", e.Get("COREDUMP_UNIT"));
  add("user_unit", "User Unit", e.Get("COREDUMP_USER_UNIT"));
  add("slice", "Slice", e.Get("COREDUMP_SLICE"));
  add("session", "Session", e.Get("COREDUMP_SESSION"));
  add("owner_uid", "Owner UID", e.Get("COREDUMP_OWNER_UID"));
  add("boot_id", "Boot ID", e.Get("_BOOT_ID"));
  add("machine_id", "Machine ID", e.Get("_MACHINE_ID"));
  add("hostname", "Hostname", e.Get("COREDUMP_HOSTNAME"));
  const std::string state = proc::coredump::StorageState(e);
  if (std::optional<std::string> f = e.Get("COREDUMP_FILENAME")) {
    out.push_back({"storage", "Storage", absl::StrCat(*f, " (", state, ")")});
  } else {
    out.push_back({"storage", "Storage", state});
  }
  std::optional<std::string> pkg = e.Get("COREDUMP_PACKAGE_NAME");
  std::optional<std::string> ver = e.Get("COREDUMP_PACKAGE_VERSION");
  if (pkg && ver) out.push_back({"package", "Package", absl::StrCat(*pkg, "/", *ver)});
  if (std::optional<std::string> m = e.Get("MESSAGE")) {
    // The first line: the rest is systemd-coredump's own backtrace.
    const size_t nl = m->find('\n');
    out.push_back({"message", "Message", m->substr(0, nl)});
  }
  if (!e.cursor.empty()) out.push_back({"cursor", "Cursor", e.cursor});
  return out;
}

}  // namespace unwindd::service

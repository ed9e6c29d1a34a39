#include "service/cli/minidump_out.h"

#include <sys/utsname.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "proc/procfs.h"

namespace unwindd::service {
namespace {

std::string ReadSmallFile(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return "";
  std::string out;
  char buf[4096];
  // Bounded: these are text files of a few KiB.
  while (out.size() < (1 << 20) && f.read(buf, sizeof(buf)).gcount() > 0) {
    out.append(buf, static_cast<size_t>(f.gcount()));
  }
  return out;
}

std::string Thousands(uint64_t v) {
  std::string digits = absl::StrCat(v);
  std::string out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i != 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

std::string Uname() {
  struct utsname u;
  if (uname(&u) != 0) return "";
  // Breakpad's csd_version: `uname -srvmo` without the -o.
  return absl::StrCat(u.sysname, " ", u.release, " ", u.version, " ", u.machine);
}

}  // namespace

proc::minidump::ProcessInfo CoreProcessInfo(const proc::CoreFile& core) {
  proc::minidump::ProcessInfo info;
  if (core.prpsinfo()) {
    // pr_psargs has spaces where /proc/PID/cmdline has NULs; it is all a
    // core keeps.
    info.command_line = core.prpsinfo()->psargs;
    if (core.prpsinfo()->pid != 0) {
      info.proc_status = absl::StrFormat("Name:\t%s\nPid:\t%d\n",
                                         core.prpsinfo()->fname, core.prpsinfo()->pid);
    }
  }
  const int w = core.word_size();
  for (const auto& [type, value] : core.auxv()) {
    for (uint64_t v : {type, value}) {
      for (int i = 0; i < w; ++i) info.auxv += static_cast<char>(v >> (8 * i));
    }
  }
  if (!info.auxv.empty()) info.auxv.append(2 * static_cast<size_t>(w), '\0');  // AT_NULL
  return info;
}

proc::minidump::ProcessInfo LiveProcessInfo(pid_t pid) {
  proc::minidump::ProcessInfo info;
  info.command_line = ReadSmallFile(proc::ProcPath(pid, "cmdline"));
  info.proc_status = ReadSmallFile(proc::ProcPath(pid, "status"));
  info.auxv = ReadSmallFile(proc::ProcPath(pid, "auxv"));
  info.maps = ReadSmallFile(proc::ProcPath(pid, "maps"));
  info.lsb_release = ReadSmallFile("/etc/lsb-release");
  if (info.lsb_release.empty()) info.lsb_release = ReadSmallFile("/etc/os-release");
  info.cpu_info = ReadSmallFile("/proc/cpuinfo");
  info.os = Uname();
  const long n = sysconf(_SC_NPROCESSORS_ONLN);
  info.processors = static_cast<uint8_t>(n > 0 && n < 255 ? n : 255);
  return info;
}

uint64_t CoreSizeEstimate(const proc::Target& target) {
  uint64_t total = 0;
  for (const proc::Mapping& m : target.mappings()) {
    const bool anonymous = m.path.empty() || m.path == "[heap]" || m.path == "[stack]";
    if (m.path == "[vvar]" || m.path == "[vsyscall]") continue;
    if (anonymous || (m.write && !m.shared) || m.path == "[vdso]") total += m.end - m.start;
  }
  return total;
}

int WriteMinidumpReport(proc::Target& target, const proc::minidump::ProcessInfo& info,
                        const Command& cmd, const unwinder::ProcessStacks& stacks,
                        uint64_t compared_bytes, const std::string& compared) {
  proc::minidump::MinidumpWriteOptions options;
  options.max_stack_bytes = cmd.minidump_stack_bytes;
  for (const unwinder::ThreadStack& t : stacks.threads) {
    std::vector<proc::minidump::MinidumpWriteOptions::Frame>& frames = options.frames[t.tid];
    for (const unwinder::Frame& f : t.frames) frames.push_back({f.pc, f.sp});
  }
  absl::StatusOr<proc::minidump::MinidumpWriteResult> r =
      proc::minidump::WriteMinidump(target, info, options, cmd.minidump_out);
  if (!r.ok()) {
    std::fprintf(stderr, "unwind: %s\n", std::string(r.status().message()).c_str());
    return 1;
  }
  for (const std::string& w : r->warnings) {
    std::fprintf(stderr, "unwind: warning: minidump: %s\n", w.c_str());
  }
  std::string line = absl::StrFormat(
      "unwind: wrote minidump %s: %s bytes (%d threads, %d modules, %s stack bytes",
      cmd.minidump_out, Thousands(r->bytes), r->threads, r->modules,
      Thousands(r->stack_bytes));
  if (r->truncated_stacks != 0) {
    absl::StrAppendFormat(&line, ", %d stacks cut at %s bytes", r->truncated_stacks,
                          Thousands(cmd.minidump_stack_bytes));
  }
  line += ")";
  if (compared_bytes != 0 && r->bytes != 0) {
    absl::StrAppendFormat(&line, "; %s: %s bytes, %.1fx larger", compared,
                          Thousands(compared_bytes),
                          static_cast<double>(compared_bytes) / static_cast<double>(r->bytes));
  }
  std::fprintf(stderr, "%s\n", line.c_str());
  return 0;
}

}  // namespace unwindd::service

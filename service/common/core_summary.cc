#include "service/common/core_summary.h"

#include <algorithm>

#include <utility>

#include "memory/decompress.h"
#include "proc/core_modules.h"

namespace unwindd::service {

CoreSummary SummarizeCore(const proc::CoreReport& report, std::string name) {
  CoreSummary s;
  s.core = std::move(name);
  s.compression = std::string(memory::CompressionName(report.compression));
  s.executable = report.executable;
  s.modules_from = std::string(proc::ModuleSourceName(report.modules_from));
  for (const proc::CoreFileStatus& f : report.files) {
    s.files.push_back({f.recorded, std::string(proc::CoreFileStateName(f.state)),
                       f.file, f.core_build_id, f.file_build_id});
  }
  s.warnings = report.warnings;
  return s;
}

CoreSummary SummarizeMinidump(const proc::MinidumpReport& report, std::string name) {
  CoreSummary s;
  s.kind = "minidump";
  s.core = std::move(name);
  s.compression = std::string(memory::CompressionName(report.compression));
  s.executable = report.executable;
  s.modules_from = report.modules_from;
  for (const proc::CoreFileStatus& f : report.files) {
    s.files.push_back({f.recorded, std::string(proc::CoreFileStateName(f.state)),
                       f.file, f.core_build_id, f.file_build_id});
  }
  s.warnings = report.warnings;
  auto fact = [&](const char* key, const char* label, const std::string& v) {
    if (!v.empty()) s.metadata.push_back({key, label, v});
  };
  fact("pid", "PID", report.pid != 0 ? std::to_string(report.pid) : "");
  fact("crash_thread", "Crash Thread",
       report.crash_tid ? std::to_string(*report.crash_tid) : "");
  fact("exception", "Exception", report.exception);
  fact("command_line", "Command Line", report.command_line);
  fact("os", "OS", report.os);
  fact("platform", "Platform", report.platform);
  fact("distribution", "Distribution", report.distribution);
  return s;
}

void NoteFilesFoundWhileUnwinding(const unwinder::ProcessStacks& stacks,
                                  CoreSummary& summary) {
  for (CoreSummary::File& f : summary.files) {
    if (f.state == "found") continue;
    for (const unwinder::ModuleInfo& m : stacks.modules) {
      if (m.path != f.path || m.file.empty() || !m.error.empty() || m.mismatch) continue;
      f.state = "found";
      f.file = m.file;
      f.file_build_id = m.build_id;
      f.fetched = m.fetched;
      const std::string prefix = f.path + ": ";
      summary.warnings.erase(
          std::remove_if(summary.warnings.begin(), summary.warnings.end(),
                         [&](const std::string& w) { return w.rfind(prefix, 0) == 0; }),
          summary.warnings.end());
      break;
    }
  }
}

}  // namespace unwindd::service

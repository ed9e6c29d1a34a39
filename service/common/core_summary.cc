#include "service/common/core_summary.h"

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

}  // namespace unwindd::service

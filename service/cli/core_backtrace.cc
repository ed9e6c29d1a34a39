#include "service/cli/core_backtrace.h"

#include "absl/strings/str_cat.h"
#include "service/common/json.h"

namespace unwindd::service {

std::string FunctionName(const std::string& symbol) {
  const size_t plus = symbol.rfind("+0x");
  return plus == std::string::npos ? symbol : symbol.substr(0, plus);
}

std::string FormatCoreBacktrace(const unwinder::ProcessStacks& stacks,
                                const std::string& executable,
                                const CrashSignature& signature,
                                const FrameSymbols* symbols) {
  const std::optional<size_t> crash = CrashThreadIndex(stacks);
  std::string out = absl::StrCat("{\"signal\": ", signature.signal);
  if (!executable.empty()) {
    absl::StrAppend(&out, ",\n \"executable\": ", JsonString(executable));
  }
  out += ",\n \"stacktrace\": [";
  for (size_t t = 0; t < stacks.threads.size(); ++t) {
    const unwinder::ThreadStack& th = stacks.threads[t];
    absl::StrAppend(&out, t ? ",\n  " : "\n  ", "{");
    if (crash && *crash == t) out += "\"crash_thread\": true, ";
    absl::StrAppend(&out, "\"tid\": ", th.tid, ", \"frames\": [");
    for (size_t i = 0; i < th.frames.size(); ++i) {
      const unwinder::Frame& f = th.frames[i];
      absl::StrAppend(&out, i ? ",\n    " : "\n    ", "{\"address\": ", f.pc);
      const unwinder::ModuleInfo* m =
          f.module >= 0 && static_cast<size_t>(f.module) < stacks.modules.size()
              ? &stacks.modules[f.module]
              : nullptr;
      if (m != nullptr && !m->build_id.empty()) {
        absl::StrAppend(&out, ", \"build_id\": ", JsonString(m->build_id));
      }
      absl::StrAppend(&out, ", \"build_id_offset\": ",
                      m != nullptr ? BuildIdOffset(f, *m) : f.pc);
      if (symbols != nullptr) {
        if (t < symbols->size() && i < (*symbols)[t].size() &&
            !(*symbols)[t][i].empty()) {
          absl::StrAppend(&out, ", \"function_name\": ",
                          JsonString(FunctionName((*symbols)[t][i])));
        }
        if (m != nullptr) absl::StrAppend(&out, ", \"file_name\": ", JsonString(m->path));
      }
      out += "}";
    }
    out += th.frames.empty() ? "]}" : "\n  ]}";
  }
  out += stacks.threads.empty() ? "]" : "\n ]";
  if (!signature.duphash.empty()) {
    absl::StrAppend(&out, ",\n \"duphash\": ", JsonString(signature.duphash));
  }
  return out + "}\n";
}

}  // namespace unwindd::service

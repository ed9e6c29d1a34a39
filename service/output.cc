#include "service/output.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace unwindd::service {
namespace {

std::string Hex(uint64_t v) { return absl::StrFormat("\"0x%x\"", v); }

}  // namespace

std::string JsonString(absl::string_view s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (c < 0x20) {
          absl::StrAppendFormat(&out, "\\u%04x", c);
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  out += "\"";
  return out;
}

std::string FormatJson(const unwinder::ProcessStacks& stacks) {
  std::string out = "{\"threads\": [";
  for (size_t t = 0; t < stacks.threads.size(); ++t) {
    const unwinder::ThreadStack& th = stacks.threads[t];
    absl::StrAppend(&out, t ? ",\n  " : "\n  ", "{\"tid\": ", th.tid,
                    ", \"stop\": \"", unwinder::StopReasonName(th.stop), "\"");
    if (!th.stop_detail.empty()) {
      absl::StrAppend(&out, ", \"stop_detail\": ", JsonString(th.stop_detail));
    }
    out += ", \"frames\": [";
    for (size_t i = 0; i < th.frames.size(); ++i) {
      const unwinder::Frame& f = th.frames[i];
      absl::StrAppend(&out, i ? ",\n    " : "\n    ", "{\"pc\": ", Hex(f.pc),
                      ", \"sp\": ", Hex(f.sp), ", \"method\": \"",
                      unwinder::MethodName(f.method), "\"");
      if (f.module >= 0) {
        const unwinder::ModuleInfo& m = stacks.modules[f.module];
        absl::StrAppend(&out, ", \"module\": ", JsonString(m.path),
                        ", \"build_id\": ", JsonString(m.build_id),
                        ", \"rel_pc\": ", Hex(f.rel_pc));
      }
      out += "}";
    }
    out += "]}";
  }
  out += stacks.threads.empty() ? "]}\n" : "\n]}\n";
  return out;
}

std::string FormatText(const unwinder::ProcessStacks& stacks) {
  std::string out;
  if (stacks.pid != 0) absl::StrAppend(&out, "PID ", stacks.pid, " - process\n");
  for (const unwinder::ThreadStack& th : stacks.threads) {
    absl::StrAppend(&out, "TID ", th.tid, ":\n");
    int width = stacks.arch == arch::Arch::kX86 ? 8 : 16;
    for (size_t i = 0; i < th.frames.size(); ++i) {
      const unwinder::Frame& f = th.frames[i];
      absl::StrAppendFormat(&out, "#%-2d 0x%0*x", i, width, f.pc);
      if (f.module >= 0) {
        const unwinder::ModuleInfo& m = stacks.modules[f.module];
        absl::StrAppendFormat(&out, " %s+0x%x", m.path, f.rel_pc);
      }
      absl::StrAppend(&out, " [", unwinder::MethodName(f.method), "]\n");
    }
    absl::StrAppend(&out, "stop: ", unwinder::StopReasonName(th.stop));
    if (!th.stop_detail.empty()) absl::StrAppend(&out, " (", th.stop_detail, ")");
    out += "\n";
  }
  return out;
}

}  // namespace unwindd::service

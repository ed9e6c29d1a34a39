// Renders unwound stacks in the CLI's output formats (DESIGN.md "Output
// contract"): eu-stack-like text, and one JSON document.
//
//   std::string json = FormatJson(stacks);
#ifndef UNWINDD_SERVICE_CLI_OUTPUT_H_
#define UNWINDD_SERVICE_CLI_OUTPUT_H_

#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "service/common/core_summary.h"
#include "service/common/json.h"
#include "unwinder/unwinder.h"

namespace unwindd::service {

// `--symbols`: symbols[t][i] names frame i of thread t ("" where none).
using FrameSymbols = std::vector<std::vector<std::string>>;

// One frame as FormatJson writes it: {"pc": ..., "sp": ..., "method": ...,
// and, when `module` is given, its fields (and "symbol" when not empty)}.
// `file_offset`: also frame.file_offset, which UnwindTarget fills and
// UnwindRegisters does not.
void AppendFrameJson(const unwinder::Frame& frame, const unwinder::ModuleInfo* module,
                     absl::string_view symbol, std::string* out,
                     bool file_offset = false);

// `core`, when given, adds a top-level "core" object (JSON) or header lines
// (text); `symbols`, a "symbol" per frame (JSON) or the name after each PC,
// as eu-stack prints it (text).
std::string FormatJson(const unwinder::ProcessStacks& stacks,
                       const CoreSummary* core = nullptr,
                       const FrameSymbols* symbols = nullptr);
std::string FormatText(const unwinder::ProcessStacks& stacks,
                       const CoreSummary* core = nullptr,
                       const FrameSymbols* symbols = nullptr);

}  // namespace unwindd::service

#endif  // UNWINDD_SERVICE_CLI_OUTPUT_H_

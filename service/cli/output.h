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

// `core`, when given, adds a top-level "core" object (JSON) or header lines
// (text).
std::string FormatJson(const unwinder::ProcessStacks& stacks,
                       const CoreSummary* core = nullptr);
std::string FormatText(const unwinder::ProcessStacks& stacks,
                       const CoreSummary* core = nullptr);

}  // namespace unwindd::service

#endif  // UNWINDD_SERVICE_CLI_OUTPUT_H_

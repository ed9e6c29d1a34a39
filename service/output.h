// Renders unwound stacks in the CLI's output formats (DESIGN.md "Output
// contract"): eu-stack-like text, and one JSON document.
//
//   std::string json = FormatJson(stacks);
#ifndef UNWINDD_SERVICE_OUTPUT_H_
#define UNWINDD_SERVICE_OUTPUT_H_

#include <string>

#include "absl/strings/string_view.h"
#include "unwinder/unwinder.h"

namespace unwindd::service {

std::string FormatJson(const unwinder::ProcessStacks& stacks);
std::string FormatText(const unwinder::ProcessStacks& stacks);

// `s` as a JSON string literal, quotes included.
std::string JsonString(absl::string_view s);

}  // namespace unwindd::service

#endif  // UNWINDD_SERVICE_OUTPUT_H_

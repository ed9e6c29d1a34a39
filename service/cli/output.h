// Renders unwound stacks in the CLI's output formats (DESIGN.md "Output
// contract"): eu-stack-like text, and one JSON document.
//
//   std::string json = FormatJson(stacks);
#ifndef UNWINDD_SERVICE_CLI_OUTPUT_H_
#define UNWINDD_SERVICE_CLI_OUTPUT_H_

#include <cstdio>
#include <string>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/strings/string_view.h"
#include "proc/package_note.h"
#include "service/common/core_summary.h"
#include "service/common/crash_signature.h"
#include "service/common/json.h"
#include "service/common/packages.h"
#include "unwinder/unwinder.h"

namespace unwindd::service {

// `--symbols`: symbols[t][i] names frame i of thread t ("" where none).
using FrameSymbols = std::vector<std::vector<std::string>>;

// One frame as FormatJson writes it: {"pc": ..., "sp": ..., "method": ...,
// and, when `module` is given, its fields (and "symbol" when not empty)}.
// `file_offset`: also frame.file_offset, which UnwindTarget fills and
// UnwindRegisters does not.
// `package`: the module's ELF package note, as a "package" object.
void AppendFrameJson(const unwinder::Frame& frame, const unwinder::ModuleInfo* module,
                     absl::string_view symbol, std::string* out,
                     bool file_offset = false,
                     const proc::PackageNote* package = nullptr);

// What a post-mortem command adds to the stacks; each may be null.
struct OutputExtras {
  const CoreSummary* core = nullptr;
  const FrameSymbols* symbols = nullptr;
  // A top-level "signature" object (JSON) or line (text).
  const CrashSignature* signature = nullptr;
  // Each module's package note: "package" in its frames (JSON), a
  // "package:" line per module (text).
  const ModulePackages* packages = nullptr;
};
std::string FormatJson(const unwinder::ProcessStacks& stacks, const OutputExtras& extras);
std::string FormatText(const unwinder::ProcessStacks& stacks, const OutputExtras& extras);

// The same text, handed to `emit` in pieces of ~16 KiB as it is made (a
// line is never split; the pieces in order are FormatJson's or
// FormatText's string), for a command that writes it out as it goes.
using TextPieces = absl::FunctionRef<void(absl::string_view)>;
void WriteJson(const unwinder::ProcessStacks& stacks, const OutputExtras& extras,
               const TextPieces& emit);
void WriteText(const unwinder::ProcessStacks& stacks, const OutputExtras& extras,
               const TextPieces& emit);
// WriteJson or WriteText into `out` (stdio); the caller flushes it.
void WriteStacks(const unwinder::ProcessStacks& stacks, const OutputExtras& extras, bool json,
                 std::FILE* out);

// The package note as a JSON object (every field, in the note's order).
std::string PackageJson(const proc::PackageNote& p);

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

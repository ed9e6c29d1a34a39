// `--format=core-backtrace`: ABRT/satyr's core_backtrace JSON (satyr's
// lib/core_stacktrace.c sr_core_stacktrace_to_json), which crash
// pipelines built on ABRT and the ABRT Analytics server (FAF) read:
//
//   {"signal": 11, "executable": "/usr/bin/foo",
//    "stacktrace": [{"crash_thread": true, "tid": 4242,
//                    "frames": [{"address": 140.., "build_id": "8a2b..",
//                                "build_id_offset": 7996,
//                                "function_name": "crash",   // --symbols
//                                "file_name": "/usr/bin/foo"}]},  // --symbols
//                   {"tid": 4243, "frames": [...]}],
//    "duphash": "5c2f..."}
//
// Numbers are decimal JSON numbers, as satyr writes them. "tid" and
// "duphash" are ours (satyr's reader ignores keys it does not know): the
// duphash is service/common/crash_signature.h's. A frame outside every
// module has only its address, which satyr also writes as its
// build_id_offset.
#ifndef UNWINDD_SERVICE_CLI_CORE_BACKTRACE_H_
#define UNWINDD_SERVICE_CLI_CORE_BACKTRACE_H_

#include <string>

#include "service/cli/output.h"
#include "service/common/crash_signature.h"
#include "unwinder/unwinder.h"

namespace unwindd::service {

// `symbols` (--symbols; may be null) adds function_name and file_name.
std::string FormatCoreBacktrace(const unwinder::ProcessStacks& stacks,
                                const std::string& executable,
                                const CrashSignature& signature,
                                const FrameSymbols* symbols);

// "main+0x1e" -> "main": satyr's function_name is the bare name.
std::string FunctionName(const std::string& symbol);

}  // namespace unwindd::service

#endif  // UNWINDD_SERVICE_CLI_CORE_BACKTRACE_H_

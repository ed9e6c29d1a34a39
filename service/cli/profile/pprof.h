// pprof output: a Profile (profile.h) as a gzip-compressed
// perftools.profiles.Profile message, encoded by hand from the field numbers
// of the published github.com/google/pprof/proto/profile.proto (no protobuf
// library: the CLI stays gRPC/protobuf-free).
//
//   absl::StatusOr<std::string> gz = WritePprof(profile, {.period = 1000000});
//   // write *gz to profile.pb.gz, then:
//   //   go tool pprof -top profile.pb.gz      hottest functions
//   //   go tool pprof -traces profile.pb.gz   every stack, leaf first
//   //   go tool pprof -raw profile.pb.gz      samples, locations, mappings
//   //   go tool pprof -http=:8080 profile.pb.gz   flame graph in a browser
//
// What is written:
// - sample_type: [samples/count, <weight type>/<unit>] (e.g. cpu/nanoseconds);
//   period_type is the weight type, default_sample_type the weight's type.
// - one Sample per distinct (labels, stack): location ids leaf first,
//   values [count, weight], labels "pid" and "tid" (numeric) and "comm"
//   (the names google/perf_data_converter uses). pprof's decoder drops a
//   numeric label whose value is 0, so pid/tid 0 (the idle task) show none.
// - one Location per distinct (address, module), at the lookup address
//   (a return address minus 1, profile.h), with its mapping id; frames
//   without a module have mapping_id 0 (unset).
// - one Mapping per module that a location uses: memory_start/limit,
//   file_offset, filename, build_id; has_functions etc. false: there are no
//   symbols, pprof symbolizes the addresses itself from the files (their
//   path, or their build-id under $PPROF_BINARY_PATH). Paths in brackets
//   ("[vdso]", "[kernel.kallsyms]") pprof does not try to open.
// - no Function and no Line; string_table[0] = "".
// - a comment per module whose file was not found.
//
// Viewing it: symbols come from the binaries at the recorded paths, so view
// it on the machine the profile was taken on, or point PPROF_BINARY_PATH at
// copies (google/pprof also finds them there by build-id); -symbolize=none
// keeps raw addresses, and -addresses shows one line per address rather
// than per binary:
//   go tool pprof -top -addresses -symbolize=none profile.pb.gz
// `go tool pprof` (Go's cmd/pprof) symbolizes non-Go binaries with its own
// DWARF reader: function names only where the DIE has DW_AT_name (C, not
// most C++), no inline frames, nothing without DWARF (e.g. a distribution's
// stripped libc). The standalone pprof (github.com/google/pprof, `pprof`)
// uses addr2line/llvm-symbolizer and nm and does all of these.
#ifndef UNWINDD_SERVICE_CLI_PROFILE_PPROF_H_
#define UNWINDD_SERVICE_CLI_PROFILE_PPROF_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "service/cli/profile/profile.h"

namespace unwindd::profile {

// Field numbers of perftools.profiles messages (profile.proto).
namespace pprof_field {
// message Profile
inline constexpr uint32_t kSampleType = 1;          // repeated ValueType
inline constexpr uint32_t kSample = 2;              // repeated Sample
inline constexpr uint32_t kMapping = 3;             // repeated Mapping
inline constexpr uint32_t kLocation = 4;            // repeated Location
inline constexpr uint32_t kFunction = 5;            // repeated Function
inline constexpr uint32_t kStringTable = 6;         // repeated string
inline constexpr uint32_t kDropFrames = 7;          // int64 (string index)
inline constexpr uint32_t kKeepFrames = 8;          // int64 (string index)
inline constexpr uint32_t kTimeNanos = 9;           // int64
inline constexpr uint32_t kDurationNanos = 10;      // int64
inline constexpr uint32_t kPeriodType = 11;         // ValueType
inline constexpr uint32_t kPeriod = 12;             // int64
inline constexpr uint32_t kComment = 13;            // repeated int64 (indices)
inline constexpr uint32_t kDefaultSampleType = 14;  // int64 (string index)
// message ValueType
inline constexpr uint32_t kValueTypeType = 1;  // int64 (string index)
inline constexpr uint32_t kValueTypeUnit = 2;  // int64 (string index)
// message Sample
inline constexpr uint32_t kSampleLocationId = 1;  // repeated uint64
inline constexpr uint32_t kSampleValue = 2;       // repeated int64
inline constexpr uint32_t kSampleLabel = 3;       // repeated Label
// message Label
inline constexpr uint32_t kLabelKey = 1;      // int64 (string index)
inline constexpr uint32_t kLabelStr = 2;      // int64 (string index)
inline constexpr uint32_t kLabelNum = 3;      // int64
inline constexpr uint32_t kLabelNumUnit = 4;  // int64 (string index)
// message Mapping
inline constexpr uint32_t kMappingId = 1;                // uint64
inline constexpr uint32_t kMappingMemoryStart = 2;       // uint64
inline constexpr uint32_t kMappingMemoryLimit = 3;       // uint64
inline constexpr uint32_t kMappingFileOffset = 4;        // uint64
inline constexpr uint32_t kMappingFilename = 5;          // int64 (string index)
inline constexpr uint32_t kMappingBuildId = 6;           // int64 (string index)
inline constexpr uint32_t kMappingHasFunctions = 7;      // bool
inline constexpr uint32_t kMappingHasFilenames = 8;      // bool
inline constexpr uint32_t kMappingHasLineNumbers = 9;    // bool
inline constexpr uint32_t kMappingHasInlineFrames = 10;  // bool
// message Location
inline constexpr uint32_t kLocationId = 1;         // uint64
inline constexpr uint32_t kLocationMappingId = 2;  // uint64
inline constexpr uint32_t kLocationAddress = 3;    // uint64
inline constexpr uint32_t kLocationLine = 4;       // repeated Line
inline constexpr uint32_t kLocationIsFolded = 5;   // bool
// message Line
inline constexpr uint32_t kLineFunctionId = 1;  // uint64
inline constexpr uint32_t kLineLine = 2;        // int64
// message Function
inline constexpr uint32_t kFunctionId = 1;          // uint64
inline constexpr uint32_t kFunctionName = 2;        // int64 (string index)
inline constexpr uint32_t kFunctionSystemName = 3;  // int64 (string index)
inline constexpr uint32_t kFunctionFilename = 4;    // int64 (string index)
inline constexpr uint32_t kFunctionStartLine = 5;   // int64
}  // namespace pprof_field

// Profile-wide fields (informational in pprof: they do not change how the
// samples are read).
struct PprofOptions {
  int64_t time_nanos = 0;      // collection start, ns since the Unix epoch
  int64_t duration_nanos = 0;  // collection length
  // Weight-units between samples (e.g. 1e9 / frequency ns for cpu-clock);
  // 0 leaves it out.
  int64_t period = 0;
  std::vector<std::string> comments;
};

// The serialized Profile message, uncompressed.
std::string EncodePprof(const Profile& profile,
                        const PprofOptions& options = {});

// EncodePprof, gzip-compressed: the bytes of a .pb.gz file.
absl::StatusOr<std::string> WritePprof(const Profile& profile,
                                       const PprofOptions& options = {});

}  // namespace unwindd::profile

#endif  // UNWINDD_SERVICE_CLI_PROFILE_PPROF_H_

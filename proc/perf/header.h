// perf.data's file header, its attribute section and its feature
// sections (tools/perf/util/header.c: perf_session__read_header,
// read_attr, perf_header__process_sections and the process_* feature
// readers), and the pipe-mode header. Parsing only: bytes in, structs out.
//
//   absl::StatusOr<FileHeader> h = ParseFileHeader(first_104_bytes);
//   AttrSet attrs;
//   absl::Status s = ParseAttrSection(file_bytes, *h, attrs);
//   RecordingInfo info;
//   ParseFeatureSections(file_bytes, *h, info, attrs, warnings);
//
// Offsets are file offsets. Every section offset and size is checked
// against the file and the limits below; malformed headers are DataLoss,
// a malformed feature section is a warning (perf, too, goes on without it).
#ifndef UNWINDD_PROC_PERF_HEADER_H_
#define UNWINDD_PROC_PERF_HEADER_H_

#include <bitset>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "proc/perf/abi.h"
#include "proc/perf/records.h"
#include "proc/perf/warnings.h"

namespace unwindd::proc::perf {

inline constexpr uint64_t kMaxFeatureBytes = uint64_t{64} << 20;  // one section
inline constexpr uint64_t kMaxAttrSectionBytes = uint64_t{16} << 20;
inline constexpr uint64_t kMaxFeatureString = 64 << 10;   // one string in it
inline constexpr uint64_t kMaxCmdlineArgs = 4096;
inline constexpr uint64_t kMaxBuildIds = uint64_t{1} << 20;

struct FileSection {
  uint64_t offset = 0;
  uint64_t size = 0;
};

struct FileHeader {
  uint64_t size = 0;       // of this header
  uint64_t attr_size = 0;  // of one perf_file_attr (attr + ids section)
  FileSection attrs;
  FileSection data;
  FileSection event_types;
  std::bitset<kFeatureBits> features;
};

// What the feature sections (or pipe-mode HEADER_FEATURE / HEADER_BUILD_ID
// records) say about the recording.
struct RecordingInfo {
  std::string hostname;
  std::string os_release;
  std::string perf_version;
  std::string arch;  // uname -m of the recording machine: "x86_64", "aarch64"
  std::string cpu_desc;
  std::vector<std::string> cmdline;
  uint32_t nr_cpus_available = 0;
  uint32_t nr_cpus_online = 0;
  std::vector<BuildIdEntry> build_ids;
};

// A perf.data file's bytes for the header parsers: spans into a mapping or
// buffer, or read with pread into a scratch buffer (so a file that someone
// truncates while it is read gives an error, not SIGBUS).
class FileBytes {
 public:
  virtual ~FileBytes() = default;
  virtual uint64_t size() const = 0;
  // [offset, offset + n), valid until the next Get. The caller checks the
  // range is inside size(); DataLoss if the bytes cannot be had (an I/O
  // error, a file that shrank).
  virtual absl::StatusOr<absl::Span<const uint8_t>> Get(uint64_t offset,
                                                        uint64_t n) = 0;
};

// Bytes already in memory.
class SpanFileBytes final : public FileBytes {
 public:
  explicit SpanFileBytes(absl::Span<const uint8_t> s) : s_(s) {}
  uint64_t size() const override { return s_.size(); }
  absl::StatusOr<absl::Span<const uint8_t>> Get(uint64_t offset, uint64_t n) override;

 private:
  absl::Span<const uint8_t> s_;
};

// pread() on `fd` (not owned) of a file of `size` bytes.
class PreadFileBytes final : public FileBytes {
 public:
  PreadFileBytes(int fd, uint64_t size) : fd_(fd), size_(size) {}
  uint64_t size() const override { return size_; }
  absl::StatusOr<absl::Span<const uint8_t>> Get(uint64_t offset, uint64_t n) override;

 private:
  int fd_;
  uint64_t size_;
  std::vector<uint8_t> scratch_;
};

// The 104-byte perf_file_header. Unimplemented for a big-endian file or
// perf's v1 "PERFFILE" format; DataLoss for anything else that is not
// PERFILE2 or whose size fields are impossible. FailedPrecondition with
// "pipe" in the message when the bytes are a pipe-mode header instead
// (a pipe recording saved to a file), so callers can switch.
absl::StatusOr<FileHeader> ParseFileHeader(absl::Span<const uint8_t> bytes);

// The 16-byte perf_pipe_file_header: magic and size 16.
absl::Status ParsePipeHeader(absl::Span<const uint8_t> bytes);

// The attrs section (at most kMaxAttrSectionBytes): perf_file_attr
// entries (a perf_event_attr of the size it says, then a perf_file_section
// of its u64 ids), and each one's ids.
absl::Status ParseAttrSection(FileBytes& file, const FileHeader& header,
                              AttrSet& attrs);

// Every feature section named by header.features; a section that cannot
// be read becomes a warning.
void ParseFeatureSections(FileBytes& file, const FileHeader& header,
                          RecordingInfo& info, AttrSet& attrs,
                          Warnings& warnings);

// One feature section's payload (`feat` is a HEADER_* id). Features we do
// not read are OK and ignored.
absl::Status ParseFeature(int feat, absl::Span<const uint8_t> payload,
                          RecordingInfo& info, AttrSet& attrs);

}  // namespace unwindd::proc::perf

#endif  // UNWINDD_PROC_PERF_HEADER_H_

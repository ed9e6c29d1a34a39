// A minidump file's streams, parsed into values: what proc::MinidumpTarget
// (minidump_target.h) unwinds and what `unwind minidump` reports.
//
//   absl::StatusOr<MinidumpFile> f = MinidumpFile::Read(fd, size, "crash.dmp");
//   for (const ThreadEntry& t : f->threads()) ...
//
// Only the streams' headers and small tables are read into memory; the
// memory ranges stay in the file (MemoryRange::file_offset) for a
// FileRegionMemory to read on demand, so a full-memory dump costs no more
// than its tables. The file comes from whoever sent the crash: every
// count, size and RVA is checked against the file's size and against hard
// limits before it is used; a malformed optional stream is a warning and
// is left out, a malformed header, directory or thread list is DataLoss.
#ifndef UNWINDD_PROC_MINIDUMP_READER_H_
#define UNWINDD_PROC_MINIDUMP_READER_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "memory/scoped_fd.h"

namespace unwindd::proc::minidump {

// Hard limits on what a file may make us allocate.
inline constexpr uint32_t kMaxStreams = 4096;
inline constexpr uint32_t kMaxThreads = 65536;
inline constexpr uint32_t kMaxModules = 65536;
inline constexpr uint64_t kMaxMemoryRanges = uint64_t{1} << 20;
inline constexpr uint32_t kMaxStringBytes = 64 * 1024;
inline constexpr uint32_t kMaxTextStreamBytes = 16 << 20;
inline constexpr uint32_t kMaxContextBytes = 64 * 1024;
inline constexpr uint32_t kMaxCvRecordBytes = 1024;
// All the strings of one file together (module and link_map names).
inline constexpr uint64_t kMaxTotalStringBytes = uint64_t{64} << 20;
inline constexpr uint32_t kMaxLinkMapEntries = 65536;

// MDLocationDescriptor: `size` bytes at file offset `rva`.
struct Location {
  uint32_t size = 0;
  uint32_t rva = 0;
};

// Target bytes [start, start + size) are at `file_offset` in the file.
struct MemoryRange {
  uint64_t start = 0;
  uint64_t size = 0;
  uint64_t file_offset = 0;
};

struct ThreadEntry {
  uint32_t tid = 0;
  MemoryRange stack;
  Location context;
};

struct ModuleEntry {
  uint64_t base = 0;  // target address of the image's first mapped byte
  uint64_t size = 0;
  std::string name;   // as the writer recorded it (a path on Linux)
  // Lowercase hex of the GNU build-id from a 'BpEL' CodeView record;
  // "" when the record is absent or of another kind.
  std::string build_id;
  // "elf" ('BpEL'), "pdb70" ('RSDS', whose GUID Breakpad once filled from
  // the build-id), "none" or "unknown".
  std::string cv_kind;
};

struct ExceptionInfo {
  uint32_t tid = 0;
  // Linux writers: the signal number, si_code and si_addr.
  uint32_t code = 0;
  uint32_t flags = 0;
  uint64_t address = 0;
  std::vector<uint64_t> parameters;
  Location context;  // the thread's registers when it crashed
};

struct SystemInfo {
  uint16_t cpu_architecture = 0xffff;
  uint8_t processors = 0;
  uint32_t platform_id = 0;
  uint32_t major_version = 0;
  uint32_t minor_version = 0;
  uint32_t build_number = 0;
  std::string csd_version;  // Linux: `uname -srvmo`
};

struct LinkMapEntry {
  uint64_t addr = 0;  // l_addr: the object's load bias
  std::string name;
  uint64_t ld = 0;    // l_ld: its dynamic section
};

// MD_LINUX_DSO_DEBUG: the dynamic linker's r_debug and link_map list.
struct DsoDebug {
  uint32_t version = 0;
  uint64_t brk = 0;
  uint64_t ldbase = 0;
  uint64_t dynamic = 0;
  std::vector<LinkMapEntry> link_map;
};

// Breakpad's Linux streams, as the files they copy hold them.
struct LinuxStreams {
  std::optional<std::string> cpu_info;
  std::optional<std::string> proc_status;
  std::optional<std::string> lsb_release;
  std::optional<std::string> cmdline;  // NUL-separated, as in /proc
  std::optional<std::string> environ;
  std::optional<std::string> auxv;     // raw (Elf64_auxv_t / Elf32_auxv_t)
  std::optional<std::string> maps;
  std::optional<DsoDebug> dso_debug;
};

class MinidumpFile {
 public:
  // `fd` is read with pread and kept for ReadLocation. DataLoss if it is
  // not a minidump or its header, directory or thread list is malformed.
  static absl::StatusOr<MinidumpFile> Read(
      std::shared_ptr<const memory::ScopedFd> fd, uint64_t size,
      std::string name);

  const std::string& name() const { return name_; }
  uint64_t file_size() const { return size_; }
  uint32_t time_date_stamp() const { return time_date_stamp_; }
  const std::vector<ThreadEntry>& threads() const { return threads_; }
  const std::vector<ModuleEntry>& modules() const { return modules_; }
  // MemoryList and Memory64List ranges, in file order.
  const std::vector<MemoryRange>& memory() const { return memory_; }
  const std::optional<ExceptionInfo>& exception() const { return exception_; }
  const std::optional<SystemInfo>& system_info() const { return system_info_; }
  // MiscInfo's process id, when the writer set it.
  std::optional<uint32_t> process_id() const { return process_id_; }
  const LinuxStreams& linux_streams() const { return linux_; }
  // The stream types present, in directory order.
  const std::vector<uint32_t>& stream_types() const { return stream_types_; }
  // What was malformed but left out rather than failing the whole file.
  const std::vector<std::string>& warnings() const { return warnings_; }
  const std::shared_ptr<const memory::ScopedFd>& fd() const { return fd_; }

  // The bytes `loc` names; DataLoss if they lie outside the file or are
  // more than `max` bytes.
  absl::StatusOr<std::vector<uint8_t>> ReadLocation(Location loc,
                                                    uint32_t max) const;

 private:
  MinidumpFile() = default;
  absl::Status Parse();
  absl::Status ReadThreads(Location loc);
  void ReadModules(Location loc);
  void ReadMemoryList(Location loc);
  void ReadMemory64List(uint64_t size, uint64_t rva);
  void ReadException(Location loc);
  void ReadSystemInfo(Location loc);
  void ReadMiscInfo(Location loc);
  void ReadDsoDebug(Location loc);
  absl::StatusOr<std::string> ReadString(uint32_t rva);
  absl::StatusOr<std::vector<uint8_t>> ReadRange(uint64_t offset,
                                                 uint64_t size) const;
  std::optional<std::string> ReadText(Location loc, const char* what);

  std::shared_ptr<const memory::ScopedFd> fd_;
  uint64_t size_ = 0;
  std::string name_;
  uint32_t time_date_stamp_ = 0;
  std::vector<ThreadEntry> threads_;
  std::vector<ModuleEntry> modules_;
  std::vector<MemoryRange> memory_;
  std::optional<ExceptionInfo> exception_;
  std::optional<SystemInfo> system_info_;
  std::optional<uint32_t> process_id_;
  LinuxStreams linux_;
  std::vector<uint32_t> stream_types_;
  std::vector<std::string> warnings_;
  uint64_t string_bytes_ = 0;  // read so far, against kMaxTotalStringBytes
};

// UTF-16LE code units -> UTF-8; unpaired surrogates become U+FFFD.
std::string Utf16ToUtf8(const std::vector<uint16_t>& units);

}  // namespace unwindd::proc::minidump

#endif  // UNWINDD_PROC_MINIDUMP_READER_H_

// Parsers for the notes of an ELF core file (PT_NOTE segments), over bytes
// already read from the file. Pure functions, so every malformed variant is
// a byte-level unit test; nothing here trusts a size it read.
//
//   ParsedNotes n = ParseNotes(segment_bytes, segment_file_offset, 4);
//   for (const CoreNote& note : n.notes)
//     if (note.type == NT_FILE) files = ParseNtFile(note.desc, 8);
//
// `word_size` is the core's (ELFCLASS64: 8, ELFCLASS32: 4), never the host's.
#ifndef UNWINDD_PROC_CORE_NOTES_H_
#define UNWINDD_PROC_CORE_NOTES_H_

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "proc/signal_info.h"

namespace unwindd::proc {

struct CoreNote {
  std::string name;                // "CORE", "LINUX", "GNU"...
  uint32_t type = 0;               // NT_PRSTATUS, NT_FILE...
  absl::Span<const uint8_t> desc;  // points into the parsed bytes
  uint64_t offset = 0;             // file offset of the note header
};

struct ParsedNotes {
  std::vector<CoreNote> notes;
  // The first malformed or truncated note; the notes before it are kept,
  // so the threads of a core cut short inside its notes still unwind.
  absl::Status error;
};

// Notes parsed from one PT_NOTE segment; `error` says so past it. The
// kernel writes ~4 notes per thread (up to ~12 on aarch64), so this allows
// kMaxCoreThreads (core_file.h) threads and more.
inline constexpr uint64_t kMaxCoreNotes = uint64_t{1} << 20;

// ELF gABI "Note Section": namesz, descsz, type (4 bytes each), then name
// and desc, each padded to `align` (4 in cores; 8 only for p_align 8).
ParsedNotes ParseNotes(absl::Span<const uint8_t> bytes, uint64_t file_offset,
                       uint64_t align);

// One mapped file of NT_FILE.
struct NtFileEntry {
  uint64_t start = 0;   // target address
  uint64_t end = 0;     // exclusive
  uint64_t offset = 0;  // file offset of `start`, in bytes
  std::string path;
};

// Bounds the parse: one entry per file-backed mapping (vm.max_map_count is
// 65530 by default; some systems raise it).
inline constexpr uint64_t kMaxNtFileEntries = 1 << 20;

// NT_FILE layout (fs/binfmt_elf.c, fill_files_note): count, page_size, then
// count x {start, end, file_ofs in pages}, all words, then count
// NUL-terminated paths. DataLoss for any inconsistency: a count the note
// cannot hold, end < start, offsets that overflow, missing names.
absl::StatusOr<std::vector<NtFileEntry>> ParseNtFile(
    absl::Span<const uint8_t> desc, int word_size);

// NT_AUXV: (type, value) word pairs up to AT_NULL (or the end of the note).
absl::StatusOr<std::vector<std::pair<uint64_t, uint64_t>>> ParseAuxv(
    absl::Span<const uint8_t> desc, int word_size);

// NT_PRPSINFO (struct elf_prpsinfo, include/uapi/linux/elfcore.h).
struct PrpsInfo {
  pid_t pid = 0;
  std::string fname;   // pr_fname: the first 15 bytes of the command name
  std::string psargs;  // pr_psargs: the first 79 bytes of the command line
};
absl::StatusOr<PrpsInfo> ParsePrpsInfo(absl::Span<const uint8_t> desc,
                                       int word_size);

// NT_SIGINFO: the kernel's siginfo_t (128 bytes; include/uapi/asm-generic/
// siginfo.h): si_signo, si_errno, si_code, then the union at 16 (64-bit) or
// 12 (32-bit).
absl::StatusOr<SignalInfo> ParseSigInfo(absl::Span<const uint8_t> desc,
                                        int word_size);

}  // namespace unwindd::proc

#endif  // UNWINDD_PROC_CORE_NOTES_H_

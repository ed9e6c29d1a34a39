// An ELF core file's headers and notes (core(5); the kernel writes them in
// fs/binfmt_elf.c, gdb's gcore in gdb/linux-tdep.c): threads and their
// registers from NT_PRSTATUS, their signals from NT_SIGINFO, the process
// from NT_PRPSINFO, NT_AUXV, NT_FILE, and the PT_LOAD segments with how
// much of each is really in the file.
//
//   absl::StatusOr<CoreFile> core = CoreFile::Read(fd, size, "core.1234");
//   for (const CoreThread& t : core->threads()) ...
//
// Read fails only when nothing can be unwound: not an ELF core, an
// unsupported machine, unreadable program headers, or no thread at all.
// Everything less (truncated notes or segments, lying sizes, overlapping
// segments, a bad NT_FILE) becomes a warning and the rest is still used.
#ifndef UNWINDD_PROC_CORE_FILE_H_
#define UNWINDD_PROC_CORE_FILE_H_

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/status/statusor.h"
#include "arch/arch.h"
#include "arch/pac_mask.h"
#include "arch/register_set.h"
#include "memory/scoped_fd.h"
#include "proc/core_notes.h"
#include "proc/signal_info.h"

namespace unwindd::proc {

struct CoreSegment {
  uint64_t vaddr = 0;
  uint64_t memsz = 0;
  uint64_t offset = 0;   // p_offset
  uint64_t filesz = 0;   // p_filesz, clamped to memsz
  uint64_t in_file = 0;  // bytes of filesz the file really has (truncation)
  uint32_t flags = 0;    // PF_R | PF_W | PF_X
};

struct CoreThread {
  pid_t tid = 0;
  // DataLoss when the thread's NT_PRSTATUS is malformed.
  absl::StatusOr<arch::RegisterSet> regs = arch::RegisterSet();
  std::optional<SignalInfo> signal;
};

// Bounds on what is read from the core into memory.
inline constexpr uint64_t kMaxCoreNoteBytes = uint64_t{256} << 20;
inline constexpr uint64_t kMaxCoreSegments = uint64_t{1} << 20;
// Threads taken from NT_PRSTATUS notes; later ones are ignored, with a
// warning. Far more than real processes run (Linux's default threads-max
// is ~RAM / 128 KiB), small enough that every thread can be unwound.
inline constexpr uint64_t kMaxCoreThreads = uint64_t{1} << 16;
// Warnings kept; the last one says how many more there were.
inline constexpr uint64_t kMaxCoreWarnings = 256;

class CoreFile {
 public:
  // `fd` is kept (shared) for reading segments; `size` is the file's size;
  // `name` is for messages.
  static absl::StatusOr<CoreFile> Read(
      std::shared_ptr<const memory::ScopedFd> fd, uint64_t size,
      std::string name);

  const std::string& name() const { return name_; }
  const std::shared_ptr<const memory::ScopedFd>& fd() const { return fd_; }
  uint64_t size() const { return size_; }
  arch::Arch arch() const { return arch_; }
  uint8_t elf_class() const { return elf_class_; }
  int word_size() const { return elf_class_ == 2 ? 8 : 4; }

  // In note order, as the producer wrote them (the kernel puts the thread
  // that dumped first).
  const std::vector<CoreThread>& threads() const { return threads_; }
  const std::optional<PrpsInfo>& prpsinfo() const { return prpsinfo_; }
  const std::vector<std::pair<uint64_t, uint64_t>>& auxv() const {
    return auxv_;
  }
  std::optional<uint64_t> Auxv(uint64_t type) const;
  // Absent when the core has no (usable) NT_FILE note.
  const std::optional<std::vector<NtFileEntry>>& nt_file() const {
    return nt_file_;
  }
  const std::optional<arch::PacMask>& pac_mask() const { return pac_mask_; }
  // PT_LOAD segments in program-header order.
  const std::vector<CoreSegment>& segments() const { return segments_; }
  // Human-readable problems found while reading (truncation, bad notes...).
  const std::vector<std::string>& warnings() const { return warnings_; }

 private:
  CoreFile() = default;
  absl::Status ReadNotes(uint64_t offset, uint64_t filesz, uint64_t align);
  void TakeNote(const CoreNote& note);
  // Adds a warning, or counts it once kMaxCoreWarnings are kept.
  void Warn(std::string warning);

  std::string name_;
  std::shared_ptr<const memory::ScopedFd> fd_;
  uint64_t size_ = 0;
  arch::Arch arch_ = arch::Arch::kX86_64;
  uint8_t elf_class_ = 2;
  std::vector<CoreThread> threads_;
  std::optional<PrpsInfo> prpsinfo_;
  std::vector<std::pair<uint64_t, uint64_t>> auxv_;
  std::optional<std::vector<NtFileEntry>> nt_file_;
  std::optional<arch::PacMask> pac_mask_;
  std::vector<CoreSegment> segments_;
  std::vector<std::string> warnings_;
  uint64_t warnings_dropped_ = 0;
  absl::flat_hash_set<pid_t> tids_;  // of threads_
  uint64_t note_bytes_ = 0;
};

}  // namespace unwindd::proc

#endif  // UNWINDD_PROC_CORE_FILE_H_

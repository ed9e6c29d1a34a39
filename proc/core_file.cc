#include "proc/core_file.h"

#include <elf.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "absl/status/status.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_format.h"
#include "arch/arch_ops.h"
#include "arch/regset.h"
#include "memory/file_region_memory.h"
#include "proc/core_elf.h"

namespace unwindd::proc {
namespace {

// include/uapi/linux/elf.h; spelled out because older <elf.h> lack them.
constexpr uint32_t kNtPrStatus = 1;
constexpr uint32_t kNtPrPsInfo = 3;
constexpr uint32_t kNtAuxv = 6;
constexpr uint32_t kNtSigInfo = 0x53494749;  // "SIGI"
constexpr uint32_t kNtFile = 0x46494c45;     // "FILE"

uint64_t LoadLe(absl::Span<const uint8_t> b, size_t off, size_t size) {
  uint64_t v = 0;
  for (size_t i = size; i > 0; --i) v = (v << 8) | b[off + i - 1];
  return v;
}

}  // namespace

std::optional<uint64_t> CoreFile::Auxv(uint64_t type) const {
  for (const auto& [t, v] : auxv_) {
    if (t == type) return v;
  }
  return std::nullopt;
}

absl::StatusOr<CoreFile> CoreFile::Read(
    std::shared_ptr<const memory::ScopedFd> fd, uint64_t size,
    std::string name) {
  CoreFile core;
  core.name_ = std::move(name);
  core.fd_ = fd;
  core.size_ = size;
  // The file seen as memory at address 0, so the ELF reader that parses
  // in-memory images parses the core's own headers too.
  absl::StatusOr<std::unique_ptr<memory::Memory>> file =
      memory::CreateFileRegionMemory({{0, size, fd, 0}});
  if (!file.ok()) return file.status();
  // Read here rather than through `file`, so that a read that fails says
  // why instead of passing for a file that is not a core.
  uint8_t magic[SELFMAG] = {};
  ssize_t got;
  do {
    got = pread(fd->get(), magic, sizeof(magic), 0);
  } while (got < 0 && errno == EINTR);
  if (got < 0) {
    return absl::ErrnoToStatus(
        errno, absl::StrFormat("%s: reading its ELF header", core.name_));
  }
  if (static_cast<size_t>(got) != SELFMAG || std::memcmp(magic, ELFMAG, SELFMAG) != 0) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s is not an ELF core file (no ELF magic: it starts %s; %d bytes)", core.name_,
        absl::BytesToHexString(absl::string_view(reinterpret_cast<const char*>(magic),
                                                 static_cast<size_t>(got))),
        size));
  }
  absl::StatusOr<ElfImage> elf =
      ReadElfImage(**file, 0, ElfView::kFile, kMaxCoreSegments);
  if (!elf.ok()) {
    // The headers themselves are past the end or inconsistent: nothing of
    // the core can be located.
    absl::StatusCode code = absl::IsUnimplemented(elf.status())
                                ? absl::StatusCode::kUnimplemented
                                : absl::StatusCode::kDataLoss;
    return absl::Status(
        code, absl::StrFormat("%s: %s", core.name_, elf.status().message()));
  }
  if (elf->type != ET_CORE) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s is an ELF file of type %d, not a core file (ET_CORE)", core.name_,
        elf->type));
  }
  absl::StatusOr<arch::Arch> a =
      arch::ArchFromElfMachine(elf->machine, elf->elf_class);
  if (!a.ok()) {
    return absl::Status(
        a.status().code(),
        absl::StrFormat("%s: %s", core.name_, a.status().message()));
  }
  core.arch_ = *a;
  core.elf_class_ = elf->elf_class;

  uint64_t truncated_segments = 0, missing_bytes = 0;
  for (size_t i = 0; i < elf->phdrs.size(); ++i) {
    const ElfPhdr& p = elf->phdrs[i];
    if (p.type == PT_NOTE) {
      absl::Status s = core.ReadNotes(p.offset, p.filesz, p.align);
      if (!s.ok()) core.Warn(std::string(s.message()));
      continue;
    }
    if (p.type != PT_LOAD) continue;
    CoreSegment seg{p.vaddr, p.memsz, p.offset, p.filesz, 0, p.flags};
    uint64_t end;
    if (__builtin_add_overflow(p.vaddr, p.memsz, &end) ||
        __builtin_add_overflow(p.offset, p.filesz, &end)) {
      core.Warn(absl::StrFormat(
          "PT_LOAD %d (vaddr 0x%x, memsz 0x%x, offset 0x%x, filesz 0x%x) "
          "overflows; ignored",
          i, p.vaddr, p.memsz, p.offset, p.filesz));
      continue;
    }
    if (seg.filesz > seg.memsz) {
      core.Warn(absl::StrFormat(
          "PT_LOAD %d at 0x%x has filesz 0x%x > memsz 0x%x; using memsz", i,
          p.vaddr, p.filesz, p.memsz));
      seg.filesz = seg.memsz;
    }
    seg.in_file =
        seg.offset >= size ? 0 : std::min(seg.filesz, size - seg.offset);
    if (seg.in_file < seg.filesz) {
      ++truncated_segments;
      missing_bytes += seg.filesz - seg.in_file;
    }
    core.segments_.push_back(seg);
  }
  if (truncated_segments > 0) {
    core.Warn(absl::StrFormat(
        "%s is truncated: %d segments are cut short, 0x%x bytes of memory "
        "are missing (the file has %d bytes); what was in them reads as "
        "unreadable (or from the mapped file)",
        core.name_, truncated_segments, missing_bytes, size));
  }
  // The kernel writes one PT_LOAD per mapping, so segments never overlap in
  // a well-formed core; memory gives overlapping bytes to the first one.
  std::vector<const CoreSegment*> by_addr;
  for (const CoreSegment& s : core.segments_) by_addr.push_back(&s);
  std::sort(by_addr.begin(), by_addr.end(),
            [](const CoreSegment* a, const CoreSegment* b) {
              return a->vaddr < b->vaddr;
            });
  for (size_t i = 1; i < by_addr.size(); ++i) {
    if (by_addr[i]->vaddr < by_addr[i - 1]->vaddr + by_addr[i - 1]->memsz) {
      core.Warn(
          absl::StrFormat("PT_LOAD segments at 0x%x and 0x%x overlap; the one "
                          "listed first wins",
                          by_addr[i - 1]->vaddr, by_addr[i]->vaddr));
      break;
    }
  }
  if (core.warnings_dropped_ > 0) {
    core.warnings_.push_back(absl::StrFormat(
        "... and %d more warnings", core.warnings_dropped_));
  }
  if (core.threads_.empty()) {
    std::string why = "it has no NT_PRSTATUS note";
    if (!core.warnings_.empty()) why += " (" + core.warnings_.back() + ")";
    return absl::DataLossError(
        absl::StrFormat("%s has no threads to unwind: %s", core.name_, why));
  }
  return core;
}

void CoreFile::Warn(std::string warning) {
  if (warnings_.size() < kMaxCoreWarnings) {
    warnings_.push_back(std::move(warning));
  } else {
    ++warnings_dropped_;
  }
}

absl::Status CoreFile::ReadNotes(uint64_t offset, uint64_t filesz,
                                 uint64_t align) {
  const uint64_t avail = offset >= size_ ? 0 : std::min(filesz, size_ - offset);
  if (avail > kMaxCoreNoteBytes - note_bytes_) {
    return absl::ResourceExhaustedError(absl::StrFormat(
        "notes at file offset 0x%x: more than %d bytes of notes", offset,
        kMaxCoreNoteBytes));
  }
  note_bytes_ += avail;
  // Notes are parsed from a copy: CoreNote::desc points into it only while
  // TakeNote runs.
  std::vector<uint8_t> bytes(avail);
  size_t got =
      memory::PreadFully(fd_->get(), bytes.data(), bytes.size(), offset);
  bytes.resize(got);
  ParsedNotes parsed = ParseNotes(bytes, offset, align);
  for (const CoreNote& n : parsed.notes) TakeNote(n);
  if (!parsed.error.ok()) {
    return absl::DataLossError(
        absl::StrFormat("%s: %s; %d notes before it were used", name_,
                        parsed.error.message(), parsed.notes.size()));
  }
  if (got < filesz) {
    return absl::DataLossError(absl::StrFormat(
        "%s: the notes at file offset 0x%x need 0x%x bytes but the file ends "
        "after 0x%x of them",
        name_, offset, filesz, got));
  }
  return absl::OkStatus();
}

void CoreFile::TakeNote(const CoreNote& note) {
  const int w = word_size();
  const arch::ArchOps& ops = arch::GetArchOps(arch_);
  if (note.name == "LINUX" && ops.pac_mask_note != 0 &&
      note.type == ops.pac_mask_note) {
    absl::StatusOr<arch::PacMask> mask = ops.pac_mask_from_note(note.desc);
    if (mask.ok()) pac_mask_ = *mask;
    return;
  }
  if (note.name != "CORE") return;
  switch (note.type) {
    case kNtPrStatus: {
      absl::StatusOr<arch::CorePrStatus> st =
          arch::ParseCorePrStatus(arch_, note.desc);
      CoreThread t;
      if (st.ok()) {
        t.tid = st->pid;
        t.regs = st->regs;
        if (st->signal != 0) t.signal = SignalInfo{.number = st->signal};
      } else {
        // struct elf_prstatus: pr_pid after pr_info, pr_cursig, pr_sigpend
        // and pr_sighold; without it the thread cannot even be named.
        const size_t pid_off = w == 8 ? 32 : 24;
        if (note.desc.size() < pid_off + 4) {
          Warn(absl::StrFormat(
              "NT_PRSTATUS at file offset 0x%x is %d bytes: ignored",
              note.offset, note.desc.size()));
          return;
        }
        t.tid = static_cast<pid_t>(LoadLe(note.desc, pid_off, 4));
        t.regs = absl::DataLossError(
            absl::StrFormat("NT_PRSTATUS at file offset 0x%x: %s", note.offset,
                            st.status().message()));
      }
      if (tids_.contains(t.tid)) {
        Warn(absl::StrFormat(
            "thread %d has a second NT_PRSTATUS at file offset 0x%x: ignored",
            t.tid, note.offset));
        return;
      }
      if (threads_.size() >= kMaxCoreThreads) {
        Warn(absl::StrFormat(
            "more than %d threads: thread %d (NT_PRSTATUS at file offset "
            "0x%x) is ignored",
            kMaxCoreThreads, t.tid, note.offset));
        return;
      }
      tids_.insert(t.tid);
      threads_.push_back(std::move(t));
      return;
    }
    case kNtSigInfo: {
      // Belongs to the thread whose NT_PRSTATUS came last (the kernel writes
      // it after the dumping thread's, gdb after each thread's).
      absl::StatusOr<SignalInfo> si = ParseSigInfo(note.desc, w);
      if (!si.ok()) {
        Warn(std::string(si.status().message()));
        return;
      }
      if (threads_.empty() || si->number <= 0) return;
      CoreThread& t = threads_.back();
      if (t.signal && t.signal->code) return;  // already has one
      t.signal = *si;
      return;
    }
    case kNtPrPsInfo: {
      absl::StatusOr<PrpsInfo> p = ParsePrpsInfo(note.desc, w);
      if (p.ok()) {
        prpsinfo_ = *std::move(p);
      } else {
        Warn(std::string(p.status().message()));
      }
      return;
    }
    case kNtAuxv: {
      absl::StatusOr<std::vector<std::pair<uint64_t, uint64_t>>> a =
          ParseAuxv(note.desc, w);
      if (a.ok()) {
        auxv_ = *std::move(a);
      } else {
        Warn(std::string(a.status().message()));
      }
      return;
    }
    case kNtFile: {
      absl::StatusOr<std::vector<NtFileEntry>> f = ParseNtFile(note.desc, w);
      if (f.ok()) {
        nt_file_ = *std::move(f);
      } else {
        Warn(absl::StrFormat(
            "NT_FILE at file offset 0x%x is unusable (%s); finding modules "
            "through the dynamic linker instead",
            note.offset, f.status().message()));
      }
      return;
    }
    default:
      return;
  }
}

}  // namespace unwindd::proc

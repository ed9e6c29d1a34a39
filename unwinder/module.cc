#include "unwinder/module.h"

#include <elf.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "absl/strings/escaping.h"
#include "absl/strings/str_format.h"
#include "arch/prologue.h"
#include "unwinder/cfi/cfa_vm.h"
#include "unwinder/fp/frame_pointer.h"
#include "unwinder/locate/section_data.h"
#include "memory/file_mapping.h"
#include "memory/scoped_fd.h"

namespace unwindd::unwinder {
namespace {

// Per-module row cache bound: rows are ~1.3 KB, so this is ~20 MB at most
// for one module; the cache is dropped and refilled when full.
constexpr size_t kMaxCachedRows = 16384;

// A compressed section (SHF_COMPRESSED .debug_frame) larger than this once
// decompressed is ignored. Real .debug_frame sections are a few MiB.
constexpr uint64_t kMaxDecompressedSectionBytes = uint64_t{256} << 20;

// Program header type of the segment that holds .sframe (binutils elf.h).
constexpr uint32_t kPtGnuSframe = 0x6474e554;

absl::Status ElfError(absl::string_view what, absl::string_view name) {
  return absl::DataLossError(
      absl::StrFormat("%s: %s: %s", name, what, elf_errmsg(-1)));
}

bool InitLibelf() {
  static const bool ok = elf_version(EV_CURRENT) != EV_NONE;
  return ok;
}

// NT_GNU_BUILD_ID in a note area of `elf` (file offset + size).
std::string FindBuildIdInNotes(Elf* elf, uint64_t offset, uint64_t size,
                               uint64_t align) {
  Elf_Data* data = elf_getdata_rawchunk(
      elf, static_cast<int64_t>(offset), size,
      align == 8 ? ELF_T_NHDR8 : ELF_T_NHDR);
  if (data == nullptr) return "";
  size_t pos = 0;
  GElf_Nhdr nhdr;
  size_t name_off, desc_off;
  while (pos < data->d_size) {
    size_t next = gelf_getnote(data, pos, &nhdr, &name_off, &desc_off);
    if (next == 0 || next <= pos) break;
    const char* base = static_cast<const char*>(data->d_buf);
    if (nhdr.n_type == NT_GNU_BUILD_ID && nhdr.n_namesz == 4 &&
        std::memcmp(base + name_off, "GNU", 4) == 0 && nhdr.n_descsz > 0) {
      return absl::BytesToHexString(absl::string_view(base + desc_off, nhdr.n_descsz));
    }
    pos = next;
  }
  return "";
}

// The same decoder live and core targets use (arch::ArchFromElfMachine),
// so that a target whose arch is supported has modules that open.
absl::StatusOr<arch::Arch> ArchOf(const GElf_Ehdr& ehdr, absl::string_view name) {
  if (ehdr.e_ident[EI_DATA] != ELFDATA2LSB) {
    return absl::UnimplementedError(
        absl::StrFormat("%s: big-endian ELF is not supported", name));
  }
  absl::StatusOr<arch::Arch> a =
      arch::ArchFromElfMachine(ehdr.e_machine, ehdr.e_ident[EI_CLASS]);
  if (!a.ok()) {
    return absl::UnimplementedError(absl::StrFormat("%s: %s", name, a.status().message()));
  }
  return *a;
}

}  // namespace

absl::StatusOr<std::shared_ptr<Module>> Module::OpenFile(const std::string& path) {
  if (!InitLibelf()) return absl::InternalError("libelf version mismatch");
  int fd = memory::OpenNamedFile(path.c_str()).release();
  if (fd < 0) {
    int err = errno;
    std::string msg = absl::StrFormat("cannot open %s: %s", path, strerror(err));
    if (err == ENOENT || err == ENOTDIR) return absl::NotFoundError(msg);
    if (err == EACCES || err == EPERM) return absl::PermissionDeniedError(msg);
    return absl::UnavailableError(msg);
  }
  struct stat st;
  if (fstat(fd, &st) != 0) {
    close(fd);
    return absl::FailedPreconditionError(
        absl::StrFormat("%s is not a regular file", path));
  }
  return OpenFd(fd, st, path);
}

absl::StatusOr<std::shared_ptr<Module>> Module::OpenFd(int fd, const struct stat& st,
                                                       const std::string& path) {
  std::shared_ptr<Module> m(new Module());
  m->fd_ = fd;  // closed by ~Module from here on
  if (!InitLibelf()) return absl::InternalError("libelf version mismatch");
  if (!S_ISREG(st.st_mode)) {
    return absl::FailedPreconditionError(
        absl::StrFormat("%s is not a regular file", path));
  }
  // Mapped by us, not by elf_begin(ELF_C_READ_MMAP), so that the mapping is
  // registered with the SIGBUS guard before libelf reads a byte of it: the
  // file may be truncated at any moment (memory/file_mapping.h).
  absl::StatusOr<std::unique_ptr<memory::FileMapping>> mapping =
      memory::FileMapping::Map(fd, static_cast<uint64_t>(st.st_size), path);
  if (!mapping.ok()) return mapping.status();
  m->mapping_ = *std::move(mapping);
  m->stat_ = FileStamp::Of(st);
  if (m->mapping_->bytes().size() < EI_NIDENT) {
    return absl::DataLossError(absl::StrFormat("%s is not an ELF file", path));
  }
  Elf* elf = elf_memory(reinterpret_cast<char*>(m->mapping_->mutable_data()),
                        m->mapping_->bytes().size());
  if (elf == nullptr) return ElfError("cannot read ELF", path);
  absl::Status s = m->Init(elf, path);
  // What Init read may be zeros of a truncated page, or a mix of two
  // versions of a file rewritten meanwhile: then none of it counts.
  // (fstat's timestamps tell a rewrite apart even within one clock tick
  // since Linux 6.13's multigrain timestamps, which the first fstat armed.)
  if (absl::Status c = m->mapping_->Check(); !c.ok()) return c;
  struct stat now;
  if (fstat(fd, &now) != 0 || !(FileStamp::Of(now) == m->stat_)) {
    return absl::DataLossError(absl::StrFormat("%s changed while it was read", path));
  }
  if (!s.ok()) return s;
  return m;
}

Module::FileStamp Module::FileStamp::Of(const struct stat& st) {
  return FileStamp{static_cast<uint64_t>(st.st_dev), static_cast<uint64_t>(st.st_ino),
                   static_cast<int64_t>(st.st_size), st.st_mtim.tv_sec, st.st_mtim.tv_nsec,
                   st.st_ctim.tv_sec, st.st_ctim.tv_nsec};
}

bool Module::changed() const { return mapping_ != nullptr && mapping_->changed(); }

bool Module::ChangedLocked() const {
  return changed() || (debug_elf_ != nullptr && debug_elf_->changed());
}

void Module::MarkChanged() {
  if (mapping_ != nullptr) mapping_->MarkChanged();
}

absl::Status Module::ChangedError() const {
  return absl::DataLossError(absl::StrFormat("%s changed while it was read", name_));
}

absl::StatusOr<std::shared_ptr<Module>> Module::FromImage(
    std::vector<uint8_t> image, std::string name) {
  if (!InitLibelf()) return absl::InternalError("libelf version mismatch");
  std::shared_ptr<Module> m(new Module());
  m->owned_image_ = std::move(image);
  Elf* elf = elf_memory(reinterpret_cast<char*>(m->owned_image_.data()),
                        m->owned_image_.size());
  if (elf == nullptr) return ElfError("cannot read ELF image", name);
  absl::Status s = m->Init(elf, std::move(name));
  if (!s.ok()) return s;
  return m;
}

Module::~Module() {
  if (row_budget_ != nullptr) row_budget_->Give(rows_.size() * kRowCacheEntryBytes);
  if (elf_ != nullptr) elf_end(elf_);
  if (fd_ >= 0) close(fd_);
}

absl::Status Module::Init(Elf* elf, std::string name) {
  elf_ = elf;
  name_ = std::move(name);
  if (elf_kind(elf) != ELF_K_ELF) {
    return absl::DataLossError(absl::StrFormat("%s is not an ELF file", name_));
  }
  GElf_Ehdr ehdr;
  if (gelf_getehdr(elf, &ehdr) == nullptr) return ElfError("bad ELF header", name_);
  absl::StatusOr<arch::Arch> a = ArchOf(ehdr, name_);
  if (!a.ok()) return a.status();
  arch_ = *a;
  machine_ = ehdr.e_machine;
  elf_class_ = ehdr.e_ident[EI_CLASS];
  // The file's own pointer size: 4 in an x32 (ELFCLASS32 x86_64) file.
  address_size_ = ehdr.e_ident[EI_CLASS] == ELFCLASS32 ? 4 : 8;
  size_t raw_size = 0;
  const char* raw = elf_rawfile(elf, &raw_size);
  if (raw == nullptr) return ElfError("no file image", name_);
  raw_ = absl::MakeConstSpan(reinterpret_cast<const uint8_t*>(raw), raw_size);
  image_size_ = raw_size;

  size_t phnum = 0;
  if (elf_getphdrnum(elf, &phnum) != 0) return ElfError("bad program headers", name_);
  std::optional<Segment> eh_frame_hdr_segment;
  std::optional<Segment> sframe_segment;
  for (size_t i = 0; i < phnum; ++i) {
    GElf_Phdr ph;
    if (gelf_getphdr(elf, static_cast<int>(i), &ph) == nullptr) continue;
    if (ph.p_type == PT_LOAD) {
      loads_.push_back({ph.p_vaddr, ph.p_memsz, ph.p_offset, ph.p_filesz,
                        (ph.p_flags & PF_X) != 0});
    } else if (ph.p_type == PT_NOTE) {
      if (note_segments_.size() < kMaxNoteAreas) {
        note_segments_.push_back({ph.p_offset, ph.p_filesz});
      }
      if (build_id_.empty()) {
        build_id_ = FindBuildIdInNotes(elf, ph.p_offset, ph.p_filesz, ph.p_align);
      }
    } else if (ph.p_type == PT_GNU_EH_FRAME) {
      eh_frame_hdr_segment = Segment{ph.p_vaddr, ph.p_memsz, ph.p_offset, ph.p_filesz};
    } else if (ph.p_type == kPtGnuSframe) {
      sframe_segment = Segment{ph.p_vaddr, ph.p_memsz, ph.p_offset, ph.p_filesz};
    }
  }
  absl::Status s = LoadSections();
  if (!s.ok()) return s;

  // No section headers (stripped of them, or a hostile file): find the
  // tables through PT_GNU_EH_FRAME as the dynamic linker's unwinder does.
  if (!eh_frame_hdr_ && eh_frame_hdr_segment) {
    absl::Span<const uint8_t> hdr = BytesAtVaddr(eh_frame_hdr_segment->vaddr);
    hdr = hdr.subspan(0, std::min<size_t>(hdr.size(), eh_frame_hdr_segment->filesz));
    absl::StatusOr<EhFrameHdr> parsed =
        EhFrameHdr::Parse(hdr, eh_frame_hdr_segment->vaddr, address_size_);
    if (parsed.ok()) eh_frame_hdr_ = *parsed;
  }
  if (!sframe_ && sframe_segment && absl::IsNotFound(sframe_status_)) {
    absl::Span<const uint8_t> b = BytesAtVaddr(sframe_segment->vaddr);
    LoadSframe(b.subspan(0, std::min<size_t>(b.size(), sframe_segment->filesz)),
               sframe_segment->vaddr);
  }
  if (!eh_frame_ && eh_frame_hdr_) {
    uint64_t v = eh_frame_hdr_->eh_frame_vaddr();
    absl::Span<const uint8_t> bytes = BytesAtVaddr(v);
    if (!bytes.empty()) {
      eh_frame_.emplace(CfiKind::kEhFrame, bytes, v, arch_, EncodingBases{},
                        address_size_);
    }
  }
  return absl::OkStatus();
}

std::vector<absl::Span<const uint8_t>> Module::NoteAreas() const {
  const auto& areas = note_sections_.empty() ? note_segments_ : note_sections_;
  std::vector<absl::Span<const uint8_t>> out;
  for (const auto& [offset, size] : areas) {
    if (offset >= raw_.size()) continue;
    out.push_back(raw_.subspan(offset, std::min<uint64_t>(size, raw_.size() - offset)));
  }
  return out;
}

absl::Status Module::LoadSections() {
  size_t shstrndx = 0;
  if (elf_getshdrstrndx(elf_, &shstrndx) != 0) return absl::OkStatus();
  struct Found {
    GElf_Shdr shdr;
    Elf_Scn* scn = nullptr;
  };
  Found eh_frame, eh_frame_hdr, debug_frame, sframe, text, got;
  bool go = false;  // Go's sections (IsGoSection): only then are its symbols searched
  for (Elf_Scn* scn = elf_nextscn(elf_, nullptr); scn != nullptr;
       scn = elf_nextscn(elf_, scn)) {
    GElf_Shdr shdr;
    if (gelf_getshdr(scn, &shdr) == nullptr) continue;
    if (shdr.sh_type == SHT_NOTE && note_sections_.size() < kMaxNoteAreas) {
      note_sections_.push_back({shdr.sh_offset, shdr.sh_size});
    }
    const char* n = elf_strptr(elf_, shstrndx, shdr.sh_name);
    if (n == nullptr) continue;
    absl::string_view sn(n);
    Found* f = sn == ".eh_frame"       ? &eh_frame
               : sn == ".eh_frame_hdr" ? &eh_frame_hdr
               : sn == ".debug_frame"  ? &debug_frame
               // Legacy GNU compression (objcopy --compress-debug-sections=
               // zlib-gnu) renames it.
               : sn == ".zdebug_frame" ? &debug_frame
               : sn == ".sframe"       ? &sframe
               : sn == ".text"         ? &text
               : sn == ".got"          ? &got
                                       : nullptr;
    if (f != nullptr && f->scn == nullptr) *f = {shdr, scn};
    if (IsGoSection(sn)) go = true;
    if ((shdr.sh_flags & SHF_EXECINSTR) && (shdr.sh_flags & SHF_ALLOC) &&
        code_sections_.size() < kMaxCodeSections) {
      code_sections_.push_back({shdr.sh_addr, shdr.sh_size});
    }
    if (shdr.sh_type == SHT_NOTE && build_id_.empty()) {
      build_id_ = FindBuildIdInNotes(elf_, shdr.sh_offset, shdr.sh_size,
                                     shdr.sh_addralign);
    }
  }
  auto section_bytes = [&](const Found& f) -> absl::Span<const uint8_t> {
    if (f.scn == nullptr || f.shdr.sh_type == SHT_NOBITS) return {};
    if (f.shdr.sh_flags & SHF_COMPRESSED) {
      // libelf allocates the size the header claims before inflating: a
      // hostile ch_size must not become a multi-GiB allocation.
      GElf_Chdr chdr;
      if (gelf_getchdr(f.scn, &chdr) == nullptr ||
          chdr.ch_size > kMaxDecompressedSectionBytes) {
        return {};
      }
      if (elf_compress(f.scn, 0, 0) < 0) return {};
    }
    Elf_Data* d = elf_getdata(f.scn, nullptr);
    if (d == nullptr || d->d_buf == nullptr) return {};
    return absl::MakeConstSpan(static_cast<const uint8_t*>(d->d_buf), d->d_size);
  };
  EncodingBases bases;
  bases.text = text.scn ? text.shdr.sh_addr : 0;
  bases.data = got.scn ? got.shdr.sh_addr : 0;

  if (absl::Span<const uint8_t> b = section_bytes(eh_frame_hdr); !b.empty()) {
    absl::StatusOr<EhFrameHdr> parsed =
        EhFrameHdr::Parse(b, eh_frame_hdr.shdr.sh_addr, address_size_);
    // An unusable header is not fatal: the built index replaces it.
    if (parsed.ok()) eh_frame_hdr_ = *parsed;
  }
  if (absl::Span<const uint8_t> b = section_bytes(eh_frame); !b.empty()) {
    eh_frame_.emplace(CfiKind::kEhFrame, b, eh_frame.shdr.sh_addr, arch_, bases,
                      address_size_);
  }
  // .debug_frame may be compressed (SHF_COMPRESSED zlib or zstd, or
  // .zdebug_frame): unwinder/locate's reader decompresses it, bounded. A
  // section that does not decompress is as good as none.
  if (debug_frame.scn != nullptr) {
    absl::StatusOr<locate::SectionData> d = locate::ReadSectionData(
        elf_, debug_frame.scn, locate::kDefaultMaxSectionBytes, &debug_frame_storage_);
    if (d.ok() && !d->bytes.empty()) {
      debug_frame_.emplace(CfiKind::kDebugFrame, d->bytes, 0, arch_, bases,
                           address_size_);
      own_debug_frame_ = true;
    }
  }
  if (absl::Span<const uint8_t> b = section_bytes(sframe); !b.empty()) {
    LoadSframe(b, sframe.shdr.sh_addr);
  }
  if (go) go_switches_ = FindGoStackSwitches(elf_);
  return absl::OkStatus();
}

// A malformed or foreign .sframe does not make the module unusable: its
// other sources still answer, and lookups in it report why it cannot.
void Module::LoadSframe(absl::Span<const uint8_t> bytes, uint64_t vaddr) {
  absl::StatusOr<std::unique_ptr<sframe::SframeSection>> s =
      sframe::SframeSection::Parse(bytes, vaddr);
  if (!s.ok()) {
    sframe_status_ = absl::Status(
        s.status().code(), absl::StrFormat("%s: .sframe: %s", name_,
                                           s.status().message()));
    return;
  }
  if ((*s)->arch() != arch_) {
    sframe_status_ = absl::DataLossError(absl::StrFormat(
        "%s: .sframe is for %s in a %s file", name_,
        arch::GetArchInfo((*s)->arch()).name, arch::GetArchInfo(arch_).name));
    return;
  }
  sframe_ = *std::move(s);
  sframe_status_ = absl::OkStatus();
}

absl::Span<const uint8_t> Module::BytesAtVaddr(uint64_t vaddr) const {
  for (const Segment& s : loads_) {
    if (vaddr < s.vaddr || vaddr - s.vaddr >= s.filesz) continue;
    uint64_t off = s.offset + (vaddr - s.vaddr);
    uint64_t end = s.offset + s.filesz;
    if (off >= raw_.size() || end < off) return {};
    end = std::min<uint64_t>(end, raw_.size());
    return raw_.subspan(off, end - off);
  }
  return {};
}

absl::StatusOr<uint64_t> Module::LoadBias(uint64_t map_start,
                                          uint64_t map_offset) const {
  // The vaddr of file offset `map_offset` is p_vaddr + (off - p_offset) in
  // the PT_LOAD that maps it. Segments are mapped from their page-aligned
  // start, and two segments can share a file page (gold puts the RW segment
  // in the last page of the RX one), so a segment that starts exactly at the
  // mapping's offset wins over one that merely contains it.
  const Segment* containing = nullptr;
  for (const Segment& s : loads_) {
    uint64_t page_off = s.offset & ~uint64_t{0xfff};
    if (map_offset == page_off) {
      return map_start - (s.vaddr - (s.offset - page_off));
    }
    if (containing == nullptr && map_offset > page_off &&
        map_offset < s.offset + s.filesz) {
      containing = &s;
    }
  }
  if (containing != nullptr) {
    return map_start - (containing->vaddr + (map_offset - containing->offset));
  }
  return absl::NotFoundError(absl::StrFormat(
      "%s: no PT_LOAD segment maps file offset 0x%x", name_, map_offset));
}

absl::StatusOr<ModuleRow> Module::FindRow(arch::FrameAddress at,
                                          const SourcePolicy& policy) {
  absl::StatusOr<std::shared_ptr<const ModuleRow>> row = FindSharedRow(at, policy);
  if (!row.ok()) return row.status();
  return **row;
}

absl::StatusOr<std::shared_ptr<const ModuleRow>> Module::FindSharedRow(
    arch::FrameAddress at, const SourcePolicy& policy) {
  std::shared_ptr<RowBudget> spent;
  std::shared_ptr<const ModuleRow> shared;
  bool load_debug_info = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    // A file found changed answers nothing more, cached or not: its rows
    // may come from another version of it (the cache evicts it too).
    if (ChangedLocked()) return ChangedError();
    const RowKey key(at, policy.Code());
    auto it = rows_.find(key);
    if (it != rows_.end()) return it->second;
    absl::StatusOr<ModuleRow> row = FindRowUncached(at, policy);
    if (ChangedLocked()) return ChangedError();
    if (WantsDebugInfoLocked(row, policy)) {
      load_debug_info = true;
    } else {
      if (!row.ok()) return row.status();
      shared = std::make_shared<const ModuleRow>(*std::move(row));
      if (rows_.size() >= kMaxCachedRows) ClearRowsLocked();
      if (row_budget_ == nullptr || row_budget_->TryTake(kRowCacheEntryBytes)) {
        rows_.emplace(key, shared);
        return shared;
      }
      // A budget of nothing caches nothing, and has nothing to reclaim.
      if (row_budget_->max() == 0) return shared;
      spent = row_budget_;
    }
  }
  if (load_debug_info) {
    // Outside mu_: finding it may take a while (a CRC over a large file, a
    // debuginfod fetch) and other lookups need not wait. Runs once; the
    // retry then sees debug_tried_ and goes the usual way.
    LoadDebugInfo();
    return FindSharedRow(at, policy);
  }
  // The budget is spent: this row is served uncached, and every module
  // starts afresh (outside our lock: ReclaimAll takes each module's).
  spent->ReclaimAll();
  return shared;
}

void Module::DropCachedRows() {
  std::lock_guard<std::mutex> lock(mu_);
  ClearRowsLocked();
}

void Module::ClearRowsLocked() {
  if (row_budget_ != nullptr) row_budget_->Give(rows_.size() * kRowCacheEntryBytes);
  rows_.clear();
}

void Module::set_row_budget(std::shared_ptr<RowBudget> budget) {
  std::lock_guard<std::mutex> lock(mu_);
  ClearRowsLocked();
  row_budget_ = std::move(budget);
}

uint64_t Module::row_cache_bytes() {
  std::lock_guard<std::mutex> lock(mu_);
  return rows_.size() * kRowCacheEntryBytes;
}

absl::StatusOr<Fde> Module::FindEhFrameFde(uint64_t pc) {
  // .eh_frame_hdr answers in O(log n) without touching the section; its
  // "not found" is authoritative. A header that points at garbage is not:
  // then the section's own built index decides.
  std::optional<absl::StatusOr<Fde>> via_hdr;
  if (eh_frame_hdr_ && eh_frame_hdr_->HasTable()) {
    absl::StatusOr<uint64_t> addr = eh_frame_hdr_->Lookup(pc);
    if (addr.ok() && *addr >= eh_frame_->vaddr()) {
      via_hdr = eh_frame_->ParseFdeAt(*addr - eh_frame_->vaddr());
    } else if (absl::IsNotFound(addr.status())) {
      via_hdr = addr.status();
    }
  }
  absl::StatusOr<Fde> fde =
      via_hdr && (via_hdr->ok() || absl::IsNotFound(via_hdr->status()))
          ? *std::move(via_hdr)
          : eh_frame_->FindFde(pc);
  if (!fde.ok()) return fde.status();
  if (pc < fde->pc_begin || pc >= fde->pc_end) {
    return absl::NotFoundError(
        absl::StrFormat("%s: no FDE covers 0x%x", name_, pc));
  }
  return fde;
}

absl::StatusOr<ModuleRow> Module::FindRowInEhFrame(uint64_t pc) {
  absl::StatusOr<Fde> fde = FindEhFrameFde(pc);
  if (!fde.ok()) return fde.status();
  absl::StatusOr<Row> row = ComputeRow(fde->cie, *fde, pc, arch_);
  if (!row.ok()) return row.status();
  return ModuleRow{*row, Source::kEhFrame, Method::kEhFrame};
}

absl::StatusOr<ModuleRow> Module::FindRowInDebugFrame(uint64_t pc) {
  // A debug file's addresses are the file's plus debug_delta_ (0 unless the
  // file was prelinked after the split); the row goes back to the file's.
  const uint64_t dpc = pc + static_cast<uint64_t>(debug_delta_);
  absl::StatusOr<Fde> fde = debug_frame_->FindFde(dpc);
  if (!fde.ok()) return fde.status();
  absl::StatusOr<Row> row = ComputeRow(fde->cie, *fde, dpc, arch_);
  if (!row.ok()) return row.status();
  row->pc_lo -= static_cast<uint64_t>(debug_delta_);
  row->pc_hi -= static_cast<uint64_t>(debug_delta_);
  return ModuleRow{*row, Source::kDebugFrame, Method::kDebugFrame};
}

absl::StatusOr<ModuleRow> Module::FindRowInSframe(uint64_t pc) {
  if (sframe_ == nullptr) return sframe_status_;
  absl::StatusOr<Row> row = sframe_->FindRow(pc);
  if (row.ok()) return ModuleRow{*row, Source::kSframe, Method::kSframe};
  // SFrame §2.1.3 (v1, v2): SFRAME_F_FRAME_POINTER says every function keeps
  // a frame pointer, so what the FDEs leave out is unwound through it.
  if (absl::IsNotFound(row.status()) && sframe_->header().frame_pointer()) {
    return ModuleRow{fp::FramePointerRow(arch_), Source::kSframe, Method::kFramePointer};
  }
  return row.status();
}

std::optional<std::pair<uint64_t, uint64_t>> Module::FunctionBounds(
    uint64_t pc) {
  std::lock_guard<std::mutex> lock(mu_);
  return FunctionBoundsLocked(pc);
}

std::optional<std::pair<uint64_t, uint64_t>> Module::FunctionBoundsLocked(
    uint64_t pc) {
  if (eh_frame_) {
    absl::StatusOr<Fde> fde = FindEhFrameFde(pc);
    if (fde.ok()) return std::make_pair(fde->pc_begin, fde->pc_end);
  }
  if (debug_frame_) {
    const uint64_t delta = static_cast<uint64_t>(debug_delta_);
    absl::StatusOr<Fde> fde = debug_frame_->FindFde(pc + delta);
    if (fde.ok()) return std::make_pair(fde->pc_begin - delta, fde->pc_end - delta);
  }
  if (sframe_) {
    absl::StatusOr<sframe::Fde> fde = sframe_->FindFde(pc);
    if (fde.ok()) return std::make_pair(fde->func_start, fde->func_end());
  }
  return std::nullopt;
}

// The frame-pointer chain answers where the function's code shows it keeps
// one at pc. Code that no unwind information describes at all (a module
// without tables: hand-written assembly, stripped ones; or a gap in them:
// a runtime's code built into the binary, such as V8's embedded builtins,
// crt's register_tm_clones) gives nothing to check against and nothing else
// to use: the chain is followed there, under the stack checks of
// fp/frame_pointer.h. That is wrong where such code keeps no frame (a leaf:
// its caller is skipped), as it is for eu-stack's and gdb's fallbacks.
absl::StatusOr<ModuleRow> Module::FindFramePointerRow(arch::FrameAddress at) {
  const ModuleRow fp_row{fp::FramePointerRow(arch_), Source::kFramePointer,
                         Method::kFramePointer};
  const uint64_t pc = at.LookupAddress();
  if (!eh_frame_ && !debug_frame_ && !sframe_) return fp_row;
  std::optional<std::pair<uint64_t, uint64_t>> bounds = FunctionBoundsLocked(pc);
  if (!bounds.has_value()) {
    if (InCode(pc)) return fp_row;
    return absl::NotFoundError(absl::StrFormat("%s: 0x%x is in no function and no code",
                                               name_, pc));
  }
  absl::Span<const uint8_t> code = BytesAtVaddr(bounds->first);
  code = code.subspan(0, std::min<uint64_t>(code.size(),
                                            bounds->second - bounds->first));
  if (!arch::KeepsFramePointer(arch_, code, at.Rebased(bounds->first))) {
    return absl::NotFoundError(absl::StrFormat(
        "%s: the function at 0x%x keeps no frame pointer at 0x%x", name_,
        bounds->first, pc));
  }
  return fp_row;
}

absl::StatusOr<ModuleRow> Module::FindRowFrom(Source source, arch::FrameAddress at) {
  const absl::Status none = absl::NotFoundError("");
  const uint64_t pc = at.LookupAddress();
  switch (source) {
    case Source::kEhFrame:
      return eh_frame_ ? FindRowInEhFrame(pc) : none;
    case Source::kDebugFrame:
      return debug_frame_ ? FindRowInDebugFrame(pc) : none;
    case Source::kSframe:
      return sframe_ || !absl::IsNotFound(sframe_status_) ? FindRowInSframe(pc)
                                                           : none;
    case Source::kFramePointer:
      return FindFramePointerRow(at);
  }
  return none;
}

absl::StatusOr<ModuleRow> Module::FindRowUncached(arch::FrameAddress at,
                                                  const SourcePolicy& policy) {
  absl::Status first_error;  // the first error other than NotFound
  for (Source source : policy.sources()) {
    absl::StatusOr<ModuleRow> r = FindRowFrom(source, at);
    if (r.ok()) return r;
    if (!absl::IsNotFound(r.status()) && first_error.ok()) first_error = r.status();
  }
  if (!first_error.ok()) return first_error;
  // Made only now: most lookups find a row, and this text cost more than
  // the lookup.
  return absl::NotFoundError(
      absl::StrFormat("%s: no unwind information for 0x%x (sources %s)", name_,
                      at.LookupAddress(), policy.ToString()));
}

bool Module::InCode(uint64_t vaddr) const {
  // The code sections when the file names them (an executable segment
  // also holds the ELF headers and read-only data), else the PF_X segments.
  if (!code_sections_.empty()) {
    for (const auto& [addr, size] : code_sections_) {
      if (vaddr >= addr && vaddr - addr < size) return true;
    }
    return false;
  }
  for (const Segment& seg : loads_) {
    if (seg.exec && vaddr >= seg.vaddr && vaddr - seg.vaddr < seg.memsz) return true;
  }
  return false;
}

uint64_t Module::LowestLoadVaddr() const {
  uint64_t lowest = UINT64_MAX;
  for (const Segment& seg : loads_) lowest = std::min(lowest, seg.vaddr);
  return loads_.empty() ? 0 : lowest;
}

void Module::set_debug_info_loader(DebugInfoLoader loader) {
  std::lock_guard<std::mutex> lock(mu_);
  debug_loader_ = std::move(loader);
  // Rows chosen without it (the frame-pointer rule for code the file has no
  // CFI for) may come from the debug information now.
  ClearRowsLocked();
}

bool Module::WantsDebugInfoLocked(const absl::StatusOr<ModuleRow>& row,
                                  const SourcePolicy& policy) const {
  if (!debug_loader_ || debug_tried_ || own_debug_frame_ ||
      !policy.Contains(Source::kDebugFrame)) {
    return false;
  }
  if (!row.ok()) return absl::IsNotFound(row.status());
  // From a source the policy lists after debug_frame: neither the file's
  // .eh_frame nor its .debug_frame had the PC.
  return policy.After(Source::kDebugFrame).Contains(row->source);
}

void Module::LoadDebugInfo() {
  std::lock_guard<std::mutex> once(debug_load_mu_);
  DebugInfoLoader loader;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (debug_tried_) return;
    loader = debug_loader_;
  }
  absl::StatusOr<DebugInfo> info = loader();
  absl::StatusOr<std::unique_ptr<DebugElf>> debug =
      info.ok() ? DebugElf::Open(*info, machine_, elf_class_,
                                 LowestLoadVaddr(), name_)
                : absl::StatusOr<std::unique_ptr<DebugElf>>(info.status());
  std::lock_guard<std::mutex> lock(mu_);
  debug_tried_ = true;
  debug_status_ = debug.ok() ? InstallDebugElfLocked(*std::move(debug)) : debug.status();
}

absl::Status Module::AttachDebugInfo(const DebugInfo& info) {
  absl::StatusOr<std::unique_ptr<DebugElf>> debug = DebugElf::Open(
      info, machine_, elf_class_, LowestLoadVaddr(), name_);
  std::lock_guard<std::mutex> lock(mu_);
  debug_tried_ = true;
  debug_status_ = debug.ok() ? InstallDebugElfLocked(*std::move(debug)) : debug.status();
  return debug_status_;
}

absl::Status Module::InstallDebugElfLocked(std::unique_ptr<DebugElf> debug) {
  if (own_debug_frame_) {
    return absl::AlreadyExistsError(
        absl::StrFormat("%s has its own .debug_frame", name_));
  }
  debug_frame_.emplace(CfiKind::kDebugFrame, debug->debug_frame(), 0, arch_,
                       EncodingBases{}, address_size_);
  debug_delta_ = debug->delta();
  debug_elf_ = std::move(debug);
  // Rows cached so far were chosen without it (a policy listing
  // debug_frame before eh_frame would now choose differently).
  ClearRowsLocked();
  return absl::OkStatus();
}

std::optional<DebugInfo> Module::debug_info() {
  std::lock_guard<std::mutex> lock(mu_);
  if (debug_elf_ == nullptr) return std::nullopt;
  return debug_elf_->info();
}

absl::Status Module::debug_info_status() {
  std::lock_guard<std::mutex> lock(mu_);
  return debug_status_;
}

}  // namespace unwindd::unwinder

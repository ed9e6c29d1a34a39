#include "unwinder/locate/elf_file.h"

#include <elf.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "memory/scoped_fd.h"

namespace unwindd::locate {
namespace {

constexpr size_t kMaxDebugLinkName = 4096;
// The largest build-id note we believe: binutils writes 8 (xxhash), 16
// (md5, uuid) or 20 (sha1) bytes; debuginfod accepts up to 64.
constexpr size_t kMaxBuildIdBytes = 64;

bool InitLibelf() {
  static const bool ok = elf_version(EV_CURRENT) != EV_NONE;
  return ok;
}

absl::Status ElfError(absl::string_view what, absl::string_view name) {
  return absl::DataLossError(
      absl::StrFormat("%s: %s: %s", name, what, elf_errmsg(-1)));
}

// NT_GNU_BUILD_ID among the notes of `data` (ELF gABI "Note Section").
std::string BuildIdInNotes(Elf_Data* data) {
  if (data == nullptr || data->d_buf == nullptr) return "";
  const char* base = static_cast<const char*>(data->d_buf);
  size_t pos = 0;
  while (pos < data->d_size) {
    GElf_Nhdr nhdr;
    size_t name_off = 0, desc_off = 0;
    size_t next = gelf_getnote(data, pos, &nhdr, &name_off, &desc_off);
    if (next == 0 || next <= pos) break;
    if (nhdr.n_type == NT_GNU_BUILD_ID && nhdr.n_namesz == 4 &&
        std::memcmp(base + name_off, "GNU", 4) == 0 && nhdr.n_descsz > 0 &&
        nhdr.n_descsz <= kMaxBuildIdBytes) {
      return ToHex(absl::MakeConstSpan(
          reinterpret_cast<const uint8_t*>(base + desc_off), nhdr.n_descsz));
    }
    pos = next;
  }
  return "";
}

}  // namespace

std::string ToHex(absl::Span<const uint8_t> bytes) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  out.reserve(bytes.size() * 2);
  for (uint8_t b : bytes) {
    out.push_back(kDigits[b >> 4]);
    out.push_back(kDigits[b & 15]);
  }
  return out;
}

bool IsBuildIdHex(absl::string_view hex) {
  if (hex.size() < 2 || hex.size() > 2 * kMaxBuildIdBytes || hex.size() % 2 != 0) {
    return false;
  }
  for (char c : hex) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

absl::StatusOr<DebugLink> ParseDebugLink(absl::Span<const uint8_t> section,
                                         bool big_endian) {
  size_t len = 0;
  while (len < section.size() && len <= kMaxDebugLinkName && section[len] != 0) {
    ++len;
  }
  if (len == 0 || len > kMaxDebugLinkName || len >= section.size()) {
    return absl::DataLossError(".gnu_debuglink: no NUL-terminated file name");
  }
  DebugLink link;
  link.name.assign(reinterpret_cast<const char*>(section.data()), len);
  if (link.name.find('/') != std::string::npos || link.name == "." ||
      link.name == "..") {
    return absl::DataLossError(absl::StrCat(
        ".gnu_debuglink: '", absl::CHexEscape(link.name),
        "' is not a plain file name"));
  }
  // The CRC follows the NUL, at the next multiple of 4.
  size_t crc_off = (len + 1 + 3) & ~size_t{3};
  if (crc_off + 4 > section.size()) {
    return absl::DataLossError(".gnu_debuglink: too short for its CRC");
  }
  const uint8_t* p = section.data() + crc_off;
  link.crc = big_endian ? (uint32_t{p[0]} << 24 | uint32_t{p[1]} << 16 |
                           uint32_t{p[2]} << 8 | p[3])
                        : (uint32_t{p[3]} << 24 | uint32_t{p[2]} << 16 |
                           uint32_t{p[1]} << 8 | p[0]);
  return link;
}

absl::StatusOr<ElfFile> ElfFile::Open(const std::string& path) {
  if (!InitLibelf()) return absl::InternalError("libelf version mismatch");
  memory::ScopedFd fd = memory::OpenNamedFile(path.c_str());
  if (!fd.valid()) {
    int err = errno;
    std::string msg = absl::StrFormat("cannot open %s: %s", path, strerror(err));
    if (err == ENOENT || err == ENOTDIR || err == ELOOP) {
      return absl::NotFoundError(msg);
    }
    if (err == EACCES || err == EPERM) return absl::PermissionDeniedError(msg);
    return absl::UnavailableError(msg);
  }
  struct stat st;
  if (fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode)) {
    return absl::FailedPreconditionError(
        absl::StrFormat("%s is not a regular file", path));
  }
  ElfFile f;
  f.name_ = path;
  // Mapped by us and registered with the SIGBUS guard before libelf reads
  // it: the file may be truncated while we read it (memory/file_mapping.h).
  absl::StatusOr<std::unique_ptr<memory::FileMapping>> mapping =
      memory::FileMapping::Map(fd.get(), static_cast<uint64_t>(st.st_size), path);
  if (!mapping.ok()) return mapping.status();
  f.mapping_ = *std::move(mapping);
  f.fd_ = fd.release();
  if (f.mapping_->bytes().size() < EI_NIDENT) {
    return absl::DataLossError(absl::StrFormat("%s is not an ELF file", path));
  }
  f.elf_ = elf_memory(reinterpret_cast<char*>(f.mapping_->mutable_data()),
                      f.mapping_->bytes().size());
  if (f.elf_ == nullptr) return ElfError("cannot read ELF", path);
  if (elf_kind(f.elf_) != ELF_K_ELF) {
    return absl::DataLossError(absl::StrFormat("%s is not an ELF file", path));
  }
  return f;
}

absl::StatusOr<ElfFile> ElfFile::FromImage(
    std::shared_ptr<const std::vector<uint8_t>> image, std::string name) {
  if (!InitLibelf()) return absl::InternalError("libelf version mismatch");
  if (image == nullptr || image->empty()) {
    return absl::DataLossError(absl::StrFormat("%s: empty image", name));
  }
  ElfFile f;
  f.name_ = std::move(name);
  f.image_ = std::move(image);
  // libelf only reads through the pointer (ELF_C_READ semantics).
  f.elf_ = elf_memory(const_cast<char*>(
                          reinterpret_cast<const char*>(f.image_->data())),
                      f.image_->size());
  if (f.elf_ == nullptr) return ElfError("cannot read ELF image", f.name_);
  if (elf_kind(f.elf_) != ELF_K_ELF) {
    return absl::DataLossError(absl::StrFormat("%s is not an ELF image", f.name_));
  }
  return f;
}

ElfFile::ElfFile(ElfFile&& other) noexcept { *this = std::move(other); }

ElfFile& ElfFile::operator=(ElfFile&& other) noexcept {
  if (this != &other) {
    Reset();
    name_ = std::move(other.name_);
    elf_ = std::exchange(other.elf_, nullptr);
    fd_ = std::exchange(other.fd_, -1);
    image_ = std::move(other.image_);
    mapping_ = std::move(other.mapping_);
  }
  return *this;
}

ElfFile::~ElfFile() { Reset(); }

void ElfFile::Reset() {
  if (elf_ != nullptr) elf_end(elf_);
  if (fd_ >= 0) close(fd_);
  elf_ = nullptr;
  fd_ = -1;
  image_.reset();
  mapping_.reset();  // after elf_end: libelf points into it
}

Elf_Scn* ElfFile::FindSection(absl::string_view name) const {
  size_t shstrndx = 0;
  if (elf_getshdrstrndx(elf_, &shstrndx) != 0) return nullptr;
  for (Elf_Scn* scn = elf_nextscn(elf_, nullptr); scn != nullptr;
       scn = elf_nextscn(elf_, scn)) {
    GElf_Shdr shdr;
    if (gelf_getshdr(scn, &shdr) == nullptr) continue;
    const char* n = elf_strptr(elf_, shstrndx, shdr.sh_name);
    if (n != nullptr && name == n) return scn;
  }
  return nullptr;
}

absl::Span<const uint8_t> ElfFile::RawSectionBytes(absl::string_view name) const {
  Elf_Scn* scn = FindSection(name);
  if (scn == nullptr) return {};
  GElf_Shdr shdr;
  if (gelf_getshdr(scn, &shdr) == nullptr || shdr.sh_type == SHT_NOBITS) return {};
  Elf_Data* d = elf_rawdata(scn, nullptr);
  if (d == nullptr || d->d_buf == nullptr) return {};
  return absl::MakeConstSpan(static_cast<const uint8_t*>(d->d_buf), d->d_size);
}

absl::StatusOr<ElfFacts> ElfFile::Facts() const {
  ElfFacts facts;
  GElf_Ehdr ehdr;
  if (gelf_getehdr(elf_, &ehdr) == nullptr) return ElfError("bad ELF header", name_);
  facts.machine = ehdr.e_machine;
  facts.elf_class = ehdr.e_ident[EI_CLASS];
  facts.type = ehdr.e_type;
  const bool big_endian = ehdr.e_ident[EI_DATA] == ELFDATA2MSB;

  size_t shstrndx = 0;
  bool have_sections = elf_getshdrstrndx(elf_, &shstrndx) == 0;
  for (Elf_Scn* scn = have_sections ? elf_nextscn(elf_, nullptr) : nullptr;
       scn != nullptr; scn = elf_nextscn(elf_, scn)) {
    GElf_Shdr shdr;
    if (gelf_getshdr(scn, &shdr) == nullptr) continue;
    const char* n = elf_strptr(elf_, shstrndx, shdr.sh_name);
    if (n == nullptr) continue;
    absl::string_view sn(n);
    const bool has_bytes = shdr.sh_type != SHT_NOBITS && shdr.sh_size > 0;
    if (shdr.sh_type == SHT_NOTE && has_bytes && facts.build_id.empty()) {
      facts.build_id = BuildIdInNotes(elf_getdata(scn, nullptr));
    } else if (sn == ".gnu_debuglink" && has_bytes && !facts.debuglink) {
      Elf_Data* d = elf_rawdata(scn, nullptr);
      if (d != nullptr && d->d_buf != nullptr) {
        absl::StatusOr<DebugLink> link = ParseDebugLink(
            absl::MakeConstSpan(static_cast<const uint8_t*>(d->d_buf), d->d_size),
            big_endian);
        // A malformed link is as good as none: nothing to look for.
        if (link.ok()) facts.debuglink = *std::move(link);
      }
    } else if (sn == ".gnu_debugdata") {
      facts.has_gnu_debugdata |= has_bytes;
    } else if (sn == ".eh_frame") {
      facts.has_eh_frame |= has_bytes;
    } else if (sn == ".debug_frame" || sn == ".zdebug_frame") {
      facts.has_debug_frame |= has_bytes;
    } else if (sn == ".symtab") {
      facts.has_symtab |= has_bytes;
    }
  }
  // A file without section headers still has its program headers.
  if (facts.build_id.empty()) {
    size_t phnum = 0;
    if (elf_getphdrnum(elf_, &phnum) == 0) {
      for (size_t i = 0; i < phnum && facts.build_id.empty(); ++i) {
        GElf_Phdr ph;
        if (gelf_getphdr(elf_, static_cast<int>(i), &ph) == nullptr ||
            ph.p_type != PT_NOTE || ph.p_filesz == 0) {
          continue;
        }
        facts.build_id = BuildIdInNotes(elf_getdata_rawchunk(
            elf_, static_cast<int64_t>(ph.p_offset), ph.p_filesz,
            ph.p_align == 8 ? ELF_T_NHDR8 : ELF_T_NHDR));
      }
    }
  }
  if (changed()) {
    return absl::DataLossError(absl::StrFormat("%s changed while it was read", name_));
  }
  return facts;
}

}  // namespace unwindd::locate

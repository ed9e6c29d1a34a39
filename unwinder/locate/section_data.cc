#include "unwinder/locate/section_data.h"

#include <elf.h>
#include <gelf.h>
#include <libelf.h>
#include <zstd.h>

#include <cstring>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace unwindd::locate {
namespace {

// gABI ch_type for Zstandard; glibc 2.36's <elf.h> does not define it yet.
constexpr uint32_t kElfCompressZstd = 2;

std::string SectionName(Elf* elf, const GElf_Shdr& shdr) {
  size_t shstrndx = 0;
  if (elf_getshdrstrndx(elf, &shstrndx) != 0) return "?";
  const char* n = elf_strptr(elf, shstrndx, shdr.sh_name);
  return n == nullptr ? "?" : n;
}

absl::StatusOr<SectionData> Plain(Elf_Scn* scn, const GElf_Shdr& shdr,
                                  Compression c, absl::string_view name) {
  Elf_Data* d = elf_getdata(scn, nullptr);
  if (d == nullptr || (d->d_buf == nullptr && d->d_size != 0)) {
    return absl::DataLossError(
        absl::StrFormat("%s: unreadable contents: %s", name, elf_errmsg(-1)));
  }
  return SectionData{
      absl::MakeConstSpan(static_cast<const uint8_t*>(d->d_buf), d->d_size), c,
      shdr.sh_addr};
}

// ELFCOMPRESS_ZSTD by hand when libelf does not know it: the payload after
// the Chdr is one or more zstd frames that must decompress to exactly
// ch_size bytes.
absl::StatusOr<SectionData> Zstd(Elf* elf, Elf_Scn* scn, const GElf_Shdr& shdr,
                                 const GElf_Chdr& chdr, absl::string_view name,
                                 std::vector<uint8_t>* storage) {
  Elf_Data* d = elf_getdata(scn, nullptr);
  const size_t hsize = gelf_getclass(elf) == ELFCLASS32 ? sizeof(Elf32_Chdr)
                                                        : sizeof(Elf64_Chdr);
  if (d == nullptr || d->d_buf == nullptr || d->d_size < hsize) {
    return absl::DataLossError(absl::StrFormat("%s: truncated zstd section", name));
  }
  storage->assign(chdr.ch_size, 0);
  size_t n = ZSTD_decompress(storage->data(), storage->size(),
                             static_cast<const char*>(d->d_buf) + hsize,
                             d->d_size - hsize);
  if (ZSTD_isError(n) || n != chdr.ch_size) {
    std::string why = ZSTD_isError(n)
                          ? ZSTD_getErrorName(n)
                          : absl::StrFormat("%u bytes, header says %u", n,
                                            chdr.ch_size);
    storage->clear();
    return absl::DataLossError(
        absl::StrFormat("%s: zstd payload does not decompress: %s", name, why));
  }
  return SectionData{absl::MakeConstSpan(*storage), Compression::kZstd,
                     shdr.sh_addr};
}

}  // namespace

absl::string_view CompressionName(Compression c) {
  switch (c) {
    case Compression::kNone:
      return "none";
    case Compression::kZlib:
      return "zlib";
    case Compression::kZstd:
      return "zstd";
    case Compression::kZlibGnu:
      return "zlib-gnu";
  }
  return "unknown";
}

Elf_Scn* FindDebugSection(Elf* elf, absl::string_view name) {
  size_t shstrndx = 0;
  if (elf_getshdrstrndx(elf, &shstrndx) != 0) return nullptr;
  std::string legacy;
  if (absl::StartsWith(name, ".debug_")) legacy = absl::StrCat(".z", name.substr(1));
  Elf_Scn* found_legacy = nullptr;
  for (Elf_Scn* scn = elf_nextscn(elf, nullptr); scn != nullptr;
       scn = elf_nextscn(elf, scn)) {
    GElf_Shdr shdr;
    if (gelf_getshdr(scn, &shdr) == nullptr) continue;
    const char* n = elf_strptr(elf, shstrndx, shdr.sh_name);
    if (n == nullptr) continue;
    if (name == n) return scn;
    if (!legacy.empty() && legacy == n && found_legacy == nullptr) found_legacy = scn;
  }
  return found_legacy;
}

absl::StatusOr<SectionData> ReadSectionData(Elf* elf, Elf_Scn* scn,
                                            uint64_t max_bytes,
                                            std::vector<uint8_t>* storage) {
  if (scn == nullptr) return absl::NotFoundError("no such section");
  GElf_Shdr shdr;
  if (gelf_getshdr(scn, &shdr) == nullptr) {
    return absl::DataLossError(absl::StrCat("bad section header: ", elf_errmsg(-1)));
  }
  const std::string name = SectionName(elf, shdr);
  if (shdr.sh_type == SHT_NOBITS) return SectionData{{}, Compression::kNone, shdr.sh_addr};

  if (shdr.sh_flags & SHF_COMPRESSED) {
    GElf_Chdr chdr;
    if (gelf_getchdr(scn, &chdr) == nullptr) {
      return absl::DataLossError(absl::StrFormat(
          "%s: bad compression header: %s", name, elf_errmsg(-1)));
    }
    if (chdr.ch_size > max_bytes) {
      return absl::ResourceExhaustedError(absl::StrFormat(
          "%s: decompresses to %u bytes, more than the limit of %u", name,
          chdr.ch_size, max_bytes));
    }
    if (elf_compress(scn, 0, 0) >= 0) {
      return Plain(scn, shdr,
                   chdr.ch_type == kElfCompressZstd ? Compression::kZstd
                                                    : Compression::kZlib,
                   name);
    }
    // libelf 0.188 only knows ELFCOMPRESS_ZLIB (see the header comment).
    if (chdr.ch_type == kElfCompressZstd) {
      return Zstd(elf, scn, shdr, chdr, name, storage);
    }
    if (chdr.ch_type != ELFCOMPRESS_ZLIB) {
      return absl::UnimplementedError(absl::StrFormat(
          "%s: compression type %u is not supported", name, chdr.ch_type));
    }
    return absl::DataLossError(
        absl::StrFormat("%s: cannot decompress: %s", name, elf_errmsg(-1)));
  }

  if (absl::StartsWith(name, ".zdebug")) {
    // "ZLIB" + the uncompressed size, 8 bytes big-endian (binutils'
    // bfd_is_section_compressed_info); elf_compress_gnu checks the same
    // but would allocate whatever size the file claims.
    Elf_Data* raw = elf_rawdata(scn, nullptr);
    if (raw == nullptr || raw->d_buf == nullptr || raw->d_size < 12 ||
        std::memcmp(raw->d_buf, "ZLIB", 4) != 0) {
      return absl::DataLossError(
          absl::StrFormat("%s: no ZLIB header", name));
    }
    const uint8_t* p = static_cast<const uint8_t*>(raw->d_buf) + 4;
    uint64_t size = 0;
    for (int i = 0; i < 8; ++i) size = size << 8 | p[i];
    if (size > max_bytes) {
      return absl::ResourceExhaustedError(absl::StrFormat(
          "%s: decompresses to %u bytes, more than the limit of %u", name, size,
          max_bytes));
    }
    if (elf_compress_gnu(scn, 0, 0) < 0) {
      return absl::DataLossError(
          absl::StrFormat("%s: cannot decompress: %s", name, elf_errmsg(-1)));
    }
    return Plain(scn, shdr, Compression::kZlibGnu, name);
  }
  return Plain(scn, shdr, Compression::kNone, name);
}

}  // namespace unwindd::locate

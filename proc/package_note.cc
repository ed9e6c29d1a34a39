#include "proc/package_note.h"

#include <elf.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <unistd.h>

#include <cstring>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "arch/le_bytes.h"
#include "memory/scoped_fd.h"
#include "nlohmann/json.hpp"

namespace unwindd::proc {
namespace {

// Deeper nesting than any package note has; nlohmann's parser is
// iterative, but the callback below rejects deeper input before it is
// built.
constexpr int kMaxDepth = 16;
// PT_NOTE bytes read from memory per segment.
constexpr uint64_t kMaxNoteSegmentBytes = 1 << 20;

size_t Align4(size_t n) { return (n + 3) & ~size_t{3}; }

}  // namespace

const absl::string_view kPackageNoteKeys[8] = {
    "type", "os", "osVersion", "name", "version", "architecture", "osCpe",
    "debugInfoUrl"};

std::string PackageNote::Get(absl::string_view key) const {
  for (const auto& [k, v] : fields) {
    if (k == key) return v;
  }
  return "";
}

absl::StatusOr<PackageNote> ParsePackageNote(absl::string_view json) {
  // The descriptor is zero-terminated and may be zero-padded.
  const size_t nul = json.find('\0');
  if (nul != absl::string_view::npos) json = json.substr(0, nul);
  if (json.size() > kMaxPackageNoteBytes) {
    return absl::DataLossError(absl::StrFormat(
        "package note: %d bytes of JSON (at most %d)", json.size(),
        kMaxPackageNoteBytes));
  }
  bool too_deep = false;
  nlohmann::ordered_json::parser_callback_t bound =
      [&](int depth, nlohmann::ordered_json::parse_event_t, nlohmann::ordered_json&) {
        if (depth > kMaxDepth) too_deep = true;
        return !too_deep;
      };
  nlohmann::ordered_json v = nlohmann::ordered_json::parse(json.begin(), json.end(), bound,
                                           /*allow_exceptions=*/false);
  if (too_deep) return absl::DataLossError("package note: JSON nested too deeply");
  if (v.is_discarded() || !v.is_object()) {
    return absl::DataLossError("package note: not a JSON object");
  }
  PackageNote note;
  for (auto it = v.begin(); it != v.end(); ++it) {
    std::string value = it->is_string()
                            ? it->get<std::string>()
                            : it->dump(-1, ' ', false,
                                       nlohmann::ordered_json::error_handler_t::replace);
    note.fields.emplace_back(it.key(), std::move(value));
  }
  return note;
}

absl::StatusOr<PackageNote> FindPackageNote(absl::Span<const uint8_t> notes) {
  size_t at = 0;
  // ELF gABI "Note Section": namesz, descsz, type, then the name and the
  // descriptor, each padded to 4 bytes (8-byte alignment only changes the
  // padding of GNU property notes, which come with their own PT_NOTE).
  while (notes.size() - at >= 12) {
    const uint32_t namesz = arch::LoadLe32(notes, at);
    const uint32_t descsz = arch::LoadLe32(notes, at + 4);
    const uint32_t type = arch::LoadLe32(notes, at + 8);
    at += 12;
    const size_t name_span = Align4(namesz);
    if (name_span > notes.size() - at) {
      return absl::DataLossError("package note: a note's name runs past the end");
    }
    const absl::string_view name(reinterpret_cast<const char*>(notes.data() + at),
                                 namesz);
    at += name_span;
    const size_t desc_span = Align4(descsz);
    if (desc_span > notes.size() - at) {
      return absl::DataLossError("package note: a note's descriptor runs past the end");
    }
    if (type == kPackageNoteType && namesz == kPackageNoteOwner.size() + 1 &&
        name.substr(0, kPackageNoteOwner.size()) == kPackageNoteOwner &&
        name.back() == '\0') {
      return ParsePackageNote(absl::string_view(
          reinterpret_cast<const char*>(notes.data() + at), descsz));
    }
    at += desc_span;
  }
  return absl::NotFoundError("no package note");
}

absl::StatusOr<PackageNote> FindPackageNoteInAreas(
    absl::Span<const absl::Span<const uint8_t>> areas) {
  for (absl::Span<const uint8_t> area : areas) {
    absl::StatusOr<PackageNote> p = FindPackageNote(area);
    if (!absl::IsNotFound(p.status())) return p;
  }
  return absl::NotFoundError("no package note");
}

absl::StatusOr<PackageNote> ReadPackageNoteFromFile(const std::string& path) {
  memory::ScopedFd fd = memory::OpenNamedFile(path.c_str());
  if (!fd.valid()) return absl::ErrnoToStatus(errno, absl::StrCat("open ", path));
  elf_version(EV_CURRENT);
  Elf* elf = elf_begin(fd.get(), ELF_C_READ_MMAP, nullptr);
  if (elf == nullptr) {
    return absl::DataLossError(absl::StrCat(path, ": ", elf_errmsg(-1)));
  }
  // The note areas as FindPackageNoteInAreas wants them: sections, or
  // segments when there is no note section.
  std::vector<absl::Span<const uint8_t>> areas;
  auto add = [&areas](const Elf_Data* data) {
    if (data != nullptr && data->d_buf != nullptr) {
      areas.push_back(absl::MakeConstSpan(static_cast<const uint8_t*>(data->d_buf),
                                          data->d_size));
    }
  };
  size_t shstrndx = 0;
  bool have_sections = false;
  if (elf_getshdrstrndx(elf, &shstrndx) == 0) {
    for (Elf_Scn* scn = elf_nextscn(elf, nullptr); scn != nullptr;
         scn = elf_nextscn(elf, scn)) {
      GElf_Shdr shdr;
      if (gelf_getshdr(scn, &shdr) == nullptr || shdr.sh_type != SHT_NOTE) continue;
      have_sections = true;
      add(elf_getdata(scn, nullptr));
    }
  }
  size_t phnum = 0;
  if (!have_sections && elf_getphdrnum(elf, &phnum) == 0) {
    for (size_t i = 0; i < phnum; ++i) {
      GElf_Phdr ph;
      if (gelf_getphdr(elf, static_cast<int>(i), &ph) == nullptr || ph.p_type != PT_NOTE) {
        continue;
      }
      add(elf_getdata_rawchunk(elf, ph.p_offset, ph.p_filesz, ELF_T_BYTE));
    }
  }
  absl::StatusOr<PackageNote> found = FindPackageNoteInAreas(areas);
  elf_end(elf);  // the areas point into it
  if (absl::IsNotFound(found.status())) {
    return absl::NotFoundError(absl::StrCat(path, " has no package note"));
  }
  return found;
}

absl::StatusOr<PackageNote> ReadPackageNoteFromImage(memory::Memory& mem,
                                                     const ElfImage& image,
                                                     ElfView view) {
  for (const ElfPhdr& ph : image.phdrs) {
    if (ph.type != PT_NOTE || ph.filesz == 0) continue;
    if (ph.filesz > kMaxNoteSegmentBytes) continue;
    const uint64_t at = view == ElfView::kLoaded ? ph.vaddr + image.load_bias
                                                 : image.base + ph.offset;
    std::vector<uint8_t> bytes(ph.filesz);
    if (!mem.ReadFully(at, absl::MakeSpan(bytes)).ok()) continue;
    absl::StatusOr<PackageNote> p = FindPackageNote(bytes);
    if (!absl::IsNotFound(p.status())) return p;
  }
  return absl::NotFoundError("no package note in the image");
}

}  // namespace unwindd::proc

#include "unwinder/debug_info.h"

#include <elf.h>
#include <gelf.h>
#include <libelf.h>

#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace unwindd::unwinder {
namespace {

// The lowest p_vaddr of a PT_LOAD in `elf`; nullopt if it has none.
std::optional<uint64_t> LowestLoadVaddr(Elf* elf) {
  size_t phnum = 0;
  if (elf_getphdrnum(elf, &phnum) != 0) return std::nullopt;
  std::optional<uint64_t> lowest;
  for (size_t i = 0; i < phnum; ++i) {
    GElf_Phdr ph;
    if (gelf_getphdr(elf, static_cast<int>(i), &ph) == nullptr || ph.p_type != PT_LOAD) {
      continue;
    }
    if (!lowest || ph.p_vaddr < *lowest) lowest = ph.p_vaddr;
  }
  return lowest;
}

}  // namespace

DebugInfoLoader MakeDebugInfoLoader(std::string path, std::string recorded,
                                    const locate::LocateOptions& options) {
  return [path = std::move(path), recorded = std::move(recorded),
          options]() -> absl::StatusOr<DebugInfo> {
    absl::StatusOr<locate::ElfFile> main = locate::ElfFile::Open(path);
    if (!main.ok()) return main.status();
    absl::StatusOr<locate::DebugFileQuery> q = locate::DebugFileQueryFor(
        *main, recorded, locate::Want::kCfi, /*fetch=*/options.debuginfod != nullptr);
    if (!q.ok()) return q.status();
    locate::LocateResult r = locate::LocateDebugFile(*q, options);
    if (!r.found.has_value()) {
      return absl::NotFoundError(absl::StrCat("debug information ", r.Summary()));
    }
    DebugInfo d;
    d.path = r.found->path;
    d.image = r.found->image;
    d.kind = std::string(locate::KindName(r.found->kind));
    d.origin = std::string(locate::OriginName(r.found->origin));
    d.fetched = r.found->fetched;
    d.downloaded = r.found->downloaded;
    d.took = r.took;
    d.elf = r.found->elf;
    return d;
  };
}

absl::StatusOr<std::unique_ptr<DebugElf>> DebugElf::Open(
    const DebugInfo& info, uint16_t machine, uint8_t elf_class,
    uint64_t file_lowest_vaddr, const std::string& module_name) {
  std::unique_ptr<DebugElf> d(new DebugElf());
  d->info_ = info;
  d->elf_ = info.elf;
  if (d->elf_ == nullptr) {
    absl::StatusOr<locate::ElfFile> f =
        info.image != nullptr
            ? locate::ElfFile::FromImage(info.image,
                                         absl::StrCat(module_name, "[.gnu_debugdata]"))
            : locate::ElfFile::Open(info.path);
    if (!f.ok()) return f.status();
    d->elf_ = std::make_shared<locate::ElfFile>(*std::move(f));
  }
  Elf* elf = d->elf_->elf();
  const std::string& name = d->elf_->name();
  GElf_Ehdr ehdr;
  if (gelf_getehdr(elf, &ehdr) == nullptr) {
    return absl::DataLossError(absl::StrFormat("%s: bad ELF header", name));
  }
  if (ehdr.e_machine != machine || ehdr.e_ident[EI_CLASS] != elf_class) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "%s is for machine %d class %d, %s for %d class %d", name, ehdr.e_machine,
        ehdr.e_ident[EI_CLASS], module_name, machine, elf_class));
  }
  if (std::optional<uint64_t> low = LowestLoadVaddr(elf)) {
    d->delta_ = static_cast<int64_t>(*low - file_lowest_vaddr);
  }
  Elf_Scn* scn = locate::FindDebugSection(elf, ".debug_frame");
  if (scn == nullptr) {
    return absl::NotFoundError(absl::StrFormat("%s has no .debug_frame", name));
  }
  absl::StatusOr<locate::SectionData> data = locate::ReadSectionData(
      elf, scn, locate::kDefaultMaxSectionBytes, &d->storage_);
  if (!data.ok()) {
    return absl::Status(data.status().code(),
                        absl::StrCat(name, ": ", data.status().message()));
  }
  if (data->bytes.empty()) {
    return absl::NotFoundError(absl::StrFormat("%s: .debug_frame is empty", name));
  }
  d->debug_frame_ = data->bytes;
  d->compression_ = data->compression;
  return d;
}

}  // namespace unwindd::unwinder

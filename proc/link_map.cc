#include "proc/link_map.h"

#include <elf.h>

#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/strings/str_format.h"

namespace unwindd::proc {

absl::StatusOr<uint64_t> FindRDebug(memory::Memory& mem, const ElfImage& exe) {
  absl::StatusOr<std::vector<std::pair<int64_t, uint64_t>>> dyn =
      ReadDynamic(mem, exe);
  if (!dyn.ok()) return dyn.status();
  for (const auto& [tag, value] : *dyn) {
    if (tag != DT_DEBUG) continue;
    if (value == 0) {
      return absl::NotFoundError(
          "DT_DEBUG is 0: the dynamic linker had not run (or is not glibc's)");
    }
    return value;
  }
  return absl::NotFoundError("the executable has no DT_DEBUG (static?)");
}

absl::StatusOr<std::vector<LinkMapEntry>> ReadLinkMap(memory::Memory& mem,
                                                      uint64_t r_debug,
                                                      int word_size) {
  const uint64_t w = static_cast<uint64_t>(word_size);
  // struct r_debug: int r_version, then (word-aligned) struct link_map *r_map.
  absl::StatusOr<int32_t> version = [&]() -> absl::StatusOr<int32_t> {
    absl::StatusOr<uint32_t> v = mem.ReadU32(r_debug);
    if (!v.ok()) return v.status();
    return static_cast<int32_t>(*v);
  }();
  if (!version.ok()) return version.status();
  if (*version < 1 || *version > 2) {
    return absl::DataLossError(
        absl::StrFormat("r_debug at 0x%x has version %d (glibc writes 1 or 2)",
                        r_debug, *version));
  }
  absl::StatusOr<uint64_t> next = mem.ReadWord(r_debug + w, word_size);
  if (!next.ok()) return next.status();

  std::vector<LinkMapEntry> out;
  absl::flat_hash_set<uint64_t> seen;
  // struct link_map: l_addr, l_name, l_ld, l_next, l_prev (all words).
  while (*next != 0) {
    const uint64_t lm = *next;
    if (!seen.insert(lm).second) {
      return absl::DataLossError(
          absl::StrFormat("link_map list loops back to 0x%x", lm));
    }
    if (out.size() >= kMaxLinkMapEntries) {
      return absl::DataLossError(absl::StrFormat(
          "link_map list is longer than %d entries", kMaxLinkMapEntries));
    }
    absl::StatusOr<uint64_t> addr = mem.ReadWord(lm, word_size);
    absl::StatusOr<uint64_t> name_ptr = mem.ReadWord(lm + w, word_size);
    absl::StatusOr<uint64_t> ld = mem.ReadWord(lm + 2 * w, word_size);
    next = mem.ReadWord(lm + 3 * w, word_size);
    if (!addr.ok() || !name_ptr.ok() || !ld.ok() || !next.ok()) break;
    LinkMapEntry e;
    e.l_addr = *addr;
    e.l_ld = *ld;
    if (*name_ptr != 0) {
      absl::StatusOr<std::string> name =
          ReadCString(mem, *name_ptr, kMaxLinkMapName);
      if (name.ok()) e.name = *std::move(name);
    }
    out.push_back(std::move(e));
  }
  return out;
}

}  // namespace unwindd::proc

#include "unwinder/go_stack_switch.h"

#include <gelf.h>
#include <libelf.h>

#include <algorithm>
#include <array>

namespace unwindd::unwinder {
namespace {

// Go's assembly functions that switch stacks (runtime/asm_*.s): each
// saves one stack's SP and loads another's. runtime.systemstack_switch is
// the return address a goroutine stack shows while systemstack runs on g0.
constexpr std::array<absl::string_view, 9> kSwitches = {
    "runtime.mcall",       "runtime.morestack", "runtime.morestack_noctxt",
    "runtime.systemstack", "runtime.systemstack_switch", "runtime.gogo",
    "runtime.asmcgocall",  "runtime.asmcgocall_no_g", "runtime.cgocallback",
};

// A Go binary's symbol table holds ~10^5 symbols; what is read of it is
// bounded all the same for a hostile file.
constexpr size_t kMaxSymbols = size_t{1} << 22;

// Adds the switches the symbol table `scn` defines; false if it has none.
bool ScanSymbols(Elf* elf, Elf_Scn* scn, const GElf_Shdr& shdr,
                 std::vector<GoStackSwitches::Range>* out) {
  Elf_Data* data = elf_getdata(scn, nullptr);
  if (data == nullptr || shdr.sh_entsize == 0) return false;
  const size_t count = std::min<size_t>(shdr.sh_size / shdr.sh_entsize, kMaxSymbols);
  for (size_t i = 0; i < count; ++i) {
    GElf_Sym sym;
    if (gelf_getsym(data, static_cast<int>(i), &sym) == nullptr) break;
    if (GELF_ST_TYPE(sym.st_info) != STT_FUNC || sym.st_size == 0) continue;
    const char* n = elf_strptr(elf, shdr.sh_link, sym.st_name);
    if (n == nullptr || n[0] != 'r') continue;  // "runtime."
    const absl::string_view name(n);
    for (absl::string_view s : kSwitches) {
      if (name == s && sym.st_value + sym.st_size > sym.st_value) {
        out->push_back({sym.st_value, sym.st_value + sym.st_size, s});
        break;
      }
    }
  }
  return !out->empty();
}

}  // namespace

bool IsGoSection(absl::string_view name) {
  return name == ".gopclntab" || name == ".go.buildinfo";
}

bool IsGoStackSwitch(absl::string_view symbol) {
  return std::find(kSwitches.begin(), kSwitches.end(), symbol) != kSwitches.end();
}

absl::string_view GoStackSwitches::At(uint64_t vaddr) const {
  auto it = std::upper_bound(ranges_.begin(), ranges_.end(), vaddr,
                             [](uint64_t v, const Range& r) { return v < r.start; });
  if (it == ranges_.begin()) return {};
  --it;
  return vaddr < it->end ? it->name : absl::string_view();
}

GoStackSwitches FindGoStackSwitches(Elf* elf) {
  GoStackSwitches out;
  if (elf == nullptr) return out;
  for (Elf64_Word type : {SHT_SYMTAB, SHT_DYNSYM}) {
    for (Elf_Scn* scn = elf_nextscn(elf, nullptr); scn != nullptr;
         scn = elf_nextscn(elf, scn)) {
      GElf_Shdr shdr;
      if (gelf_getshdr(scn, &shdr) == nullptr || shdr.sh_type != type) continue;
      if (ScanSymbols(elf, scn, shdr, &out.ranges_)) break;
    }
    if (!out.ranges_.empty()) break;
  }
  std::sort(out.ranges_.begin(), out.ranges_.end(),
            [](const GoStackSwitches::Range& a, const GoStackSwitches::Range& b) {
              return a.start < b.start;
            });
  return out;
}

}  // namespace unwindd::unwinder

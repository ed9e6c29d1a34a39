// libFuzzer target: an .sframe section (SFrame v1-v3, either byte order):
// header, FDE index or sort check, every FDE and its FREs, each FRE's Row,
// and lookups of PCs — what Module and `check-sframe` ask of it.
//
// Input layout (tools/fuzz/fuzz_input.h; missing bytes are zeros):
//   u64 vaddr     the section's sh_addr (file address space)
//   u8  npcs      (at most 8) then npcs s32 offsets of PCs from vaddr
//   ... the section's bytes
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "tools/fuzz/fuzz_input.h"
#include "unwinder/sframe/section.h"

namespace unwindd::unwinder::sframe {
namespace {

constexpr int kMaxPcs = 8;
// FDEs and FREs walked per input: enough for every seed, small enough that
// one input stays far below libFuzzer's per-input timeout.
constexpr uint32_t kMaxFdesWalked = 64;
constexpr size_t kMaxFresWalked = 64;

void Run(const uint8_t* data, size_t size) {
  fuzz::FuzzInput in(data, size);
  const uint64_t vaddr = in.U64();
  std::vector<uint64_t> pcs;
  const int npcs = in.U8() % (kMaxPcs + 1);
  for (int i = 0; i < npcs; ++i) {
    pcs.push_back(vaddr + static_cast<int64_t>(static_cast<int32_t>(in.U32())));
  }
  absl::StatusOr<std::unique_ptr<SframeSection>> s =
      SframeSection::Parse(in.Rest(), vaddr);
  if (!s.ok()) return;
  const SframeSection& section = **s;

  for (uint32_t i = 0; i < std::min(section.num_fdes(), kMaxFdesWalked); ++i) {
    absl::StatusOr<Fde> fde = section.GetFde(i);
    if (!fde.ok()) continue;
    absl::StatusOr<std::vector<Fre>> fres = section.GetFres(*fde);
    if (!fres.ok()) continue;
    for (size_t j = 0; j < std::min(fres->size(), kMaxFresWalked); ++j) {
      const Fre& fre = (*fres)[j];
      const uint64_t lo = fde->func_start + fre.start;
      section.RowFor(FreMatch{*fde, fre, lo, lo + 1}).IgnoreError();
    }
    section.FindRow(fde->func_start).IgnoreError();
    if (fde->func_size > 0) section.FindRow(fde->func_end() - 1).IgnoreError();
  }
  for (uint64_t pc : pcs) section.FindRow(pc).IgnoreError();
}

}  // namespace
}  // namespace unwindd::unwinder::sframe

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  unwindd::unwinder::sframe::Run(data, size);
  return 0;
}

// libFuzzer target: CIE/FDE parsing of .eh_frame and .debug_frame, the FDE
// index, the .eh_frame_hdr binary search, and the CFA VM on what they
// find — the path Module takes from a PC to a Row (unwinder/module.cc).
//
// Input layout (tools/fuzz/fuzz_input.h; missing bytes are zeros):
//   u8  flags       bit 0: .debug_frame (else .eh_frame); bits 1-2: arch
//   u64 vaddr       the section's sh_addr (file address space)
//   u64 hdr_vaddr   .eh_frame_hdr's sh_addr
//   u64 text, data  DW_EH_PE_textrel / datarel bases
//   u8  npcs        (at most 8) then npcs u64 PCs to look up
//   u16 hdr_len     then hdr_len bytes of .eh_frame_hdr
//   ... the section's bytes
//
// bazel build --config=fuzz //unwinder/cfi:cfi_section_fuzzer
// bazel-bin/unwinder/cfi/cfi_section_fuzzer unwinder/cfi/testdata/fuzz/cfi_section_fuzzer
#include <cstddef>
#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "arch/arch.h"
#include "tools/fuzz/fuzz_input.h"
#include "unwinder/cfi/cfa_vm.h"
#include "unwinder/cfi/cfi_section.h"
#include "unwinder/cfi/eh_frame_hdr.h"

namespace unwindd::unwinder {
namespace {

constexpr int kMaxPcs = 8;

arch::Arch ArchFrom(uint8_t bits) {
  switch (bits & 3) {
    case 1:
      return arch::Arch::kAArch64;
    case 2:
      return arch::Arch::kX86;
    default:
      return arch::Arch::kX86_64;
  }
}

// The row for `pc` from `fde`, as Module computes it once it has the FDE.
void RowAt(const absl::StatusOr<Fde>& fde, uint64_t pc, arch::Arch arch) {
  if (!fde.ok()) return;
  if (pc >= fde->pc_begin && pc < fde->pc_end) {
    ComputeRow(fde->cie, *fde, pc, arch).IgnoreError();
  }
  // The first and last PC of the function: the CIE's initial row, and the
  // whole program run.
  if (fde->pc_end > fde->pc_begin) {
    ComputeRow(fde->cie, *fde, fde->pc_begin, arch).IgnoreError();
    ComputeRow(fde->cie, *fde, fde->pc_end - 1, arch).IgnoreError();
  }
}

void Run(const uint8_t* data, size_t size) {
  fuzz::FuzzInput in(data, size);
  const uint8_t flags = in.U8();
  const CfiKind kind = (flags & 1) ? CfiKind::kDebugFrame : CfiKind::kEhFrame;
  const arch::Arch arch = ArchFrom(flags >> 1);
  const uint64_t vaddr = in.U64();
  const uint64_t hdr_vaddr = in.U64();
  EncodingBases bases;
  bases.text = in.U64();
  bases.data = in.U64();
  std::vector<uint64_t> pcs;
  const int npcs = in.U8() % (kMaxPcs + 1);
  for (int i = 0; i < npcs; ++i) pcs.push_back(in.U64());
  absl::Span<const uint8_t> hdr_bytes = in.Bytes(in.U16());
  absl::Span<const uint8_t> section = in.Rest();

  CfiSection cfi(kind, section, vaddr, arch, bases);
  // Entries straight from their offsets, as .eh_frame_hdr hands them out.
  cfi.ParseCieAt(0).IgnoreError();
  cfi.ParseFdeAt(0).IgnoreError();
  cfi.IndexedFdeCount();
  for (uint64_t pc : pcs) RowAt(cfi.FindFde(pc), pc, arch);

  if (kind != CfiKind::kEhFrame || hdr_bytes.empty()) return;
  absl::StatusOr<EhFrameHdr> hdr = EhFrameHdr::Parse(
      hdr_bytes, hdr_vaddr, arch::GetArchInfo(arch).address_size);
  if (!hdr.ok()) return;
  for (uint64_t pc : pcs) {
    absl::StatusOr<uint64_t> fde_vaddr = hdr->Lookup(pc);
    if (!fde_vaddr.ok() || *fde_vaddr < vaddr) continue;
    RowAt(cfi.ParseFdeAt(*fde_vaddr - vaddr), pc, arch);
  }
}

}  // namespace
}  // namespace unwindd::unwinder

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  unwindd::unwinder::Run(data, size);
  return 0;
}

// libFuzzer target: the CFA VM (every DW_CFA instruction), the DWARF
// expression evaluator and ApplyRow, on fuzzed CIE/FDE fields, fuzzed
// registers and a fuzzed stack: bytes in, caller registers out.
//
// Input layout (tools/fuzz/fuzz_input.h; missing bytes are zeros):
//   u8  flags     bits 0-1: arch; bit 2: 'S' CIE; bits 3-4: CIE version
//                 (1, 3, 4); bit 5: memory at sp (else at mem_base)
//   u8  code_alignment, s8 data_alignment, u8 return address column
//   u64 pc_begin, u32 pc_range, u32 pc offset into it
//   u16 len + CIE initial instructions, u16 len + FDE instructions
//   u64 valid-register mask, then one u64 per register of the arch
//   u64 load_bias, u64 mem_base (bit 5 clear) or u16 below sp (bit 5 set)
//   ... memory bytes
#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "absl/status/statusor.h"
#include "arch/arch.h"
#include "arch/register_set.h"
#include "memory/factories.h"
#include "tools/fuzz/fuzz_input.h"
#include "unwinder/cfi/apply.h"
#include "unwinder/cfi/cfa_vm.h"
#include "unwinder/cfi/dwarf_expr.h"

namespace unwindd::unwinder {
namespace {

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

void Run(const uint8_t* data, size_t size) {
  fuzz::FuzzInput in(data, size);
  const uint8_t flags = in.U8();
  const arch::Arch arch = ArchFrom(flags);
  const arch::ArchInfo& info = arch::GetArchInfo(arch);

  Cie cie;
  cie.signal_frame = (flags & 4) != 0;
  static constexpr uint8_t kVersions[] = {1, 3, 4, 1};
  cie.version = kVersions[(flags >> 3) & 3];
  cie.address_size = static_cast<uint8_t>(info.address_size);
  cie.augmentation = "zR";
  cie.code_alignment = in.U8();
  cie.data_alignment = static_cast<int8_t>(in.U8());
  cie.return_address_register = in.U8();
  Fde fde;
  fde.pc_begin = in.U64();
  const uint32_t range = in.U32();
  const uint32_t pc_offset = in.U32();
  cie.initial_instructions = in.Bytes(in.U16());
  fde.instructions = in.Bytes(in.U16());
  fde.pc_end = fde.pc_begin + range;
  if (fde.pc_end < fde.pc_begin) fde.pc_end = ~uint64_t{0};
  fde.cie = cie;

  arch::RegisterSet regs(arch);
  const uint64_t valid = in.U64();
  for (int r = 0; r < info.num_regs; ++r) {
    const uint64_t v = in.U64();
    if ((valid >> r) & 1) regs.Set(r, v);
  }
  const uint64_t load_bias = in.U64();
  const uint64_t mem_base =
      (flags & 0x20) ? regs.sp() - in.U16() : in.U64();
  absl::Span<const uint8_t> mem_bytes = in.Rest();
  std::unique_ptr<memory::Memory> mem = memory::CreateBufferMemory(
      mem_base, std::vector<uint8_t>(mem_bytes.begin(), mem_bytes.end()));

  // Both instruction streams as DWARF expressions too (what
  // DW_CFA_def_cfa_expression and friends hand the evaluator).
  const ExpressionContext ctx{&regs, mem.get(), arch, load_bias};
  EvaluateExpression(cie.initial_instructions, ctx, std::nullopt)
      .IgnoreError();
  EvaluateExpression(fde.instructions, ctx, regs.sp()).IgnoreError();

  if (fde.pc_end == fde.pc_begin) return;
  const uint64_t pc = fde.pc_begin + pc_offset % (fde.pc_end - fde.pc_begin);
  absl::StatusOr<Row> row = ComputeRow(cie, fde, pc, arch);
  if (!row.ok()) return;
  ApplyRow(*row, regs, *mem, load_bias).IgnoreError();
}

}  // namespace
}  // namespace unwindd::unwinder

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  unwindd::unwinder::Run(data, size);
  return 0;
}

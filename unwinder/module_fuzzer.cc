// libFuzzer target: unwinder::Module on arbitrary ELF bytes (libelf, the
// section and segment tables, build-id notes and the note areas,
// compressed .debug_frame, .eh_frame_hdr / .eh_frame / .debug_frame /
// .sframe, the frame-pointer prologue check) and FindRow over fuzzed PCs
// with every source order.
//
// Input layout (tools/fuzz/fuzz_input.h; missing bytes are zeros):
//   u8  npcs      (at most 8) then npcs u64 PCs (file addresses)
//   u8  policy    which --sources order (see Policy below); bit 7: exact pc
//   ... the ELF image
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "tools/fuzz/fuzz_input.h"
#include "unwinder/module.h"
#include "unwinder/source_policy.h"

namespace unwindd::unwinder {
namespace {

constexpr int kMaxPcs = 8;

SourcePolicy Policy(uint8_t bits) {
  switch (bits % 6) {
    case 1:
      return SourcePolicy::Of({Source::kSframe, Source::kEhFrame});
    case 2:
      return SourcePolicy::Of({Source::kFramePointer, Source::kEhFrame});
    case 3:
      return SourcePolicy::Of({Source::kDebugFrame});
    case 4:
      return SourcePolicy::Of({Source::kSframe});
    case 5:
      return SourcePolicy::Of({Source::kFramePointer});
    default:
      return SourcePolicy();
  }
}

void Run(const uint8_t* data, size_t size) {
  fuzz::FuzzInput in(data, size);
  std::vector<uint64_t> pcs;
  const int npcs = in.U8() % (kMaxPcs + 1);
  for (int i = 0; i < npcs; ++i) pcs.push_back(in.U64());
  const uint8_t policy_bits = in.U8();
  absl::Span<const uint8_t> image = in.Rest();
  absl::StatusOr<std::shared_ptr<Module>> m = Module::FromImage(
      std::vector<uint8_t>(image.begin(), image.end()), "fuzzed");
  if (!m.ok()) return;
  Module& module = **m;
  // Every byte of the note areas (ASan checks each lies in the image).
  uint8_t sum = 0;
  for (absl::Span<const uint8_t> area : module.NoteAreas()) {
    for (uint8_t b : area) sum += b;
  }
  volatile uint8_t keep = sum;
  (void)keep;
  const SourcePolicy policy = Policy(policy_bits);
  const bool return_address = (policy_bits & 0x80) != 0;
  for (uint64_t pc : pcs) {
    const arch::FrameAddress at = return_address
                                      ? arch::FrameAddress::ReturnAddress(pc)
                                      : arch::FrameAddress::InstructionPointer(pc);
    module.LoadBias(pc & ~uint64_t{0xfff}, pc & 0xfff000).IgnoreError();
    module.FindRow(at, policy).IgnoreError();
    // Twice: the second answer comes from the row cache.
    module.FindRow(at, policy).IgnoreError();
    module.FunctionBounds(pc);
    module.ImageBytesAt(pc);
  }
}

}  // namespace
}  // namespace unwindd::unwinder

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  unwindd::unwinder::Run(data, size);
  return 0;
}

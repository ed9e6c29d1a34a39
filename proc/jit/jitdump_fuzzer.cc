// libFuzzer target: perf jitdump files (jitdump.h) as `unwind` reads them
// from a process's mapping or a perf recording's directory: the header,
// every record's framing and body (CODE_LOAD names and code, CODE_MOVE,
// CODE_UNWINDING_INFO's sizes), then the ELF image genelf builds for each
// piece of code and the regions laid over a mapping.
//
// Input layout: the dump's bytes.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "proc/jit/genelf.h"
#include "proc/jit/jit_code.h"
#include "proc/jit/jitdump.h"

namespace unwindd::proc::jit {
namespace {

void Run(const uint8_t* data, size_t size) {
  auto bytes = std::make_shared<const std::vector<uint8_t>>(data, data + size);
  absl::StatusOr<JitDump> d = ParseJitDump(bytes);
  if (!d.ok()) return;
  for (const JitCode& c : d->codes) {
    // Every span is inside the dump's bytes.
    if (!c.code.empty() && (c.code.data() < bytes->data() ||
                            c.code.data() + c.code.size() > bytes->data() + bytes->size())) {
      __builtin_trap();
    }
  }
  absl::StatusOr<std::vector<JitRegion>> regions = JitRegions(*d, "/tmp");
  if (!regions.ok()) return;
  Mapping anon;
  anon.start = 0;
  anon.end = ~uint64_t{0};
  anon.read = anon.exec = true;
  LayOver({anon}, *regions);
}

}  // namespace
}  // namespace unwindd::proc::jit

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  unwindd::proc::jit::Run(data, size);
  return 0;
}

// libFuzzer target: a systemd-coredump journal entry's fields
// (proc/coredump/entry.h) and what `unwind coredump` derives from them —
// field names, numbers, booleans, COREDUMP_PROC_MAPS and
// COREDUMP_PROC_AUXV — and MATCH (proc/coredump/match.h). The crashed
// process controls much of this (its cmdline, comm, maps), and whoever
// wrote the journal file the rest.
//
// Input layout: u8 length and that many bytes of a MATCH, then fields,
// each a u16 length and that many bytes ("NAME=value", any bytes).
#include <cstddef>
#include <cstdint>

#include "absl/strings/string_view.h"
#include "proc/coredump/entry.h"
#include "proc/coredump/match.h"
#include "tools/fuzz/fuzz_input.h"

namespace unwindd::proc::coredump {
namespace {

absl::string_view AsText(absl::Span<const uint8_t> b) {
  return absl::string_view(reinterpret_cast<const char*>(b.data()), b.size());
}

void Run(const uint8_t* data, size_t size) {
  fuzz::FuzzInput in(data, size);
  ParseCoredumpMatch(AsText(in.Bytes(in.U8())), "/srv").IgnoreError();
  CoredumpEntry e;
  while (in.remaining() > 0) {
    e.AddField(AsText(in.Bytes(in.U16()))).IgnoreError();
  }
  for (absl::string_view f : {"COREDUMP_PID", "COREDUMP_UID", "COREDUMP_SIGNAL",
                              "COREDUMP_TIMESTAMP", "COREDUMP_EXE"}) {
    e.Get(f);
    e.Number(f);
  }
  e.is_coredump();
  e.truncated();
  e.ProcMaps().IgnoreError();
  e.ProcAuxv(8);
  e.ProcAuxv(4);
  e.core_bytes();
}

}  // namespace
}  // namespace unwindd::proc::coredump

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  unwindd::proc::coredump::Run(data, size);
  return 0;
}

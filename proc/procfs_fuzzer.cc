// libFuzzer target: the /proc text parsers — maps (proc/maps.h), stat and
// status fields (proc/procfs.h). A process controls much of this text (its
// mapped file names, its comm), so every input must parse or fail cleanly.
//
// Input layout: u8 key length, that many bytes of a status key to look up
// besides TracerPid and Tgid, then the text (given to every parser).
#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/strings/string_view.h"
#include "proc/maps.h"
#include "proc/procfs.h"
#include "tools/fuzz/fuzz_input.h"

namespace unwindd::proc {
namespace {

absl::string_view AsText(absl::Span<const uint8_t> b) {
  return absl::string_view(reinterpret_cast<const char*>(b.data()), b.size());
}

void Run(const uint8_t* data, size_t size) {
  fuzz::FuzzInput in(data, size);
  const absl::string_view key = AsText(in.Bytes(in.U8()));
  const absl::string_view text = AsText(in.Rest());
  absl::StatusOr<std::vector<Mapping>> maps = ParseMaps(text);
  if (maps.ok()) {
    for (const Mapping& m : *maps) {
      m.IsSpecial();
      m.IsFileBacked();
      m.Contains(m.start);
    }
  }
  ParseStat(text, "fuzz/stat").IgnoreError();
  for (absl::string_view k : {absl::string_view("TracerPid"),
                              absl::string_view("Tgid"), key}) {
    ParseStatusField(text, k, "fuzz/status").IgnoreError();
  }
}

}  // namespace
}  // namespace unwindd::proc

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  unwindd::proc::Run(data, size);
  return 0;
}

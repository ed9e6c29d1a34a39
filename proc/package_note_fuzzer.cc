// libFuzzer target: the ELF package note reader (proc/package_note.h) —
// the ELF note walk that finds owner "FDO" type 0xcafe1a7e, and the JSON
// object in it. Notes come from any binary a crash maps and from a core's
// memory, so every input must parse or fail cleanly.
//
// Input layout: u8 mode; mode bit 0 set: the rest is JSON for
// ParsePackageNote; else bit 1 set: up to 8 note areas, each a u16 length
// and its bytes, for FindPackageNoteInAreas; else the rest is note bytes
// for FindPackageNote.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "absl/strings/string_view.h"
#include "proc/package_note.h"
#include "tools/fuzz/fuzz_input.h"

namespace unwindd::proc {
namespace {

void Use(const absl::StatusOr<PackageNote>& p) {
  if (!p.ok()) return;
  for (absl::string_view key : kPackageNoteKeys) p->Get(key);
}

void Run(const uint8_t* data, size_t size) {
  fuzz::FuzzInput in(data, size);
  const uint8_t mode = in.U8();
  absl::Span<const uint8_t> rest = in.Rest();
  if (mode & 1) {
    Use(ParsePackageNote(absl::string_view(reinterpret_cast<const char*>(rest.data()),
                                           rest.size())));
  } else if (mode & 2) {
    fuzz::FuzzInput areas_in(rest.data(), rest.size());
    std::vector<absl::Span<const uint8_t>> areas;
    while (areas_in.remaining() > 0 && areas.size() < 8) {
      areas.push_back(areas_in.Bytes(areas_in.U16()));
    }
    Use(FindPackageNoteInAreas(areas));
  } else {
    Use(FindPackageNote(rest));
  }
}

}  // namespace
}  // namespace unwindd::proc

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  unwindd::proc::Run(data, size);
  return 0;
}

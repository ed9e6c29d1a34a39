// Builds small ELF files for tests, with exactly the sections a test needs
// (.text, .eh_frame, .debug_frame, .sframe, ...), so that Module, the
// AddressSpace and the step loop see a real file whose every byte the test
// chose.
//
//   ElfSpec spec;
//   spec.sections.push_back({".text", 0x1000, code});
//   spec.sections.push_back({".eh_frame", 0x2000, eh_frame_bytes});
//   std::string path = WriteElf(spec, "lib.so");   // under TEST_TMPDIR
//
// Layout: one PT_LOAD maps the whole file at file address 0 (so a
// section's address is its file offset, and a mapping at `base` with offset
// 0 has load bias `base`); sections must start at or after kFirstSection,
// in increasing address order, without overlapping.
#ifndef UNWINDD_UNWINDER_TESTING_ELF_BUILDER_H_
#define UNWINDD_UNWINDER_TESTING_ELF_BUILDER_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "arch/arch.h"

namespace unwindd::unwinder::testing {

inline constexpr uint64_t kFirstSection = 0x400;

struct ElfSection {
  std::string name;
  uint64_t addr = 0;  // also the file offset
  std::vector<uint8_t> bytes;
};

struct ElfSpec {
  arch::Arch arch = arch::Arch::kX86_64;  // an ELFCLASS64 arch
  std::vector<ElfSection> sections;
  // NT_GNU_BUILD_ID's bytes; nullopt: 8 bytes hashed from the sections (so
  // that files with other contents never share a ModuleCache entry); empty:
  // no build-id note.
  std::optional<std::vector<uint8_t>> build_id;
};

std::vector<uint8_t> BuildElf(const ElfSpec& spec);

// Writes BuildElf(spec) to $TEST_TMPDIR/<name> and returns the path.
std::string WriteElf(const ElfSpec& spec, const std::string& name);

}  // namespace unwindd::unwinder::testing

#endif  // UNWINDD_UNWINDER_TESTING_ELF_BUILDER_H_

// libFuzzer target: `unwind check-sframe` on a real binary whose .sframe is
// replaced by the fuzz input — the way the hangs were found (a
// mutated .sframe in an otherwise valid executable, checked against its
// real .eh_frame).
//
// Input layout: u8 template (bit 0: x86_64 v2 non-PIE, else aarch64 v3 —
// testdata/sframe fixtures), then the new .sframe bytes. The bytes are
// appended to the file image and the .sframe section header pointed at
// them (same sh_addr), so they may be any length.
#include <elf.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "tools/fuzz/fuzz_input.h"
#include "tools/fuzz/runfiles.h"
#include "unwinder/module.h"
#include "unwinder/sframe/check.h"

namespace unwindd::unwinder::sframe {
namespace {

struct Template {
  std::vector<uint8_t> image;
  size_t sframe_shdr = 0;  // file offset of .sframe's Elf64_Shdr
};

std::vector<Template>* templates = nullptr;

// Finds the .sframe section header of a little-endian ELF64 file.
bool FindSframeShdr(Template& t) {
  const std::vector<uint8_t>& b = t.image;
  if (b.size() < sizeof(Elf64_Ehdr)) return false;
  Elf64_Ehdr eh;
  std::memcpy(&eh, b.data(), sizeof(eh));
  if (eh.e_shentsize != sizeof(Elf64_Shdr) || eh.e_shstrndx >= eh.e_shnum ||
      eh.e_shoff + uint64_t{eh.e_shnum} * sizeof(Elf64_Shdr) > b.size()) {
    return false;
  }
  auto shdr = [&](size_t i) {
    Elf64_Shdr s;
    std::memcpy(&s, b.data() + eh.e_shoff + i * sizeof(Elf64_Shdr), sizeof(s));
    return s;
  };
  const Elf64_Shdr strtab = shdr(eh.e_shstrndx);
  for (size_t i = 0; i < eh.e_shnum; ++i) {
    const Elf64_Shdr s = shdr(i);
    const uint64_t name = strtab.sh_offset + s.sh_name;
    if (name + 8 <= b.size() && std::memcmp(b.data() + name, ".sframe", 8) == 0) {
      t.sframe_shdr = eh.e_shoff + i * sizeof(Elf64_Shdr);
      return true;
    }
  }
  return false;
}

void Run(const uint8_t* data, size_t size) {
  fuzz::FuzzInput in(data, size);
  const Template& t = (*templates)[in.U8() % templates->size()];
  absl::Span<const uint8_t> sframe = in.Rest();
  std::vector<uint8_t> image = t.image;
  Elf64_Shdr s;
  std::memcpy(&s, image.data() + t.sframe_shdr, sizeof(s));
  s.sh_offset = image.size();
  s.sh_size = sframe.size();
  std::memcpy(image.data() + t.sframe_shdr, &s, sizeof(s));
  image.insert(image.end(), sframe.begin(), sframe.end());
  absl::StatusOr<std::shared_ptr<Module>> m =
      Module::FromImage(std::move(image), "fuzzed");
  if (!m.ok()) return;
  // Tighter bounds than the CLI's: every cut path is still taken, and a
  // run spends its time on new inputs rather than on the thousands of
  // identical PCs a valid FDE covers.
  CheckLimits limits;
  limits.max_pcs_per_function = 64;
  limits.steps_base = 256;
  limits.steps_per_file_byte = 0;
  absl::StatusOr<CheckReport> report = CheckSframe(**m, limits);
  if (report.ok()) FormatCheckReport(*report);
}

}  // namespace
}  // namespace unwindd::unwinder::sframe

extern "C" int LLVMFuzzerInitialize(int* argc, char*** argv) {
  using unwindd::unwinder::sframe::Template;
  auto* ts = new std::vector<Template>();
  for (const char* name : {"testdata/sframe/threads_c_sframe_v2_nopie",
                           "testdata/sframe/threads_c_sframe_v3_aarch64"}) {
    const std::string path = unwindd::fuzz::Runfile((*argv)[0], name);
    std::ifstream f(path, std::ios::binary);
    Template t;
    t.image.assign(std::istreambuf_iterator<char>(f),
                   std::istreambuf_iterator<char>());
    if (!unwindd::unwinder::sframe::FindSframeShdr(t)) {
      std::fprintf(stderr, "%s: cannot read its .sframe section header\n",
                   path.c_str());
      std::abort();
    }
    ts->push_back(std::move(t));
  }
  unwindd::unwinder::sframe::templates = ts;
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  unwindd::unwinder::sframe::Run(data, size);
  return 0;
}

#include "proc/minidump/context.h"

#include "absl/status/status.h"
#include "absl/strings/str_format.h"
#include "arch/le_bytes.h"

namespace unwindd::proc::minidump {
namespace {

// minidump_format.h MD_CONTEXT_CPU_MASK: the CPU bits of context_flags.
constexpr uint32_t kCpuMask = 0xffffff00;

const ContextFormat* const kFormats[] = {
    &kContextX86_64,
    &kContextAArch64,
    &kContextAArch64Old,
    &kContextX86,
};

uint64_t Flags(const ContextFormat& f, absl::Span<const uint8_t> bytes) {
  return arch::LoadLe(bytes, f.flags_offset, static_cast<int>(f.flags_size));
}

bool FlagsMatch(const ContextFormat& f, absl::Span<const uint8_t> bytes) {
  if (bytes.size() < f.flags_offset + f.flags_size) return false;
  const uint64_t flags = Flags(f, bytes);
  if (f.flags_size == 8) return (flags & f.cpu_flag) == f.cpu_flag;
  return (static_cast<uint32_t>(flags) & kCpuMask) == f.cpu_flag;
}

}  // namespace

absl::Span<const ContextFormat* const> AllContextFormats() { return kFormats; }

absl::StatusOr<arch::Arch> ArchFromCpuArchitecture(uint16_t cpu) {
  for (const ContextFormat* f : kFormats) {
    for (uint16_t c : f->cpu_architectures) {
      if (c == cpu) return f->arch;
    }
  }
  return absl::UnimplementedError(absl::StrFormat(
      "minidump processor architecture %d is not one we unwind "
      "(x86_64, aarch64, x86)",
      cpu));
}

uint16_t CpuArchitectureOf(arch::Arch arch) {
  for (const ContextFormat* f : kFormats) {
    if (f->arch == arch) return f->cpu_architectures[0];
  }
  return 0xffff;
}

absl::StatusOr<const ContextFormat*> FindContextFormat(
    absl::Span<const uint8_t> bytes, std::optional<arch::Arch> expected) {
  // Breakpad's processor (minidump.cc MinidumpContext::Read) tells the
  // layout from the context's size first: the flags of AMD64 contexts are
  // not at offset 0, so reading them needs the layout already.
  const ContextFormat* by_flags = nullptr;
  for (const ContextFormat* f : kFormats) {
    if (expected && f->arch != *expected) continue;
    if (bytes.size() < f->size || !FlagsMatch(*f, bytes)) continue;
    if (bytes.size() == f->size) return f;
    if (by_flags == nullptr) by_flags = f;
  }
  // Writers may append state (an XSAVE area after an AMD64 CONTEXT).
  if (by_flags != nullptr) return by_flags;
  return absl::DataLossError(absl::StrFormat(
      "a %d-byte thread context that is no %s context", bytes.size(),
      expected ? arch::GetArchInfo(*expected).name : "known"));
}

absl::StatusOr<arch::RegisterSet> ParseContext(
    absl::Span<const uint8_t> bytes, std::optional<arch::Arch> expected) {
  absl::StatusOr<const ContextFormat*> f = FindContextFormat(bytes, expected);
  if (!f.ok()) return f.status();
  return (*f)->parse(bytes);
}

std::vector<uint8_t> WriteContext(const arch::RegisterSet& regs) {
  for (const ContextFormat* f : kFormats) {
    if (f->arch == regs.arch() && f->write != nullptr) return f->write(regs);
  }
  return {};
}

uint64_t LoadU64(absl::Span<const uint8_t> b, size_t off) {
  return arch::LoadLe64(b, off);
}
uint32_t LoadU32(absl::Span<const uint8_t> b, size_t off) {
  return arch::LoadLe32(b, off);
}
void StoreU64(std::vector<uint8_t>& b, size_t off, uint64_t v) {
  for (int i = 0; i < 8; ++i) b[off + i] = static_cast<uint8_t>(v >> (8 * i));
}
void StoreU32(std::vector<uint8_t>& b, size_t off, uint32_t v) {
  for (int i = 0; i < 4; ++i) b[off + i] = static_cast<uint8_t>(v >> (8 * i));
}

}  // namespace unwindd::proc::minidump

#include "proc/live_arch.h"

#include <elf.h>
#include <unistd.h>

#include <climits>
#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "gtest/gtest.h"

namespace unwindd::proc {
namespace {

std::vector<uint8_t> Header(uint16_t machine, uint8_t data = ELFDATA2LSB) {
  std::vector<uint8_t> h(64, 0);
  h[0] = ELFMAG0;
  h[1] = ELFMAG1;
  h[2] = ELFMAG2;
  h[3] = ELFMAG3;
  h[EI_CLASS] = ELFCLASS64;
  h[EI_DATA] = data;
  if (data == ELFDATA2MSB) {
    h[18] = machine >> 8;
    h[19] = machine & 0xff;
  } else {
    h[18] = machine & 0xff;
    h[19] = machine >> 8;
  }
  return h;
}

TEST(ArchFromElfHeaderTest, X86_64) {
  absl::StatusOr<arch::Arch> a = ArchFromElfHeader(Header(EM_X86_64), 1);
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(*a, arch::Arch::kX86_64);
}

TEST(ArchFromElfHeaderTest, OthersAreUnimplementedForNow) {
  for (uint16_t m : {EM_AARCH64, EM_386, EM_PPC64}) {
    absl::StatusOr<arch::Arch> a = ArchFromElfHeader(Header(m), 42);
    EXPECT_EQ(a.status().code(), absl::StatusCode::kUnimplemented) << m;
  }
  // Big-endian e_machine is read in the file's byte order.
  EXPECT_EQ(
      ArchFromElfHeader(Header(EM_PPC64, ELFDATA2MSB), 42).status().message(),
      "architecture of process 42 (ELF e_machine 21) is not supported "
      "yet");
}

TEST(ArchFromElfHeaderTest, NotElf) {
  std::vector<uint8_t> h = Header(EM_X86_64);
  EXPECT_EQ(
      ArchFromElfHeader(absl::MakeConstSpan(h).first(19), 1).status().code(),
      absl::StatusCode::kDataLoss);
  h[1] = 'X';
  EXPECT_EQ(ArchFromElfHeader(h, 1).status().code(),
            absl::StatusCode::kDataLoss);
}

TEST(DetectArchTest, Self) {
  absl::StatusOr<arch::Arch> a = DetectArch(getpid(), gettid());
#if defined(__x86_64__)
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(*a, arch::Arch::kX86_64);
#else
  EXPECT_FALSE(a.ok());
#endif
  EXPECT_EQ(DetectArch(INT_MAX, INT_MAX).status().code(),
            absl::StatusCode::kNotFound);
}

TEST(RegistersFromPrstatusTest, DispatchesByArch) {
  std::vector<uint8_t> regs(27 * 8, 0);
  regs[16 * 8] = 0x42;  // rip
  absl::StatusOr<arch::RegisterSet> r =
      RegistersFromPrstatus(arch::Arch::kX86_64, regs);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->pc(), 0x42u);
  EXPECT_EQ(RegistersFromPrstatus(arch::Arch::kAArch64, regs).status().code(),
            absl::StatusCode::kUnimplemented);
}

}  // namespace
}  // namespace unwindd::proc

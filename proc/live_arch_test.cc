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

std::vector<uint8_t> Header(uint16_t machine, uint8_t data = ELFDATA2LSB,
                            uint8_t elf_class = ELFCLASS64) {
  std::vector<uint8_t> h(64, 0);
  h[0] = ELFMAG0;
  h[1] = ELFMAG1;
  h[2] = ELFMAG2;
  h[3] = ELFMAG3;
  h[EI_CLASS] = elf_class;
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

TEST(ArchFromElfHeaderTest, I386AndAArch64) {
  absl::StatusOr<arch::Arch> a =
      ArchFromElfHeader(Header(EM_386, ELFDATA2LSB, ELFCLASS32), 1);
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(*a, arch::Arch::kX86);
  a = ArchFromElfHeader(Header(EM_AARCH64), 1);
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(*a, arch::Arch::kAArch64);
}

TEST(ArchFromElfHeaderTest, OthersAreUnimplemented) {
  for (uint16_t m : {uint16_t{EM_PPC64}, uint16_t{EM_ARM}, uint16_t{EM_386}}) {
    // EM_386 with ELFCLASS64 is no real executable.
    absl::StatusOr<arch::Arch> a = ArchFromElfHeader(Header(m), 42);
    EXPECT_EQ(a.status().code(), absl::StatusCode::kUnimplemented) << m;
  }
  // Big-endian e_machine is read in the file's byte order.
  EXPECT_EQ(
      ArchFromElfHeader(Header(EM_PPC64, ELFDATA2MSB), 42).status().message(),
      "architecture of process 42 (ELF e_machine 21, class 2) is not "
      "supported");
  EXPECT_EQ(ArchFromElfHeader(Header(EM_AARCH64, ELFDATA2MSB), 42)
                .status()
                .code(),
            absl::StatusCode::kUnimplemented);
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
  EXPECT_EQ(r->arch(), arch::Arch::kX86_64);
  std::vector<uint8_t> a64(34 * 8, 0);
  a64[32 * 8] = 0x44;  // pc
  r = RegistersFromPrstatus(arch::Arch::kAArch64, a64);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->pc(), 0x44u);
  EXPECT_EQ(RegistersFromPrstatus(arch::Arch::kAArch64, regs).status().code(),
            absl::StatusCode::kDataLoss);
}

TEST(RegistersFromPrstatusTest, RegsetSizeDecidesOnX86) {
  // What a 64-bit tracer gets for a 32-bit thread: the 68-byte i386 regset.
  std::vector<uint8_t> i386(17 * 4, 0);
  i386[12 * 4] = 0x78;  // eip
  i386[12 * 4 + 3] = 0x08;
  for (arch::Arch exe : {arch::Arch::kX86, arch::Arch::kX86_64}) {
    absl::StatusOr<arch::RegisterSet> r = RegistersFromPrstatus(exe, i386);
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(r->arch(), arch::Arch::kX86);
    EXPECT_EQ(r->pc(), 0x08000078u);
  }
}

}  // namespace
}  // namespace unwindd::proc

// check-sframe's work bounds (check.h): a real binary whose .sframe claims
// huge functions — the hangs issue 14 found by mutating .sframe sections —
// must give a report with an error naming the limit, not run for minutes.
#include <elf.h>
#include <time.h>

#include <cstdint>
#include <cstring>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "gtest/gtest.h"
#include "unwinder/module.h"
#include "unwinder/sframe/check.h"
#include "unwinder/sframe/format.h"
#include "unwinder/sframe/header.h"

namespace unwindd::unwinder::sframe {
namespace {

constexpr char kFixture[] = "testdata/sframe/threads_c_sframe_v2_nopie";

struct Image {
  std::vector<uint8_t> bytes;
  size_t sframe_offset = 0;  // file offset of the .sframe section
  size_t sframe_size = 0;
};

Image ReadFixture() {
  Image img;
  std::ifstream f(kFixture, std::ios::binary);
  img.bytes.assign(std::istreambuf_iterator<char>(f),
                   std::istreambuf_iterator<char>());
  Elf64_Ehdr eh;
  std::memcpy(&eh, img.bytes.data(), sizeof(eh));
  auto shdr = [&](size_t i) {
    Elf64_Shdr s;
    std::memcpy(&s, img.bytes.data() + eh.e_shoff + i * sizeof(s), sizeof(s));
    return s;
  };
  const Elf64_Shdr strtab = shdr(eh.e_shstrndx);
  for (size_t i = 0; i < eh.e_shnum; ++i) {
    const Elf64_Shdr s = shdr(i);
    if (std::strcmp(reinterpret_cast<const char*>(img.bytes.data()) +
                        strtab.sh_offset + s.sh_name,
                    ".sframe") == 0) {
      img.sframe_offset = s.sh_offset;
      img.sframe_size = s.sh_size;
    }
  }
  return img;
}

// SFrame v2 §2.3: FDE = s32 start, u32 size, u32 FRE offset, u32 FRE
// count, u8 info (bit 4: PCMASK), u8 rep_size, u16 padding.
void ClaimHugeFunction(Image& img, uint32_t fde, bool pcmask) {
  absl::Span<const uint8_t> sec(img.bytes.data() + img.sframe_offset,
                                img.sframe_size);
  absl::StatusOr<Header> h = ParseHeader(sec);
  ASSERT_TRUE(h.ok()) << h.status();
  ASSERT_EQ(h->version, kVersion2);
  ASSERT_LT(fde, h->num_fdes);
  uint8_t* p = img.bytes.data() + img.sframe_offset + h->fde_start +
               fde * kFdeSizeV2;
  const uint32_t size = 0xa0000000;  // ~2.6 GB, as in the issue
  std::memcpy(p + 4, &size, 4);
  if (pcmask) {
    p[16] |= 0x10;
    p[17] = 1;  // a one-byte block, repeated 2.6 G times
  }
}

uint32_t NumFdes(const Image& img) {
  absl::StatusOr<Header> h = ParseHeader(absl::Span<const uint8_t>(
      img.bytes.data() + img.sframe_offset, img.sframe_size));
  return h.ok() ? h->num_fdes : 0;
}

// The check's CPU time on this thread: a net against work that the
// limits fail to bound (a hang), not a speed test; the limits themselves
// are checked by the counts. Wall time varied with the machine's load
// (23.6 s of it for 2000 huge FDEs under ASan at a load of 15).
struct Timed {
  CheckReport report;
  double cpu_seconds = 0;
};

double ThreadCpuSeconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + ts.tv_nsec * 1e-9;
}

constexpr double kHangSeconds = 60;

Timed Check(Image img) {
  absl::StatusOr<std::shared_ptr<Module>> m =
      Module::FromImage(std::move(img.bytes), kFixture);
  EXPECT_TRUE(m.ok()) << m.status();
  if (!m.ok()) return {};
  const double start = ThreadCpuSeconds();
  absl::StatusOr<CheckReport> r = CheckSframe(**m);
  Timed t;
  t.cpu_seconds = ThreadCpuSeconds() - start;
  EXPECT_TRUE(r.ok()) << r.status();
  if (r.ok()) t.report = *std::move(r);
  return t;
}

bool HasError(const CheckReport& r, const std::string& part) {
  for (const std::string& e : r.errors) {
    if (e.find(part) != std::string::npos) return true;
  }
  return false;
}

TEST(CheckBoundsTest, TheFixtureIsCleanAndSmall) {
  Timed t = Check(ReadFixture());
  EXPECT_TRUE(t.report.ok()) << FormatCheckReport(t.report);
  EXPECT_GT(t.report.pcs_compared, 500u);
}

TEST(CheckBoundsTest, HugeFunctionIsCheckedUpToThePerFunctionLimit) {
  Image img = ReadFixture();
  ClaimHugeFunction(img, 1, /*pcmask=*/false);
  Timed t = Check(std::move(img));
  EXPECT_TRUE(HasError(t.report, "checked per function"))
      << FormatCheckReport(t.report);
  // The other functions were still checked.
  EXPECT_GT(t.report.fdes, 10u);
  // Checked only as far as the file has code: a few KiB, not 2.6 GB.
  EXPECT_LT(t.report.pcs_compared + t.report.pcs_sframe_only, 64u << 10);
  EXPECT_LT(t.cpu_seconds, kHangSeconds);
}

TEST(CheckBoundsTest, OneByteBlocksOverAHugeFunctionAreBounded) {
  Image img = ReadFixture();
  ClaimHugeFunction(img, 1, /*pcmask=*/true);
  Timed t = Check(std::move(img));
  EXPECT_TRUE(HasError(t.report, "checked per function"))
      << FormatCheckReport(t.report);
  EXPECT_LT(t.cpu_seconds, kHangSeconds);
}

// An .sframe of `copies` FDEs, each FDE 1 of the fixture claiming a huge
// PCMASK function of one-byte blocks: every copy covers the rest of the
// text segment again, so only the total budget stops the check. The new
// section is appended to the file and .sframe's header pointed at it.
void ReplaceWithCopies(Image& img, uint32_t copies) {
  ClaimHugeFunction(img, 1, /*pcmask=*/true);
  const uint8_t* sec = img.bytes.data() + img.sframe_offset;
  absl::StatusOr<Header> h =
      ParseHeader(absl::Span<const uint8_t>(sec, img.sframe_size));
  ASSERT_TRUE(h.ok()) << h.status();
  // SFrame v2 §2.1: num_fdes at 8, fdeoff at 20, freoff at 24 (u32 each),
  // offsets relative to the end of the header.
  std::vector<uint8_t> out(sec, sec + h->header_size);
  const uint32_t freoff = copies * kFdeSizeV2;
  std::memcpy(out.data() + 8, &copies, 4);
  const uint32_t zero = 0;
  std::memcpy(out.data() + 20, &zero, 4);
  std::memcpy(out.data() + 24, &freoff, 4);
  for (uint32_t i = 0; i < copies; ++i) {
    out.insert(out.end(), sec + h->fde_start + kFdeSizeV2,
               sec + h->fde_start + 2 * kFdeSizeV2);
  }
  out.insert(out.end(), sec + h->fre_start, sec + h->fre_end);
  Elf64_Ehdr eh;
  std::memcpy(&eh, img.bytes.data(), sizeof(eh));
  for (size_t i = 0; i < eh.e_shnum; ++i) {
    Elf64_Shdr s;
    uint8_t* at = img.bytes.data() + eh.e_shoff + i * sizeof(s);
    std::memcpy(&s, at, sizeof(s));
    if (s.sh_offset != img.sframe_offset) continue;
    s.sh_offset = img.bytes.size();
    s.sh_size = out.size();
    std::memcpy(at, &s, sizeof(s));
  }
  img.sframe_offset = img.bytes.size();
  img.sframe_size = out.size();
  img.bytes.insert(img.bytes.end(), out.begin(), out.end());
}

TEST(CheckBoundsTest, ManyHugeFunctionsStopAtTheTotalLimit) {
  Image img = ReadFixture();
  constexpr uint32_t kCopies = 2000;
  ReplaceWithCopies(img, kCopies);
  ASSERT_EQ(NumFdes(img), kCopies);
  const uint64_t file_size = img.bytes.size();
  Timed t = Check(std::move(img));
  const std::string text = FormatCheckReport(t.report);
  EXPECT_TRUE(HasError(t.report, "the limit for a file of")) << text;
  EXPECT_LT(t.report.fdes, kCopies) << text;
  EXPECT_GT(t.report.fdes, 0u) << text;
  // Steps >= PCs compared: the budget bounds them.
  EXPECT_LE(t.report.pcs_compared,
            kCheckStepsBase + kCheckStepsPerFileByte * file_size);
  EXPECT_LT(t.cpu_seconds, kHangSeconds);
  std::cout << kCopies << " huge FDEs: " << t.cpu_seconds << " s of CPU, "
            << t.report.fdes << " checked\n";
}

}  // namespace
}  // namespace unwindd::unwinder::sframe

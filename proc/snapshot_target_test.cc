// SnapshotTarget: the memory overlay's precedence and edges, rejected
// snapshots and samples, and perf's and DWARF register numberings. Unwinds
// over snapshots are tested in unwinder/snapshot_unwind_test.cc.
#include "proc/snapshot_target.h"

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "arch/arch.h"
#include "gtest/gtest.h"
#include "memory/testing/map_memory.h"
#include "proc/maps.h"
#include "proc/snapshot_target_regs.h"
#include "proc/testing/snapshot_files.h"

namespace unwindd::proc {
namespace {

using testing::TempSnapshotFile;

constexpr int kRsp = 7, kRip = 16;

arch::RegisterSet Regs(uint64_t pc, uint64_t sp) {
  arch::RegisterSet r(arch::Arch::kX86_64);
  r.Set(kRip, pc);
  r.Set(kRsp, sp);
  return r;
}

Mapping Map(uint64_t start, uint64_t end, uint64_t offset, bool write) {
  Mapping m;
  m.start = start;
  m.end = end;
  m.offset = offset;
  m.read = true;
  m.write = write;
  m.path = "/fake";
  return m;
}

std::vector<uint8_t> Read(Target& t, uint64_t addr, size_t n) {
  std::vector<uint8_t> buf(n);
  if (!t.memory().ReadFully(addr, absl::MakeSpan(buf)).ok()) return {};
  return buf;
}

TEST(SnapshotMemoryTest, OverlayPrecedence) {
  // File bytes are 0xf0+i; the read-only mapping maps file offset 0x10 at
  // 0x1000, the writable one offset 0 at 0x3000.
  std::vector<uint8_t> file_bytes(0x40);
  for (size_t i = 0; i < file_bytes.size(); ++i) file_bytes[i] = 0x80 + i;
  std::shared_ptr<const SnapshotFile> file = TempSnapshotFile(file_bytes);

  Snapshot s;
  s.registers = Regs(0x1000, 0x2000);
  s.stack_address = 0x2000;
  s.stack = {1, 2, 3, 4};
  s.mappings.push_back({Map(0x3000, 0x4000, 0, true), file, nullptr});
  s.mappings.push_back({Map(0x1000, 0x2000, 0x10, false), file, nullptr});
  s.mappings.push_back(
      {Map(0x5000, 0x6000, 0, false), nullptr,
       std::make_shared<const std::vector<uint8_t>>(std::vector<uint8_t>{9, 9})});
  auto process = std::make_unique<memory::testing::MapMemory>();
  process->Put(0x1ffe, {0x55, 0x55, 0x55, 0x55, 0x55, 0x55, 0x55});
  process->Put(0x3000, {0x66});
  process->Put(0x7000, {0x77});
  absl::StatusOr<std::unique_ptr<Target>> t =
      CreateSnapshotTarget(std::move(s), std::move(process));
  ASSERT_TRUE(t.ok()) << t.status();

  // Stack over everything; a read straddling its start takes the process's
  // bytes below it; the stack's end is followed by process bytes.
  EXPECT_EQ(Read(**t, 0x2000, 4), (std::vector<uint8_t>{1, 2, 3, 4}));
  EXPECT_EQ(Read(**t, 0x1ffe, 7),
            (std::vector<uint8_t>{0x55, 0x55, 1, 2, 3, 4, 0x55}));
  // Read-only file mapping: file wins over the process (0x1ffe..).
  EXPECT_EQ(Read(**t, 0x1000, 2), (std::vector<uint8_t>{0x90, 0x91}));
  // Past the end of the file: unreadable (the kernel would SIGBUS).
  EXPECT_TRUE(Read(**t, 0x1030, 1).empty());
  // Writable file mapping: the process wins, the file is the fallback.
  EXPECT_EQ(Read(**t, 0x3000, 1), (std::vector<uint8_t>{0x66}));
  EXPECT_EQ(Read(**t, 0x3001, 2), (std::vector<uint8_t>{0x81, 0x82}));
  // An image, then nothing past it (no process bytes there).
  EXPECT_EQ(Read(**t, 0x5000, 2), (std::vector<uint8_t>{9, 9}));
  EXPECT_TRUE(Read(**t, 0x5001, 2).empty());
  // Unmapped: only the process.
  EXPECT_EQ(Read(**t, 0x7000, 1), (std::vector<uint8_t>{0x77}));
  EXPECT_TRUE(Read(**t, 0x8000, 1).empty());
  // Inode and device come from the opened file, never from the request.
  const std::vector<Mapping>& maps = (*t)->mappings();
  ASSERT_EQ(maps.size(), 3u);
  EXPECT_EQ(maps[0].start, 0x1000u);  // sorted
  EXPECT_EQ(maps[0].inode, file->inode());
  EXPECT_EQ(maps[2].inode, 0u);
  EXPECT_EQ((*t)->FileCandidates(maps[0]),
            std::vector<std::string>{file->proc_path()});
}

TEST(SnapshotTargetTest, RejectsBadSnapshots) {
  Snapshot overlap;
  overlap.registers = Regs(1, 2);
  overlap.mappings.push_back({Map(0x1000, 0x3000, 0, false), nullptr, nullptr});
  overlap.mappings.push_back({Map(0x2000, 0x4000, 0, false), nullptr, nullptr});
  EXPECT_EQ(CreateSnapshotTarget(std::move(overlap), nullptr).status().code(),
            absl::StatusCode::kInvalidArgument);

  Snapshot no_sp;
  no_sp.registers = arch::RegisterSet(arch::Arch::kX86_64);
  no_sp.registers.Set(kRip, 1);
  EXPECT_EQ(CreateSnapshotTarget(std::move(no_sp), nullptr).status().code(),
            absl::StatusCode::kInvalidArgument);

  Snapshot wraps;
  wraps.registers = Regs(1, 2);
  wraps.stack_address = ~uint64_t{0} - 2;
  wraps.stack.resize(8);
  EXPECT_EQ(CreateSnapshotTarget(std::move(wraps), nullptr).status().code(),
            absl::StatusCode::kInvalidArgument);

  Snapshot other_arch;
  other_arch.arch = arch::Arch::kAArch64;
  other_arch.registers = Regs(1, 2);
  EXPECT_EQ(CreateSnapshotTarget(std::move(other_arch), nullptr).status().code(),
            absl::StatusCode::kInvalidArgument);
}

// A sample's process memory is used for that sample only.
TEST(SnapshotTargetTest, ProcessMemoryIsPerSample) {
  constexpr uint64_t kStack = 0x7fff12340000;
  absl::StatusOr<std::unique_ptr<SnapshotTarget>> t =
      SnapshotTarget::Create(arch::Arch::kX86_64, 1, {});
  ASSERT_TRUE(t.ok());
  memory::testing::MapMemory process;
  process.PutLe(kStack + 64, 0x1122334455667788, 8);
  arch::RegisterSet regs = Regs(0x1000, kStack);
  std::vector<uint8_t> stack(8, 0);
  ASSERT_TRUE((*t)->SetSample({1, regs, kStack, stack, &process}).ok());
  EXPECT_EQ(Read(**t, kStack + 64, 8).size(), 8u);
  ASSERT_TRUE((*t)->SetSample({1, regs, kStack, stack, nullptr}).ok());
  EXPECT_TRUE(Read(**t, kStack + 64, 8).empty());
}

// A stack copy in two pieces reads as one: each piece held in place, a
// read across the cut, the unloaded rest after both.
TEST(SnapshotTargetTest, StackCopyInTwoPieces) {
  constexpr uint64_t kStack = 0x7fff12340000;
  absl::StatusOr<std::unique_ptr<SnapshotTarget>> t =
      SnapshotTarget::Create(arch::Arch::kX86_64, 1, {});
  ASSERT_TRUE(t.ok());
  std::vector<uint8_t> whole(48);
  for (size_t i = 0; i < whole.size(); ++i) whole[i] = static_cast<uint8_t>(i + 1);
  SnapshotSample s{1, Regs(0x1000, kStack), kStack,
                   absl::MakeConstSpan(whole).first(20), nullptr, kStack + 64};
  s.stack_tail = absl::MakeConstSpan(whole).subspan(20);
  ASSERT_TRUE((*t)->SetSample(s).ok());
  EXPECT_EQ(Read(**t, kStack, 48), whole);
  EXPECT_EQ(Read(**t, kStack + 16, 8),
            std::vector<uint8_t>(whole.begin() + 16, whole.begin() + 24));
  memory::Memory::HeldBytes head = (*t)->memory().HeldBytesAt(kStack + 19);
  EXPECT_EQ(head.start, kStack);
  EXPECT_EQ(head.bytes.data(), whole.data());
  EXPECT_EQ(head.bytes.size(), 20u);
  memory::Memory::HeldBytes tail = (*t)->memory().HeldBytesAt(kStack + 20);
  EXPECT_EQ(tail.start, kStack + 20);
  EXPECT_EQ(tail.bytes.data(), whole.data() + 20);
  EXPECT_EQ(tail.bytes.size(), 28u);
  EXPECT_TRUE((*t)->memory().HeldBytesAt(kStack + 48).bytes.empty());
  EXPECT_FALSE((*t)->stack_missed());
  EXPECT_TRUE(Read(**t, kStack + 48, 8).empty());  // loaded no further
  EXPECT_TRUE((*t)->stack_missed());
  // A copy whose pieces together wrap is refused.
  s.stack_address = ~uint64_t{0} - 30;
  s.registers = Regs(0x1000, s.stack_address);
  EXPECT_EQ((*t)->SetSample(s).code(), absl::StatusCode::kInvalidArgument);
}

TEST(SnapshotRegsTest, PerfX86_64) {
  // AX, SP, IP, FLAGS and R15: bits 0, 7, 8, 9, 23.
  uint64_t mask = (1u << 0) | (1u << 7) | (1u << 8) | (1u << 9) | (1u << 23);
  absl::StatusOr<arch::RegisterSet> r =
      RegistersFromPerf(arch::Arch::kX86_64, mask, {10, 20, 30, 40, 50});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->Get(0), 10u);
  EXPECT_EQ(r->sp(), 20u);
  EXPECT_EQ(r->pc(), 30u);
  EXPECT_EQ(r->Get(15), 50u);
  EXPECT_FALSE(r->Valid(3));
  EXPECT_FALSE(RegistersFromPerf(arch::Arch::kX86_64, mask, {1, 2}).ok());
  EXPECT_FALSE(RegistersFromPerf(arch::Arch::kX86_64, 1, {1, 2}).ok());
}

TEST(SnapshotRegsTest, PerfAArch64AndX86) {
  absl::StatusOr<arch::RegisterSet> a = RegistersFromPerf(
      arch::Arch::kAArch64, (1ull << 30) | (1ull << 31) | (1ull << 32), {1, 2, 3});
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->Get(30), 1u);
  EXPECT_EQ(a->sp(), 2u);
  EXPECT_EQ(a->pc(), 3u);
  absl::StatusOr<arch::RegisterSet> x = RegistersFromPerf(
      arch::Arch::kX86, (1u << 6) | (1u << 7) | (1u << 8), {5, 6, 0x1'0000'0007});
  ASSERT_TRUE(x.ok());
  EXPECT_EQ(x->Get(5), 5u);  // ebp
  EXPECT_EQ(x->sp(), 6u);
  EXPECT_EQ(x->pc(), 7u);  // truncated to 32 bits
}

TEST(SnapshotRegsTest, Dwarf) {
  std::vector<std::pair<uint32_t, uint64_t>> v = {{7, 100}, {16, 200}};
  absl::StatusOr<arch::RegisterSet> r = RegistersFromDwarf(arch::Arch::kX86_64, v);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->sp(), 100u);
  EXPECT_EQ(r->pc(), 200u);
  std::vector<std::pair<uint32_t, uint64_t>> bad = {{17, 1}};
  EXPECT_FALSE(RegistersFromDwarf(arch::Arch::kX86_64, bad).ok());
}

}  // namespace
}  // namespace unwindd::proc

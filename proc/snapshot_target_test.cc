// SnapshotTarget: the memory overlay's precedence and edges, and unwinds of
// (1) a hand-made stack over two assembly functions whose CFI we wrote, and
// (2) a copy of this thread's real stack, compared with an unwind of the
// live process.
#include "proc/snapshot_target.h"

#include <fcntl.h>
#include <unistd.h>

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "arch/arch.h"
#include "gtest/gtest.h"
#include "memory/factories.h"
#include "memory/testing/map_memory.h"
#include "proc/maps.h"
#include "proc/snapshot_target_regs.h"
#include "unwinder/module_cache.h"
#include "unwinder/testing/self_target.h"
#include "unwinder/unwinder.h"

// Two functions with CFI we control. snapshot_outer's CFI marks the return
// address undefined (like _start), so a walk through it ends there;
// snapshot_leaf sets up an rbp frame. Neither is ever called: the test only
// needs their addresses and unwind tables.
asm(R"(
  .text
  .globl snapshot_outer
  .type snapshot_outer, @function
snapshot_outer:
  .cfi_startproc
  .cfi_undefined rip
  nop
  call snapshot_leaf
snapshot_outer_ret:
  nop
  ret
  .cfi_endproc
  .size snapshot_outer, .-snapshot_outer
  .globl snapshot_outer_ret_addr
  .set snapshot_outer_ret_addr, snapshot_outer_ret

  .globl snapshot_leaf
  .type snapshot_leaf, @function
snapshot_leaf:
  .cfi_startproc
  push %rbp
  .cfi_def_cfa_offset 16
  .cfi_offset rbp, -16
  mov %rsp, %rbp
  .cfi_def_cfa_register rbp
snapshot_leaf_body:
  nop
  pop %rbp
  .cfi_def_cfa rsp, 8
  ret
  .cfi_endproc
  .size snapshot_leaf, .-snapshot_leaf
  .globl snapshot_leaf_body_addr
  .set snapshot_leaf_body_addr, snapshot_leaf_body
)");
extern "C" char snapshot_outer_ret_addr[];
extern "C" char snapshot_leaf_body_addr[];

namespace unwindd::proc {
namespace {

constexpr int kRbp = 6, kRsp = 7, kRip = 16;

std::shared_ptr<const SnapshotFile> OpenFile(const std::string& path) {
  memory::ScopedFd fd = memory::OpenCloexec(path.c_str(), O_RDONLY);
  EXPECT_TRUE(fd.valid()) << path;
  absl::StatusOr<std::shared_ptr<const SnapshotFile>> f =
      SnapshotFile::FromFd(std::move(fd));
  EXPECT_TRUE(f.ok()) << f.status();
  return f.ok() ? *f : nullptr;
}

// This process's mappings, each file-backed one with its file opened: what
// the server builds from a sample's mapping table.
std::vector<SnapshotMapping> OwnMappings(bool with_files) {
  std::vector<SnapshotMapping> out;
  absl::StatusOr<std::vector<Mapping>> maps = ReadMaps(getpid());
  EXPECT_TRUE(maps.ok()) << maps.status();
  for (const Mapping& m : *maps) {
    SnapshotMapping sm{m, nullptr, nullptr, ""};
    if (with_files && m.IsFileBacked() && !m.deleted) sm.file = OpenFile(m.path);
    out.push_back(std::move(sm));
  }
  return out;
}

// A temporary file with `bytes`, opened.
std::shared_ptr<const SnapshotFile> TempFile(const std::vector<uint8_t>& bytes) {
  char name[] = "/tmp/snapshot_target_test.XXXXXX";
  int fd = mkstemp(name);
  EXPECT_GE(fd, 0);
  unlink(name);
  EXPECT_EQ(write(fd, bytes.data(), bytes.size()),
            static_cast<ssize_t>(bytes.size()));
  absl::StatusOr<std::shared_ptr<const SnapshotFile>> f =
      SnapshotFile::FromFd(memory::ScopedFd(fd));
  EXPECT_TRUE(f.ok()) << f.status();
  return *f;
}

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
  std::shared_ptr<const SnapshotFile> file = TempFile(file_bytes);

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

// A stack we laid out by hand, at an address that has nothing to do with
// any real stack: snapshot_leaf's frame (saved rbp, return address into
// snapshot_outer), then snapshot_outer's CFI ends the walk.
TEST(SnapshotTargetTest, UnwindsHandMadeStack) {
  constexpr uint64_t kStack = 0x7fff12340000;
  const uint64_t leaf_pc = reinterpret_cast<uint64_t>(snapshot_leaf_body_addr);
  const uint64_t ret = reinterpret_cast<uint64_t>(snapshot_outer_ret_addr);
  Snapshot s;
  s.tid = 77;
  s.registers = Regs(leaf_pc, kStack);
  s.registers.Set(kRbp, kStack);  // after push %rbp; mov %rsp,%rbp
  s.stack_address = kStack;
  s.stack.resize(32);
  uint64_t saved_rbp = 0x1111, words[2] = {saved_rbp, ret};
  std::memcpy(s.stack.data(), words, sizeof(words));
  s.mappings = OwnMappings(/*with_files=*/true);

  absl::StatusOr<std::unique_ptr<Target>> t =
      CreateSnapshotTarget(std::move(s), nullptr);
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ((*t)->Threads(), std::vector<pid_t>{77});
  unwinder::ModuleCache cache;
  unwinder::ProcessStacks out = unwinder::UnwindTarget(**t, cache, {});
  ASSERT_EQ(out.threads.size(), 1u);
  const unwinder::ThreadStack& th = out.threads[0];
  ASSERT_EQ(th.frames.size(), 2u) << th.stop_detail;
  EXPECT_EQ(th.frames[0].pc, leaf_pc);
  EXPECT_EQ(th.frames[0].method, unwinder::Method::kInitial);
  EXPECT_EQ(th.frames[1].pc, ret);
  EXPECT_EQ(th.frames[1].sp, kStack + 16);
  EXPECT_EQ(th.frames[1].method, unwinder::Method::kEhFrame);
  EXPECT_EQ(th.stop, unwinder::StopReason::kEndOfStack) << th.stop_detail;
  ASSERT_EQ(out.modules.size(), 1u);
  char exe[4096];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe));
  EXPECT_EQ(out.modules[0].path, std::string(exe, n > 0 ? n : 0));
  EXPECT_FALSE(out.modules[0].build_id.empty());
}

TEST(SnapshotTargetTest, StackCopyTooShortIsMemoryErrorUnlessProcessHasIt) {
  constexpr uint64_t kStack = 0x7fff12340000;
  const uint64_t leaf_pc = reinterpret_cast<uint64_t>(snapshot_leaf_body_addr);
  const uint64_t ret = reinterpret_cast<uint64_t>(snapshot_outer_ret_addr);
  auto make = [&] {
    Snapshot s;
    s.registers = Regs(leaf_pc, kStack);
    s.registers.Set(kRbp, kStack);
    s.stack_address = kStack;
    s.stack.assign(8, 0);  // the saved rbp only: no return address
    s.mappings = OwnMappings(true);
    return s;
  };
  unwinder::ModuleCache cache;
  {
    absl::StatusOr<std::unique_ptr<Target>> t = CreateSnapshotTarget(make(), nullptr);
    ASSERT_TRUE(t.ok());
    unwinder::ProcessStacks out = unwinder::UnwindTarget(**t, cache, {});
    EXPECT_EQ(out.threads[0].frames.size(), 1u);
    EXPECT_EQ(out.threads[0].stop, unwinder::StopReason::kMemoryError);
  }
  {
    auto process = std::make_unique<memory::testing::MapMemory>();
    process->PutLe(kStack + 8, ret, 8);
    absl::StatusOr<std::unique_ptr<Target>> t =
        CreateSnapshotTarget(make(), std::move(process));
    ASSERT_TRUE(t.ok());
    unwinder::ProcessStacks out = unwinder::UnwindTarget(**t, cache, {});
    ASSERT_EQ(out.threads[0].frames.size(), 2u);
    EXPECT_EQ(out.threads[0].frames[1].pc, ret);
  }
}

// This thread's real registers and a copy of its stack, unwound with only
// the copy and the module files, must give the frames an unwind of the live
// process gives.
// A raw copy of this thread's own stack, as a profiler takes it: under
// ASan the stack holds the redzones between frames, which this copy reads
// on purpose (a plain memcpy would be a stack-buffer-underflow report).
__attribute__((no_sanitize("address"))) void CopyOwnStack(uint8_t* dst,
                                                         uint64_t src,
                                                         size_t n) {
  const volatile uint8_t* p = reinterpret_cast<const volatile uint8_t*>(src);
  for (size_t i = 0; i < n; ++i) dst[i] = p[i];
}

__attribute__((noinline)) void CompareWithLive() {
  arch::RegisterSet regs;
  UNWINDD_CAPTURE_X86_64_REGISTERS(regs);
  unwinder::ModuleCache cache;
  unwinder::testing::SelfTarget live(regs);
  unwinder::ProcessStacks want = unwinder::UnwindTarget(live, cache, {});

  Snapshot s;
  s.tid = gettid();
  s.registers = regs;
  s.stack_address = regs.sp();
  // Up to the top of this thread's stack mapping (perf copies at most
  // 64 KiB; gtest's main thread stack is shallow enough for that).
  // Named: a range-for over *ReadMaps(...) would iterate a destroyed
  // temporary (ASan: stack-use-after-scope).
  absl::StatusOr<std::vector<Mapping>> maps = ReadMaps(getpid());
  ASSERT_TRUE(maps.ok()) << maps.status();
  for (const Mapping& m : *maps) {
    if (m.Contains(regs.sp())) s.stack.resize(std::min<uint64_t>(m.end - regs.sp(), 1 << 16));
  }
  ASSERT_FALSE(s.stack.empty());
  CopyOwnStack(s.stack.data(), regs.sp(), s.stack.size());
  s.mappings = OwnMappings(true);
  absl::StatusOr<std::unique_ptr<Target>> t = CreateSnapshotTarget(std::move(s), nullptr);
  ASSERT_TRUE(t.ok()) << t.status();
  unwinder::ProcessStacks got = unwinder::UnwindTarget(**t, cache, {});

  ASSERT_EQ(got.threads.size(), 1u);
  const unwinder::ThreadStack& g = got.threads[0];
  const unwinder::ThreadStack& w = want.threads[0];
  ASSERT_GE(w.frames.size(), 5u);
  ASSERT_EQ(g.frames.size(), w.frames.size()) << g.stop_detail;
  for (size_t i = 0; i < g.frames.size(); ++i) {
    EXPECT_EQ(g.frames[i].pc, w.frames[i].pc) << "frame " << i;
    EXPECT_EQ(g.frames[i].sp, w.frames[i].sp) << "frame " << i;
    EXPECT_EQ(g.frames[i].method, w.frames[i].method) << "frame " << i;
  }
  EXPECT_EQ(g.stop, w.stop);
  asm volatile("" ::: "memory");
}

TEST(SnapshotTargetTest, CopiedStackUnwindsLikeTheLiveProcess) { CompareWithLive(); }

// One SnapshotTarget and one AddressSpace over it serve a stream of
// samples: each sample is unwound from its own stack only, nothing of a
// sample survives ClearSample, and a rejected sample leaves none set.
TEST(SnapshotTargetTest, SamplesReplaceEachOtherOverOneAddressSpace) {
  constexpr uint64_t kStack = 0x7fff12340000;
  const uint64_t leaf_pc = reinterpret_cast<uint64_t>(snapshot_leaf_body_addr);
  const uint64_t ret = reinterpret_cast<uint64_t>(snapshot_outer_ret_addr);
  absl::StatusOr<std::unique_ptr<SnapshotTarget>> t =
      SnapshotTarget::Create(arch::Arch::kX86_64, 0, OwnMappings(true));
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_TRUE((*t)->Threads().empty());
  unwinder::ModuleCache cache;
  unwinder::AddressSpace space(**t, cache);

  arch::RegisterSet regs = Regs(leaf_pc, kStack);
  regs.Set(kRbp, kStack);
  // The saved rbp, then the return address into snapshot_outer.
  std::vector<uint8_t> full(16, 0);
  std::memcpy(full.data() + 8, &ret, 8);
  std::vector<uint8_t> short_copy(8, 0);  // no return address

  auto unwind = [&](pid_t tid, absl::Span<const uint8_t> stack) {
    absl::Status s = (*t)->SetSample({tid, regs, kStack, stack, nullptr});
    EXPECT_TRUE(s.ok()) << s;
    unwinder::ProcessStacks out = unwinder::UnwindTarget(**t, space, {});
    (*t)->ClearSample();
    EXPECT_EQ(out.threads.size(), 1u);
    return out.threads.empty() ? unwinder::ThreadStack{} : out.threads[0];
  };
  unwinder::ThreadStack first = unwind(11, full);
  ASSERT_EQ(first.frames.size(), 2u) << first.stop_detail;
  EXPECT_EQ(first.tid, 11);
  EXPECT_EQ(first.frames[1].pc, ret);
  EXPECT_EQ(first.stop, unwinder::StopReason::kEndOfStack);

  // Cleared: no thread, and the last sample's stack is not readable.
  EXPECT_TRUE((*t)->Threads().empty());
  EXPECT_FALSE((*t)->InitialRegisters(11).ok());
  EXPECT_TRUE(Read(**t, kStack, 8).empty());

  // The next sample has only the saved rbp: the return address that the
  // first one had at kStack + 8 must not be found.
  unwinder::ThreadStack second = unwind(12, short_copy);
  EXPECT_EQ(second.tid, 12);
  EXPECT_EQ(second.frames.size(), 1u);
  EXPECT_EQ(second.stop, unwinder::StopReason::kMemoryError);

  // And the same address space, modules and cached steps, again.
  unwinder::ThreadStack third = unwind(13, full);
  ASSERT_EQ(third.frames.size(), first.frames.size());
  for (size_t i = 0; i < third.frames.size(); ++i) {
    EXPECT_EQ(third.frames[i].pc, first.frames[i].pc);
    EXPECT_EQ(third.frames[i].sp, first.frames[i].sp);
    EXPECT_EQ(third.frames[i].module, first.frames[i].module);
  }

  // Rejected samples set nothing.
  absl::Status bad = (*t)->SetSample(
      {14, arch::RegisterSet(arch::Arch::kX86_64), kStack, full, nullptr});
  EXPECT_EQ(bad.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE((*t)->Threads().empty());
  EXPECT_EQ((*t)->SetSample({15, regs, ~uint64_t{0} - 4, full, nullptr}).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(Read(**t, kStack, 8).empty());
  arch::RegisterSet aarch64(arch::Arch::kAArch64);
  EXPECT_FALSE((*t)->SetSample({16, aarch64, kStack, full, nullptr}).ok());
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

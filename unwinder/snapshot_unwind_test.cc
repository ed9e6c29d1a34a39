// Unwinds over snapshots (proc/snapshot_target.h): (1) a hand-made stack
// over two assembly functions whose CFI we wrote, and (2) a copy of this
// thread's real stack, compared with an unwind of the live process; and a
// stream of samples over one address space.
#include <unistd.h>

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "arch/arch.h"
#include "gtest/gtest.h"
#include "memory/testing/map_memory.h"
#include "proc/maps.h"
#include "proc/snapshot_target.h"
#include "proc/testing/snapshot_files.h"
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

namespace unwindd::unwinder {
namespace {

using proc::CreateSnapshotTarget;
using proc::Mapping;
using proc::ReadMaps;
using proc::Snapshot;
using proc::SnapshotTarget;
using proc::Target;
using proc::testing::OwnMappings;

constexpr int kRbp = 6, kRsp = 7, kRip = 16;

arch::RegisterSet Regs(uint64_t pc, uint64_t sp) {
  arch::RegisterSet r(arch::Arch::kX86_64);
  r.Set(kRip, pc);
  r.Set(kRsp, sp);
  return r;
}

std::vector<uint8_t> Read(Target& t, uint64_t addr, size_t n) {
  std::vector<uint8_t> buf(n);
  if (!t.memory().ReadFully(addr, absl::MakeSpan(buf)).ok()) return {};
  return buf;
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
  ModuleCache cache;
  ProcessStacks out = UnwindTarget(**t, cache, {});
  ASSERT_EQ(out.threads.size(), 1u);
  const ThreadStack& th = out.threads[0];
  ASSERT_EQ(th.frames.size(), 2u) << th.stop_detail;
  EXPECT_EQ(th.frames[0].pc, leaf_pc);
  EXPECT_EQ(th.frames[0].method, Method::kInitial);
  EXPECT_EQ(th.frames[1].pc, ret);
  EXPECT_EQ(th.frames[1].sp, kStack + 16);
  EXPECT_EQ(th.frames[1].method, Method::kEhFrame);
  EXPECT_EQ(th.stop, StopReason::kEndOfStack) << th.stop_detail;
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
  ModuleCache cache;
  {
    absl::StatusOr<std::unique_ptr<Target>> t = CreateSnapshotTarget(make(), nullptr);
    ASSERT_TRUE(t.ok());
    ProcessStacks out = UnwindTarget(**t, cache, {});
    EXPECT_EQ(out.threads[0].frames.size(), 1u);
    EXPECT_EQ(out.threads[0].stop, StopReason::kMemoryError);
  }
  {
    auto process = std::make_unique<memory::testing::MapMemory>();
    process->PutLe(kStack + 8, ret, 8);
    absl::StatusOr<std::unique_ptr<Target>> t =
        CreateSnapshotTarget(make(), std::move(process));
    ASSERT_TRUE(t.ok());
    ProcessStacks out = UnwindTarget(**t, cache, {});
    ASSERT_EQ(out.threads[0].frames.size(), 2u);
    EXPECT_EQ(out.threads[0].frames[1].pc, ret);
  }
}

// A raw copy of this thread's own stack, as a profiler takes it: under
// ASan the stack holds the redzones between frames, which this copy reads
// on purpose (a plain memcpy would be a stack-buffer-underflow report).
__attribute__((no_sanitize("address"))) void CopyOwnStack(uint8_t* dst, uint64_t src,
                                                         size_t n) {
  const volatile uint8_t* p = reinterpret_cast<const volatile uint8_t*>(src);
  for (size_t i = 0; i < n; ++i) dst[i] = p[i];
}

// This thread's real registers and a copy of its stack, unwound with only
// the copy and the module files, must give the frames an unwind of the live
// process gives.
__attribute__((noinline)) void CompareWithLive() {
  arch::RegisterSet regs;
  UNWINDD_CAPTURE_X86_64_REGISTERS(regs);
  ModuleCache cache;
  unwinder::testing::SelfTarget live(regs);
  ProcessStacks want = UnwindTarget(live, cache, {});

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
  ProcessStacks got = UnwindTarget(**t, cache, {});

  ASSERT_EQ(got.threads.size(), 1u);
  const ThreadStack& g = got.threads[0];
  const ThreadStack& w = want.threads[0];
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
  ModuleCache cache;
  AddressSpace space(**t, cache);

  arch::RegisterSet regs = Regs(leaf_pc, kStack);
  regs.Set(kRbp, kStack);
  // The saved rbp, then the return address into snapshot_outer.
  std::vector<uint8_t> full(16, 0);
  std::memcpy(full.data() + 8, &ret, 8);
  std::vector<uint8_t> short_copy(8, 0);  // no return address

  auto unwind = [&](pid_t tid, absl::Span<const uint8_t> stack) {
    absl::Status s = (*t)->SetSample({tid, regs, kStack, stack, nullptr});
    EXPECT_TRUE(s.ok()) << s;
    ProcessStacks out = UnwindTarget(**t, space, {});
    (*t)->ClearSample();
    EXPECT_EQ(out.threads.size(), 1u);
    return out.threads.empty() ? ThreadStack{} : out.threads[0];
  };
  ThreadStack first = unwind(11, full);
  ASSERT_EQ(first.frames.size(), 2u) << first.stop_detail;
  EXPECT_EQ(first.tid, 11);
  EXPECT_EQ(first.frames[1].pc, ret);
  EXPECT_EQ(first.stop, StopReason::kEndOfStack);

  // Cleared: no thread, and the last sample's stack is not readable.
  EXPECT_TRUE((*t)->Threads().empty());
  EXPECT_FALSE((*t)->InitialRegisters(11).ok());
  EXPECT_TRUE(Read(**t, kStack, 8).empty());

  // The next sample has only the saved rbp: the return address that the
  // first one had at kStack + 8 must not be found.
  ThreadStack second = unwind(12, short_copy);
  EXPECT_EQ(second.tid, 12);
  EXPECT_EQ(second.frames.size(), 1u);
  EXPECT_EQ(second.stop, StopReason::kMemoryError);

  // And the same address space, modules and cached steps, again.
  ThreadStack third = unwind(13, full);
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

}  // namespace
}  // namespace unwindd::unwinder

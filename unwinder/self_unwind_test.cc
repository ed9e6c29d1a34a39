// Unwinds the test's own thread and compares every frame with glibc's
// backtrace() (libgcc's unwinder, run in-process over the same CFI): an
// oracle independent of our parser, VM and step loop.
#include <execinfo.h>

#include <functional>
#include <vector>

#include "absl/strings/str_format.h"
#include "gtest/gtest.h"
#include "unwinder/module_cache.h"
#include "unwinder/testing/self_target.h"
#include "unwinder/unwinder.h"

namespace unwindd::unwinder {
namespace {

std::string Dump(const ThreadStack& t, const std::vector<uint64_t>& bt) {
  std::string out;
  for (size_t i = 0; i < std::max(t.frames.size(), bt.size()); ++i) {
    absl::StrAppendFormat(&out, "#%d ours 0x%x backtrace 0x%x\n", i,
                          i < t.frames.size() ? t.frames[i].pc : 0,
                          i < bt.size() ? bt[i] : 0);
  }
  return out + std::string(StopReasonName(t.stop)) + " " + t.stop_detail;
}

// The unwind runs inside Leaf, right after the capture: the captured frames
// must still be live on the stack (later calls only use the stack below the
// captured rsp).
struct Captured {
  std::function<void(const arch::RegisterSet&)> unwind;
  std::vector<uint64_t> backtrace;
};

__attribute__((noinline)) void Leaf(Captured* out) {
  arch::RegisterSet regs;
  UNWINDD_CAPTURE_X86_64_REGISTERS(regs);
  out->unwind(regs);
  void* bt[256];
  int n = backtrace(bt, 256);
  // The sanitizers' runtime intercepts backtrace(): its first frame is then
  // the interceptor's, not Leaf's.
  int first = 0;
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  first = 1;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
  first = 1;  // clang 14 defines no __SANITIZE_*__ macro
#endif
#endif
  for (int i = first; i < n; ++i) out->backtrace.push_back(reinterpret_cast<uint64_t>(bt[i]));
  asm volatile("" ::: "memory");
}

__attribute__((noinline)) void Recurse(int depth, Captured* out) {
  if (depth == 0) {
    Leaf(out);
  } else {
    Recurse(depth - 1, out);
  }
  asm volatile("" ::: "memory");
}

__attribute__((noinline)) void WithAlloca(int n, Captured* out) {
  volatile char* p = static_cast<volatile char*>(__builtin_alloca(n));
  p[0] = 1;
  std::function<void()> f = [out] { Recurse(7, out); };
  f();
  asm volatile("" ::: "memory");
}

ProcessStacks UnwindHere(arch::RegisterSet regs, const UnwindOptions& options) {
  testing::SelfTarget target(regs);
  ModuleCache cache;
  return UnwindTarget(target, cache, options);
}

TEST(SelfUnwindTest, MatchesBacktrace) {
  ProcessStacks stacks;
  Captured c;
  c.unwind = [&](const arch::RegisterSet& regs) {
    stacks = UnwindHere(regs, UnwindOptions{});
  };
  WithAlloca(100, &c);
  ASSERT_EQ(stacks.threads.size(), 1u);
  const ThreadStack& t = stacks.threads[0];
  ASSERT_GE(c.backtrace.size(), 15u);
  // Frame 0 differs by construction (captured before the backtrace call);
  // every caller frame must be the same return address.
  ASSERT_GE(t.frames.size(), c.backtrace.size()) << Dump(t, c.backtrace);
  for (size_t i = 1; i < c.backtrace.size(); ++i) {
    EXPECT_EQ(t.frames[i].pc, c.backtrace[i]) << "frame " << i;
    EXPECT_EQ(t.frames[i].method, Method::kEhFrame) << "frame " << i;
  }
  EXPECT_EQ(t.stop, StopReason::kEndOfStack) << t.stop_detail;
  // Every frame lies in a module, with a module-relative PC.
  for (const Frame& f : t.frames) {
    ASSERT_GE(f.module, 0);
    EXPECT_EQ(f.rel_pc, f.pc - stacks.modules[f.module].load_bias);
  }
}

std::vector<uint64_t> Pcs(const ThreadStack& t) {
  std::vector<uint64_t> pcs;
  for (const Frame& f : t.frames) pcs.push_back(f.pc);
  return pcs;
}

// The same address space again: the step cache answers the second time and
// must give the same frames; a memory error on a warm path is still one.
TEST(SelfUnwindTest, WarmStepCacheGivesTheSameFrames) {
  ThreadStack cold, warm, other_policy, broken;
  size_t cache_bytes = 0;
  Captured c;
  c.unwind = [&](const arch::RegisterSet& regs) {
    testing::SelfTarget target(regs);
    ModuleCache cache;
    AddressSpace space(target, cache);
    cold = UnwindRegisters(space, target.memory(), regs, UnwindOptions{});
    cache_bytes = space.step_cache().bytes();
    warm = UnwindRegisters(space, target.memory(), regs, UnwindOptions{});
    UnwindOptions eh_only;
    eh_only.sources = *SourcePolicy::Parse("eh_frame");
    other_policy = UnwindRegisters(space, target.memory(), regs, eh_only);
    arch::RegisterSet bad = regs;
    bad.set_sp(0x1000);
    bad.Set(6, 0x1000);
    broken = UnwindRegisters(space, target.memory(), bad, UnwindOptions{});
  };
  WithAlloca(64, &c);
  EXPECT_GT(cache_bytes, 0u);
  ASSERT_GE(cold.frames.size(), 15u);
  EXPECT_EQ(Pcs(warm), Pcs(cold));
  EXPECT_EQ(warm.stop, cold.stop);
  EXPECT_EQ(Pcs(other_policy), Pcs(cold));
  for (size_t i = 0; i < cold.frames.size(); ++i) {
    EXPECT_EQ(warm.frames[i].sp, cold.frames[i].sp) << i;
    EXPECT_EQ(warm.frames[i].method, cold.frames[i].method) << i;
    EXPECT_EQ(warm.frames[i].module, cold.frames[i].module) << i;
    EXPECT_EQ(warm.frames[i].rel_pc, cold.frames[i].rel_pc) << i;
  }
  EXPECT_EQ(broken.stop, StopReason::kMemoryError) << broken.stop_detail;
}

TEST(SelfUnwindTest, MaxFrames) {
  UnwindOptions options;
  options.max_frames = 5;
  ProcessStacks stacks;
  Captured c;
  c.unwind = [&](const arch::RegisterSet& regs) { stacks = UnwindHere(regs, options); };
  WithAlloca(16, &c);
  EXPECT_EQ(stacks.threads[0].frames.size(), 5u);
  EXPECT_EQ(stacks.threads[0].stop, StopReason::kMaxFrames);
}

TEST(SelfUnwindTest, GarbageRegistersStopCleanly) {
  ModuleCache cache;
  for (uint64_t pc : {uint64_t{0}, uint64_t{1}, uint64_t{0xdeadbeef}, ~uint64_t{0}}) {
    arch::RegisterSet regs(arch::Arch::kX86_64);
    regs.set_pc(pc);
    regs.set_sp(0x10);
    testing::SelfTarget target(regs);
    ProcessStacks stacks = UnwindTarget(target, cache, UnwindOptions{});
    ASSERT_EQ(stacks.threads[0].frames.size(), 1u);
    EXPECT_EQ(stacks.threads[0].stop, StopReason::kNoUnwindInfo);
  }
  // A real PC with a stack pointer into nowhere: a memory error, not a crash.
  ProcessStacks stacks;
  Captured c;
  c.unwind = [&](arch::RegisterSet regs) {
    regs.set_sp(0x1000);
    regs.Set(6, 0x1000);  // rbp: the CFA of -O0 code
    stacks = UnwindHere(regs, UnwindOptions{});
  };
  WithAlloca(16, &c);
  EXPECT_EQ(stacks.threads[0].stop, StopReason::kMemoryError);
}

}  // namespace
}  // namespace unwindd::unwinder

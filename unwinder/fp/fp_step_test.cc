// The step loop with the frame-pointer source on synthetic stacks: code no
// file describes (JIT, anonymous executable memory) is unwound through the
// rbp chain when the policy has "fp", and a chain that leaves the stack, goes
// down, or is misaligned stops the walk instead of being followed.
#include <memory>
#include <vector>

#include "gtest/gtest.h"
#include "memory/testing/map_memory.h"
#include "proc/target.h"
#include "unwinder/module_cache.h"
#include "unwinder/unwinder.h"

namespace unwindd::unwinder {
namespace {

constexpr uint64_t kJit = 0x10000;       // anonymous r-x
constexpr uint64_t kStack = 0x7ffd0000;  // [stack] base
constexpr uint64_t kStackEnd = 0x7ffe0000;

class JitTarget : public proc::Target {
 public:
  explicit JitTarget(arch::RegisterSet regs) : regs_(regs) {
    proc::Mapping jit;
    jit.start = kJit, jit.end = kJit + 0x10000, jit.read = jit.exec = true;
    proc::Mapping stack;
    stack.start = kStack, stack.end = kStackEnd,
    stack.read = stack.write = true;
    stack.path = "[stack]";
    maps_ = {jit, stack};
  }
  arch::Arch arch() const override { return regs_.arch(); }
  pid_t pid() const override { return 0; }
  std::vector<pid_t> Threads() const override { return {1}; }
  absl::StatusOr<arch::RegisterSet> InitialRegisters(pid_t) override {
    return regs_;
  }
  memory::Memory& memory() override { return mem_; }
  const std::vector<proc::Mapping>& mappings() const override { return maps_; }
  std::vector<std::string> FileCandidates(const proc::Mapping&) const override {
    return {};
  }
  memory::testing::MapMemory& stack() { return mem_; }

 private:
  arch::RegisterSet regs_;
  memory::testing::MapMemory mem_;
  std::vector<proc::Mapping> maps_;
};

// Frame records at `fps` (each {next fp, return address}), innermost first;
// the last record's saved rbp is 0 (the end of the chain).
std::unique_ptr<JitTarget> Chain(const std::vector<uint64_t>& fps,
                                 const std::vector<uint64_t>& ras) {
  arch::RegisterSet regs(arch::Arch::kX86_64);
  regs.set_pc(kJit + 0x10);
  regs.set_sp(fps.front() - 0x20);
  regs.Set(6, fps.front());
  auto t = std::make_unique<JitTarget>(regs);
  for (size_t i = 0; i < fps.size(); ++i) {
    t->stack().PutLe(fps[i], i + 1 < fps.size() ? fps[i + 1] : 0, 8);
    t->stack().PutLe(fps[i] + 8, ras[i], 8);
  }
  return t;
}

ThreadStack Unwind(JitTarget& t, const SourcePolicy& policy) {
  ModuleCache cache;
  UnwindOptions o;
  o.sources = policy;
  return UnwindTarget(t, cache, o).threads.at(0);
}

TEST(FramePointerStepTest, JitCodeIsUnwoundThroughTheChain) {
  std::unique_ptr<JitTarget> t =
      Chain({kStack + 0x100, kStack + 0x180, kStack + 0x300},
            {kJit + 0x205, kJit + 0x405, kJit + 0x605});
  ThreadStack s = Unwind(*t, SourcePolicy());
  ASSERT_EQ(s.frames.size(), 4u) << s.stop_detail;
  EXPECT_EQ(s.frames[0].method, Method::kInitial);
  for (int i = 1; i < 4; ++i) {
    EXPECT_EQ(s.frames[i].method, Method::kFramePointer);
    EXPECT_EQ(s.frames[i].module, -1);
  }
  EXPECT_EQ(s.frames[1].pc, kJit + 0x205);
  EXPECT_EQ(s.frames[3].pc, kJit + 0x605);
  EXPECT_EQ(s.frames[1].sp, kStack + 0x110);  // CFA = rbp + 16
  // The last record's saved rbp is 0: the chain ends there.
  EXPECT_EQ(s.stop, StopReason::kEndOfStack) << s.stop_detail;
}

TEST(FramePointerStepTest, WithoutFpInThePolicyJitCodeHasNoUnwindInfo) {
  std::unique_ptr<JitTarget> t = Chain({kStack + 0x100}, {kJit + 0x205});
  ThreadStack s =
      Unwind(*t, SourcePolicy::Of({Source::kEhFrame, Source::kSframe}));
  EXPECT_EQ(s.frames.size(), 1u);
  EXPECT_EQ(s.stop, StopReason::kNoUnwindInfo);
}

TEST(FramePointerStepTest, ChainLeavingTheStackStops) {
  // The second record points past the [stack] mapping.
  std::unique_ptr<JitTarget> t =
      Chain({kStack + 0x100, kStackEnd + 0x1000}, {kJit + 0x205, kJit + 0x405});
  ThreadStack s = Unwind(*t, SourcePolicy());
  ASSERT_EQ(s.frames.size(), 2u);
  EXPECT_EQ(s.stop, StopReason::kNoUnwindInfo);
  EXPECT_NE(s.stop_detail.find("outside the stack"), std::string::npos)
      << s.stop_detail;
}

TEST(FramePointerStepTest, ChainGoingDownStops) {
  // A saved rbp below the current sp would make the CFA decrease.
  std::unique_ptr<JitTarget> t =
      Chain({kStack + 0x100, kStack + 0x80}, {kJit + 0x205, kJit + 0x405});
  ThreadStack s = Unwind(*t, SourcePolicy());
  ASSERT_EQ(s.frames.size(), 2u);
  EXPECT_EQ(s.stop, StopReason::kNoUnwindInfo);
  EXPECT_NE(s.stop_detail.find("below sp"), std::string::npos) << s.stop_detail;
}

TEST(FramePointerStepTest, MisalignedFramePointerStops) {
  std::unique_ptr<JitTarget> t =
      Chain({kStack + 0x100, kStack + 0x183}, {kJit + 0x205, kJit + 0x405});
  ThreadStack s = Unwind(*t, SourcePolicy());
  ASSERT_EQ(s.frames.size(), 2u);
  EXPECT_NE(s.stop_detail.find("aligned"), std::string::npos) << s.stop_detail;
}

TEST(FramePointerStepTest, SelfReferencingRecordStops) {
  // A record that points at itself: caller sp = rbp + 16, then rbp == sp - 16.
  std::unique_ptr<JitTarget> t = Chain({kStack + 0x100}, {kJit + 0x205});
  t->stack().PutLe(kStack + 0x100, kStack + 0x100, 8);
  ThreadStack s = Unwind(*t, SourcePolicy());
  ASSERT_EQ(s.frames.size(), 2u);
  EXPECT_EQ(s.stop, StopReason::kNoUnwindInfo);
}

TEST(FramePointerStepTest, UnreadableRecordIsAMemoryError) {
  std::unique_ptr<JitTarget> t = Chain({kStack + 0x100}, {kJit + 0x205});
  arch::RegisterSet regs(arch::Arch::kX86_64);
  regs.set_pc(kJit);
  regs.set_sp(kStack + 0x800);
  regs.Set(6, kStack + 0x900);  // in the stack mapping, but nothing stored
  JitTarget empty(regs);
  ThreadStack s = Unwind(empty, SourcePolicy());
  EXPECT_EQ(s.frames.size(), 1u);
  EXPECT_EQ(s.stop, StopReason::kMemoryError) << s.stop_detail;
}

}  // namespace
}  // namespace unwindd::unwinder

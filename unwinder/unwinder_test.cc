// The step loop's own decisions (unwinder.h), over a fake target whose
// every byte the test chose (in the way of libunwindstack's UnwinderTest):
// one test per stop reason, per source fallback, and per signal-frame case.
// The module is a real ELF file (testing/elf_builder.h) with hand-written
// .eh_frame CFI and, for the SFrame cases, a hand-built .sframe.
#include "unwinder/unwinder.h"

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "unwinder/cfi/test_bytes.h"
#include "unwinder/module_cache.h"
#include "unwinder/sframe/testing/sframe_builder.h"
#include "unwinder/testing/elf_builder.h"
#include "unwinder/testing/fake_target.h"

namespace unwindd::unwinder {
namespace {

using testing::ElfSpec;
using testing::FakeTarget;

constexpr int kRbp = 6, kRsp = 7, kRip = 16;
constexpr uint64_t kBase = 0x400000;    // load bias of the module
constexpr uint64_t kText = 0x1000;      // file addresses
constexpr uint64_t kEhFrame = 0x2000;
constexpr uint64_t kStackLo = 0x7ff0000, kStackHi = 0x8000000;
constexpr uint64_t kSp = 0x7ff8000;

// Functions of the test module (file addresses, 16 bytes each) and what
// their CFI says.
constexpr uint64_t kLeaf = 0x1000;      // CFA = rsp + 8, RA at CFA - 8
constexpr uint64_t kOuter = 0x1010;     // RA undefined: the outermost frame
constexpr uint64_t kSame = 0x1020;      // CFA = rsp, RA at CFA: no progress
constexpr uint64_t kDown = 0x1030;      // CFA = rsp - 16: sp goes down
constexpr uint64_t kBad = 0x1040;       // DW_CFA 0x2d: not valid on x86_64
constexpr uint64_t kTrampoline = 0x1050;  // rt_sigreturn bytes, no CFI
constexpr uint64_t kFp = 0x1060;        // push/mov rbp prologue; CFA = rsp + 16
constexpr uint64_t kAfter = 0x1070;     // CFA = rsp + 8, FDE starts exactly here
constexpr uint64_t kSignal = 0x1080;    // CIE with 'S': a signal frame

constexpr uint64_t At(uint64_t file_address) { return kBase + file_address; }

// One FDE: [start, start + 16) and its CFA instructions.
struct Fde {
  uint64_t start;
  std::vector<uint8_t> instructions;
  bool signal_frame = false;
};

// .eh_frame at kEhFrame: a CIE (code align 1, data align -8, RA column 16,
// pcrel|sdata4 FDE pointers; CFA = rsp + 8, RA at CFA - 8), one with 'S',
// and the FDEs.
std::vector<uint8_t> EhFrame(const std::vector<Fde>& fdes) {
  TestBytes section;
  auto cie = [&section](const char* augmentation) {
    return AppendEhCie(section, TestBytes()
                                    .U8(1)
                                    .Str(augmentation)
                                    .Uleb(1)
                                    .Sleb(-8)
                                    .U8(kRip)
                                    .Uleb(1)
                                    .U8(0x1b)  // DW_EH_PE_pcrel | sdata4
                                    .Raw({0x0c, kRsp, 8})      // def_cfa rsp, 8
                                    .Raw({0x80 | kRip, 1}));   // offset rip, -8
  };
  const size_t plain = cie("zR");
  const size_t with_s = cie("zRS");
  for (const Fde& f : fdes) {
    const size_t cie_offset = f.signal_frame ? with_s : plain;
    // pc_begin is relative to its own field: 8 bytes into the entry.
    const int64_t field = static_cast<int64_t>(kEhFrame + section.size() + 8);
    TestBytes body;
    body.S32(static_cast<int32_t>(static_cast<int64_t>(f.start) - field)).S32(16).Uleb(0);
    for (uint8_t b : f.instructions) body.U8(b);
    AppendEhFde(section, cie_offset, body);
  }
  section.U32(0);  // terminator
  return section.bytes();
}

std::vector<uint8_t> Text() {
  std::vector<uint8_t> text(0x90, 0x90);  // nop
  const std::vector<uint8_t> rt_sigreturn = {0x48, 0xc7, 0xc0, 0x0f, 0x00,
                                             0x00, 0x00, 0x0f, 0x05};
  std::copy(rt_sigreturn.begin(), rt_sigreturn.end(), text.begin() + (kTrampoline - kText));
  const std::vector<uint8_t> prologue = {0x55, 0x48, 0x89, 0xe5};  // push; mov
  std::copy(prologue.begin(), prologue.end(), text.begin() + (kFp - kText));
  return text;
}

ElfSpec TestModule(const std::vector<uint8_t>& sframe = {}) {
  ElfSpec spec;
  spec.sections.push_back({".text", kText, Text()});
  spec.sections.push_back(
      {".eh_frame", kEhFrame,
       EhFrame({{kLeaf, {}},
                {kOuter, {0x07, kRip}},                 // undefined rip
                {kSame, {0x0e, 0x00, 0x80 | kRip, 0}},  // cfa rsp+0, rip at cfa
                {kDown, {0x12, kRsp, 2}},               // def_cfa_sf rsp, -16
                {kBad, {0x2d}},
                {kFp, {0x0e, 16}},                      // cfa rsp+16
                {kAfter, {}},
                {kSignal, {}, /*signal_frame=*/true}})});
  if (!sframe.empty()) spec.sections.push_back({".sframe", 0x3000, sframe});
  return spec;
}

arch::RegisterSet Regs(uint64_t pc, uint64_t sp) {
  arch::RegisterSet r(arch::Arch::kX86_64);
  r.Set(kRip, pc);
  r.Set(kRsp, sp);
  return r;
}

class UnwinderTest : public ::testing::Test {
 protected:
  void SetUp() override { UseModule(TestModule(), "module.so"); }

  void UseModule(const ElfSpec& spec, const std::string& name) {
    target_ = std::make_unique<FakeTarget>(arch::Arch::kX86_64);
    target_->MapFile(kBase, testing::WriteElf(spec, name));
    target_->MapStack(kStackLo, kStackHi);
  }
  void Put(uint64_t addr, uint64_t word) { target_->memory_map().PutLe(addr, word, 8); }

  // Unwinds thread 1 from `regs`.
  ThreadStack Unwind(const arch::RegisterSet& regs, UnwindOptions options = {}) {
    target_->AddThread(1, regs);
    ProcessStacks out = UnwindTarget(*target_, cache_, options);
    EXPECT_EQ(out.threads.size(), 1u);
    return out.threads.empty() ? ThreadStack{} : out.threads[0];
  }

  static std::vector<uint64_t> Pcs(const ThreadStack& t) {
    std::vector<uint64_t> out;
    for (const Frame& f : t.frames) out.push_back(f.pc);
    return out;
  }

  std::unique_ptr<FakeTarget> target_;
  ModuleCache cache_;
};

SourcePolicy Only(std::initializer_list<Source> s) { return SourcePolicy::Of(s); }

// ---- stop reasons ----

TEST_F(UnwinderTest, AnUndefinedReturnAddressEndsTheStack) {
  Put(kSp, At(kOuter) + 5);  // returns into kOuter, whose RA is undefined
  ThreadStack t = Unwind(Regs(At(kLeaf) + 4, kSp));
  EXPECT_EQ(t.stop, StopReason::kEndOfStack) << t.stop_detail;
  EXPECT_EQ(Pcs(t), (std::vector<uint64_t>{At(kLeaf) + 4, At(kOuter) + 5}));
  EXPECT_EQ(t.frames[1].method, Method::kEhFrame);
  EXPECT_EQ(t.frames[1].sp, kSp + 8);
  EXPECT_EQ(t.frames[1].rel_pc, kOuter + 5);
}

TEST_F(UnwinderTest, AZeroReturnAddressEndsTheStack) {
  Put(kSp, 0);
  ThreadStack t = Unwind(Regs(At(kLeaf) + 4, kSp));
  EXPECT_EQ(t.stop, StopReason::kEndOfStack);
  EXPECT_EQ(t.frames.size(), 1u);
}

TEST_F(UnwinderTest, TheSameFrameAgainIsALoop) {
  Put(kSp, At(kSame) + 4);  // the caller is this very frame
  ThreadStack t = Unwind(Regs(At(kSame) + 4, kSp));
  EXPECT_EQ(t.stop, StopReason::kLoop) << t.stop_detail;
  EXPECT_EQ(t.frames.size(), 1u);
}

TEST_F(UnwinderTest, AStackPointerGoingDownIsALoop) {
  Put(kSp - 24, At(kLeaf) + 4);  // RA at CFA - 8, CFA = sp - 16
  ThreadStack t = Unwind(Regs(At(kDown) + 4, kSp));
  EXPECT_EQ(t.stop, StopReason::kLoop) << t.stop_detail;
  EXPECT_EQ(t.frames.size(), 1u);
}

TEST_F(UnwinderTest, UnsupportedCfiIsBadUnwindInfo) {
  ThreadStack t = Unwind(Regs(At(kBad) + 4, kSp));
  EXPECT_EQ(t.stop, StopReason::kBadUnwindInfo) << t.stop_detail;
  EXPECT_NE(t.stop_detail.find("DW_CFA_GNU_window_save"), std::string::npos)
      << t.stop_detail;
}

TEST_F(UnwinderTest, AnUnreadableReturnAddressIsAMemoryError) {
  ThreadStack t = Unwind(Regs(At(kLeaf) + 4, kSp));  // nothing at kSp
  EXPECT_EQ(t.stop, StopReason::kMemoryError);
  EXPECT_EQ(t.frames.size(), 1u);
}

TEST_F(UnwinderTest, MaxFramesStopsAnEndlessChain) {
  for (int i = 0; i < 100; ++i) Put(kSp + 8 * i, At(kLeaf) + 5);
  UnwindOptions options;
  options.max_frames = 5;
  ThreadStack t = Unwind(Regs(At(kLeaf) + 4, kSp), options);
  EXPECT_EQ(t.stop, StopReason::kMaxFrames);
  ASSERT_EQ(t.frames.size(), 5u);
  for (size_t i = 1; i < t.frames.size(); ++i) EXPECT_EQ(t.frames[i].sp, kSp + 8 * i);
}

TEST_F(UnwinderTest, NoModuleAndNoFramePointerIsNoUnwindInfo) {
  ThreadStack t = Unwind(Regs(0x900000, kSp));  // rbp unknown
  EXPECT_EQ(t.stop, StopReason::kNoUnwindInfo);
  EXPECT_EQ(t.frames.size(), 1u);
  EXPECT_EQ(t.frames[0].module, -1);
}

TEST_F(UnwinderTest, CancellationIsItsOwnStopReason) {
  for (int i = 0; i < 100; ++i) Put(kSp + 8 * i, At(kLeaf) + 5);
  std::atomic<bool> cancel{true};
  UnwindOptions options;
  options.cancel = &cancel;
  ThreadStack t = Unwind(Regs(At(kLeaf) + 4, kSp), options);
  EXPECT_EQ(t.stop, StopReason::kCancelled);
  EXPECT_EQ(t.frames.size(), 1u);
}

TEST_F(UnwinderTest, RegisterErrorsFollowTheOneTable) {
  target_->FailThread(2, absl::NotFoundError("thread 2 has exited"));
  target_->FailThread(3, absl::FailedPreconditionError("not in a ptrace-stop"));
  target_->FailThread(4, absl::CancelledError("shutting down"));
  ProcessStacks out = UnwindTarget(*target_, cache_, {});
  ASSERT_EQ(out.threads.size(), 3u);
  EXPECT_EQ(out.threads[0].stop, StopReason::kThreadGone);
  EXPECT_EQ(out.threads[1].stop, StopReason::kMemoryError);
  EXPECT_EQ(out.threads[2].stop, StopReason::kCancelled);
  for (const ThreadStack& t : out.threads) EXPECT_TRUE(t.frames.empty());
}

// ---- source fallbacks ----

// A module without any unwind information: only the frame-pointer chain.
TEST_F(UnwinderTest, FramePointersWhereThereIsNoCfi) {
  ElfSpec bare;
  bare.sections.push_back({".text", kText, Text()});
  UseModule(bare, "bare.so");
  const uint64_t record = kSp + 32;
  Put(record, 0);                  // the caller's rbp: the chain ends there
  Put(record + 8, At(kLeaf) + 5);  // the return address
  arch::RegisterSet regs = Regs(At(kFp) + 8, kSp);
  regs.Set(kRbp, record);
  ThreadStack t = Unwind(regs);
  ASSERT_GE(t.frames.size(), 2u) << t.stop_detail;
  EXPECT_EQ(t.frames[1].pc, At(kLeaf) + 5);
  EXPECT_EQ(t.frames[1].method, Method::kFramePointer);
  EXPECT_EQ(t.frames[1].sp, record + 16);
}

// --sources=fp,eh_frame: the prologue says kFp keeps a frame pointer, but
// rbp holds no frame record: the next source, eh_frame, answers.
TEST_F(UnwinderTest, ABrokenChainFallsBackToTheNextSource) {
  Put(kSp + 8, At(kLeaf) + 5);  // RA at CFA - 8, CFA = rsp + 16
  Put(kSp + 16, 0);
  arch::RegisterSet regs = Regs(At(kFp) + 8, kSp);
  regs.Set(kRbp, 0x1003);  // misaligned: no record
  UnwindOptions options;
  options.sources = Only({Source::kFramePointer, Source::kEhFrame});
  ThreadStack t = Unwind(regs, options);
  ASSERT_GE(t.frames.size(), 2u) << t.stop_detail;
  EXPECT_EQ(t.frames[1].pc, At(kLeaf) + 5);
  EXPECT_EQ(t.frames[1].method, Method::kEhFrame);
  // With fp alone there is nothing after it.
  options.sources = Only({Source::kFramePointer});
  UseModule(TestModule(), "module2.so");
  Put(kSp + 8, At(kLeaf) + 5);
  ThreadStack alone = Unwind(regs, options);
  EXPECT_EQ(alone.stop, StopReason::kNoUnwindInfo);
  EXPECT_EQ(alone.frames.size(), 1u);
}

// --sources=sframe,eh_frame,fp with an .sframe whose header has
// SFRAME_F_FRAME_POINTER but no FDE for the PC: .sframe offers the
// frame-pointer chain, rbp holds no record, and the sources after sframe —
// eh_frame, which covers the PC — answer. (They used to be the sources
// after fp, guessed from the row's method: none.)
TEST_F(UnwinderTest, ABrokenChainFromSframeFallsBackToTheSourcesAfterSframe) {
  sframe::testing::SectionSpec s;
  s.flags = sframe::kFlagFdeSorted | sframe::kFlagFramePointer;
  s.vaddr = 0x3000;
  s.fdes.push_back({.func_start = 0x1800, .size = 0x10, .fres = {{.start = 0, .words = {8}}}});
  UseModule(TestModule(sframe::testing::BuildSframe(s)), "sframe.so");
  Put(kSp, At(kOuter) + 5);
  arch::RegisterSet regs = Regs(At(kLeaf) + 4, kSp);
  regs.Set(kRbp, 0x1003);  // misaligned: no record
  UnwindOptions options;
  options.sources = Only({Source::kSframe, Source::kEhFrame, Source::kFramePointer});
  ThreadStack t = Unwind(regs, options);
  EXPECT_EQ(t.stop, StopReason::kEndOfStack) << t.stop_detail;
  ASSERT_EQ(t.frames.size(), 2u) << t.stop_detail;
  EXPECT_EQ(t.frames[1].pc, At(kOuter) + 5);
  EXPECT_EQ(t.frames[1].method, Method::kEhFrame);
}

TEST_F(UnwinderTest, TheFirstSourceOfThePolicyAnswers) {
  Put(kSp, At(kOuter) + 5);
  UnwindOptions options;
  options.sources = Only({Source::kDebugFrame, Source::kEhFrame});
  ThreadStack t = Unwind(Regs(At(kLeaf) + 4, kSp), options);
  ASSERT_EQ(t.frames.size(), 2u);
  EXPECT_EQ(t.frames[1].method, Method::kEhFrame);  // no .debug_frame
  UseModule(TestModule(), "module3.so");
  Put(kSp, At(kOuter) + 5);
  options.sources = Only({Source::kDebugFrame});
  ThreadStack none = Unwind(Regs(At(kLeaf) + 4, kSp), options);
  EXPECT_EQ(none.stop, StopReason::kNoUnwindInfo);
}

// ---- signal frames ----

// Stopped at the kernel's rt_sigreturn trampoline, which has no CFI: the
// interrupted registers come from the ucontext at sp, and the interrupted
// PC is looked up as it is. kAfter's FDE starts exactly at that PC; looked
// up minus one, it would be kFp's.
TEST_F(UnwinderTest, AtTheSigreturnTrampoline) {
  constexpr uint64_t kInterruptedSp = kSp + 0x400;
  UnwindOptions options;
  options.sources = Only({Source::kEhFrame});
  // At mov, at syscall, and just past syscall (in the kernel: frame 0 only).
  for (uint64_t at : {kTrampoline, kTrampoline + 7, kTrampoline + 9}) {
    UseModule(TestModule(), "sig" + std::to_string(at) + ".so");
    // struct sigcontext after uc_flags, uc_link, uc_stack (40 bytes):
    // r8-r15, rdi, rsi, rbp, rbx, rdx, rax, rcx, rsp, rip.
    for (int i = 0; i < 17; ++i) Put(kSp + 40 + 8 * i, 0);
    Put(kSp + 40 + 15 * 8, kInterruptedSp);
    Put(kSp + 40 + 16 * 8, At(kAfter));
    Put(kInterruptedSp, 0);                  // kAfter's return address: the end
    Put(kInterruptedSp + 8, At(kLeaf) + 5);  // what kFp's row would find
    ThreadStack t = Unwind(Regs(At(at), kSp), options);
    EXPECT_EQ(t.stop, StopReason::kEndOfStack) << t.stop_detail;
    EXPECT_EQ(Pcs(t), (std::vector<uint64_t>{At(at), At(kAfter)}));
    if (t.frames.size() == 2) {
      EXPECT_EQ(t.frames[1].method, Method::kSignal);
      EXPECT_EQ(t.frames[1].sp, kInterruptedSp);
    }
  }
}

// A CIE with the 'S' augmentation marks a signal frame in CFI: the frame it
// unwinds to is where the signal struck, looked up exactly.
TEST_F(UnwinderTest, CfiSignalFrameMakesTheNextPcExact) {
  Put(kSp, At(kAfter));           // kSignal's "return address": the interrupted PC
  Put(kSp + 8, 0);                // kAfter's return address (CFA = sp + 16)
  Put(kSp + 16, At(kLeaf) + 5);   // what kFp's row (CFA = rsp + 16) would read
  UnwindOptions options;
  options.sources = Only({Source::kEhFrame});
  ThreadStack t = Unwind(Regs(At(kSignal) + 4, kSp), options);
  EXPECT_EQ(t.stop, StopReason::kEndOfStack) << t.stop_detail;
  EXPECT_EQ(Pcs(t), (std::vector<uint64_t>{At(kSignal) + 4, At(kAfter)}));
  if (t.frames.size() == 2) {
    EXPECT_EQ(t.frames[1].method, Method::kSignal);
  }
}

}  // namespace
}  // namespace unwindd::unwinder

#include "service/common/crash_signature.h"

#include "gtest/gtest.h"

namespace unwindd::service {
namespace {

unwinder::Frame F(uint64_t pc, int module) {
  unwinder::Frame f;
  f.pc = pc;
  f.module = module;
  return f;
}

unwinder::ProcessStacks Stacks() {
  unwinder::ProcessStacks s;
  unwinder::ModuleInfo libc;
  libc.path = "/usr/lib/x86_64-linux-gnu/libc.so.6";
  libc.build_id = "93ac61ec5a8eb1396f9fbd350e3169a558528a40";
  libc.start = 0x7f0000000000;
  unwinder::ModuleInfo exe;
  exe.path = "/usr/bin/app";
  exe.build_id = "8b82031fbc977eff9d4918b45f8d9c09972892e7";
  exe.start = 0x400000;  // a non-PIE executable: offsets from its start
  unwinder::ModuleInfo nobuildid;
  nobuildid.path = "/opt/legacy.so";
  nobuildid.start = 0x10000;
  s.modules = {libc, exe, nobuildid};
  unwinder::ThreadStack main;
  main.tid = 100;
  main.frames = {F(0x401000, 1), F(0x401100, 1)};
  unwinder::ThreadStack crashed;
  crashed.tid = 101;
  crashed.signal = proc::SignalInfo{.number = 11, .code = 1};
  crashed.frames = {F(0x7f0000085f16, 0), F(0x12345, -1), F(0x10010, 2),
                    F(0x7f000008ace3, 0), F(0x400f4b, 1), F(0x400b8c, 1)};
  s.threads = {main, crashed};
  return s;
}

TEST(CrashSignatureTest, SatyrsDuphashOfTheCrashThreadsTopThreeFrames) {
  const CrashSignature sig = ComputeSignature(Stacks());
  EXPECT_EQ(sig.crash_tid, 101);
  EXPECT_EQ(sig.signal, 11);
  // Frames outside a module or without a build-id add nothing and do not
  // count; build_id_offset is the PC minus the module's start.
  ASSERT_EQ(sig.frames.size(), 3u);
  EXPECT_EQ(sig.frames[0], "93ac61ec5a8eb1396f9fbd350e3169a558528a40+0x85f16");
  EXPECT_EQ(sig.frames[1], "93ac61ec5a8eb1396f9fbd350e3169a558528a40+0x8ace3");
  EXPECT_EQ(sig.frames[2], "8b82031fbc977eff9d4918b45f8d9c09972892e7+0xf4b");
  // SHA-1 of "Thread\n" and the three lines, each ending in "\n" (the
  // expected value from `printf 'Thread\n...\n' | sha1sum`).
  EXPECT_EQ(sig.duphash, Sha1Hex("Thread\n"
                                 "93ac61ec5a8eb1396f9fbd350e3169a558528a40+0x85f16\n"
                                 "93ac61ec5a8eb1396f9fbd350e3169a558528a40+0x8ace3\n"
                                 "8b82031fbc977eff9d4918b45f8d9c09972892e7+0xf4b\n"));
  EXPECT_EQ(sig.duphash, "5578b939b3543c16cc10317b6bc7b8a4f9e5288d");
}

TEST(CrashSignatureTest, Sha1IsSha1) {
  EXPECT_EQ(Sha1Hex(""), "da39a3ee5e6b4b0d3255bfef95601890afd80709");
  EXPECT_EQ(Sha1Hex("abc"), "a9993e364706816aba3e25717850c26c9cd0d89d");
}

TEST(CrashSignatureTest, TheCrashThreadIsTheOneWithSiginfoElseTheFirstSignalled) {
  unwinder::ProcessStacks s = Stacks();
  // A kernel core: every thread has pr_cursig; NT_SIGINFO (the code) goes
  // with the dumping thread.
  s.threads[0].signal = proc::SignalInfo{.number = 11};
  EXPECT_EQ(CrashThreadIndex(s), 1u);
  s.threads[1].signal->code.reset();
  EXPECT_EQ(CrashThreadIndex(s), 0u);
  s.threads[0].signal.reset();
  s.threads[1].signal.reset();
  EXPECT_EQ(CrashThreadIndex(s), 0u);  // no signal at all: the first thread
  EXPECT_FALSE(CrashThreadIndex(unwinder::ProcessStacks()).has_value());
}

TEST(CrashSignatureTest, NoBuildIdsNoSignature) {
  unwinder::ProcessStacks s = Stacks();
  for (unwinder::ModuleInfo& m : s.modules) m.build_id.clear();
  const CrashSignature sig = ComputeSignature(s);
  EXPECT_TRUE(sig.frames.empty());
  EXPECT_EQ(sig.duphash, "");
}

TEST(CrashSignatureTest, TheSameFramesAtAnotherLoadAddressGiveTheSameSignature) {
  unwinder::ProcessStacks moved = Stacks();
  const uint64_t shift = 0x1230000;
  for (unwinder::ModuleInfo& m : moved.modules) {
    m.start += shift;
    m.path = "/sysroot" + m.path;  // another machine's paths
  }
  for (unwinder::ThreadStack& t : moved.threads) {
    for (unwinder::Frame& f : t.frames) {
      if (f.module >= 0) f.pc += shift;
    }
  }
  EXPECT_EQ(ComputeSignature(moved).duphash, ComputeSignature(Stacks()).duphash);
}

}  // namespace
}  // namespace unwindd::service

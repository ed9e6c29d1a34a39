// AttachLive against a real child: threads stopped, read and released.
#include "proc/live_target.h"

#include <signal.h>
#include <sys/ptrace.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "arch/arch.h"
#include "gtest/gtest.h"
#include "memory/memory.h"
#include "proc/target.h"
#include "proc/testing/test_child.h"

namespace unwindd::proc {
namespace {

using testing::ExpectDetached;
using testing::kReader;
using testing::kSleep;
using testing::TaskState;
using testing::TestChild;
using testing::TracerPid;
using testing::WaitForTaskState;

const Mapping* Find(const std::vector<Mapping>& maps, uint64_t addr) {
  for (const Mapping& m : maps) {
    if (m.Contains(addr)) return &m;
  }
  return nullptr;
}

TEST(LiveTargetTest, StopsReadsAndReleasesEveryThread) {
  TestChild child;
  ASSERT_TRUE(child.ready());
  absl::StatusOr<std::unique_ptr<Target>> t = AttachLive(child.pid(), {});
  ASSERT_TRUE(t.ok()) << t.status();
  Target& target = **t;
  EXPECT_EQ(target.pid(), child.pid());
  EXPECT_EQ(target.arch(), arch::Arch::kX86_64);

  std::vector<pid_t> threads = target.Threads();
  ASSERT_EQ(threads.size(), 4u);
  EXPECT_EQ(threads[0], child.pid());
  EXPECT_TRUE(std::is_sorted(threads.begin() + 1, threads.end()));
  EXPECT_EQ(std::set<pid_t>(threads.begin(), threads.end()),
            std::set<pid_t>(child.tids().begin(), child.tids().end()));
  for (pid_t tid : threads) {
    EXPECT_EQ(TaskState(child.pid(), tid), 't') << tid;
    EXPECT_EQ(TracerPid(child.pid(), tid), getpid()) << tid;
  }

  const std::vector<Mapping>& maps = target.mappings();
  ASSERT_FALSE(maps.empty());
  for (pid_t tid : threads) {
    absl::StatusOr<arch::RegisterSet> regs = target.InitialRegisters(tid);
    ASSERT_TRUE(regs.ok()) << regs.status();
    const Mapping* code = Find(maps, regs->pc());
    ASSERT_NE(code, nullptr) << std::hex << regs->pc();
    EXPECT_TRUE(code->exec);
    const Mapping* stack = Find(maps, regs->sp());
    ASSERT_NE(stack, nullptr) << std::hex << regs->sp();
    EXPECT_TRUE(stack->write);
    if (tid == child.pid()) {
      EXPECT_EQ(stack->path, "[stack]");
    }
    absl::StatusOr<uint64_t> top = target.memory().ReadU64(regs->sp());
    EXPECT_TRUE(top.ok()) << top.status();
  }

  // Every candidate for libc's first mapping names an openable file.
  auto libc = std::find_if(maps.begin(), maps.end(), [](const Mapping& m) {
    return absl::StrContains(m.path, "libc.so");
  });
  ASSERT_NE(libc, maps.end());
  const std::string proc = "/proc/" + std::to_string(child.pid());
  std::vector<std::string> files = target.FileCandidates(*libc);
  ASSERT_EQ(files.size(), 3u);
  EXPECT_EQ(files[0], libc->path);
  EXPECT_TRUE(absl::StartsWith(files[1], proc + "/map_files/")) << files[1];
  EXPECT_EQ(files[2], proc + "/root" + libc->path);
  for (const std::string& f : files) EXPECT_EQ(access(f.c_str(), R_OK), 0) << f;
  auto anon = std::find_if(maps.begin(), maps.end(),
                           [](const Mapping& m) { return m.path.empty(); });
  if (anon != maps.end()) {
    EXPECT_TRUE(target.FileCandidates(*anon).empty());
  }

  t->reset();
  ExpectDetached(child.pid());
  EXPECT_TRUE(child.Responds());
  for (pid_t tid : child.tids()) EXPECT_NE(TaskState(child.pid(), tid), 't');
}

TEST(LiveTargetTest, OnlyRequestedThreads) {
  TestChild child;
  ASSERT_TRUE(child.ready());
  const pid_t sleeper = child.tid(kSleep);
  absl::StatusOr<std::unique_ptr<Target>> t =
      AttachLive(child.pid(), {sleeper, sleeper});
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ((*t)->Threads(), std::vector<pid_t>{sleeper});
  EXPECT_TRUE((*t)->InitialRegisters(sleeper).ok());
  EXPECT_EQ((*t)->InitialRegisters(child.pid()).status().code(),
            absl::StatusCode::kNotFound);
  EXPECT_EQ(TracerPid(child.pid(), child.pid()), 0);
  t->reset();
  ExpectDetached(child.pid());
  EXPECT_TRUE(child.Responds());
}

TEST(LiveTargetTest, ThreadExitingWhileAttached) {
  TestChild child;
  ASSERT_TRUE(child.ready());
  const pid_t leaver = child.tid(kReader);
  absl::StatusOr<std::unique_ptr<Target>> t = AttachLive(child.pid(), {});
  ASSERT_TRUE(t.ok()) << t.status();
  ASSERT_EQ((*t)->Threads().size(), 4u);

  // A stopped thread can only exit if resumed; this thread is the tracer,
  // so resume it ourselves once its read() has a byte to return.
  ASSERT_TRUE(child.ReleaseReader());
  ASSERT_EQ(ptrace(PTRACE_CONT, leaver, nullptr, nullptr), 0);
  // A traced thread that exits stays a zombie until its tracer reaps it.
  ASSERT_TRUE(WaitForTaskState(child.pid(), leaver, "ZX", /*or_gone=*/true));
  absl::StatusOr<arch::RegisterSet> regs = (*t)->InitialRegisters(leaver);
  ASSERT_EQ(regs.status().code(), absl::StatusCode::kNotFound) << regs.status();
  EXPECT_EQ(regs.status().message(),
            "thread " + std::to_string(leaver) + " has exited");
  EXPECT_EQ((*t)->InitialRegisters(leaver).status().code(),
            absl::StatusCode::kNotFound);
  std::vector<pid_t> threads = (*t)->Threads();
  EXPECT_EQ(threads.size(), 3u);
  EXPECT_EQ(std::count(threads.begin(), threads.end(), leaver), 0);
  for (pid_t tid : threads) EXPECT_TRUE((*t)->InitialRegisters(tid).ok());

  t->reset();
  ExpectDetached(child.pid());
  EXPECT_TRUE(child.Responds());
  EXPECT_EQ(TaskState(child.pid(), leaver), 0) << "reaped";
}

TEST(LiveTargetTest, ThreadResumedBehindOurBackIsStillDetached) {
  TestChild child;
  ASSERT_TRUE(child.ready());
  const pid_t sleeper = child.tid(kSleep);
  absl::StatusOr<std::unique_ptr<Target>> t = AttachLive(child.pid(), {});
  ASSERT_TRUE(t.ok()) << t.status();
  ASSERT_EQ(ptrace(PTRACE_CONT, sleeper, nullptr, nullptr), 0);
  absl::StatusOr<arch::RegisterSet> regs = (*t)->InitialRegisters(sleeper);
  EXPECT_EQ(regs.status().code(), absl::StatusCode::kFailedPrecondition)
      << regs.status();
  // The kernel detaches only stopped tracees: the destructor must stop the
  // running one first.
  t->reset();
  ExpectDetached(child.pid());
  EXPECT_TRUE(child.Responds());
}

TEST(LiveTargetTest, SignalSentWhileAttachedIsDeliveredAfterDetach) {
  TestChild child;
  ASSERT_TRUE(child.ready());
  absl::StatusOr<std::unique_ptr<Target>> t = AttachLive(child.pid(), {});
  ASSERT_TRUE(t.ok()) << t.status();
  ASSERT_EQ(kill(child.pid(), SIGUSR1), 0);
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  for (pid_t tid : (*t)->Threads()) {
    EXPECT_TRUE((*t)->InitialRegisters(tid).ok());
  }
  t->reset();
  EXPECT_TRUE(child.HandledUsr1());
  EXPECT_TRUE(child.Responds());
}

TEST(LiveTargetTest, StoppedProcessStaysStopped) {
  TestChild child;
  ASSERT_TRUE(child.ready());
  ASSERT_EQ(kill(child.pid(), SIGSTOP), 0);
  ASSERT_TRUE(WaitForTaskState(child.pid(), child.pid(), "T"));
  absl::StatusOr<std::unique_ptr<Target>> t = AttachLive(child.pid(), {});
  ASSERT_TRUE(t.ok()) << t.status();
  ASSERT_EQ((*t)->Threads().size(), 4u);
  for (pid_t tid : (*t)->Threads()) {
    EXPECT_TRUE((*t)->InitialRegisters(tid).ok());
  }
  t->reset();
  ExpectDetached(child.pid());
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_EQ(TaskState(child.pid(), child.pid()), 'T');
  ASSERT_EQ(kill(child.pid(), SIGCONT), 0);
  EXPECT_TRUE(child.Responds());
}

TEST(LiveTargetTest, MainThreadExitedOthersRunning) {
  // A zombie leader has no mm: /proc/PID/maps is empty and process_vm_readv
  // on PID fails, while the live threads still have the address space.
  TestChild child(/*main_thread_exits=*/true);
  ASSERT_TRUE(child.ready());
  absl::StatusOr<std::unique_ptr<Target>> t = AttachLive(child.pid(), {});
  ASSERT_TRUE(t.ok()) << t.status();
  std::vector<pid_t> threads = (*t)->Threads();
  EXPECT_EQ(std::set<pid_t>(threads.begin(), threads.end()),
            std::set<pid_t>(child.tids().begin(), child.tids().end()));
  EXPECT_FALSE((*t)->mappings().empty());
  for (pid_t tid : threads) {
    absl::StatusOr<arch::RegisterSet> regs = (*t)->InitialRegisters(tid);
    ASSERT_TRUE(regs.ok()) << regs.status();
    EXPECT_TRUE((*t)->memory().ReadU64(regs->sp()).ok());
  }
  t->reset();
  for (pid_t tid : child.tids()) EXPECT_EQ(TracerPid(child.pid(), tid), 0);
}

}  // namespace
}  // namespace unwindd::proc

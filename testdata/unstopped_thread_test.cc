// A thread that ptrace cannot stop (vfork_blocked's main, waiting in the
// kernel uninterruptibly for its vfork child): `unwind pid --stop-timeout=S`
// waits for it at most S seconds, walks it from the registers
// /proc/PID/task/TID/syscall shows while it is blocked (its user stack
// cannot change meanwhile), walks the other thread as usual and leaves
// nothing stopped. eu-stack and gdb wait for such a thread until it wakes:
// for as long as the child lives, here. The rule
// (not_stopped_thread_walked_from_proc_syscall) is confirmed by the kernel,
// whose syscall file gives frame 0's pc, and by eu-addr2line, which names
// each caller frame's function from the fixture's symbol table.
#include <signal.h>
#include <sys/types.h>

#include <cstdint>
#include <string>
#include <tuple>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "gtest/gtest.h"
#include "proc/procfs.h"
#include "testdata/harness/frames.h"
#include "testdata/harness/subprocess.h"
#include "testdata/harness/tools.h"

namespace unwindd::harness {
namespace {

// /proc/PID/task/TID/REST ("" if it cannot be read).
std::string TaskFile(pid_t pid, pid_t tid, absl::string_view rest) {
  return proc::ReadProcFile(pid, proc::TaskPath(pid, tid, rest)).value_or("");
}

// The thread's state letter (R, S, D, t, ...; '?' if it cannot be read).
char ThreadState(pid_t pid, pid_t tid) {
  absl::StatusOr<proc::ProcStat> stat = proc::ReadStat(pid, tid);
  return stat.ok() ? stat->state : '?';
}

// The function eu-addr2line names at `address` of `file` ("??" if none).
std::string FunctionAt(const std::string& file, uint64_t address) {
  absl::StatusOr<ToolOutput> out =
      RunTool({"eu-addr2line", "-f", "-e", file, absl::StrCat("0x", absl::Hex(address))},
              kToolTimeout);
  if (!out.ok()) return "??";
  return std::string(absl::StripAsciiWhitespace(
      std::vector<std::string>(absl::StrSplit(out->stdout_text, '\n'))[0]));
}

// The functions of the frames in `file` (the module the process maps is
// the file the runfiles link to), outermost last; a caller frame's return
// address is looked up one byte before it, in its call.
std::vector<std::string> FunctionsIn(const UnwindThread& t, const std::string& file) {
  const std::string name = file.substr(file.rfind('/'));
  std::vector<std::string> out;
  for (size_t i = 0; i < t.frames.size(); ++i) {
    const UnwindFrame& f = t.frames[i];
    uint64_t rel = 0;
    if (!absl::EndsWith(f.module, name) || !ParseHexPc(f.rel_pc, &rel)) continue;
    out.push_back(FunctionAt(file, i > 0 ? rel - 1 : rel));
  }
  return out;
}

TEST(UnstoppedThreadTest, WalkedFromWhereTheKernelShowsItBlocked) {
  for (const char* variant : {"vfork_blocked_O2_nofp_pie", "vfork_blocked_O2_nofp_pie_m32"}) {
    SCOPED_TRACE(variant);
    const std::string fixture = FixturePath(variant);
    absl::StatusOr<RunningProgram> p = StartProgram(fixture);
    ASSERT_TRUE(p.ok()) << p.status();
    const pid_t pid = p->pid();
    // The leader and the forker in vfork (D), the sleeper in nanosleep (S).
    pid_t forker = 0, sleeper = 0;
    absl::StatusOr<std::vector<pid_t>> tasks = proc::ListTasks(pid);
    ASSERT_TRUE(tasks.ok()) << tasks.status();
    for (pid_t tid : *tasks) {
      if (tid != pid) (ThreadState(pid, tid) == 'D' ? forker : sleeper) = tid;
    }
    ASSERT_EQ(ThreadState(pid, pid), 'D');
    ASSERT_NE(forker, 0);
    ASSERT_NE(sleeper, 0);
    // "NR ARGS... SP PC": where the kernel holds each.
    auto blocked_pc = [pid](pid_t tid) {
      const std::vector<std::string> words = absl::StrSplit(
          absl::StripAsciiWhitespace(TaskFile(pid, tid, "syscall")),
          ' ');
      uint64_t pc = 0;
      EXPECT_TRUE(ParseHexPc(words.back(), &pc)) << words.back();
      return pc;
    };
    const uint64_t main_pc = blocked_pc(pid), forker_pc = blocked_pc(forker);

    const absl::Time start = absl::Now();
    absl::StatusOr<ToolOutput> out =
        RunTool({RunfilesRoot() + "/service/unwind", "pid", absl::StrCat(pid),
                 "--stop-timeout=0.5", "--format=json"},
                kToolTimeout);
    const absl::Duration took = absl::Now() - start;
    ASSERT_TRUE(out.ok()) << out.status();
    ASSERT_EQ(out->exit_code, 0) << out->stderr_text;
    EXPECT_LT(took, absl::Seconds(20));
    absl::StatusOr<UnwindOutput> u = ParseUnwindJson(out->stdout_text);
    ASSERT_TRUE(u.ok()) << u.status() << out->stdout_text;

    // The threads that did not stop: said for each, walked to their start.
    for (const auto& [tid, pc, caller] :
         {std::tuple<pid_t, uint64_t, const char*>{pid, main_pc, "main"},
          {forker, forker_pc, "Forker"}}) {
      SCOPED_TRACE(caller);
      const std::string note =
          absl::StrCat("not stopped: thread ", tid, " did not stop within 500ms (state D");
      EXPECT_NE(out->stdout_text.find(note), std::string::npos) << out->stdout_text;
      const UnwindThread& t = u->threads[tid];
      ASSERT_GE(t.frames.size(), 3u) << u->Describe();
      EXPECT_EQ(t.frames[0].pc, pc);
      EXPECT_EQ(t.stop, "end_of_stack") << u->Describe();
      const std::vector<std::string> ours = FunctionsIn(t, fixture);
      ASSERT_GE(ours.size(), 2u) << u->Describe();
      EXPECT_EQ(ours[0], "VforkAndWait");
      EXPECT_EQ(ours[1], caller);
    }
    // The other thread, as always.
    const UnwindThread& other = u->threads[sleeper];
    EXPECT_EQ(other.stop, "end_of_stack") << u->Describe();
    const std::vector<std::string> its = FunctionsIn(other, fixture);
    ASSERT_GE(its.size(), 2u) << u->Describe();
    EXPECT_EQ(its[0], "SleepForever");
    EXPECT_EQ(its[1], "Sleeper");
    size_t notes = 0;
    for (size_t at = 0; (at = out->stdout_text.find("not stopped", at)) != std::string::npos;
         ++at) {
      ++notes;
    }
    EXPECT_EQ(notes, 2u);

    // Nothing left stopped: the sleeper sleeps, and once their vfork
    // children are gone the other two go on to pause(), traced by no one.
    EXPECT_EQ(ThreadState(pid, sleeper), 'S');
    for (pid_t tid : {pid, forker}) {
      const std::string children =
          std::string(absl::StripAsciiWhitespace(TaskFile(pid, tid, "children")));
      int child = 0;
      ASSERT_TRUE(absl::SimpleAtoi(children, &child)) << children;
      ASSERT_EQ(kill(child, SIGKILL), 0);
    }
    for (pid_t tid : {pid, forker}) {
      char state = '?';
      for (int i = 0; i < 500 && (state = ThreadState(pid, tid)) != 'S'; ++i) {
        absl::SleepFor(absl::Milliseconds(10));
      }
      EXPECT_EQ(state, 'S') << tid;
    }
    for (pid_t tid : {pid, forker, sleeper}) {
      EXPECT_EQ(proc::ReadStatusField(pid, tid, "TracerPid").value_or(-1), 0) << tid;
    }
  }
}

}  // namespace
}  // namespace unwindd::harness

// Issue 14, file races: a module file truncated, rewritten in place and
// replaced by rename while unwindd unwinds a process that maps it. Every
// answer must be the right frames or say clearly why not (an RPC error, or a
// stop reason after a correct prefix of the frames); unwindd must not die of
// SIGBUS; once the file is whole again, answers are right again.
//
// The process (testdata/race_host.c) dlopens a copy of librace.so from a
// temporary directory and parks in it, in libc's read(): it never runs the
// library's code again, so truncating the library cannot kill it.
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include <atomic>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "gtest/gtest.h"
#include "service/server/testing/server_fixture.h"
#include "testdata/harness/subprocess.h"
#include "testdata/harness/tools.h"

namespace unwindd::service {
namespace {

using testing::ServerProcess;
using testing::TempDir;

std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

bool WriteAll(int fd, const std::string& bytes, size_t from, size_t to) {
  while (from < to) {
    ssize_t n = pwrite(fd, bytes.data() + from, to - from, static_cast<off_t>(from));
    if (n <= 0) return false;
    from += static_cast<size_t>(n);
  }
  return true;
}

struct Answer {
  grpc::Status status;
  std::vector<uint64_t> pcs;
  v1::StopReason stop = v1::STOP_REASON_UNSPECIFIED;
  std::string detail;
  int lib_frames = 0;
};

// Frame 0 of a thread blocked in read() is the instruction after its
// `syscall` while the call waits, and the `syscall` itself (2 bytes back)
// when the stop came as the interrupted call was being restarted: the
// kernel moves the PC back to run it again. Both are where the thread
// was. This moves a frame 0 that is at a `syscall` (0f 05 in the
// process) to the instruction after it, so that answers taken at either
// moment compare equal.
std::vector<uint64_t> AfterSyscall(pid_t pid, std::vector<uint64_t> pcs) {
#if defined(__x86_64__)
  if (pcs.empty()) return pcs;
  uint8_t insn[2] = {0, 0};
  iovec local{insn, sizeof(insn)};
  iovec remote{reinterpret_cast<void*>(pcs[0]), sizeof(insn)};
  if (process_vm_readv(pid, &local, 1, &remote, 1, 0) == 2 && insn[0] == 0x0f &&
      insn[1] == 0x05) {
    pcs[0] += 2;
  }
#endif
  return pcs;
}

Answer Unwind(ServerProcess& s, pid_t pid, const std::string& lib) {
  v1::UnwindProcessRequest r;
  r.set_pid(pid);
  grpc::ClientContext c;
  c.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(20));
  v1::UnwindResponse resp;
  Answer a;
  a.status = s.Stub()->UnwindProcess(&c, r, &resp);
  if (!a.status.ok() || resp.threads_size() == 0) return a;
  const v1::ThreadStack& t = resp.threads(0);
  for (const v1::Frame& f : t.frames()) {
    a.pcs.push_back(f.pc());
    if (f.has_module() && static_cast<int>(f.module()) < resp.modules_size() &&
        resp.modules(f.module()).path() == lib) {
      ++a.lib_frames;
    }
  }
  a.pcs = AfterSyscall(pid, std::move(a.pcs));
  a.stop = t.stop();
  a.detail = t.stop_detail();
  return a;
}

std::string Hex(const std::vector<uint64_t>& pcs) {
  return absl::StrJoin(pcs, " ", [](std::string* out, uint64_t pc) {
    absl::StrAppend(out, absl::Hex(pc));
  });
}

TEST(FileRaceTest, RewrittenLibraryNeverCrashesTheServerNorGivesWrongFrames) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root (unwindd ptraces the fixture)";
  TempDir server_dir, lib_dir;
  const std::string lib = lib_dir.path() + "/librace.so";
  const std::string pristine =
      ReadAll(harness::RunfilesRoot() + "/service/server/librace.so");
  ASSERT_GT(pristine.size(), 4096u);  // more than one page
  {
    std::ofstream(lib, std::ios::binary) << pristine;
  }
  ASSERT_EQ(setenv("RACE_LIB", lib.c_str(), 1), 0);
  absl::StatusOr<harness::RunningProgram> host =
      harness::StartProgram(harness::RunfilesRoot() + "/service/server/race_host");
  ASSERT_TRUE(host.ok()) << host.status();
  // The inode the process maps, kept open: renames below give the path new
  // inodes, and this one is still the one to truncate under the server.
  const int mapped = open(lib.c_str(), O_RDWR | O_CLOEXEC);
  ASSERT_GE(mapped, 0);

  absl::StatusOr<std::unique_ptr<ServerProcess>> server =
      ServerProcess::Start(server_dir.path(), {});
  ASSERT_TRUE(server.ok()) << server.status();
  const Answer good = Unwind(**server, host->pid(), lib);
  ASSERT_TRUE(good.status.ok()) << good.status.error_message();
  ASSERT_EQ(good.stop, v1::STOP_REASON_END_OF_STACK) << good.detail;
  ASSERT_GE(good.lib_frames, 2) << Hex(good.pcs);  // RaceInner, RaceOuter

  std::atomic<bool> done{false};
  std::atomic<int> rewrites{0};
  std::thread rewriter([&] {
    const size_t n = pristine.size();
    for (int i = 0; !done.load(); ++i) {
      switch (i % 4) {
        case 0:  // truncated to nothing, then written back
          (void)!ftruncate(mapped, 0);
          absl::SleepFor(absl::Microseconds(200));
          WriteAll(mapped, pristine, 0, n);
          break;
        case 1:  // cut in half, then completed
          (void)!ftruncate(mapped, static_cast<off_t>(n / 2));
          absl::SleepFor(absl::Microseconds(200));
          WriteAll(mapped, pristine, n / 2, n);
          break;
        case 2:  // rewritten from scratch a page at a time
          (void)!ftruncate(mapped, 0);
          for (size_t off = 0; off < n; off += 4096) {
            WriteAll(mapped, pristine, off, std::min(n, off + 4096));
          }
          break;
        case 3: {  // the path replaced by a new inode (the process keeps its own)
          const std::string tmp = lib + ".tmp";
          std::ofstream(tmp, std::ios::binary) << pristine;
          (void)!rename(tmp.c_str(), lib.c_str());
          break;
        }
      }
      rewrites.fetch_add(1);
      absl::SleepFor(absl::Microseconds(300));
    }
  });

  int answers = 0, correct = 0, errors = 0, stopped = 0;
  const absl::Time end = absl::Now() + absl::Seconds(8);
  while (absl::Now() < end) {
    const Answer a = Unwind(**server, host->pid(), lib);
    ++answers;
    if (!a.status.ok()) {
      ++errors;
      EXPECT_FALSE(a.status.error_message().empty());
      // The server is still there to answer the next one.
      ASSERT_NE(a.status.error_code(), grpc::StatusCode::UNAVAILABLE)
          << a.status.error_message();
      continue;
    }
    if (a.stop == v1::STOP_REASON_END_OF_STACK) {
      EXPECT_EQ(Hex(a.pcs), Hex(good.pcs)) << "a complete walk with other frames";
      ++correct;
      continue;
    }
    // Stopped early: what it gave must be the right frames, and it says why.
    ++stopped;
    EXPECT_FALSE(a.detail.empty());
    ASSERT_LE(a.pcs.size(), good.pcs.size()) << Hex(a.pcs) << " vs " << Hex(good.pcs);
    EXPECT_TRUE(std::equal(a.pcs.begin(), a.pcs.end(), good.pcs.begin()))
        << Hex(a.pcs) << " is not a prefix of " << Hex(good.pcs) << " (" << a.detail << ")";
  }
  done = true;
  rewriter.join();
  std::printf("answers %d: correct %d, stopped early %d, errors %d; rewrites %d\n",
              answers, correct, stopped, errors, rewrites.load());
  EXPECT_GT(rewrites.load(), 20);
  EXPECT_GT(answers, 20);

  // Whole again (the mapped inode, in place): right again, at once.
  ASSERT_EQ(ftruncate(mapped, 0), 0);
  ASSERT_TRUE(WriteAll(mapped, pristine, 0, pristine.size()));
  close(mapped);
  for (int i = 0; i < 3; ++i) {
    const Answer a = Unwind(**server, host->pid(), lib);
    ASSERT_TRUE(a.status.ok()) << a.status.error_message();
    EXPECT_EQ(a.stop, v1::STOP_REASON_END_OF_STACK) << a.detail;
    EXPECT_EQ(Hex(a.pcs), Hex(good.pcs));
  }
  EXPECT_TRUE((*server)->Serving());
  EXPECT_EQ((*server)->Terminate(), 0) << (*server)->Stderr();
}

}  // namespace
}  // namespace unwindd::service

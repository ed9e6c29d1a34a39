#include "proc/testing/test_child.h"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <sstream>
#include <thread>

#include "gtest/gtest.h"

namespace unwindd::proc::testing {
namespace {

int g_ready[2], g_cmd[2], g_resp[2], g_exit[2];

bool ReadWithTimeout(int fd, void* buf, size_t n) {
  auto* p = static_cast<char*>(buf);
  while (n > 0) {
    pollfd pfd = {fd, POLLIN, 0};
    if (poll(&pfd, 1, 5000) <= 0) return false;
    ssize_t r = read(fd, p, n);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    p += r;
    n -= static_cast<size_t>(r);
  }
  return true;
}

void ReportTid(Role role) {
  // One 8-byte write to a pipe is atomic, so reports never interleave.
  int32_t msg[2] = {role, static_cast<int32_t>(gettid())};
  (void)!write(g_ready[1], msg, sizeof(msg));
}

void* PauseThread(void*) {
  ReportTid(kPause);
  for (;;) pause();
}

void* SleepThread(void*) {
  ReportTid(kSleep);
  for (;;) {
    timespec ts = {1000, 0};
    nanosleep(&ts, nullptr);
  }
}

void* ReaderThread(void*) {
  ReportTid(kReader);
  char c;
  while (read(g_exit[0], &c, 1) < 0 && errno == EINTR) {
  }
  // A raw exit: pthread_exit would unwind through glibc and libgcc.
  syscall(SYS_exit, 0);
  return nullptr;
}

void OnUsr1(int) {
  char c = 'u';
  (void)!write(g_resp[1], &c, 1);
}

[[noreturn]] void ServeCommands() {
  char c;
  for (;;) {
    ssize_t r = read(g_cmd[0], &c, 1);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) _exit(0);
    (void)!write(g_resp[1], &c, 1);
  }
}

}  // namespace

TestChild::TestChild(bool main_thread_exits) {
  for (int* p : {g_ready, g_cmd, g_resp, g_exit}) {
    if (pipe2(p, O_CLOEXEC) != 0) return;
  }
  pid_ = fork();
  if (pid_ == 0) {
    signal(SIGUSR1, OnUsr1);
    pthread_t t;
    pthread_create(&t, nullptr, PauseThread, nullptr);
    pthread_create(&t, nullptr, SleepThread, nullptr);
    pthread_create(&t, nullptr, ReaderThread, nullptr);
    // Only this thread exits; a raw SYS_exit skips pthread_exit's forced
    // unwind, which gtest's catch (...) around the test body would eat.
    if (main_thread_exits) syscall(SYS_exit, 0);
    ReportTid(kMain);
    ServeCommands();
  }
  const size_t expected = main_thread_exits ? 3 : 4;
  for (size_t i = 0; i < expected; ++i) {
    int32_t msg[2];
    if (!ReadWithTimeout(g_ready[0], msg, sizeof(msg))) return;
    if (msg[0] < 0 || msg[0] >= kNumRoles) return;
    by_role_[msg[0]] = msg[1];
    tids_.push_back(msg[1]);
  }
  // Let every thread reach its blocking syscall.
  for (pid_t tid : tids_) WaitForTaskState(pid_, tid, "S");
  if (main_thread_exits) WaitForTaskState(pid_, pid_, "Z");
}

TestChild::~TestChild() {
  if (pid_ > 0) {
    kill(pid_, SIGKILL);
    int status;
    while (waitpid(pid_, &status, __WALL) < 0 && errno == EINTR) {
    }
  }
  for (int* p : {g_ready, g_cmd, g_resp, g_exit}) {
    close(p[0]);
    close(p[1]);
  }
}

bool TestChild::Responds() {
  char c = 'x';
  if (write(g_cmd[1], &c, 1) != 1) return false;
  return ReadWithTimeout(g_resp[0], &c, 1) && c == 'x';
}

bool TestChild::HandledUsr1() {
  char c = 0;
  return ReadWithTimeout(g_resp[0], &c, 1) && c == 'u';
}

bool TestChild::ReleaseReader() {
  char c = 'q';
  return write(g_exit[1], &c, 1) == 1;
}

std::string ReadWholeFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

char TaskState(pid_t pid, pid_t tid) {
  std::string s = ReadWholeFile("/proc/" + std::to_string(pid) + "/task/" +
                                std::to_string(tid) + "/stat");
  size_t paren = s.rfind(')');
  return paren == std::string::npos || paren + 2 >= s.size() ? 0 : s[paren + 2];
}

bool WaitForTaskState(pid_t pid, pid_t tid, const std::string& states,
                      bool or_gone) {
  for (int i = 0; i < 2500; ++i) {
    char s = TaskState(pid, tid);
    if (s == 0 ? or_gone : states.find(s) != std::string::npos) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  return false;
}

int TracerPid(pid_t pid, pid_t tid) {
  std::string s = ReadWholeFile("/proc/" + std::to_string(pid) + "/task/" +
                                std::to_string(tid) + "/status");
  size_t at = s.find("TracerPid:");
  return at == std::string::npos ? -1 : std::atoi(s.c_str() + at + 10);
}

void ExpectDetached(pid_t pid) {
  std::string dir = "/proc/" + std::to_string(pid) + "/task";
  std::unique_ptr<DIR, int (*)(DIR*)> d(opendir(dir.c_str()), closedir);
  ASSERT_NE(d, nullptr) << dir;
  int checked = 0;
  while (dirent* e = readdir(d.get())) {
    if (e->d_name[0] == '.') continue;
    EXPECT_EQ(TracerPid(pid, std::atoi(e->d_name)), 0) << "task " << e->d_name;
    ++checked;
  }
  EXPECT_GT(checked, 0);
}

}  // namespace unwindd::proc::testing

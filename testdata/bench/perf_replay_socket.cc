#include "testdata/bench/perf_replay_socket.h"

#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "service/server/testing/process_cpu.h"

namespace unwindd::replay {
namespace {

// A message: its size and its samples (two u32), then the bytes. The
// answer: the samples (u32), then 16 bytes per sample.
constexpr size_t kHeader = 8;
constexpr size_t kAnswerPerSample = 16;
constexpr size_t kMaxMessage = 16 << 20;  // unwindd's receive limit

bool WriteAll(int fd, const char* p, size_t n) {
  while (n > 0) {
    const ssize_t w = write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    p += w;
    n -= static_cast<size_t>(w);
  }
  return true;
}

// False at the end of the stream (or an error).
bool ReadAll(int fd, char* p, size_t n) {
  while (n > 0) {
    const ssize_t r = read(fd, p, n);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    p += r;
    n -= static_cast<size_t>(r);
  }
  return true;
}

// The child: reads messages into `buf` and answers each, until the end.
// Only system calls after fork (the parent has threads).
[[noreturn]] void Serve(int fd, char* buf, char* answer) {
  char header[kHeader];
  while (ReadAll(fd, header, kHeader)) {
    uint32_t bytes = 0, samples = 0;
    std::memcpy(&bytes, header, 4);
    std::memcpy(&samples, header + 4, 4);
    if (bytes > kMaxMessage || samples > 1024 || !ReadAll(fd, buf, bytes)) _exit(1);
    std::memcpy(answer, &samples, 4);
    if (!WriteAll(fd, answer, 4 + samples * kAnswerPerSample)) _exit(1);
  }
  _exit(0);
}

class SocketSink final : public BatchSink {
 public:
  explicit SocketSink(int fd) : fd_(fd) {}
  bool Write(const v1::SnapshotBatch& batch) override {
    bytes_.resize(kHeader);
    batch.AppendToString(&bytes_);
    const uint32_t size = static_cast<uint32_t>(bytes_.size() - kHeader);
    const uint32_t samples = static_cast<uint32_t>(batch.samples_size());
    std::memcpy(bytes_.data(), &size, 4);
    std::memcpy(bytes_.data() + 4, &samples, 4);
    return WriteAll(fd_, bytes_.data(), bytes_.size());
  }
  void Done() override { shutdown(fd_, SHUT_WR); }

 private:
  const int fd_;
  std::string bytes_;
};

double Seconds(const timeval& tv) { return tv.tv_sec + tv.tv_usec / 1e6; }

}  // namespace

PassResult RunSocketFloorPass(const ReplayOptions& options, const std::string& file,
                              unwinder::ModuleCache& cache,
                              const locate::LocateOptions& locate) {
  PassResult result;
  WarmFile(file);
  absl::StatusOr<std::unique_ptr<proc::perf::PerfDataReader>> reader =
      proc::perf::PerfDataReader::OpenFile(file, {}, proc::perf::FileAccess::kMap);
  if (!reader.ok()) {
    result.error = std::string(reader.status().message());
    return result;
  }
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) {
    result.error = absl::StrCat("socketpair: ", std::strerror(errno));
    return result;
  }
  // Allocated before the fork: the child may not call malloc.
  std::vector<char> buf(kMaxMessage);
  std::vector<char> answer(4 + 1024 * kAnswerPerSample);
  rusage before;
  getrusage(RUSAGE_CHILDREN, &before);
  const pid_t child = fork();
  if (child < 0) {
    result.error = absl::StrCat("fork: ", std::strerror(errno));
    return result;
  }
  if (child == 0) {
    close(sv[0]);
    Serve(sv[1], buf.data(), answer.data());
  }
  close(sv[1]);
  const int fd = sv[0];
  SocketSink sink(fd);
  Window window;
  Expected unused;
  {
    absl::MutexLock l(&window.mu);
    window.expected = &unused;
  }
  Producer producer(options, **reader, sink, window, /*fill_expected=*/false, cache, locate,
                    result);
  const double client0 = service::testing::SelfCpuSeconds();
  const absl::Time t0 = absl::Now();
  absl::Status written;
  std::thread writer([&] {
    written = (*reader)->Read(producer);
    absl::Status s = producer.Finish();
    if (written.ok()) written = s;
  });
  uint64_t answered = 0;
  char header[4];
  while (ReadAll(fd, header, 4)) {
    uint32_t samples = 0;
    std::memcpy(&samples, header, 4);
    if (!ReadAll(fd, answer.data(), samples * kAnswerPerSample)) break;
    answered += samples;
    absl::MutexLock l(&window.mu);
    window.answered = answered;
  }
  {
    absl::MutexLock l(&window.mu);
    window.reader_done = true;
  }
  writer.join();
  close(fd);
  int status = 0;
  rusage after;
  waitpid(child, &status, 0);
  getrusage(RUSAGE_CHILDREN, &after);
  result.wall_s = absl::ToDoubleSeconds(absl::Now() - t0);
  result.client_cpu_s = service::testing::SelfCpuSeconds() - client0;
  result.server_cpu_s = Seconds(after.ru_utime) + Seconds(after.ru_stime) -
                        Seconds(before.ru_utime) - Seconds(before.ru_stime);
  result.switches = (after.ru_nvcsw + after.ru_nivcsw) - (before.ru_nvcsw + before.ru_nivcsw);
  result.batches = producer.batches();
  result.samples = producer.sent();
  if (!written.ok()) result.error = absl::StrCat("reading: ", written.ToString());
  if (result.error.empty() && (!WIFEXITED(status) || WEXITSTATUS(status) != 0)) {
    result.error = "the reading child failed";
  }
  if (result.error.empty() && answered != result.samples) {
    result.error = absl::StrCat(answered, " answers for ", result.samples, " samples");
  }
  return result;
}

}  // namespace unwindd::replay

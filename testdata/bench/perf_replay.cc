// perf_replay: a perf.data recording sent through a running unwindd's
// UnwindSnapshotBatches the way a profiler backend sends its samples, and
// what that costs the server per sample.
//
//   perf_replay --server=unix:PATH PERF_DATA [--batch=64] [--window=256]
//               [--passes=3] [--warmup=1] [--check] [--server-pid=PID]
//               [--pid=exited|recorded|none] [--buildid-dir=DIR]
//               [--max-frames=N] [--floor]
//   perf_replay --socket-floor PERF_DATA [--batch=64] [--window=256] ...
//
// What is sent (one stream per pass): the recording read with the
// project's reader (proc/perf), each process's mapping table at each
// sample's time (ProcessMaps, resolved by PerfSnapshotter) sent once as a
// MappingTable whose id is the snapshotter's target id, so a process that
// maps or unmaps a file gets a new table and the old one is released; the
// recorded build-ids and the [vdso] image perf keeps in its build-id cache
// go in the table. Every sample: its pid and tid, its registers as perf
// recorded them (PERF_SAMPLE_REGS_USER: the attr's mask and the values),
// its stack copy from SP (the dyn_size bytes that were really copied) and
// its table's id. Samples without user registers (kernel threads) or
// without known mappings are not sent ("skipped").
//
// The pid: a server reads the memory of a live process at the sample's
// pid (proto/unwinder.proto, SnapshotRequest.pid), which for a recording
// is the recorded program only if it still runs, and otherwise whatever
// process has the number now. --pid=exited (the default) sends the
// recorded pid only when no process has it now (looked at once per pid and
// pass), so the server unwinds every sample from the recording alone, as
// the in-process check does; --pid=recorded always sends it; --pid=none
// never does.
//
// --floor: every sample names a table that was never sent, so each is
// received, parsed and answered with a small INVALID_ARGUMENT error
// without being unwound: what the transport costs for these stack copies
// (snapshot_stream_benchmark's mappings:5). Then that error is what every
// answer must be.
//
// --socket-floor: no server; the same messages through a plain Unix
// socket to a process that only reads them (perf_replay_socket.h): what
// the kernel costs for these bytes, under any server.
//
// A writer thread reads the file and writes batches of --batch samples
// while the main thread reads the answers, with at most --window samples
// in flight. Every answer is verified: one per sample, in order, no error;
// with --check, also the same frames (pc list) as an in-process unwind of
// the same sample (unwinder::UnwindTarget over the SnapshotTarget the
// snapshotter builds, with the server's default debug directory). Any
// difference is printed and the exit status is 1.
//
// The server's CPU is its utime + stime (the process CPU clock of every
// thread, clock_getcpuclockid, at ns resolution) before and after each
// timed pass; its pid is --server-pid or the process listening on the
// socket. --warmup passes run first and are not counted (modules opened,
// caches filled, as in a server that has seen the program before). The last
// line is machine-readable (corpus.sh reads it): the median pass by server
// CPU.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/strip.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "grpcpp/grpcpp.h"
#include "proto/unwinder.grpc.pb.h"
#include "service/server/testing/process_cpu.h"
#include "testdata/bench/perf_replay_producer.h"
#include "testdata/bench/perf_replay_socket.h"

namespace unwindd::replay {
namespace {

using service::testing::ListenerPid;
using service::testing::ProcessContextSwitches;
using service::testing::ProcessCpuSeconds;
using service::testing::SelfCpuSeconds;

constexpr char kUsage[] =
    "usage: perf_replay --server=unix:PATH PERF_DATA [--batch=64] [--window=256]\n"
    "                   [--passes=3] [--warmup=1] [--check] [--server-pid=PID]\n"
    "                   [--pid=exited|recorded|none] [--buildid-dir=DIR]\n"
    "                   [--max-frames=N] [--floor]\n"
    "       perf_replay --socket-floor PERF_DATA [--batch=64] [--window=256] ...\n";

struct Flags {
  std::string server;
  std::string file;
  ReplayOptions replay;
  int passes = 3;
  int warmup = 1;
  bool check = false;
  bool socket_floor = false;
  pid_t server_pid = 0;
};

absl::Status ParseFlags(int argc, char** argv, Flags* f) {
  if (const char* home = getenv("HOME")) {
    f->replay.buildid_dir = absl::StrCat(home, "/.debug");
  }
  for (int i = 1; i < argc; ++i) {
    absl::string_view a = argv[i];
    auto number = [&](absl::string_view prefix, int min, int max, int* out) {
      if (!absl::ConsumePrefix(&a, prefix)) return false;
      if (!absl::SimpleAtoi(a, out) || *out < min || *out > max) {
        std::fprintf(stderr, "perf_replay: bad %s%s\n", std::string(prefix).c_str(),
                     std::string(a).c_str());
        std::exit(2);
      }
      return true;
    };
    int pid = 0;
    if (absl::ConsumePrefix(&a, "--server=")) {
      f->server = std::string(a);
    } else if (number("--batch=", 1, 1024, &f->replay.batch) ||
               number("--window=", 1, 1 << 20, &f->replay.window) ||
               number("--passes=", 1, 1000, &f->passes) ||
               number("--warmup=", 0, 1000, &f->warmup) ||
               number("--max-frames=", 1, unwinder::kMaxMaxFrames, &f->replay.max_frames)) {
    } else if (number("--server-pid=", 1, 1 << 30, &pid)) {
      f->server_pid = pid;
    } else if (a == "--check") {
      f->check = true;
    } else if (a == "--pid=exited") {
      f->replay.pid = ReplayOptions::Pid::kExited;
    } else if (a == "--pid=recorded") {
      f->replay.pid = ReplayOptions::Pid::kRecorded;
    } else if (a == "--pid=none") {
      f->replay.pid = ReplayOptions::Pid::kNone;
    } else if (a == "--floor") {
      f->replay.floor = true;
    } else if (a == "--socket-floor") {
      f->socket_floor = true;
    } else if (absl::ConsumePrefix(&a, "--buildid-dir=")) {
      f->replay.buildid_dir = std::string(a);
    } else if (!a.empty() && a[0] != '-' && f->file.empty()) {
      f->file = std::string(a);
    } else {
      return absl::InvalidArgumentError(absl::StrCat("unknown argument ", a));
    }
  }
  if (f->file.empty() || (f->server.empty() && !f->socket_floor)) {
    return absl::InvalidArgumentError("--server (or --socket-floor) and PERF_DATA are required");
  }
  f->replay.window = std::max(f->replay.window, f->replay.batch);
  return absl::OkStatus();
}

class GrpcSink final : public BatchSink {
 public:
  using Stream = grpc::ClientReaderWriter<v1::SnapshotBatch, v1::SnapshotBatchResponse>;
  explicit GrpcSink(Stream& stream) : stream_(stream) {}
  bool Write(const v1::SnapshotBatch& batch) override { return stream_.Write(batch); }
  void Done() override { stream_.WritesDone(); }

 private:
  Stream& stream_;
};

std::string FormatPcs(const std::vector<uint64_t>& pcs) {
  std::string out;
  for (uint64_t pc : pcs) absl::StrAppendFormat(&out, " %#x", pc);
  return out;
}

std::string FormatPcs(const v1::ThreadStack& t) {
  std::vector<uint64_t> pcs;
  for (const v1::Frame& f : t.frames()) pcs.push_back(f.pc());
  return FormatPcs(pcs);
}

// One stream: the whole recording, answers verified.
PassResult RunPass(const Flags& flags, v1::Unwinder::Stub& stub, pid_t server_pid,
                   Expected& expected, bool fill_expected, unwinder::ModuleCache& cache,
                   const locate::LocateOptions& locate) {
  PassResult result;
  WarmFile(flags.file);
  absl::StatusOr<std::unique_ptr<proc::perf::PerfDataReader>> reader =
      proc::perf::PerfDataReader::OpenFile(flags.file, {}, proc::perf::FileAccess::kMap);
  if (!reader.ok()) {
    result.error = std::string(reader.status().message());
    return result;
  }
  grpc::ClientContext context;
  std::unique_ptr<GrpcSink::Stream> stream = stub.UnwindSnapshotBatches(&context);
  GrpcSink sink(*stream);
  Window window;
  {
    absl::MutexLock l(&window.mu);
    window.expected = &expected;
  }
  Producer producer(flags.replay, **reader, sink, window, fill_expected, cache, locate,
                    result);

  const int64_t switches0 = ProcessContextSwitches(server_pid);
  const double server0 = ProcessCpuSeconds(server_pid);
  const double client0 = SelfCpuSeconds();
  const absl::Time t0 = absl::Now();
  absl::Status written;
  std::thread writer([&] {
    written = (*reader)->Read(producer);
    absl::Status s = producer.Finish();
    if (written.ok()) written = s;
  });

  std::string error;
  uint64_t i = 0;
  v1::SnapshotBatchResponse many;
  auto fail = [&](std::string what) {
    if (error.empty()) error = std::move(what);
  };
  while (stream->Read(&many)) {
    for (const v1::SnapshotResponse& r : many.responses()) {
      if (r.sample_id() != i) {
        fail(absl::StrFormat("answer %d is for sample %d", i, r.sample_id()));
      } else if (flags.replay.floor) {
        if (r.error().code() != grpc::StatusCode::INVALID_ARGUMENT) {
          fail(absl::StrFormat("sample %d: not the error for a table never sent", i));
        }
      } else if (r.has_error()) {
        fail(absl::StrFormat("sample %d: error %d: %s", i, r.error().code(),
                             r.error().message()));
      } else if (flags.check) {
        const std::vector<uint64_t>* want = nullptr;
        {
          absl::MutexLock l(&window.mu);
          if (i < expected.size()) want = &expected[i];
        }
        bool same = want != nullptr &&
                    static_cast<int>(want->size()) == r.stack().frames_size();
        for (int f = 0; same && f < r.stack().frames_size(); ++f) {
          same = r.stack().frames(f).pc() == (*want)[f];
        }
        if (!same) {
          fail(absl::StrFormat(
              "sample %d (tid %d): the server's frames differ from the in-process "
              "unwind's\n  server (%s):%s\n  in-process:%s",
              i, r.stack().tid(), v1::StopReason_Name(r.stack().stop()),
              FormatPcs(r.stack()), want != nullptr ? FormatPcs(*want) : " (none)"));
        }
      }
      result.frames += r.stack().frames_size();
      result.pid_ignored += !r.pid_ignored_reason().empty();
      ++i;
    }
    absl::MutexLock l(&window.mu);
    window.answered = i;
    if (!error.empty()) break;  // no need to wait for the rest
  }
  {
    absl::MutexLock l(&window.mu);
    window.reader_done = true;
  }
  if (!error.empty()) context.TryCancel();
  writer.join();
  grpc::Status st = stream->Finish();
  result.wall_s = absl::ToDoubleSeconds(absl::Now() - t0);
  result.server_cpu_s = ProcessCpuSeconds(server_pid) - server0;
  result.client_cpu_s = SelfCpuSeconds() - client0;
  result.switches = ProcessContextSwitches(server_pid) - switches0;
  result.batches = producer.batches();
  result.samples = producer.sent();
  if (error.empty() && !written.ok()) error = absl::StrCat("reading: ", written.ToString());
  if (error.empty() && !st.ok()) error = absl::StrCat("the stream failed: ", st.error_message());
  if (error.empty() && i != result.samples) {
    error = absl::StrFormat("%d answers for %d samples", i, result.samples);
  }
  result.error = std::move(error);
  return result;
}

int Main(int argc, char** argv) {
  Flags flags;
  if (absl::Status s = ParseFlags(argc, argv, &flags); !s.ok()) {
    std::fprintf(stderr, "perf_replay: %s\n%s", std::string(s.message()).c_str(), kUsage);
    return 2;
  }
  pid_t server_pid = flags.server_pid;
  std::unique_ptr<v1::Unwinder::Stub> stub;
  if (!flags.socket_floor) {
    absl::string_view path = flags.server;
    if (server_pid == 0 && !absl::ConsumePrefix(&path, "unix:")) {
      std::fprintf(stderr, "perf_replay: give --server-pid for a server not on unix:\n");
      return 2;
    }
    if (server_pid == 0) {
      absl::StatusOr<pid_t> pid = ListenerPid(std::string(path));
      if (!pid.ok()) {
        std::fprintf(stderr, "perf_replay: which process serves %s? %s\n",
                     flags.server.c_str(), pid.status().ToString().c_str());
        return 1;
      }
      server_pid = *pid;
    }
    grpc::ChannelArguments args;
    args.SetMaxReceiveMessageSize(256 << 20);
    stub = v1::Unwinder::NewStub(
        grpc::CreateCustomChannel(flags.server, grpc::InsecureChannelCredentials(), args));
  }

  unwinder::ModuleCache cache;
  const locate::LocateOptions locate;  // the server's default debug dir
  Expected expected;
  std::vector<PassResult> timed;
  for (int pass = 0; pass < flags.warmup + flags.passes; ++pass) {
    PassResult r = flags.socket_floor
                       ? RunSocketFloorPass(flags.replay, flags.file, cache, locate)
                       : RunPass(flags, *stub, server_pid, expected,
                                 flags.check && pass == 0, cache, locate);
    if (!r.error.empty()) {
      std::fprintf(stderr, "perf_replay: %s: pass %d: %s\n", flags.file.c_str(), pass + 1,
                   r.error.c_str());
      return 1;
    }
    const double n = std::max<double>(r.samples, 1);
    absl::PrintF(
        "pass %d%s: %d samples, %.1f ms wall, server %.1f ms CPU (%.2f us/sample, "
        "%.0f samples/s), client %.2f us/sample, %.1f server context switches/batch\n",
        pass + 1, pass < flags.warmup ? " (warm-up)" : "", r.samples, r.wall_s * 1e3,
        r.server_cpu_s * 1e3, r.server_cpu_s * 1e6 / n,
        r.server_cpu_s > 0 ? r.samples / r.server_cpu_s : 0.0, r.client_cpu_s * 1e6 / n,
        static_cast<double>(r.switches) / std::max<uint64_t>(r.batches, 1));
    if (pass >= flags.warmup) timed.push_back(r);
  }
  std::sort(timed.begin(), timed.end(), [](const PassResult& a, const PassResult& b) {
    return a.server_cpu_s < b.server_cpu_s;
  });
  const PassResult& m = timed[timed.size() / 2];
  const double n = std::max<double>(m.samples, 1);
  auto rate = [&](const PassResult& r) {
    return r.server_cpu_s > 0 ? r.samples / r.server_cpu_s : 0.0;
  };
  absl::PrintF(
      "%s: %d samples (%d skipped: no user registers or mappings), %.1f frames/sample, "
      "%.0f stack bytes/sample, %.0f request bytes/sample, %d tables, %d answers with "
      "pid_ignored_reason%s\n",
      flags.file.c_str(), m.samples, m.skipped, m.frames / n, m.stack_bytes / n,
      m.request_bytes / n, m.tables, m.pid_ignored,
      flags.check && !flags.socket_floor && !flags.replay.floor
          ? ", every sample's frames equal to the in-process unwind"
          : "");
  absl::PrintF(
      "median of %d passes: %.1f ms wall, server %.1f ms CPU: %.0f samples per server "
      "CPU-second (range %.0f-%.0f), %.2f server us/sample, %.2f client us/sample\n",
      static_cast<int>(timed.size()), m.wall_s * 1e3, m.server_cpu_s * 1e3, rate(m),
      rate(timed.back()), rate(timed.front()), m.server_cpu_s * 1e6 / n,
      m.client_cpu_s * 1e6 / n);
  absl::PrintF(
      "result samples=%d frames_per_sample=%.1f stack_bytes_per_sample=%.0f wall_s=%.4f "
      "server_cpu_s=%.4f samples_per_server_cpu_s=%.0f server_us_per_sample=%.2f "
      "client_us_per_sample=%.2f switches_per_batch=%.1f\n",
      m.samples, m.frames / n, m.stack_bytes / n, m.wall_s, m.server_cpu_s, rate(m),
      m.server_cpu_s * 1e6 / n, m.client_cpu_s * 1e6 / n,
      static_cast<double>(m.switches) / std::max<uint64_t>(m.batches, 1));
  return 0;
}

}  // namespace
}  // namespace unwindd::replay

int main(int argc, char** argv) { return unwindd::replay::Main(argc, argv); }

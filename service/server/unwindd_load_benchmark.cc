// Load test of the real unwindd (a benchmark target, not a timed test):
// N concurrent clients x M requests each, mixing UnwindProcess on live
// fixtures, UnwindSnapshots samples and UnwindCore on a gcore'd fixture,
// while (1) a client process is SIGKILLed in the middle of a stream and
// (2) a target process is killed while requests on it are running.
//
// Checked afterwards, and reported as counters (the run fails with an error
// if any check fails): the server still answers; every load request
// succeeded; no fds or threads leaked (the server's /proc/PID/fd and task
// counts, after every client has hung up, do not exceed what an identical
// warm-up run left); no fixture is still ptrace-attached (TracerPid 0).
//
//   bazel run -c opt //service/server:unwindd_load_benchmark -- --benchmark_counters_tabular=true
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <dirent.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "benchmark/benchmark.h"
#include "service/server/testing/capture.h"
#include "service/server/testing/server_fixture.h"
#include "testdata/harness/subprocess.h"
#include "testdata/harness/tools.h"

namespace unwindd::service {
namespace {

using testing::ServerProcess;

constexpr const char* kFixtures[] = {"threads_c_O2_nofp_pie", "demo_O2_nofp_pie",
                                     "signal_handler_O2_nofp_pie"};

struct World {
  testing::TempDir dir;
  std::unique_ptr<ServerProcess> server;
  std::vector<harness::RunningProgram> fixtures;
  std::vector<v1::SnapshotRequest> samples;
  std::string core;  // empty if gcore is missing
};

absl::Status Setup(World& w) {
  absl::StatusOr<std::unique_ptr<ServerProcess>> s =
      ServerProcess::Start(w.dir.path(), {"--request-log=none", "--max-queued=1024"});
  if (!s.ok()) return s.status();
  w.server = *std::move(s);
  for (const char* name : kFixtures) {
    absl::StatusOr<harness::RunningProgram> p =
        harness::StartProgram(harness::FixturePath(name));
    if (!p.ok()) return p.status();
    w.fixtures.push_back(std::move(*p));
    testing::CaptureOptions o;
    o.with_pid = false;
    absl::StatusOr<std::vector<v1::SnapshotRequest>> samples =
        testing::CaptureSamples(w.fixtures.back().pid(), o);
    if (!samples.ok()) return samples.status();
    w.samples.insert(w.samples.end(), samples->begin(), samples->end());
  }
  if (access("/usr/bin/gcore", X_OK) == 0) {
    pid_t pid = w.fixtures[0].pid();
    absl::StatusOr<harness::ToolOutput> g = harness::RunTool(
        {"gcore", "-o", w.dir.path() + "/core", absl::StrCat(pid)}, absl::Seconds(60));
    if (g.ok() && g->exit_code == 0) w.core = absl::StrCat(w.dir.path(), "/core.", pid);
  }
  return absl::OkStatus();
}

// One request of kind `i % 5`: 0-1 live, 2-3 snapshot, 4 core (or live).
grpc::Status OneRequest(World& w, v1::Unwinder::Stub& stub,
                        grpc::ClientReaderWriter<v1::SnapshotRequest,
                                                 v1::SnapshotResponse>* stream,
                        uint64_t i) {
  int kind = i % 5;
  if (kind == 4 && w.core.empty()) kind = 0;
  grpc::ClientContext c;
  c.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(60));
  v1::UnwindResponse r;
  if (kind <= 1) {
    v1::UnwindProcessRequest req;
    req.set_pid(w.fixtures[i % w.fixtures.size()].pid());
    return stub.UnwindProcess(&c, req, &r);
  }
  if (kind <= 3) {
    const v1::SnapshotRequest& sample = w.samples[i % w.samples.size()];
    v1::SnapshotResponse resp;
    if (!stream->Write(sample) || !stream->Read(&resp)) {
      return grpc::Status(grpc::StatusCode::UNAVAILABLE, "stream broke");
    }
    if (resp.has_error()) {
      return grpc::Status(static_cast<grpc::StatusCode>(resp.error().code()),
                          resp.error().message());
    }
    return grpc::Status::OK;
  }
  auto writer = stub.UnwindCore(&c, &r);
  v1::UnwindCoreRequest req;
  req.mutable_options()->set_server_path(w.core);
  writer->Write(req);
  writer->WritesDone();
  return writer->Finish();
}

// `clients` threads, each with its own channel and snapshot stream, making
// `per_client` mixed requests; the latency of each, in ms.
std::vector<double> RunClients(World& w, int clients, int per_client,
                               std::atomic<int>* errors = nullptr) {
  std::vector<std::vector<double>> per(clients);
  std::vector<std::thread> threads;
  for (int c = 0; c < clients; ++c) {
    threads.emplace_back([&, c] {
      auto stub = w.server->Stub();
      grpc::ClientContext sc;
      auto stream = stub->UnwindSnapshots(&sc);
      for (int i = 0; i < per_client; ++i) {
        absl::Time t0 = absl::Now();
        grpc::Status s = OneRequest(w, *stub, stream.get(), c * 7919 + i);
        per[c].push_back(absl::ToDoubleMilliseconds(absl::Now() - t0));
        if (!s.ok() && errors != nullptr) ++*errors;
      }
      stream->WritesDone();
      if (!stream->Finish().ok() && errors != nullptr) ++*errors;
    });
  }
  for (std::thread& t : threads) t.join();
  std::vector<double> out;
  for (auto& v : per) out.insert(out.end(), v.begin(), v.end());
  return out;
}

// A separate client process, killed while its stream is open.
bool KilledClientMidStream(World& w) {
  std::vector<std::string> argv = {testing::ServerTestBinary("test_client"),
                                   w.server->address(), "stream",
                                   absl::StrCat(w.fixtures[0].pid())};
  int out[2];
  if (pipe2(out, O_CLOEXEC) != 0) return false;
  pid_t pid = fork();
  if (pid == 0) {
    dup2(out[1], STDOUT_FILENO);
    std::vector<char*> args;
    for (std::string& a : argv) args.push_back(a.data());
    args.push_back(nullptr);
    execv(args[0], args.data());
    _exit(127);
  }
  close(out[1]);
  char buf[64];
  bool streaming = read(out[0], buf, sizeof(buf)) > 0;  // "streaming"
  close(out[0]);
  kill(pid, SIGKILL);
  waitpid(pid, nullptr, 0);
  return streaming;
}

// Requests on a target that is killed while they run: any answer is fine
// (frames with thread_gone, NOT_FOUND, ...) as long as every call returns.
int TargetExitsMidRequest(World& w) {
  absl::StatusOr<harness::RunningProgram> victim =
      harness::StartProgram(harness::FixturePath(kFixtures[0]));
  if (!victim.ok()) return -1;
  std::atomic<int> answered{0};
  std::vector<std::thread> clients;
  pid_t pid = victim->pid();
  for (int c = 0; c < 3; ++c) {
    clients.emplace_back([&, pid] {
      auto stub = w.server->Stub();
      for (int i = 0; i < 10; ++i) {
        grpc::ClientContext ctx;
        ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
        v1::UnwindProcessRequest req;
        req.set_pid(pid);
        v1::UnwindResponse r;
        grpc::Status s = stub->UnwindProcess(&ctx, req, &r);
        if (s.error_code() != grpc::StatusCode::UNAVAILABLE &&
            s.error_code() != grpc::StatusCode::DEADLINE_EXCEEDED) {
          ++answered;
        }
      }
    });
  }
  absl::SleepFor(absl::Milliseconds(15));
  victim->Kill();
  for (std::thread& t : clients) t.join();
  return answered.load();
}

// fds and threads once no client is connected, sampled every 50 ms for
// `window`: gRPC closes a connection's fd shortly after the client hangs up,
// and its thread pools grow and shrink on their own, so a leak is a count
// that stays up (the window's minimum above the baseline's maximum).
struct Counts {
  int min_fds = 1 << 30, max_fds = 0, min_threads = 1 << 30, max_threads = 0;
  std::map<std::string, int> names;  // thread name -> count, at the end
  int timer_threads = 0;             // gRPC's, at the end
};

std::map<std::string, int> ThreadNames(pid_t pid) {
  std::map<std::string, int> out;
  std::string dir = absl::StrCat("/proc/", pid, "/task");
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return out;
  while (dirent* e = readdir(d)) {
    if (e->d_name[0] == '.') continue;
    std::ifstream comm(absl::StrCat(dir, "/", e->d_name, "/comm"));
    std::string name;
    std::getline(comm, name);
    ++out[name];
  }
  closedir(d);
  return out;
}

int TimerThreads(pid_t pid) {
  std::map<std::string, int> names = ThreadNames(pid);
  auto it = names.find("grpc_global_tim");  // comm is cut at 15 characters
  return it == names.end() ? 0 : it->second;
}

std::string Describe(const std::map<std::string, int>& names) {
  std::string out;
  for (const auto& [name, n] : names) absl::StrAppend(&out, out.empty() ? "" : " ", name, "x", n);
  return out;
}
Counts Quiesced(World& w, absl::Duration window) {
  absl::SleepFor(absl::Milliseconds(200));
  Counts c;
  for (absl::Time end = absl::Now() + window; absl::Now() < end;) {
    // gRPC's timer manager runs one thread and starts a second whenever its
    // first is busy firing timers, keeping it while both wait: a pool of its
    // own, bounded by gRPC, that appears or not from one run to the next.
    int fds = w.server->CountFds();
    int threads = w.server->CountThreads() - TimerThreads(w.server->pid());
    c.min_fds = std::min(c.min_fds, fds);
    c.max_fds = std::max(c.max_fds, fds);
    c.min_threads = std::min(c.min_threads, threads);
    c.max_threads = std::max(c.max_threads, threads);
    absl::SleepFor(absl::Milliseconds(50));
  }
  c.names = ThreadNames(w.server->pid());
  c.timer_threads = TimerThreads(w.server->pid());
  return c;
}

void BM_MixedLoad(benchmark::State& state) {
  const int clients = state.range(0);
  const int per_client = state.range(1);
  World w;
  if (absl::Status s = Setup(w); !s.ok()) {
    state.SkipWithError(std::string(s.message()).c_str());
    return;
  }
  // Warm-up: the very same workload once, chaos included, so caches
  // (modules, open files) and gRPC's own thread pools (its timer manager
  // keeps a second thread once its timers have been busy) reach their
  // working size. A leak grows with every request; a pool does not grow
  // again on an identical second run.
  RunClients(w, clients, per_client);
  KilledClientMidStream(w);
  TargetExitsMidRequest(w);
  Counts before = Quiesced(w, absl::Seconds(1));

  std::vector<double> latencies_ms;
  std::atomic<int> errors{0};
  std::atomic<bool> chaos_ok{true};
  int target_answers = 0;
  absl::Duration wall;
  for (auto _ : state) {
    absl::Time start = absl::Now();
    std::thread load([&] { latencies_ms = RunClients(w, clients, per_client, &errors); });
    std::thread chaos([&] {
      if (!KilledClientMidStream(w)) chaos_ok = false;
      target_answers = TargetExitsMidRequest(w);
    });
    load.join();
    chaos.join();
    wall = absl::Now() - start;
  }
  std::sort(latencies_ms.begin(), latencies_ms.end());
  auto pct = [&](double p) {
    return latencies_ms.empty() ? 0 : latencies_ms[std::min<size_t>(
                                          latencies_ms.size() - 1, p * latencies_ms.size())];
  };
  Counts after = Quiesced(w, absl::Seconds(2));
  int traced = 0;
  for (const harness::RunningProgram& p : w.fixtures) {
    for (int tracer : testing::TracerPids(p.pid())) traced += tracer != 0;
  }
  bool serving = w.server->Serving();
  grpc::ClientContext sc;
  v1::Stats stats;
  w.server->Stub()->GetStats(&sc, v1::GetStatsRequest(), &stats);

  state.counters["requests"] = latencies_ms.size();
  state.counters["req_per_s"] = latencies_ms.size() / absl::ToDoubleSeconds(wall);
  state.counters["p50_ms"] = pct(0.50);
  state.counters["p99_ms"] = pct(0.99);
  state.counters["max_ms"] = latencies_ms.empty() ? 0 : latencies_ms.back();
  state.counters["errors"] = errors.load();
  state.counters["fd_leak"] = std::max(0, after.min_fds - before.max_fds);
  state.counters["thread_leak"] = std::max(0, after.min_threads - before.max_threads);
  state.counters["traced"] = traced;
  state.counters["grpc_timer_threads"] = after.timer_threads;
  state.counters["victim_answers"] = target_answers;
  state.counters["cache_hits"] = stats.module_cache_hits();
  state.counters["cache_misses"] = stats.module_cache_misses();
  state.counters["rejected"] = stats.rejected_requests();
  int exit_code = w.server->Terminate();
  state.counters["exit_code"] = exit_code;

  std::string failed;
  if (!serving) failed += "server stopped serving; ";
  if (errors.load() != 0) failed += "load requests failed; ";
  if (!chaos_ok.load()) failed += "the killed client never streamed; ";
  if (target_answers != 30) failed += "requests on the dying target went unanswered; ";
  if (after.min_fds > before.max_fds) {
    failed += absl::StrCat("fds ", before.max_fds, " -> ", after.min_fds, "; ");
  }
  if (after.min_threads > before.max_threads) {
    failed += absl::StrCat("threads ", before.max_threads, " -> ", after.min_threads, " (",
                           Describe(before.names), " -> ", Describe(after.names), "); ");
  }
  if (traced != 0) failed += "a fixture is still ptrace-attached; ";
  if (exit_code != 0) failed += "unwindd did not exit 0 on SIGTERM; ";
  if (!failed.empty()) state.SkipWithError(failed.c_str());
}

BENCHMARK(BM_MixedLoad)
    ->Args({8, 40})
    ->Args({32, 10})
    ->Iterations(1)
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace unwindd::service

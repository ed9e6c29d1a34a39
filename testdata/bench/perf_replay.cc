// perf_replay: a perf.data recording sent through a running unwindd's
// UnwindSnapshotBatches the way a profiler backend sends its samples, and
// what that costs the server per sample.
//
//   perf_replay --server=unix:PATH PERF_DATA [--batch=64] [--window=256]
//               [--passes=3] [--warmup=1] [--check] [--server-pid=PID]
//               [--pid=exited|recorded|none] [--buildid-dir=DIR]
//               [--max-frames=N] [--floor]
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
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/strip.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "grpcpp/grpcpp.h"
#include "proc/perf/perf_data.h"
#include "proc/perf/perf_snapshot.h"
#include "proc/perf/process_maps.h"
#include "proto/unwinder.grpc.pb.h"
#include "service/common/convert.h"
#include "service/common/snapshot_requests.h"
#include "service/server/testing/process_cpu.h"
#include "unwinder/locate/locator.h"
#include "unwinder/module_cache.h"
#include "unwinder/unwinder.h"

namespace unwindd::replay {
namespace {

namespace v1 = ::unwindd::v1;
using service::testing::ListenerPid;
using service::testing::ProcessContextSwitches;
using service::testing::ProcessCpuSeconds;
using service::testing::SelfCpuSeconds;

constexpr char kUsage[] =
    "usage: perf_replay --server=unix:PATH PERF_DATA [--batch=64] [--window=256]\n"
    "                   [--passes=3] [--warmup=1] [--check] [--server-pid=PID]\n"
    "                   [--pid=exited|recorded|none] [--buildid-dir=DIR]\n"
    "                   [--max-frames=N] [--floor]\n";

// The server keeps at most 1024 tables per stream; past this many the
// least recently used one is released (and sent again if needed).
constexpr size_t kMaxLiveTables = 512;
// --floor: the table every sample names.
constexpr uint64_t kNeverSentTable = ~uint64_t{0};

struct Flags {
  std::string server;
  std::string file;
  int batch = 64;
  int window = 256;
  int passes = 3;
  int warmup = 1;
  bool check = false;
  pid_t server_pid = 0;
  enum class Pid { kExited, kRecorded, kNone } pid = Pid::kExited;
  bool floor = false;
  std::string buildid_dir;
  int max_frames = 0;  // 0: the server's default (and the unwinder's)
};

absl::Status ParseFlags(int argc, char** argv, Flags* f) {
  if (const char* home = getenv("HOME")) f->buildid_dir = absl::StrCat(home, "/.debug");
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
    } else if (number("--batch=", 1, 1024, &f->batch) ||
               number("--window=", 1, 1 << 20, &f->window) ||
               number("--passes=", 1, 1000, &f->passes) ||
               number("--warmup=", 0, 1000, &f->warmup) ||
               number("--max-frames=", 1, unwinder::kMaxMaxFrames, &f->max_frames)) {
    } else if (number("--server-pid=", 1, 1 << 30, &pid)) {
      f->server_pid = pid;
    } else if (a == "--check") {
      f->check = true;
    } else if (a == "--pid=exited") {
      f->pid = Flags::Pid::kExited;
    } else if (a == "--pid=recorded") {
      f->pid = Flags::Pid::kRecorded;
    } else if (a == "--pid=none") {
      f->pid = Flags::Pid::kNone;
    } else if (a == "--floor") {
      f->floor = true;
    } else if (absl::ConsumePrefix(&a, "--buildid-dir=")) {
      f->buildid_dir = std::string(a);
    } else if (!a.empty() && a[0] != '-' && f->file.empty()) {
      f->file = std::string(a);
    } else {
      return absl::InvalidArgumentError(absl::StrCat("unknown argument ", a));
    }
  }
  if (f->server.empty() || f->file.empty()) {
    return absl::InvalidArgumentError("--server and PERF_DATA are required");
  }
  f->window = std::max(f->window, f->batch);
  return absl::OkStatus();
}

// What one pass measured.
struct PassResult {
  uint64_t samples = 0;
  uint64_t skipped = 0;       // not sent: no user registers or mappings
  uint64_t frames = 0;
  uint64_t stack_bytes = 0;   // of the samples' stack copies
  uint64_t request_bytes = 0; // serialised SnapshotBatch messages
  uint64_t tables = 0;        // MappingTables sent
  uint64_t pid_ignored = 0;   // answers with pid_ignored_reason
  uint64_t batches = 0;
  int64_t switches = 0;       // the server's context switches
  double wall_s = 0, server_cpu_s = 0, client_cpu_s = 0;
  std::string error;          // the first problem, "" if none
};

// The expected frames of every sent sample, by sample id: the in-process
// unwind, filled by the first pass and checked by every pass.
using Expected = std::deque<std::vector<uint64_t>>;

// Reads the recording on the writer thread and writes its samples as
// batches on `stream`, waiting for room in the window.
class Producer : public proc::perf::EventHandler {
 public:
  using Stream = grpc::ClientReaderWriter<v1::SnapshotBatch, v1::SnapshotBatchResponse>;

  // Flow control shared with the reader: samples written, answered, and
  // whether the reader stopped.
  struct Window {
    absl::Mutex mu;
    uint64_t written ABSL_GUARDED_BY(mu) = 0;
    uint64_t answered ABSL_GUARDED_BY(mu) = 0;
    bool reader_done ABSL_GUARDED_BY(mu) = false;
    Expected* expected ABSL_GUARDED_BY(mu) = nullptr;
  };

  Producer(const Flags& flags, const proc::perf::PerfDataReader& reader, Stream& stream,
           Window& window, bool fill_expected, unwinder::ModuleCache& cache,
           const locate::LocateOptions& locate, PassResult& result)
      : flags_(flags),
        reader_(reader),
        stream_(stream),
        window_(window),
        fill_expected_(fill_expected),
        snap_(reader.info(), SnapshotOptions(flags)),
        cache_(cache),
        locate_(locate),
        result_(result) {
    if (flags.max_frames != 0) unwind_options_.max_frames = flags.max_frames;
  }

  absl::Status OnEvent(const proc::perf::Event& e) override {
    maps_.Apply(e);
    if (e.type != proc::perf::kRecordSample) return absl::OkStatus();
    if (e.attr_index < 0 || static_cast<size_t>(e.attr_index) >= reader_.attrs().size()) {
      ++result_.skipped;
      return absl::OkStatus();
    }
    const proc::perf::Sample& sample = e.sample;
    const proc::perf::EventAttr& attr = reader_.attrs().at(e.attr_index);
    const proc::perf::ProcessTable* table = maps_.Find(sample.pid);
    absl::StatusOr<proc::perf::PerfSnapshotter::Resolved> r =
        snap_.Resolve(sample, attr, table);
    if (!r.ok()) {
      ++result_.skipped;
      return absl::OkStatus();
    }
    const uint64_t id = next_id_++;
    const uint64_t table_id = flags_.floor ? kNeverSentTable : UseTable(*r, id);
    v1::SnapshotRequest* req = batch_.add_samples();
    req->set_sample_id(id);
    req->set_pid(SentPid(sample.pid));
    req->set_tid(static_cast<int32_t>(sample.tid));
    req->set_arch(service::ToProto(r->arch));
    regs_.resize(sample.regs_user.size());
    for (size_t i = 0; i < regs_.size(); ++i) regs_[i] = sample.regs_user[i];
    service::PerfRegistersToProto(attr.sample_regs_user, regs_,
                                  req->mutable_perf_registers());
    // The kernel copies the user stack from the user SP upwards
    // (kernel/events/core.c: perf_output_sample_ustack).
    const absl::Span<const uint8_t> stack = sample.valid_stack();
    req->set_stack_address(r->registers.sp());
    req->set_stack(stack.data(), stack.size());
    req->set_mapping_table_id(table_id);
    if (flags_.max_frames != 0) req->set_max_frames(flags_.max_frames);
    result_.stack_bytes += stack.size();
    if (fill_expected_ && !flags_.floor) {
      pending_expected_.push_back(InProcess(sample, attr, table));
    }
    if (batch_.samples_size() >= flags_.batch) return Flush();
    return absl::OkStatus();
  }

  // Writes what is left and half-closes the stream.
  absl::Status Finish() {
    absl::Status s = Flush();
    stream_.WritesDone();
    return s;
  }

  uint64_t sent() const { return next_id_; }
  uint64_t batches() const { return batches_; }

 private:
  struct LiveTable {
    uint64_t id = 0;         // 0: none sent for this pid, or released
    uint64_t last_use = 0;   // the sample id that last named it
  };

  // The pid to send for a sample of `pid` (--pid).
  int32_t SentPid(uint32_t pid) {
    switch (flags_.pid) {
      case Flags::Pid::kRecorded:
        return static_cast<int32_t>(pid);
      case Flags::Pid::kNone:
        return 0;
      case Flags::Pid::kExited:
        break;
    }
    auto [it, added] = exited_.try_emplace(pid, false);
    if (added) it->second = kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH;
    return it->second ? static_cast<int32_t>(pid) : 0;
  }

  static proc::perf::SnapshotOptions SnapshotOptions(const Flags& f) {
    proc::perf::SnapshotOptions o;
    o.buildid_dir = f.buildid_dir;
    return o;
  }

  // The id of the table `r`'s sample uses, sent in this batch if the
  // stream does not have it; an older table of the same process is
  // released after the batch.
  uint64_t UseTable(const proc::perf::PerfSnapshotter::Resolved& r, uint64_t sample) {
    LiveTable& t = tables_[r.pid];
    if (t.id != r.target_id) {
      if (t.id != 0) Release(t.id);
      t.id = r.target_id;
      v1::MappingTable* mt = batch_.add_mapping_tables();
      mt->set_id(t.id);
      for (const proc::SnapshotMapping& m : *r.mappings) {
        service::MappingToProto(m, /*with_image=*/true, mt->add_mappings());
      }
      ++result_.tables;
      ++live_;
      // Defined in this batch: it must not be released at its end.
      release_.erase(std::remove(release_.begin(), release_.end(), t.id), release_.end());
      if (live_ > kMaxLiveTables) EvictOldest(r.pid);
    }
    t.last_use = sample;
    return t.id;
  }

  void Release(uint64_t id) {
    release_.push_back(id);
    --live_;
  }

  // Releases the least recently used table of another process than
  // `keep`, unless the current batch still uses it.
  void EvictOldest(uint32_t keep) {
    auto oldest = tables_.end();
    for (auto it = tables_.begin(); it != tables_.end(); ++it) {
      if (it->first == keep || it->second.id == 0) continue;
      if (oldest == tables_.end() || it->second.last_use < oldest->second.last_use) {
        oldest = it;
      }
    }
    if (oldest == tables_.end() || oldest->second.last_use >= batch_first_) return;
    Release(oldest->second.id);
    oldest->second.id = 0;
  }

  // The frames an in-process unwind of the sample gives.
  std::vector<uint64_t> InProcess(const proc::perf::Sample& sample,
                                  const proc::perf::EventAttr& attr,
                                  const proc::perf::ProcessTable* table) {
    absl::StatusOr<proc::perf::PerfSnapshotter::Prepared> p =
        snap_.Prepare(sample, attr, table);
    std::vector<uint64_t> pcs;
    if (!p.ok()) return pcs;
    Space& s = spaces_[sample.pid];
    if (s.id != p->target_id) {
      s.space.reset();
      s.target = p->target;
      s.id = p->target_id;
      s.space = std::make_unique<unwinder::AddressSpace>(*s.target, cache_, &locate_);
    }
    unwinder::ProcessStacks st = unwinder::UnwindTarget(*s.target, *s.space, unwind_options_);
    p->target->ClearSample();
    if (!st.threads.empty()) {
      for (const unwinder::Frame& f : st.threads[0].frames) pcs.push_back(f.pc);
    }
    return pcs;
  }

  absl::Status Flush() {
    const int n = batch_.samples_size();
    if (n == 0 && batch_.mapping_tables_size() == 0 && release_.empty()) {
      return absl::OkStatus();
    }
    for (uint64_t id : release_) batch_.add_release_mapping_table_ids(id);
    release_.clear();
    {
      absl::MutexLock l(&window_.mu);
      if (fill_expected_) {
        for (std::vector<uint64_t>& pcs : pending_expected_) {
          window_.expected->push_back(std::move(pcs));
        }
        pending_expected_.clear();
      }
      auto room = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(window_.mu) {
        return window_.reader_done ||
               window_.written + n <= window_.answered + flags_.window;
      };
      window_.mu.Await(absl::Condition(&room));
      if (window_.reader_done) return absl::AbortedError("the reader stopped");
      window_.written += n;
    }
    result_.request_bytes += batch_.ByteSizeLong();
    if (!stream_.Write(batch_)) return absl::UnavailableError("the stream is closed");
    batch_.Clear();  // keeps the samples' objects and their strings' room
    ++batches_;
    batch_first_ = next_id_;
    return absl::OkStatus();
  }

  struct Space {
    uint64_t id = 0;
    std::shared_ptr<proc::SnapshotTarget> target;
    std::unique_ptr<unwinder::AddressSpace> space;
  };

  const Flags& flags_;
  const proc::perf::PerfDataReader& reader_;
  Stream& stream_;
  Window& window_;
  const bool fill_expected_;
  proc::perf::ProcessMaps maps_;
  proc::perf::PerfSnapshotter snap_;
  unwinder::ModuleCache& cache_;
  const locate::LocateOptions& locate_;
  unwinder::UnwindOptions unwind_options_;
  PassResult& result_;
  absl::flat_hash_map<uint32_t, LiveTable> tables_;
  absl::flat_hash_map<uint32_t, Space> spaces_;
  absl::flat_hash_map<uint32_t, bool> exited_;  // --pid=exited: by recorded pid
  size_t live_ = 0;
  std::vector<uint64_t> release_;
  std::vector<uint64_t> regs_;
  std::vector<std::vector<uint64_t>> pending_expected_;
  v1::SnapshotBatch batch_;
  uint64_t next_id_ = 0;
  uint64_t batch_first_ = 0;
  uint64_t batches_ = 0;
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

// Reads the recording from the page cache once, so that no pass pays for
// the disk (the machine pages out idle files within seconds).
void WarmFile(const std::string& path) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return;
  std::vector<char> buf(1 << 20);
  while (read(fd, buf.data(), buf.size()) > 0) {
  }
  close(fd);
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
  std::unique_ptr<Producer::Stream> stream = stub.UnwindSnapshotBatches(&context);
  Producer::Window window;
  {
    absl::MutexLock l(&window.mu);
    window.expected = &expected;
  }
  Producer producer(flags, **reader, *stream, window, fill_expected, cache, locate, result);

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
      } else if (flags.floor) {
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
  if (server_pid == 0) {
    absl::string_view path = flags.server;
    if (!absl::ConsumePrefix(&path, "unix:")) {
      std::fprintf(stderr, "perf_replay: give --server-pid for a server not on unix:\n");
      return 2;
    }
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
  auto channel =
      grpc::CreateCustomChannel(flags.server, grpc::InsecureChannelCredentials(), args);
  std::unique_ptr<v1::Unwinder::Stub> stub = v1::Unwinder::NewStub(channel);

  unwinder::ModuleCache cache;
  const locate::LocateOptions locate;  // the server's default debug dir
  Expected expected;
  std::vector<PassResult> timed;
  for (int pass = 0; pass < flags.warmup + flags.passes; ++pass) {
    PassResult r =
        RunPass(flags, *stub, server_pid, expected, flags.check && pass == 0, cache, locate);
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
      flags.check ? ", every sample's frames equal to the in-process unwind" : "");
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

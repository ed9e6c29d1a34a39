// UnwindSnapshots throughput (issue 7): profiler samples of ~30-frame stacks
// pushed through ONE stream of the real unwindd, as fast as it answers.
// A benchmark target, never a timed test:
//
//   bazel run -c opt //service/server:snapshot_stream_benchmark
//
// Setup, once: unwindd (the real binary) on a temporary Unix socket; the
// deep_stacks fixture (service/testdata/deep_stacks.c: four threads parked
// about 30 frames deep, through libc's qsort and back); one sample per
// thread captured as perf would give it (registers, `stack` bytes from SP
// up), and each sample unwound in-process — the frames every response
// must equal.
//
// Each run writes `samples` requests on one bidi stream from a writer
// thread while the main thread reads the responses, with at most `window`
// samples in flight (a profiler pipelines; it does not wait for each
// answer). Variants (the benchmark's arguments):
//
//   mappings:2  every sample carries the mapping table with build-ids and
//               no pid: a profiler that ships self-contained samples;
//   mappings:1  the table with build-ids and the pid on the first sample
//               only, later samples just the pid (the server reuses the
//               table; memory off the stack copy may come from the process);
//   mappings:0  only the pid: the server reads /proc/PID/maps itself;
//   mappings:3  the table as a MappingTable in the stream's first message,
//               every sample naming it by id, no pid (a perf.data replay);
//   mappings:4  the same plus the pid and its start time (a live
//               profiler: memory off the stack copy may come from the
//               process, whose identity is checked per sample);
//   mappings:5  the samples name a table that was never sent, so every
//               answer is a small error: what receiving and parsing the
//               samples and answering costs without unwinding (the floor
//               of the transport);
//   perf:1      registers as perf gives them (PERF_SAMPLE_REGS_USER: a
//               mask and packed values) instead of the DWARF-numbered map
//               (a protobuf map costs an allocation per register to parse);
//   batch:16    16 samples per message through UnwindSnapshotBatches
//               (gRPC's cost per message is shared by the batch).
//
// Counters: samples_per_s (wall clock, client and server sharing the
// machine), samples_per_server_cpu_s (what "on one core" means: samples
// over the CPU time unwindd used, utime + stime from /proc/PID/stat),
// server_us_per_sample and client_us_per_sample (this process's CPU:
// serialising, gRPC), frames_per_sample, table_mappings (entries in the
// mapping table). The run fails (SkipWithError) on
// any error response, on a response out of order, or on frames that differ
// from the in-process unwind of the same sample.
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "benchmark/benchmark.h"
#include "proc/snapshot_target.h"
#include "service/common/snapshot_requests.h"
#include "service/server/testing/process_cpu.h"
#include "service/server/testing/server_fixture.h"
#include "testdata/harness/subprocess.h"
#include "testdata/harness/tools.h"
#include "unwinder/module.h"
#include "unwinder/module_cache.h"
#include "unwinder/testing/sample_capture.h"
#include "unwinder/unwinder.h"

namespace unwindd::service {
namespace {

// A SnapshotBatch the benchmark serialised itself, written as is (raw:1):
// the client then costs a copy of the bytes per message instead of
// building and serialising messages, so it keeps ahead of the server.
struct RawBatch {
  grpc::ByteBuffer bytes;
};

}  // namespace
}  // namespace unwindd::service

template <>
class grpc::SerializationTraits<unwindd::service::RawBatch> {
 public:
  static grpc::Status Serialize(const unwindd::service::RawBatch& m, grpc::ByteBuffer* out,
                                bool* own_buffer) {
    *out = m.bytes;  // shares the slices
    *own_buffer = true;
    return grpc::Status::OK;
  }
  static grpc::Status Deserialize(grpc::ByteBuffer*, unwindd::service::RawBatch*) {
    return grpc::Status(grpc::StatusCode::UNIMPLEMENTED, "write-only");
  }
};

namespace unwindd::service {
namespace {

using testing::ProcessCpuSeconds;
using testing::ProcessStartTime;
using testing::SelfCpuSeconds;
using testing::ServerProcess;

// Frames a sample must have to count as a "30-frame stack" sample.
constexpr int kMinFrames = 20;
constexpr int kMaxFrames = 60;

struct Sample {
  v1::SnapshotRequest request;  // with mappings + build-ids, without pid
  std::vector<uint64_t> pcs;    // the in-process unwind of the same sample
  pid_t pid = 0;
  uint64_t start_time = 0;      // the process's, /proc/PID/stat field 22
};

struct World {
  testing::TempDir dir;
  std::unique_ptr<ServerProcess> server;
  std::unique_ptr<harness::RunningProgram> fixture;
  std::vector<Sample> samples;
  std::string error;
};

// The sample as a profiler would send it: DWARF registers, the stack copy,
// every mapping with its path and, for ELF files, the build-id.
v1::SnapshotRequest ToRequest(const proc::Snapshot& s) {
  v1::SnapshotRequest r;
  r.set_tid(s.tid);
  r.set_arch(v1::ARCH_X86_64);
  DwarfRegistersToProto(s.registers, r.mutable_dwarf_registers());
  r.set_stack_address(s.stack_address);
  r.set_stack(std::string(s.stack.begin(), s.stack.end()));
  for (const proc::SnapshotMapping& sm : s.mappings) {
    const proc::Mapping& m = sm.mapping;
    proc::SnapshotMapping sent{m, nullptr, nullptr, ""};
    if (m.IsFileBacked()) {
      absl::StatusOr<std::shared_ptr<unwinder::Module>> mod =
          unwinder::Module::OpenFile(m.path);
      if (mod.ok()) sent.build_id = (*mod)->build_id();
    } else if (m.path == "[vdso]" && sm.image != nullptr) {
      // Our own vDSO: the server may stand in its copy for this one.
      unwinder::ModuleCache cache;
      absl::StatusOr<std::shared_ptr<unwinder::Module>> mod =
          cache.GetImage(*sm.image, "[vdso]");
      if (mod.ok()) sent.build_id = (*mod)->build_id();
    }
    MappingToProto(sent, /*with_image=*/false, r.add_mappings());
  }
  return r;
}

World& GetWorld(size_t stack_bytes) {
  // Destroyed at exit: the server and fixture killed, the directory removed.
  static std::map<size_t, std::unique_ptr<World>> worlds;
  std::unique_ptr<World>& slot = worlds[stack_bytes];
  if (slot != nullptr) return *slot;
  slot = std::make_unique<World>();
  World& w = *slot;
  absl::StatusOr<std::unique_ptr<ServerProcess>> s =
      ServerProcess::Start(w.dir.path(), {"--request-log=none"});
  if (!s.ok()) {
    w.error = std::string(s.status().message());
    return w;
  }
  w.server = *std::move(s);
  absl::StatusOr<harness::RunningProgram> p = harness::StartProgram(
      absl::StrCat(harness::RunfilesRoot(), "/service/server/deep_stacks_O2_nofp_pie"));
  if (!p.ok()) {
    w.error = std::string(p.status().message());
    return w;
  }
  w.fixture = std::make_unique<harness::RunningProgram>(std::move(*p));
  absl::StatusOr<std::vector<proc::Snapshot>> snaps =
      unwinder::testing::CaptureSamples(w.fixture->pid(), stack_bytes);
  if (!snaps.ok()) {
    w.error = std::string(snaps.status().message());
    return w;
  }
  unwinder::ModuleCache cache;
  unwinder::UnwindOptions options;
  for (const proc::Snapshot& snap : *snaps) {
    absl::StatusOr<std::unique_ptr<proc::Target>> t =
        proc::CreateSnapshotTarget(snap, nullptr);
    if (!t.ok()) continue;
    unwinder::ProcessStacks st = unwinder::UnwindTarget(**t, cache, options);
    if (st.threads.size() != 1) continue;
    const unwinder::ThreadStack& ts = st.threads[0];
    int n = ts.frames.size();
    if (n < kMinFrames || n > kMaxFrames) continue;  // main's short stack
    Sample sample;
    sample.request = ToRequest(snap);
    sample.pid = snap.pid;
    sample.start_time = ProcessStartTime(snap.pid);
    for (const unwinder::Frame& f : ts.frames) sample.pcs.push_back(f.pc);
    w.samples.push_back(std::move(sample));
  }
  if (w.samples.empty()) w.error = "no sample of 20-60 frames was captured";
  return w;
}

// perf_event_x86_regs order: AX BX CX DX SI DI BP SP IP, then R8-R15 at 16.
constexpr int kPerfToDwarf[] = {0, 3, 2, 1, 4, 5, 6, 7, 16};

void ToPerfRegisters(v1::SnapshotRequest* r) {
  v1::DwarfRegisters dwarf = r->dwarf_registers();
  v1::PerfRegisters* perf = r->mutable_perf_registers();  // clears dwarf
  uint64_t mask = 0;
  for (int bit = 0; bit < 24; ++bit) {
    if (bit >= 9 && bit < 16) continue;
    int reg = bit < 9 ? kPerfToDwarf[bit] : 8 + (bit - 16);
    auto it = dwarf.values().find(reg);
    if (it == dwarf.values().end()) continue;
    mask |= uint64_t{1} << bit;
    perf->add_values(it->second);
  }
  perf->set_mask(mask);
}

// The request for the i-th sample of a run in mode `mappings`.
void Prepare(const Sample& s, int mappings, bool perf, uint64_t i,
             v1::SnapshotRequest* out) {
  *out = s.request;
  out->set_sample_id(i);
  if (perf) ToPerfRegisters(out);
  if (mappings == 2) return;
  if (mappings >= 3) {
    constexpr uint64_t kTable = 1;
    if (i == 0) {
      v1::MappingTable* t = out->mutable_mapping_table();
      t->set_id(kTable);
      *t->mutable_mappings() = s.request.mappings();
    }
    out->clear_mappings();
    out->set_mapping_table_id(mappings == 5 ? kTable + 1 : kTable);
    if (mappings == 4) {
      out->set_pid(s.pid);
      out->set_pid_start_time(s.start_time);
    }
    return;
  }
  out->set_pid(s.pid);
  if (mappings == 0 || i > 0) out->clear_mappings();
}

// "" if `resp` answers sample `i` of a run with the in-process frames (or,
// for mappings:5, with the error it must get).
std::string Check(const World& w, int mappings, int64_t i, const v1::SnapshotResponse& resp) {
  const Sample& s = w.samples[i % w.samples.size()];
  if (mappings == 5) {
    if (resp.sample_id() != static_cast<uint64_t>(i) ||
        resp.error().code() != grpc::StatusCode::INVALID_ARGUMENT) {
      return absl::StrCat("sample ", i, ": not the error for an unknown table");
    }
    return "";
  }
  if (resp.has_error()) return absl::StrCat("sample ", i, ": ", resp.error().message());
  if (resp.sample_id() != static_cast<uint64_t>(i)) {
    return absl::StrCat("response ", i, " is for sample ", resp.sample_id());
  }
  if (resp.stack().frames_size() != static_cast<int>(s.pcs.size())) {
    return absl::StrCat("sample ", i, ": ", resp.stack().frames_size(),
                        " frames, the in-process unwind has ", s.pcs.size());
  }
  for (int f = 0; f < resp.stack().frames_size(); ++f) {
    if (resp.stack().frames(f).pc() != s.pcs[f]) {
      return absl::StrCat("sample ", i, " frame ", f, " differs");
    }
  }
  return "";
}

// Pushes `count` samples through one stream, `batch` per message (1:
// UnwindSnapshots, more: UnwindSnapshotBatches) and at most `window`
// samples in flight: a writer thread writes while this one reads and checks
// the answers. "" or what went wrong; `frames` gets the frames of every
// response.
void AppendVarint(std::string* out, uint64_t v) {
  while (v >= 0x80) {
    out->push_back(static_cast<char>(v | 0x80));
    v >>= 7;
  }
  out->push_back(static_cast<char>(v));
}

std::string RunStream(World& w, int mappings, bool perf, int64_t count, int batch,
                      int window, bool raw, int64_t* frames) {
  // One request per captured sample, built before timing starts: the
  // client only patches sample_id.
  std::vector<v1::SnapshotRequest> first(w.samples.size()), later(w.samples.size());
  for (size_t k = 0; k < w.samples.size(); ++k) {
    Prepare(w.samples[k], mappings, perf, 0, &first[k]);
    Prepare(w.samples[k], mappings, perf, 1, &later[k]);
  }
  auto sample = [&](int64_t k) -> v1::SnapshotRequest& {
    v1::SnapshotRequest& r = (k == 0 ? first : later)[k % w.samples.size()];
    r.set_sample_id(k);
    return r;
  };
  // raw:1: each request serialised once without its sample_id; a
  // message is SnapshotBatch field 1 (samples) per sample, holding the
  // sample_id field and then those bytes.
  std::vector<std::string> first_bytes, later_bytes;
  for (size_t k = 0; k < w.samples.size(); ++k) {
    v1::SnapshotRequest r = first[k];
    r.clear_sample_id();
    first_bytes.push_back(r.SerializeAsString());
    r = later[k];
    r.clear_sample_id();
    later_bytes.push_back(r.SerializeAsString());
  }
  auto raw_message = [&](int64_t from, int64_t to) {
    std::string bytes;
    for (int64_t k = from; k < to; ++k) {
      const std::string& body = (k == 0 ? first_bytes : later_bytes)[k % w.samples.size()];
      std::string id;
      id.push_back(0x08);  // sample_id = 1, varint
      AppendVarint(&id, k);
      bytes.push_back(0x0a);  // samples = 1, length-delimited
      AppendVarint(&bytes, id.size() + body.size());
      bytes += id;
      bytes += body;
    }
    grpc::Slice slice(bytes);
    return RawBatch{grpc::ByteBuffer(&slice, 1)};
  };
  auto stub = w.server->Stub();
  auto channel = w.server->NewChannel();
  grpc::ClientContext context;
  auto single = batch <= 1 ? stub->UnwindSnapshots(&context) : nullptr;
  auto batched = batch <= 1 || raw ? nullptr : stub->UnwindSnapshotBatches(&context);
  std::unique_ptr<grpc::ClientReaderWriter<RawBatch, v1::SnapshotBatchResponse>> raw_stream;
  if (batch > 1 && raw) {
    raw_stream.reset(
        grpc::internal::ClientReaderWriterFactory<RawBatch, v1::SnapshotBatchResponse>::Create(
            channel.get(),
            grpc::internal::RpcMethod("/unwindd.v1.Unwinder/UnwindSnapshotBatches",
                                      grpc::internal::RpcMethod::BIDI_STREAMING, channel),
            &context));
  }
  batch = std::max(batch, 1);

  absl::Mutex mu;
  int64_t answered = 0;      // guarded by mu
  bool reader_done = false;  // guarded by mu
  std::thread writer([&] {
    v1::SnapshotBatch message;
    for (int64_t i = 0; i < count; i += batch) {
      {
        absl::MutexLock l(&mu);
        auto room = [&] { return reader_done || i - answered < window; };
        mu.Await(absl::Condition(&room));
        if (reader_done) break;
      }
      if (single != nullptr) {
        if (!single->Write(sample(i))) break;
        continue;
      }
      if (raw_stream != nullptr) {
        if (!raw_stream->Write(raw_message(i, std::min(count, i + batch)))) break;
        continue;
      }
      message.clear_samples();
      for (int64_t k = i; k < std::min(count, i + batch); ++k) {
        *message.add_samples() = sample(k);
      }
      if (!batched->Write(message)) break;
    }
    if (single != nullptr) single->WritesDone();
    else if (raw_stream != nullptr) raw_stream->WritesDone();
    else batched->WritesDone();
  });

  std::string error;
  int64_t i = 0;
  auto take = [&](const v1::SnapshotResponse& r) {
    if (error.empty()) error = Check(w, mappings, i, r);
    *frames += r.stack().frames_size();
    ++i;
  };
  v1::SnapshotResponse one;
  v1::SnapshotBatchResponse many;
  while (i < count) {
    if (single != nullptr) {
      if (!single->Read(&one)) break;
      take(one);
    } else {
      if (!(raw_stream != nullptr ? raw_stream->Read(&many) : batched->Read(&many))) break;
      for (const v1::SnapshotResponse& r : many.responses()) take(r);
    }
    absl::MutexLock l(&mu);
    answered = i;
  }
  {
    absl::MutexLock l(&mu);
    reader_done = true;
  }
  writer.join();
  grpc::Status st = single != nullptr       ? single->Finish()
                    : raw_stream != nullptr ? raw_stream->Finish()
                                            : batched->Finish();
  if (error.empty() && i != count) error = absl::StrCat("only ", i, " of ", count, " answered");
  if (error.empty() && !st.ok()) error = st.error_message();
  return error;
}

void BM_SnapshotStream(benchmark::State& state) {
  const int mappings = state.range(0);
  const size_t stack_bytes = state.range(1);
  const int64_t count = state.range(2);
  const int window = state.range(3);
  const bool perf = state.range(4) != 0;
  const int batch = state.range(5);
  const bool raw = state.range(6) != 0;
  World& w = GetWorld(stack_bytes);
  if (!w.error.empty()) {
    state.SkipWithError(w.error.c_str());
    return;
  }
  auto run = [&](int64_t n, int64_t* frames) {
    return RunStream(w, mappings, perf, n, batch, window, raw, frames);
  };
  // Warm-up: modules opened, build-ids verified, gRPC's pools grown.
  int64_t frames = 0;
  std::string error = run(200, &frames);
  if (!error.empty()) {
    state.SkipWithError(error.c_str());
    return;
  }
  frames = 0;
  int64_t samples = 0;
  double server_cpu = 0, client_cpu = 0, wall = 0;
  for (auto _ : state) {
    double server0 = ProcessCpuSeconds(w.server->pid());
    double client0 = SelfCpuSeconds();
    absl::Time t0 = absl::Now();
    error = run(count, &frames);
    wall += absl::ToDoubleSeconds(absl::Now() - t0);
    client_cpu += SelfCpuSeconds() - client0;
    server_cpu += ProcessCpuSeconds(w.server->pid()) - server0;
    samples += count;
    if (!error.empty()) break;
  }
  if (!error.empty()) {
    state.SkipWithError(error.c_str());
    return;
  }
  state.SetItemsProcessed(samples);
  state.counters["samples_per_s"] = samples / wall;
  state.counters["samples_per_server_cpu_s"] = server_cpu > 0 ? samples / server_cpu : 0;
  state.counters["server_us_per_sample"] = server_cpu * 1e6 / samples;
  state.counters["client_us_per_sample"] = client_cpu * 1e6 / samples;
  state.counters["frames_per_sample"] = static_cast<double>(frames) / samples;
  state.counters["stack_bytes"] = w.samples[0].request.stack().size();
  state.counters["table_mappings"] = w.samples[0].request.mappings_size();
}

// mappings (2 every sample, 1 first sample + pid, 0 pid only, 3 a table
// sent once and named by id, 4 the same with pid and start time), stack copy
// cap (perf's default dump size is 8 KiB; the fixture's thread stacks hold
// about 5 KiB from SP to their top, so the copies are cut there), samples
// per stream, window, perf registers, samples per message (1:
// UnwindSnapshots, more: UnwindSnapshotBatches).
BENCHMARK(BM_SnapshotStream)
    ->ArgNames({"mappings", "stack", "samples", "window", "perf", "batch", "raw"})
    ->Args({2, 8 << 10, 50000, 64, 0, 1, 0})
    ->Args({1, 8 << 10, 50000, 64, 0, 1, 0})
    ->Args({0, 8 << 10, 50000, 64, 0, 1, 0})
    ->Args({1, 8 << 10, 50000, 64, 1, 1, 0})
    ->Args({1, 8 << 10, 50000, 64, 0, 16, 0})
    ->Args({1, 8 << 10, 50000, 64, 1, 16, 0})
    ->Args({2, 8 << 10, 50000, 64, 1, 16, 0})
    ->Args({3, 8 << 10, 50000, 64, 0, 1, 0})
    ->Args({3, 8 << 10, 50000, 64, 1, 16, 0})
    ->Args({3, 8 << 10, 50000, 64, 0, 16, 0})
    ->Args({4, 8 << 10, 50000, 64, 1, 16, 0})
    ->Args({3, 8 << 10, 100000, 256, 1, 16, 0})
    ->Args({3, 8 << 10, 100000, 1024, 1, 16, 0})
    ->Args({3, 8 << 10, 100000, 256, 1, 64, 0})
    ->Args({3, 8 << 10, 100000, 1024, 1, 256, 0})
    ->Args({3, 8 << 10, 100000, 256, 1, 16, 1})
    ->Args({5, 8 << 10, 100000, 256, 1, 16, 0})
    ->Args({5, 8 << 10, 100000, 256, 1, 64, 0})
    ->Args({3, 8 << 10, 100000, 1024, 1, 64, 1})
    ->Args({3, 8 << 10, 200000, 4096, 1, 1024, 0})
    ->Args({3, 8 << 10, 200000, 4096, 1, 1024, 1})
    ->Iterations(1)
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace unwindd::service

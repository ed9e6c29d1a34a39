// What one snapshot sample costs unwindd apart from gRPC: parsing its
// message, SnapshotSession::Unwind (table lookup, checks, the walk, the
// response) and serialising the answer, for ~30-frame samples of the
// deep_stacks fixture named by a mapping table, 16 to a batch. The gRPC and
// kernel share of a stream is snapshot_stream_benchmark's figure minus
// this one. Run:
//
//   bazel run -c opt //service/server:snapshots_benchmark
#include <unistd.h>

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "benchmark/benchmark.h"
#include "service/server/snapshots.h"
#include "service/server/testing/capture.h"
#include "service/server/testing/snapshot_streams.h"
#include "testdata/harness/subprocess.h"
#include "testdata/harness/tools.h"
#include "unwinder/module_cache.h"

namespace unwindd::service {
namespace {

constexpr int kBatch = 16;

struct World {
  std::unique_ptr<harness::RunningProgram> fixture;
  std::string table;  // a serialized SnapshotBatch defining table 1
  std::string batch;  // a serialized SnapshotBatch of kBatch samples naming it
  std::string error;
};

World& GetWorld() {
  static World* w = [] {
    auto* w = new World;
    if (geteuid() != 0) {
      w->error = "needs root (captures a ptrace fixture)";
      return w;
    }
    absl::StatusOr<harness::RunningProgram> p = harness::StartProgram(
        absl::StrCat(harness::RunfilesRoot(), "/service/server/deep_stacks_O2_nofp_pie"));
    if (!p.ok()) {
      w->error = std::string(p.status().message());
      return w;
    }
    w->fixture = std::make_unique<harness::RunningProgram>(std::move(*p));
    testing::CaptureOptions o;
    o.with_pid = false;
    o.perf_registers = true;
    o.max_stack = 8 << 10;
    absl::StatusOr<std::vector<v1::SnapshotRequest>> s =
        testing::CaptureSamples(w->fixture->pid(), o);
    if (!s.ok() || s->size() < 2) {
      w->error = s.ok() ? "too few threads" : std::string(s.status().message());
      return w;
    }
    s->erase(s->begin());  // main's short stack
    v1::SnapshotBatch table;
    *table.add_mapping_tables() = testing::TakeTable(*s, 1);
    w->table = table.SerializeAsString();
    v1::SnapshotBatch batch;
    for (int i = 0; i < kBatch; ++i) *batch.add_samples() = (*s)[i % s->size()];
    w->batch = batch.SerializeAsString();
    return w;
  }();
  return *w;
}

// Parse, unwind kBatch samples, serialise: one message's work.
void BM_BatchMessage(benchmark::State& state) {
  World& w = GetWorld();
  if (!w.error.empty()) {
    state.SkipWithError(w.error.c_str());
    return;
  }
  const bool unwind = state.range(0) != 0;
  const bool serialize = state.range(1) != 0;
  unwinder::ModuleCache cache;
  BuildIdIndex index;
  Caller root;
  root.uid = 0;
  root.gid = 0;
  root.unrestricted = true;
  SnapshotSession session(root, UnwindEnv{&cache, nullptr}, index, VdsoImage{},
                          SnapshotLimits{});
  v1::SnapshotBatch tables;
  tables.ParseFromString(w.table);
  session.DefineTable(tables.mapping_tables(0)).IgnoreError();
  v1::SnapshotBatch batch;
  std::atomic<bool> cancel{false};
  SampleAnswer answer;
  std::string out;
  int64_t frames = 0;
  for (auto _ : state) {
    batch.ParseFromString(w.batch);
    if (!unwind) continue;
    out.clear();
    for (const v1::SnapshotRequest& r : batch.samples()) {
      answer.Clear();
      answer.sample_id = r.sample_id();
      absl::Status s = session.Unwind(r, &cancel, &answer);
      if (!s.ok()) {
        state.SkipWithError(std::string(s.message()).c_str());
        return;
      }
      frames += answer.frames.size();
      if (serialize) AppendBatchElement(answer, &out);
    }
  }
  state.SetItemsProcessed(state.iterations() * kBatch);
  state.counters["ns_per_sample"] = benchmark::Counter(
      state.iterations() * kBatch, benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
  state.counters["frames_per_sample"] =
      unwind ? static_cast<double>(frames) / (state.iterations() * kBatch) : 0;
  state.counters["response_bytes_per_sample"] = static_cast<double>(out.size()) / kBatch;
}

// Encoding alone: one real answer (from the session), again and again.
void BM_EncodeAnswer(benchmark::State& state) {
  World& w = GetWorld();
  if (!w.error.empty()) {
    state.SkipWithError(w.error.c_str());
    return;
  }
  unwinder::ModuleCache cache;
  BuildIdIndex index;
  Caller root;
  root.uid = 0;
  root.gid = 0;
  root.unrestricted = true;
  SnapshotSession session(root, UnwindEnv{&cache, nullptr}, index, VdsoImage{},
                          SnapshotLimits{});
  v1::SnapshotBatch tables, batch;
  tables.ParseFromString(w.table);
  session.DefineTable(tables.mapping_tables(0)).IgnoreError();
  batch.ParseFromString(w.batch);
  std::atomic<bool> cancel{false};
  SampleAnswer answer;
  absl::Status s = session.Unwind(batch.samples(0), &cancel, &answer);
  if (!s.ok()) {
    state.SkipWithError(std::string(s.message()).c_str());
    return;
  }
  std::string out;
  for (auto _ : state) {
    out.clear();
    for (int i = 0; i < kBatch; ++i) AppendBatchElement(answer, &out);
    benchmark::DoNotOptimize(out.data());
  }
  state.counters["ns_per_sample"] = benchmark::Counter(
      state.iterations() * kBatch, benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
  state.counters["frames"] = answer.frames.size();
}
BENCHMARK(BM_EncodeAnswer);

// (unwind, serialize): parse only; parse + unwind; all three (the encoding
// as the server does it, response_encoder.h).
BENCHMARK(BM_BatchMessage)->ArgNames({"unwind", "serialize"})->Args({0, 0})->Args({1, 0})->Args({1, 1});

}  // namespace
}  // namespace unwindd::service


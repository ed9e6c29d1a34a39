// libFuzzer target: snapshot requests as unwindd receives them. The input
// is the wire bytes of one v1::SnapshotBatch (proto/unwinder.proto), run
// through the server's own path (snapshot_messages.h): parse, BeginBatch,
// SnapshotSession::Unwind per sample (mapping_tables.h's checks and limits,
// files resolved as the caller, proc::SnapshotTarget, the walk), the
// response encoder, EndBatch. A batch without mapping_tables and
// release_mapping_table_ids is run as an UnwindSnapshots stream instead:
// one message per sample, each answered with a SnapshotResponse. No gRPC:
// the handlers only read and write around these calls.
//
// Every answer must parse back as the message the client expects (so it
// is valid protobuf, with valid UTF-8 in every string field), one element
// per sample, carrying the sample's error code when it has one. And the
// batch reader the server parses UnwindSnapshotBatches messages with
// (batch_reader.h) must make of the bytes, split into slices in two ways,
// what protobuf makes of them: refuse the same inputs, and otherwise give
// the same message, stacks put back.
//
// What the fuzzer confines, so that it never opens a host file or reads
// another process (the caller is nobody, as an unprivileged local user):
//   - every mapping path that names a file (not "" or "[...]") becomes one
//     of the committed core's module files (testdata/core/fixture: the
//     crasher, its libc and ld.so), copied at start into a directory of
//     /tmp that the user nobody can read, or a missing file there. The core's own
//     paths (what the seeds carry) name their file; other paths pick one
//     by hash;
//   - a sysroot becomes that directory (and the paths then hang from it),
//     a path_map entry's `to` becomes it, valid debug_dirs become its empty
//     debug/; so path_map and sysroot still run but stay inside it;
//   - a positive pid becomes the fuzzer's own, which the caller (nobody)
//     may not read: the pid checks run, live memory is never used.
// Values the server refuses before use (over-long paths, relative
// debug_dirs) are left as they are.
//
// Seeds: UNWINDD_WRITE_SNAPSHOT_SEEDS=DIR bazel-bin/service/server/snapshot_request_fuzzer
// writes requests built from the core's threads (registers, stack copy,
// its mappings with build-ids and the vDSO image, as a profiler sends
// them), in both RPCs' shapes, into DIR and exits (tools/fuzz/make_seeds.py).
// UNWINDD_SNAPSHOT_FUZZER_PRINT=1 prints every answer (to see what an
// input does).
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <iterator>
#include <climits>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/io/zero_copy_stream_impl_lite.h"
#include "google/protobuf/stubs/logging.h"
#include "proc/core_target.h"
#include "proto/unwinder.pb.h"
#include "service/server/auth.h"
#include "service/server/batch_reader.h"
#include "service/server/binaries.h"
#include "service/server/response_encoder.h"
#include "service/server/snapshot_messages.h"
#include "service/server/snapshots.h"
#include "tools/fuzz/runfiles.h"
#include "unwinder/module_cache.h"

namespace unwindd::service {
namespace {

// The module files of the fixture core, as the core's NT_FILE names them
// relative to testdata/core/fixture.
constexpr const char* kFiles[] = {"crasher", "sysroot/usr/lib/x86_64-linux-gnu/libc.so.6",
                                  "sysroot/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2"};
constexpr size_t kSeedStack = 4 << 10;

struct Fixture {
  std::string root;                 // the copies' directory in /tmp
  std::vector<std::string> names;   // the copies' names in it, then "missing"
  // A path the core recorded -> its file's name in `names` (the same
  // base name).
  absl::flat_hash_map<std::string, std::string> known;
  unwinder::ModuleCache cache{256 << 20};
  ServerBinaries binaries;
  VdsoImage vdso;
  Caller caller;
  SnapshotLimits limits;
  bool print = false;  // UNWINDD_SNAPSHOT_FUZZER_PRINT: each answer to stderr
};
Fixture* fixture = nullptr;

[[noreturn]] void Die(const std::string& what) {
  std::fprintf(stderr, "snapshot_request_fuzzer: %s\n", what.c_str());
  std::abort();
}

void RemoveRoot() {
  std::error_code ec;
  if (fixture != nullptr) std::filesystem::remove_all(fixture->root, ec);
}

// Copies the fixture's files where nobody can read them (the runfiles
// tree is under root's home), 0755 directory, 0644 files. Removed at exit
// (left behind if the process dies on a finding). A fuzzer that does not
// run as root cannot open files as nobody (no CAP_SETUID): the server
// then opens none, and only the file-less paths are fuzzed.
void CopyFiles(const std::string& dir, Fixture& f) {
  char tmpl[] = "/tmp/snapfuzzXXXXXX";
  if (mkdtemp(tmpl) == nullptr) Die("mkdtemp failed");
  f.root = tmpl;
  chmod(f.root.c_str(), 0755);
  std::error_code ec;
  for (const char* file : kFiles) {
    const std::string name = std::filesystem::path(file).filename();
    const std::string to = absl::StrCat(f.root, "/", name);
    if (!std::filesystem::copy_file(absl::StrCat(dir, "/", file), to, ec)) {
      Die(absl::StrCat("cannot copy ", file, ": ", ec.message()));
    }
    chmod(to.c_str(), 0644);
    f.names.push_back(name);
  }
  f.names.push_back("missing");
  mkdir(absl::StrCat(f.root, "/debug").c_str(), 0755);
  std::atexit(RemoveRoot);
}

// FNV-1a: the same file for the same path in every run (absl::Hash is
// seeded per process), so that a crashing input replays the same way.
uint64_t StableHash(const std::string& s) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : s) h = (h ^ c) * 0x100000001b3ull;
  return h;
}

// Where the server will look for `path`: a copy (or the missing file), as
// an absolute path or, under a sysroot (`rooted`), relative to it.
void ConfinePath(std::string* path, bool rooted) {
  if (path->empty() || (*path)[0] == '[' || path->size() > PATH_MAX) return;
  auto it = fixture->known.find(*path);
  const std::string& name =
      it != fixture->known.end() ? it->second
                                 : fixture->names[StableHash(*path) % fixture->names.size()];
  *path = absl::StrCat(rooted ? "" : fixture->root, "/", name);
}

template <typename Mappings, typename PathMaps>
void ConfineTable(Mappings* mappings, std::string* sysroot, PathMaps* path_map) {
  const bool rooted = !sysroot->empty();
  if (rooted && sysroot->size() <= PATH_MAX) *sysroot = fixture->root;
  for (v1::PathMapping& pm : *path_map) {
    // `to` + the rest of a confined path: still under the root, since
    // no confined path has a "..".
    if (pm.to().size() <= PATH_MAX) pm.set_to(rooted ? "/" : fixture->root + "/");
  }
  for (v1::Mapping& m : *mappings) {
    ConfinePath(m.path_bytes().empty() ? m.mutable_path() : m.mutable_path_bytes(), rooted);
  }
}

void Confine(v1::SnapshotRequest& r) {
  if (r.pid() > 0) r.set_pid(getpid());
  ConfineTable(r.mutable_mappings(), r.mutable_sysroot(), r.mutable_path_map());
  if (r.has_mapping_table()) {
    v1::MappingTable* t = r.mutable_mapping_table();
    ConfineTable(t->mutable_mappings(), t->mutable_sysroot(), t->mutable_path_map());
  }
  for (std::string& d : *r.mutable_debug_dirs()) {
    if (!d.empty() && d[0] == '/' && d.size() <= PATH_MAX) d = fixture->root + "/debug";
  }
}

// The encoded answer of `r` (status `s`), as its client parses it.
void CheckAnswer(const v1::SnapshotResponse& got, const v1::SnapshotRequest& r,
                 const absl::Status& s) {
  if (fixture->print) std::fprintf(stderr, "%s\n", got.DebugString().c_str());
  if (got.sample_id() != r.sample_id() ||
      got.error().code() != static_cast<int>(s.code())) {
    Die(absl::StrCat("the answer to sample ", r.sample_id(), " (", s.ToString(),
                     ") is sample ", got.sample_id(), " with code ", got.error().code()));
  }
}

std::string Deterministic(const v1::SnapshotBatch& b) {
  std::string bytes;
  google::protobuf::io::StringOutputStream s(&bytes);
  google::protobuf::io::CodedOutputStream out(&s);
  out.SetSerializationDeterministic(true);
  b.SerializeToCodedStream(&out);
  out.Trim();
  return bytes;
}

// The batch reader against protobuf's parse (`parsed`: whether protobuf
// took the bytes, `want` what it made of them).
void CheckBatchReader(const uint8_t* data, size_t size, bool parsed,
                      const v1::SnapshotBatch& want) {
  const size_t pieces[] = {size + 1, size == 0 ? 1 : 1 + data[size - 1] % 61u};
  for (size_t piece : pieces) {
    std::vector<grpc::Slice> slices;
    for (size_t at = 0; at < size; at += piece) {
      slices.emplace_back(data + at, std::min(piece, size - at));
    }
    ReceivedBatch in;
    if (in.Parse(std::move(slices)) != parsed) {
      Die(absl::StrCat("the batch reader ", parsed ? "refused" : "took",
                       " a message protobuf ", parsed ? "takes" : "refuses"));
    }
    if (!parsed) continue;
    v1::SnapshotBatch got = in.batch();
    for (int i = 0; i < got.samples_size(); ++i) {
      if (!got.samples(i).stack().empty()) Die("the batch reader left a stack in a sample");
      const StackCopy& c = in.stack(i);
      std::string stack(c.head.begin(), c.head.end());
      stack.append(c.tail.begin(), c.tail.end());
      got.mutable_samples(i)->set_stack(std::move(stack));
    }
    if (Deterministic(got) != Deterministic(want)) {
      Die("the batch reader's message is not protobuf's");
    }
  }
}

void Run(const uint8_t* data, size_t size) {
  v1::SnapshotBatch batch;
  const bool parsed = batch.ParseFromArray(data, static_cast<int>(size));
  CheckBatchReader(data, size, parsed, batch);
  if (!parsed) return;  // gRPC refuses it too
  for (v1::MappingTable& t : *batch.mutable_mapping_tables()) {
    ConfineTable(t.mutable_mappings(), t.mutable_sysroot(), t.mutable_path_map());
  }
  for (v1::SnapshotRequest& r : *batch.mutable_samples()) Confine(r);

  // One stream: its own session and build-id index, so that inputs do
  // not depend on each other; the module cache is the server's, shared.
  BuildIdIndex index;
  SnapshotSession session(fixture->caller,
                          UnwindEnv{&fixture->cache, nullptr, &fixture->binaries}, index,
                          fixture->vdso, fixture->limits);
  const std::atomic<bool> cancel{false};
  SampleAnswer answer;
  std::string out;
  if (batch.mapping_tables_size() == 0 && batch.release_mapping_table_ids_size() == 0) {
    for (const v1::SnapshotRequest& r : batch.samples()) {
      out.clear();
      absl::Status s =
          AnswerSample(session, r, &cancel, absl::OkStatus(), /*batch=*/false, &answer, &out);
      v1::SnapshotResponse got;
      if (!got.ParseFromString(out)) Die("a SnapshotResponse that does not parse");
      CheckAnswer(got, r, s);
    }
    return;
  }
  if (!BeginBatch(session, batch).ok()) return;  // the stream ends
  std::vector<absl::Status> statuses;
  for (const v1::SnapshotRequest& r : batch.samples()) {
    statuses.push_back(
        AnswerSample(session, r, &cancel, absl::OkStatus(), /*batch=*/true, &answer, &out));
  }
  EndBatch(session, batch);
  v1::SnapshotBatchResponse got;
  if (!got.ParseFromString(out)) Die("a SnapshotBatchResponse that does not parse");
  if (got.responses_size() != batch.samples_size()) Die("not one answer per sample");
  for (int i = 0; i < batch.samples_size(); ++i) {
    CheckAnswer(got.responses(i), batch.samples(i), statuses[i]);
  }

  // The same samples with each stack copy in two pieces, as a received
  // message split between two buffers gives them (batch_reader.h): the
  // same answers, byte for byte. Not with a live process (a pid: this
  // one), whose memory may have changed between the two walks.
  for (const v1::SnapshotRequest& r : batch.samples()) {
    if (r.pid() > 0) return;
  }
  BuildIdIndex split_index;  // what the first session's files taught it aside
  SnapshotSession split(fixture->caller,
                        UnwindEnv{&fixture->cache, nullptr, &fixture->binaries}, split_index,
                        fixture->vdso, fixture->limits);
  if (!BeginBatch(split, batch).ok()) Die("a batch begun once but not twice");
  std::string split_out;
  StringSink sink(&split_out);
  for (int i = 0; i < batch.samples_size(); ++i) {
    const v1::SnapshotRequest& r = batch.samples(i);
    const absl::Span<const uint8_t> whole(reinterpret_cast<const uint8_t*>(r.stack().data()),
                                          r.stack().size());
    const size_t at = (size + 977 * static_cast<size_t>(i)) % (whole.size() + 1);
    AnswerSample(split, r, StackCopy(whole.first(at), whole.subspan(at)), &cancel,
                 absl::OkStatus(), /*batch=*/true, &answer, sink);
  }
  EndBatch(split, batch);
  if (split_out != out) Die("a stack copy in two pieces answered otherwise than whole");
}

// ---- seeds ----

// perf_event_x86_regs order: AX BX CX DX SI DI BP SP IP, then R8-R15 at 16
// (DWARF numbers).
constexpr int kPerfToDwarf[] = {0, 3, 2, 1, 4, 5, 6, 7, 16};

void Write(const std::string& dir, const std::string& name, const v1::SnapshotBatch& b) {
  // Deterministic: the registers are a map, whose order would vary.
  std::string bytes;
  {
    google::protobuf::io::StringOutputStream s(&bytes);
    google::protobuf::io::CodedOutputStream out(&s);
    out.SetSerializationDeterministic(true);
    if (!b.SerializeToCodedStream(&out)) Die("cannot serialise a seed");
  }
  std::ofstream(absl::StrCat(dir, "/", name), std::ios::binary) << bytes;
}

// Requests from the core's threads, in the shapes profilers send.
void WriteSeeds(proc::CoreTarget& core, const std::string& dir) {
  v1::MappingTable table;
  table.set_id(1);
  for (const proc::Mapping& m : core.mappings()) {
    v1::Mapping* pm = table.add_mappings();
    pm->set_start(m.start);
    pm->set_end(m.end);
    pm->set_offset(m.offset);
    pm->set_path(m.path);
    pm->set_read(m.read);
    pm->set_write(m.write);
    pm->set_exec(m.exec);
    pm->set_build_id(core.RecordedBuildId(m));
    if (m.path == "[vdso]") {
      std::string image(m.end - m.start, '\0');
      if (core.memory()
              .ReadFully(m.start, absl::MakeSpan(reinterpret_cast<uint8_t*>(image.data()),
                                                 image.size()))
              .ok()) {
        pm->set_image(std::move(image));
      }
    }
  }
  std::vector<v1::SnapshotRequest> samples;
  for (pid_t tid : core.Threads()) {
    absl::StatusOr<arch::RegisterSet> regs = core.InitialRegisters(tid);
    if (!regs.ok()) Die(regs.status().ToString());
    v1::SnapshotRequest r;
    r.set_sample_id(samples.size());
    r.set_tid(tid);
    r.set_arch(v1::ARCH_X86_64);
    for (int reg = 0; reg < 17; ++reg) {
      if (regs->Valid(reg)) (*r.mutable_dwarf_registers()->mutable_values())[reg] = regs->Get(reg);
    }
    std::vector<uint8_t> stack(kSeedStack);
    stack.resize(core.memory().Read(regs->sp(), absl::MakeSpan(stack)));
    r.set_stack_address(regs->sp());
    r.set_stack(std::string(stack.begin(), stack.end()));
    samples.push_back(std::move(r));
  }
  if (samples.empty()) Die("the fixture core has no threads");

  // UnwindSnapshotBatches: the table once, samples naming it, released.
  v1::SnapshotBatch b;
  *b.add_mapping_tables() = table;
  for (v1::SnapshotRequest r : samples) {
    r.set_mapping_table_id(1);
    *b.add_samples() = std::move(r);
  }
  b.add_release_mapping_table_ids(1);
  Write(dir, "batch_table", b);

  // UnwindSnapshots, the old way: each sample with its own mappings, and
  // perf's register numbering.
  b.Clear();
  for (v1::SnapshotRequest r : samples) {
    const auto values = r.dwarf_registers().values();
    v1::PerfRegisters* p = r.mutable_perf_registers();
    for (int bit = 0; bit < 24; ++bit) {
      if (bit >= 9 && bit < 16) continue;
      const int dwarf = bit < 9 ? kPerfToDwarf[bit] : 8 + (bit - 16);
      auto it = values.find(dwarf);
      if (it == values.end()) continue;
      p->set_mask(p->mask() | uint64_t{1} << bit);
      p->add_values(it->second);
    }
    *r.mutable_mappings() = table.mappings();
    *b.add_samples() = std::move(r);
  }
  Write(dir, "stream_inline_perf", b);

  // A sample that carries its table (then named by the next, released by
  // it; a third names it after release), with a pid that is not live.
  b.Clear();
  for (int i = 0; i < 3; ++i) {
    v1::SnapshotRequest r = samples[i % samples.size()];
    r.set_pid(4242);
    r.set_pid_start_time(12345);
    if (i == 0) {
      *r.mutable_mapping_table() = table;
      r.mutable_mapping_table()->set_id(7);
    } else {
      r.set_mapping_table_id(7);
    }
    if (i == 1) r.add_release_mapping_table_ids(7);
    r.add_sources(v1::METHOD_FRAME_POINTER);
    r.add_sources(v1::METHOD_EH_FRAME);
    r.set_max_frames(8);
    *b.add_samples() = std::move(r);
  }
  b.add_release_mapping_table_ids(9);  // run as a batch
  Write(dir, "sample_carries_table_pid", b);

  // Only a pid (the server would read its /proc/PID/maps if allowed).
  b.Clear();
  {
    v1::SnapshotRequest r = samples[0];
    r.set_pid(4242);
    *b.add_samples() = r;
  }
  Write(dir, "pid_only", b);

  // A sysroot and path_map, the vDSO by build-id only (the server's own
  // when it matches), debug_dirs; an overlapping table refused.
  b.Clear();
  {
    v1::MappingTable t = table;
    t.set_id(3);
    t.set_sysroot("/srv/sysroot");
    v1::PathMapping* pm = t.add_path_map();
    pm->set_from("/usr/lib/");
    pm->set_to("/opt/lib/");
    for (v1::Mapping& m : *t.mutable_mappings()) m.clear_image();
    *b.add_mapping_tables() = t;
    v1::MappingTable bad = table;
    bad.set_id(4);
    *bad.add_mappings() = table.mappings(0);
    *b.add_mapping_tables() = bad;
    for (uint64_t id : {3, 4}) {
      v1::SnapshotRequest r = samples[0];
      r.set_mapping_table_id(id);
      r.add_debug_dirs("/usr/lib/debug");
      *b.add_samples() = std::move(r);
    }
  }
  Write(dir, "sysroot_path_map", b);
}

}  // namespace
}  // namespace unwindd::service

extern "C" int LLVMFuzzerInitialize(int* argc, char*** argv) {
  using unwindd::service::Fixture;
  // proto3 parse failures (invalid UTF-8) log an error per input.
  google::protobuf::SetLogHandler(nullptr);
  auto* f = new Fixture();
  const std::string dir = unwindd::fuzz::Runfile((*argv)[0], "testdata/core/fixture");
  unwindd::proc::CoreOptions options;
  options.lookup.exe = dir + "/crasher";
  options.lookup.sysroot = dir + "/sysroot";
  absl::StatusOr<std::unique_ptr<unwindd::proc::CoreTarget>> core =
      unwindd::proc::OpenCore(dir + "/core", options);
  if (!core.ok()) unwindd::service::Die(core.status().ToString());
  if (const char* seeds = std::getenv("UNWINDD_WRITE_SNAPSHOT_SEEDS")) {
    unwindd::service::WriteSeeds(**core, seeds);
    std::exit(0);
  }
  unwindd::service::fixture = f;
  unwindd::service::CopyFiles(dir, *f);
  for (const unwindd::proc::Mapping& m : (*core)->mappings()) {
    const std::string name = std::filesystem::path(m.path).filename();
    // (Not Mapping::IsFileBacked: a core's NT_FILE records no inode.)
    if (absl::StartsWith(m.path, "/") &&
        std::count(f->names.begin(), f->names.end() - 1, name) > 0) {
      f->known[m.path] = name;
    }
  }
  if (f->known.size() < std::size(unwindd::service::kFiles)) {
    unwindd::service::Die("the fixture core does not map all of its files");
  }
  f->binaries.debug_dirs = {f->root + "/debug"};
  f->vdso = unwindd::service::ReadOwnVdso(f->cache);
  f->print = std::getenv("UNWINDD_SNAPSHOT_FUZZER_PRINT") != nullptr;
  // An unprivileged local user: files opened as nobody, no process of
  // its own to read.
  f->caller.uid = unwindd::service::kNobodyUid;
  f->caller.gid = unwindd::service::kNobodyGid;
  f->caller.unrestricted = false;
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  unwindd::service::Run(data, size);
  return 0;
}

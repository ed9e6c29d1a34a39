// SnapshotSession across samples: what one sample resolved (files, the
// address space and its cached steps) serves the next only while the
// mapping table is the same, and no sample sees another's stack. Samples
// are captured from the parked deep_stacks fixture, as a profiler sends
// them (stack copy, mappings with build-ids, no pid).
#include "service/server/snapshots.h"

#include <signal.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <ucontext.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "gtest/gtest.h"
#include "proc/maps.h"
#include "service/server/testing/capture.h"
#include "testdata/harness/subprocess.h"
#include "testdata/harness/tools.h"
#include "unwinder/module_cache.h"

namespace unwindd::service {
namespace {

constexpr char kFixture[] = "deep_stacks_O2_nofp_pie";

// The session's answer as a client gets it: encoded, then parsed by
// protobuf.
absl::Status UnwindTo(SnapshotSession& session, const v1::SnapshotRequest& r,
                      v1::SnapshotResponse* out) {
  std::atomic<bool> cancel{false};
  SampleAnswer answer;
  absl::Status s = session.Unwind(r, &cancel, &answer);
  if (!s.ok()) return s;
  std::string bytes;
  AppendSnapshotResponse(answer, &bytes);
  if (!out->ParseFromString(bytes)) return absl::DataLossError("unparsable response");
  return absl::OkStatus();
}

class SessionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (geteuid() != 0) GTEST_SKIP() << "needs root (captures ptrace fixtures)";
    absl::StatusOr<harness::RunningProgram> p = harness::StartProgram(
        absl::StrCat(harness::RunfilesRoot(), "/service/server/", kFixture));
    ASSERT_TRUE(p.ok()) << p.status();
    program_ = std::make_unique<harness::RunningProgram>(std::move(*p));
    testing::CaptureOptions o;
    o.with_pid = false;
    absl::StatusOr<std::vector<v1::SnapshotRequest>> s =
        testing::CaptureSamples(program_->pid(), o);
    ASSERT_TRUE(s.ok()) << s.status();
    // A parked worker thread (the first sample is main's, a few frames).
    ASSERT_GE(s->size(), 2u);
    sample_ = (*s)[1];
    Caller root;
    root.uid = 0;
    root.gid = 0;
    root.unrestricted = true;
    session_ = std::make_unique<SnapshotSession>(
        root, UnwindEnv{&cache_, nullptr}, index_, VdsoImage{}, SnapshotLimits{});
  }

  v1::ThreadStack Unwind(const v1::SnapshotRequest& r,
                         std::vector<v1::Module>* modules = nullptr) {
    v1::SnapshotResponse got;
    absl::Status s = UnwindTo(*session_, r, &got);
    EXPECT_TRUE(s.ok()) << s;
    if (modules != nullptr) modules->assign(got.modules().begin(), got.modules().end());
    return got.stack();
  }

  absl::StatusCode Code(const v1::SnapshotRequest& r) {
    v1::SnapshotResponse got;
    return UnwindTo(*session_, r, &got).code();
  }

  // The sample with the executable's build-id replaced by another.
  v1::SnapshotRequest WithWrongExeBuildId() const {
    v1::SnapshotRequest r = sample_;
    for (v1::Mapping& m : *r.mutable_mappings()) {
      if (absl::EndsWith(m.path(), kFixture)) m.set_build_id(std::string(40, '0'));
    }
    return r;
  }

  std::unique_ptr<harness::RunningProgram> program_;
  v1::SnapshotRequest sample_;
  unwinder::ModuleCache cache_;
  BuildIdIndex index_;
  std::unique_ptr<SnapshotSession> session_;
};

std::vector<uint64_t> Pcs(const v1::ThreadStack& t) {
  std::vector<uint64_t> out;
  for (const v1::Frame& f : t.frames()) out.push_back(f.pc());
  return out;
}

TEST_F(SessionTest, RepeatedSamplesGiveTheSameFrames) {
  v1::ThreadStack first = Unwind(sample_);
  ASSERT_GE(first.frames_size(), 20u) << first.stop_detail();
  EXPECT_EQ(first.stop(), v1::STOP_REASON_END_OF_STACK);
  for (int i = 0; i < 3; ++i) {
    v1::ThreadStack again = Unwind(sample_);
    EXPECT_EQ(Pcs(again), Pcs(first));
    EXPECT_EQ(again.stop(), first.stop());
  }
}

// A changed table is resolved anew (the executable's file is refused for
// the wrong build-id), and changing back resolves the right file again.
TEST_F(SessionTest, ChangedMappingsAreResolvedAgain) {
  std::vector<v1::Module> modules;
  v1::ThreadStack good = Unwind(sample_, &modules);
  ASSERT_GE(good.frames_size(), 20u) << good.stop_detail();

  v1::ThreadStack wrong = Unwind(WithWrongExeBuildId(), &modules);
  EXPECT_LT(wrong.frames_size(), good.frames_size());
  bool refused = false;
  for (const v1::Module& m : modules) {
    if (absl::EndsWith(m.path(), kFixture)) {
      refused = true;
      EXPECT_EQ(m.build_id(), std::string(40, '0'));
      EXPECT_FALSE(m.error().empty());
    }
  }
  EXPECT_TRUE(refused);

  v1::ThreadStack back = Unwind(sample_, &modules);
  EXPECT_EQ(Pcs(back), Pcs(good));
  for (const v1::Module& m : modules) EXPECT_TRUE(m.error().empty()) << m.path();
}

bool HasModule(const std::vector<v1::Module>& modules) {
  for (const v1::Module& m : modules) {
    if (absl::EndsWith(m.path(), kFixture)) return true;
  }
  return false;
}

// A moved mapping (same file, another address) is another table too.
TEST_F(SessionTest, MovedMappingIsResolvedAgain) {
  std::vector<v1::Module> modules;
  v1::ThreadStack good = Unwind(sample_, &modules);
  ASSERT_GE(good.frames_size(), 20u);
  ASSERT_TRUE(HasModule(modules));
  v1::SnapshotRequest moved = sample_;
  for (v1::Mapping& m : *moved.mutable_mappings()) {
    if (absl::EndsWith(m.path(), kFixture)) {
      m.set_start(m.start() + (uint64_t{1} << 40));
      m.set_end(m.end() + (uint64_t{1} << 40));
    }
  }
  // The executable's PCs are in no mapping now.
  Unwind(moved, &modules);
  EXPECT_FALSE(HasModule(modules));
  EXPECT_EQ(Pcs(Unwind(sample_, &modules)), Pcs(good));
  EXPECT_TRUE(HasModule(modules));
}

// Each sample is unwound from its own stack copy: a later sample with a
// shorter copy must not find the earlier one's bytes.
TEST_F(SessionTest, NoSampleSeesAnothersStack) {
  v1::ThreadStack good = Unwind(sample_);
  ASSERT_GE(good.frames_size(), 20u);
  v1::SnapshotRequest cut = sample_;
  cut.set_stack(sample_.stack().substr(0, 64));
  v1::ThreadStack short_walk = Unwind(cut);
  EXPECT_LT(short_walk.frames_size(), good.frames_size());
  EXPECT_EQ(short_walk.stop(), v1::STOP_REASON_MEMORY_ERROR);
  v1::SnapshotRequest none = sample_;
  none.clear_stack();
  EXPECT_LE(Unwind(none).frames_size(), short_walk.frames_size());
  EXPECT_EQ(Pcs(Unwind(sample_)), Pcs(good));
}

// A bad sample is its own error and does not disturb the next one.
TEST_F(SessionTest, BadSampleBetweenGoodOnes) {
  v1::ThreadStack good = Unwind(sample_);
  v1::SnapshotRequest bad = sample_;
  bad.clear_dwarf_registers();
  EXPECT_EQ(Code(bad), absl::StatusCode::kInvalidArgument);
  v1::SnapshotRequest overlapping = sample_;
  *overlapping.add_mappings() = sample_.mappings(0);
  EXPECT_EQ(Code(overlapping), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Pcs(Unwind(sample_)), Pcs(good));
}

// A sample taken inside this process's vDSO, as perf takes one: SIGPROF
// interrupts a loop of clock_gettime (a vDSO function) and the handler
// copies the registers and the stack above SP.
struct VdsoSample {
  bool taken = false;
  uint64_t regs[17] = {};  // DWARF numbering: rax rdx rcx rbx rsi rdi rbp rsp r8-r15 rip
  uint64_t sp = 0;
  size_t size = 0;
  uint8_t stack[8192];
};
VdsoSample g_vdso_sample;
uint64_t g_vdso_lo = 0, g_vdso_hi = 0, g_stack_hi = 0;

void OnProf(int, siginfo_t*, void* context) {
  if (g_vdso_sample.taken) return;
  const gregset_t& g = static_cast<ucontext_t*>(context)->uc_mcontext.gregs;
  const uint64_t pc = g[REG_RIP];
  if (pc < g_vdso_lo || pc >= g_vdso_hi) return;
  static constexpr int kDwarfToGreg[17] = {REG_RAX, REG_RDX, REG_RCX, REG_RBX, REG_RSI,
                                           REG_RDI, REG_RBP, REG_RSP, REG_R8,  REG_R9,
                                           REG_R10, REG_R11, REG_R12, REG_R13, REG_R14,
                                           REG_R15, REG_RIP};
  for (int r = 0; r < 17; ++r) g_vdso_sample.regs[r] = g[kDwarfToGreg[r]];
  g_vdso_sample.sp = g[REG_RSP];
  g_vdso_sample.size = std::min<uint64_t>(sizeof(g_vdso_sample.stack), g_stack_hi - g[REG_RSP]);
  std::memcpy(g_vdso_sample.stack, reinterpret_cast<const void*>(g[REG_RSP]),
              g_vdso_sample.size);
  g_vdso_sample.taken = true;
}

class VdsoTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<std::vector<proc::Mapping>> maps = proc::ReadMaps(getpid());
    ASSERT_TRUE(maps.ok()) << maps.status();
    own_ = ReadOwnVdso(cache_);
    if (own_.bytes == nullptr) GTEST_SKIP() << "no vDSO with a build-id here";
    uint64_t sp = reinterpret_cast<uint64_t>(&sp);
    for (const proc::Mapping& m : *maps) {
      if (m.path == "[vdso]") {
        g_vdso_lo = m.start;
        g_vdso_hi = m.end;
      }
      if (m.Contains(sp)) g_stack_hi = m.end;
      v1::Mapping* pm = request_.add_mappings();
      pm->set_start(m.start);
      pm->set_end(m.end);
      pm->set_offset(m.offset);
      pm->set_path(m.path);
      pm->set_read(m.read);
      pm->set_write(m.write);
      pm->set_exec(m.exec);
      if (m.path == "[vdso]") vdso_ = pm;
    }
    ASSERT_NE(vdso_, nullptr);
    ASSERT_NE(g_stack_hi, 0u);
    // Interrupt clock_gettime until one interruption lands in the vDSO.
    struct sigaction sa = {};
    sa.sa_sigaction = OnProf;
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    ASSERT_EQ(sigaction(SIGPROF, &sa, nullptr), 0);
    itimerval every = {{0, 200}, {0, 200}};
    ASSERT_EQ(setitimer(ITIMER_PROF, &every, nullptr), 0);
    const absl::Time give_up = absl::Now() + absl::Seconds(20);
    timespec ts;
    while (!g_vdso_sample.taken && absl::Now() < give_up) {
      for (int i = 0; i < 10000; ++i) clock_gettime(CLOCK_MONOTONIC, &ts);
    }
    itimerval off = {};
    setitimer(ITIMER_PROF, &off, nullptr);
    signal(SIGPROF, SIG_IGN);
    ASSERT_TRUE(g_vdso_sample.taken) << "no SIGPROF landed in the vDSO";
    request_.set_arch(v1::ARCH_X86_64);
    for (int r = 0; r < 17; ++r) {
      (*request_.mutable_dwarf_registers()->mutable_values())[r] = g_vdso_sample.regs[r];
    }
    request_.set_stack_address(g_vdso_sample.sp);
    request_.set_stack(std::string(reinterpret_cast<const char*>(g_vdso_sample.stack),
                                   g_vdso_sample.size));
  }

  // A session whose server vDSO is `own` (or none); the sample's result.
  absl::StatusOr<v1::SnapshotResponse> Unwind(const v1::SnapshotRequest& r,
                                              const VdsoImage& own) {
    Caller root;
    root.uid = 0;
    root.gid = 0;
    root.unrestricted = true;
    SnapshotSession session(root, UnwindEnv{&cache_, nullptr}, index_, own,
                            SnapshotLimits{});
    v1::SnapshotResponse out;
    absl::Status s = UnwindTo(session, r, &out);
    if (!s.ok()) return s;
    return out;
  }

  // Frame 0 is in [vdso], known, and the vDSO's CFI recovered frame 1.
  void ExpectThroughTheVdso(const absl::StatusOr<v1::SnapshotResponse>& r) {
    ASSERT_TRUE(r.ok()) << r.status();
    ASSERT_GE(r->stack().frames_size(), 3) << r->stack().stop_detail();
    const v1::Frame& f0 = r->stack().frames(0);
    ASSERT_TRUE(f0.has_module());
    const v1::Module& m = r->modules(f0.module());
    EXPECT_EQ(m.path(), "[vdso]");
    EXPECT_EQ(m.build_id(), own_.build_id);
    EXPECT_EQ(m.error(), "");
    EXPECT_EQ(f0.file_offset(), f0.pc() - g_vdso_lo);
    EXPECT_EQ(r->stack().frames(1).method(), v1::METHOD_EH_FRAME);
  }

  unwinder::ModuleCache cache_;
  BuildIdIndex index_;
  VdsoImage own_;
  v1::SnapshotRequest request_;  // no pid; the vDSO mapping as is
  v1::Mapping* vdso_ = nullptr;   // in request_
};

TEST_F(VdsoTest, TheServersOwnVdsoWhenTheBuildIdIsItsOwn) {
  vdso_->set_build_id(own_.build_id);
  ExpectThroughTheVdso(Unwind(request_, own_));
  // Without it (another kernel's build-id, or none) the vDSO is unknown.
  absl::StatusOr<v1::SnapshotResponse> unknown = Unwind(request_, VdsoImage{});
  ASSERT_TRUE(unknown.ok()) << unknown.status();
  ASSERT_GE(unknown->stack().frames_size(), 1);
  ASSERT_TRUE(unknown->stack().frames(0).has_module());
  EXPECT_NE(unknown->modules(unknown->stack().frames(0).module()).error(), "");
  // (The walk may still go on by frame pointer.)
  if (unknown->stack().frames_size() > 1) {
    EXPECT_NE(unknown->stack().frames(1).method(), v1::METHOD_EH_FRAME);
  }
}

// A pid that no longer is a process (a recording replayed later) does not
// keep the server from using its own vDSO, and says why it was ignored.
TEST_F(VdsoTest, TheOwnVdsoAlsoWithAnExitedPid) {
  vdso_->set_build_id(own_.build_id);
  const pid_t child = fork();
  if (child == 0) _exit(0);
  ASSERT_GT(child, 0);
  ASSERT_EQ(waitpid(child, nullptr, 0), child);
  request_.set_pid(child);
  absl::StatusOr<v1::SnapshotResponse> r = Unwind(request_, own_);
  ExpectThroughTheVdso(r);
  EXPECT_TRUE(absl::StrContains(r->pid_ignored_reason(), "exited"))
      << r->pid_ignored_reason();
}

TEST_F(VdsoTest, TheImageTheClientSent) {
  vdso_->set_image(std::string(own_.bytes->begin(), own_.bytes->end()));
  // Checked against the mapping's build-id when there is one...
  vdso_->set_build_id(own_.build_id);
  ExpectThroughTheVdso(Unwind(request_, VdsoImage{}));
  // ... (also in a table sent once) ...
  v1::SnapshotRequest by_table = request_;
  by_table.mutable_mapping_table()->set_id(3);
  *by_table.mutable_mapping_table()->mutable_mappings() = by_table.mappings();
  by_table.clear_mappings();
  ExpectThroughTheVdso(Unwind(by_table, VdsoImage{}));
  // ... and refused when it is another build.
  vdso_->set_build_id(std::string(40, 'f'));
  absl::StatusOr<v1::SnapshotResponse> wrong = Unwind(request_, VdsoImage{});
  EXPECT_EQ(wrong.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(absl::StrContains(wrong.status().message(), "build-id"));
  // Without a build-id it is taken as it is.
  vdso_->clear_build_id();
  absl::StatusOr<v1::SnapshotResponse> plain = Unwind(request_, VdsoImage{});
  ASSERT_TRUE(plain.ok()) << plain.status();
  EXPECT_EQ(Pcs(plain->stack()), Pcs(Unwind(by_table, VdsoImage{})->stack()));
}

}  // namespace
}  // namespace unwindd::service

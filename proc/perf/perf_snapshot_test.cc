#include "proc/perf/perf_snapshot.h"

#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "proc/maps.h"

namespace unwindd::proc::perf {
namespace {

// perf's x86_64 register mask as perf record --call-graph dwarf asks for
// it: AX..IP (bits 0-8) and R8..R15 (16-23), FLAGS..GS dropped here.
constexpr uint64_t kMask = 0x1ff | (0xffULL << 16);
constexpr int kPerfSp = 7;
constexpr int kPerfIp = 8;

// This test binary's file mappings, as perf would have recorded them.
struct Self {
  std::string path;
  std::vector<Mapping> maps;
  uint64_t text = 0;  // an address in an executable mapping of it
};

Self FindSelf() {
  Self s;
  char buf[4096];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  if (n <= 0) return s;
  s.path.assign(buf, n);
  absl::StatusOr<std::vector<Mapping>> maps = ReadMaps(getpid());
  if (!maps.ok()) return s;
  for (const Mapping& m : *maps) {
    if (m.path != s.path) continue;
    s.maps.push_back(m);
    if (m.exec && s.text == 0) s.text = m.start + 16;
  }
  return s;
}

ProcessTable TableOf(const Self& s, const std::string& build_id, const std::string& path) {
  ProcessTable t;
  t.pid = 4242;
  t.generation = 1;
  auto name = std::make_shared<const std::string>(path);
  for (const Mapping& m : s.maps) {
    PerfMapping p;
    p.start = m.start;
    p.end = m.end;
    p.pgoff = m.offset;
    p.prot = (m.read ? kProtRead : 0) | (m.write ? kProtWrite : 0) | (m.exec ? kProtExec : 0);
    p.filename = name;
    p.build_id = build_id;
    p.ino = m.inode;
    t.mappings[p.start] = p;
  }
  return t;
}

struct SampleData {
  std::vector<uint8_t> bytes;  // keeps the regs and stack spans alive
  Sample sample;
  EventAttr attr;
};

// A sample whose SP points at `stack` (a buffer of ours) and IP at `ip`.
void MakeSample(SampleData& d, uint64_t ip, const std::vector<uint8_t>& stack,
                uint64_t sp, uint64_t abi = kRegsAbi64) {
  d.attr.sample_type = kSampleRegsUser | kSampleStackUser | kSampleTid;
  d.attr.sample_regs_user = kMask;
  const int n = __builtin_popcountll(kMask);
  d.bytes.assign(8 * n, 0);
  int slot = 0;
  for (int bit = 0; bit < 64; ++bit) {
    if (!((kMask >> bit) & 1)) continue;
    uint64_t v = bit == kPerfIp ? ip : bit == kPerfSp ? sp : 0x1000 + bit;
    std::memcpy(d.bytes.data() + 8 * slot++, &v, 8);
  }
  d.sample.pid = 4242;
  d.sample.tid = 4243;
  d.sample.regs_user_abi = abi;
  d.sample.regs_user = U64Array(d.bytes.data(), n);
  d.sample.stack_user = Bytes(absl::MakeConstSpan(stack));
  d.sample.stack_user_dyn_size = stack.size() - 8;  // the last 8 are not valid
}

TEST(ArchOfSample, FromTheRecordingNotTheHost) {
  EXPECT_EQ(*ArchOfSample("x86_64", kRegsAbi64, kMask), arch::Arch::kX86_64);
  EXPECT_EQ(*ArchOfSample("x86_64", kRegsAbi32, kMask), arch::Arch::kX86);
  EXPECT_EQ(*ArchOfSample("i686", kRegsAbi32, 0x1ff), arch::Arch::kX86);
  EXPECT_EQ(*ArchOfSample("aarch64", kRegsAbi64, 0x1ffffffffULL), arch::Arch::kAArch64);
  EXPECT_EQ(*ArchOfSample("", kRegsAbi64, 0x1ffffffffULL), arch::Arch::kAArch64);
  EXPECT_EQ(*ArchOfSample("", kRegsAbi64, kMask), arch::Arch::kX86_64);
  EXPECT_TRUE(absl::IsUnimplemented(ArchOfSample("riscv64", kRegsAbi64, 1).status()));
  EXPECT_TRUE(absl::IsUnimplemented(ArchOfSample("aarch64", kRegsAbi32, 1).status()));
}

class PerfSnapshotterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    self_ = FindSelf();
    ASSERT_FALSE(self_.maps.empty());
    ASSERT_NE(self_.text, 0u);
    stack_.resize(256);
    for (size_t i = 0; i < stack_.size(); ++i) stack_[i] = static_cast<uint8_t>(i);
  }

  // Reads `n` bytes at `addr` of the target.
  static std::vector<uint8_t> ReadTarget(Target& t, uint64_t addr, size_t n) {
    std::vector<uint8_t> out(n);
    out.resize(t.memory().Read(addr, absl::MakeSpan(out)));
    return out;
  }

  Self self_;
  std::vector<uint8_t> stack_;
  const uint64_t sp_ = 0x7ffd00001000;
};

TEST_F(PerfSnapshotterTest, StackAtSpFileMappingsAndReuse) {
  RecordingInfo info;
  info.arch = "x86_64";
  PerfSnapshotter snap(info, {});
  ProcessTable table = TableOf(self_, "", self_.path);
  SampleData d;
  MakeSample(d, self_.text, stack_, sp_);
  absl::StatusOr<PerfSnapshotter::Prepared> p = snap.Prepare(d.sample, d.attr, &table);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_TRUE(p->new_target);
  EXPECT_EQ(p->arch, arch::Arch::kX86_64);
  Target& t = *p->target;
  EXPECT_EQ(t.pid(), 4242);
  ASSERT_EQ(t.Threads(), std::vector<pid_t>{4243});
  absl::StatusOr<arch::RegisterSet> regs = t.InitialRegisters(4243);
  ASSERT_TRUE(regs.ok());
  EXPECT_EQ(regs->pc(), self_.text);
  EXPECT_EQ(regs->sp(), sp_);
  // The stack copy starts exactly at SP and ends at dyn_size.
  EXPECT_EQ(ReadTarget(t, sp_, 4), (std::vector<uint8_t>{0, 1, 2, 3}));
  EXPECT_EQ(ReadTarget(t, sp_ + stack_.size() - 9, 16).size(), 1u);
  EXPECT_TRUE(ReadTarget(t, sp_ - 8, 8).empty());
  // Code comes from the opened file, at the mapping's offset.
  EXPECT_EQ(ReadTarget(t, self_.text, 32),
            std::vector<uint8_t>(reinterpret_cast<const uint8_t*>(self_.text),
                                 reinterpret_cast<const uint8_t*>(self_.text) + 32));
  ASSERT_EQ(snap.files().size(), 1u);
  EXPECT_EQ(snap.files()[0].opened_path, self_.path);
  EXPECT_FALSE(snap.files()[0].file_build_id.empty());

  // Same table: the same target, only the sample changes.
  const uint64_t id = p->target_id;
  MakeSample(d, self_.text + 1, stack_, sp_ + 64);
  p = snap.Prepare(d.sample, d.attr, &table);
  ASSERT_TRUE(p.ok());
  EXPECT_FALSE(p->new_target);
  EXPECT_EQ(p->target_id, id);
  EXPECT_EQ(p->target->InitialRegisters(4243)->sp(), sp_ + 64);
  // A changed table: a new target.
  table.generation = 2;
  p = snap.Prepare(d.sample, d.attr, &table);
  ASSERT_TRUE(p.ok());
  EXPECT_TRUE(p->new_target);
  EXPECT_NE(p->target_id, id);
  // A 32-bit sample of the same process gets an x86 target.
  MakeSample(d, 0x1000, stack_, 0x2000, kRegsAbi32);
  p = snap.Prepare(d.sample, d.attr, &table);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->arch, arch::Arch::kX86);
  EXPECT_EQ(p->target->arch(), arch::Arch::kX86);
}

TEST_F(PerfSnapshotterTest, BuildIdMismatchRefusesTheFileThenTheCacheHasIt) {
  RecordingInfo info;
  info.arch = "x86_64";
  // Learn the file's real build-id the way the snapshotter reports it.
  std::string real_id;
  {
    PerfSnapshotter probe(info, {});
    ProcessTable t = TableOf(self_, "", self_.path);
    SampleData d;
    MakeSample(d, self_.text, stack_, sp_);
    ASSERT_TRUE(probe.Prepare(d.sample, d.attr, &t).ok());
    real_id = probe.files()[0].file_build_id;
  }
  ASSERT_EQ(real_id.size(), 40u) << "the test binary has no GNU build-id";

  const std::string wrong(40, '0');
  PerfSnapshotter snap(info, {});
  ProcessTable table = TableOf(self_, wrong, self_.path);
  SampleData d;
  MakeSample(d, self_.text, stack_, sp_);
  absl::StatusOr<PerfSnapshotter::Prepared> p = snap.Prepare(d.sample, d.attr, &table);
  ASSERT_TRUE(p.ok());
  EXPECT_TRUE(ReadTarget(*p->target, self_.text, 8).empty()) << "a refused file is not read";
  ASSERT_EQ(snap.files().size(), 1u);
  EXPECT_TRUE(snap.files()[0].mismatch);
  EXPECT_EQ(snap.files()[0].file_build_id, real_id);
  EXPECT_EQ(p->target->RecordedBuildId(p->target->mappings()[0]), wrong);

  // The recorded path is gone; perf's build-id cache has the file.
  const std::string dir = absl::StrCat(::testing::TempDir(), "/debug");
  const std::string link_dir =
      absl::StrCat(dir, "/.build-id/", real_id.substr(0, 2), "/", real_id.substr(2));
  ASSERT_EQ(system(absl::StrCat("mkdir -p '", link_dir, "'").c_str()), 0);
  ASSERT_EQ(symlink(self_.path.c_str(), absl::StrCat(link_dir, "/elf").c_str()), 0);
  SnapshotOptions o;
  o.buildid_dir = dir;
  PerfSnapshotter cached(info, o);
  ProcessTable moved = TableOf(self_, real_id, "/no/such/dir/binary");
  p = cached.Prepare(d.sample, d.attr, &moved);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(ReadTarget(*p->target, self_.text, 8).size(), 8u);
  EXPECT_EQ(cached.files()[0].opened_path, absl::StrCat(link_dir, "/elf"));

  // locate() maps a recorded path to a local one.
  SnapshotOptions loc;
  loc.locate = [&](const std::string& recorded) {
    return recorded == "/no/such/dir/binary" ? self_.path : recorded;
  };
  PerfSnapshotter located(info, loc);
  p = located.Prepare(d.sample, d.attr, &moved);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(ReadTarget(*p->target, self_.text, 8).size(), 8u);
}

TEST_F(PerfSnapshotterTest, VdsoFromTheBuildIdCacheOrOurOwn) {
  absl::StatusOr<OwnVdso> own = ReadOwnVdso();
  if (!own.ok()) GTEST_SKIP() << "no vDSO here: " << own.status();
  const std::string dir = absl::StrCat(::testing::TempDir(), "/vdso_cache");
  const std::string vdir = absl::StrCat(dir, "/[vdso]/", own->build_id);
  ASSERT_EQ(system(absl::StrCat("mkdir -p '", vdir, "'").c_str()), 0);
  {
    std::ofstream f(absl::StrCat(vdir, "/vdso"), std::ios::binary);
    f.write(reinterpret_cast<const char*>(own->image->data()), own->image->size());
  }
  ProcessTable table;
  table.pid = 1;
  table.generation = 1;
  PerfMapping v;
  v.start = 0x7fff00000000;
  v.end = v.start + own->image->size();
  v.prot = kProtRead | kProtExec;
  v.filename = std::make_shared<const std::string>("[vdso]");
  table.mappings[v.start] = v;
  SampleData d;
  MakeSample(d, v.start + 0x10, stack_, sp_);

  RecordingInfo info;
  info.arch = "x86_64";
  info.build_ids.push_back({-1, kMiscUser, own->build_id, "[vdso]"});
  SnapshotOptions o;
  o.buildid_dir = dir;
  PerfSnapshotter snap(info, o);
  absl::StatusOr<PerfSnapshotter::Prepared> p = snap.Prepare(d.sample, d.attr, &table);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(ReadTarget(*p->target, v.start, 4),
            std::vector<uint8_t>(own->image->begin(), own->image->begin() + 4));

  // No build-id recorded (pipe mode): nothing, unless use_own_vdso and the
  // recording's kernel is ours.
  RecordingInfo pipe;
  pipe.arch = "x86_64";
  PerfSnapshotter none(pipe, {});
  p = none.Prepare(d.sample, d.attr, &table);
  ASSERT_TRUE(p.ok());
  EXPECT_TRUE(ReadTarget(*p->target, v.start, 4).empty());
  struct utsname u;
  ASSERT_EQ(uname(&u), 0);
  pipe.os_release = u.release;
  SnapshotOptions mine;
  mine.use_own_vdso = true;
  PerfSnapshotter ours(pipe, mine);
  p = ours.Prepare(d.sample, d.attr, &table);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(ReadTarget(*p->target, v.start, 4).size(), 4u);
  pipe.os_release = "another kernel";
  PerfSnapshotter other(pipe, mine);
  p = other.Prepare(d.sample, d.attr, &table);
  ASSERT_TRUE(p.ok());
  EXPECT_TRUE(ReadTarget(*p->target, v.start, 4).empty());
}

TEST_F(PerfSnapshotterTest, TargetsPerProcessAreBounded) {
  RecordingInfo info;
  info.arch = "x86_64";
  PerfSnapshotter snap(info, {});
  ProcessTable table = TableOf(self_, "", self_.path);
  SampleData d;
  MakeSample(d, self_.text, stack_, sp_);
  std::vector<uint64_t> ids;
  for (uint32_t pid = 1; pid <= kMaxCachedTargets + 1; ++pid) {
    table.pid = pid;
    absl::StatusOr<PerfSnapshotter::Prepared> p = snap.Prepare(d.sample, d.attr, &table);
    ASSERT_TRUE(p.ok());
    EXPECT_TRUE(p->new_target);
    ids.push_back(p->target_id);
  }
  // The least recently used (pid 1) was dropped; the latest is kept.
  table.pid = kMaxCachedTargets + 1;
  EXPECT_FALSE(snap.Prepare(d.sample, d.attr, &table)->new_target);
  table.pid = 1;
  EXPECT_TRUE(snap.Prepare(d.sample, d.attr, &table)->new_target);
  // Every target shares the one opened file.
  EXPECT_EQ(snap.files().size(), 1u);
}

TEST_F(PerfSnapshotterTest, SamplesThatCannotBeSnapshots) {
  RecordingInfo info;
  info.arch = "x86_64";
  PerfSnapshotter snap(info, {});
  ProcessTable table = TableOf(self_, "", self_.path);
  SampleData d;
  MakeSample(d, self_.text, stack_, sp_, kRegsAbiNone);
  EXPECT_TRUE(absl::IsFailedPrecondition(snap.Prepare(d.sample, d.attr, &table).status()));
  MakeSample(d, self_.text, stack_, sp_);
  EXPECT_TRUE(absl::IsFailedPrecondition(snap.Prepare(d.sample, d.attr, nullptr).status()));
  d.attr.sample_type &= ~kSampleRegsUser;
  EXPECT_TRUE(absl::IsFailedPrecondition(snap.Prepare(d.sample, d.attr, &table).status()));
  // Registers that do not match the mask: refused, not misread.
  MakeSample(d, self_.text, stack_, sp_);
  d.sample.regs_user = U64Array(d.bytes.data(), 3);
  EXPECT_TRUE(absl::IsInvalidArgument(snap.Prepare(d.sample, d.attr, &table).status()));
  RecordingInfo riscv;
  riscv.arch = "riscv64";
  PerfSnapshotter r(riscv, {});
  MakeSample(d, self_.text, stack_, sp_);
  EXPECT_TRUE(absl::IsUnimplemented(r.Prepare(d.sample, d.attr, &table).status()));
}

}  // namespace
}  // namespace unwindd::proc::perf

#include "unwinder/locate/locator.h"

#include <sys/stat.h>
#include <unistd.h>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "gtest/gtest.h"
#include "testdata/debuginfo/servers.h"
#include "unwinder/locate/testing/fixtures.h"

namespace unwindd::locate {
namespace {

using debuginfo_testing::MakeDirs;
using debuginfo_testing::NewTempDir;
using debuginfo_testing::ReadFile;
using debuginfo_testing::WriteFile;
using testing::BasePath;
using testing::kRecursion;
using testing::kThreads;
using testing::VariantPath;

std::string Describe(const LocateResult& r) {
  std::vector<std::string> lines;
  for (const Attempt& a : r.attempts) {
    lines.push_back(absl::StrCat(OriginName(a.origin), " ", a.path, ": ", a.status.ToString()));
  }
  return absl::StrCat(r.Summary(), "\n  ", absl::StrJoin(lines, "\n  "));
}

void Copy(const std::string& from, const std::string& to) {
  absl::StatusOr<std::string> b = ReadFile(from);
  ASSERT_TRUE(b.ok()) << b.status();
  ASSERT_TRUE(MakeDirs(to.substr(0, to.rfind('/'))).ok());
  ASSERT_TRUE(WriteFile(to, *b).ok());
}

std::string BuildIdOf(const std::string& path) {
  absl::StatusOr<ElfFile> f = ElfFile::Open(path);
  if (!f.ok()) return "";
  absl::StatusOr<ElfFacts> facts = f->Facts();
  return facts.ok() ? facts->build_id : "";
}

class LocatorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    tmp_ = NewTempDir("locator.");
    ASSERT_FALSE(tmp_.empty());
    debug_name_ = std::string(kThreads) + ".debug";
    id_ = BuildIdOf(VariantPath("split", kThreads));
    ASSERT_EQ(id_.size(), 40u);
    // Nothing from the host: an empty debug directory.
    options_.debug_dirs = {tmp_ + "/no-debug-here"};
  }

  // The split binary copied to DIR/prog; its debug file wherever the test
  // puts it.
  std::string PlaceMain(const std::string& dir) {
    std::string p = absl::StrCat(tmp_, "/", dir, "/prog");
    Copy(VariantPath("split", kThreads), p);
    return p;
  }
  std::string DebugSource() { return VariantPath("split", kThreads) + ".debug"; }

  LocateResult FindDebug(const std::string& main, const std::string& recorded,
                         Want want = Want::kAny) {
    absl::StatusOr<ElfFile> f = ElfFile::Open(main);
    EXPECT_TRUE(f.ok()) << f.status();
    absl::StatusOr<DebugFileQuery> q = DebugFileQueryFor(*f, recorded, want, false);
    EXPECT_TRUE(q.ok()) << q.status();
    return LocateDebugFile(*q, options_);
  }

  std::string tmp_, debug_name_, id_;
  LocateOptions options_;
};

TEST_F(LocatorTest, DebugLinkBesideTheFile) {
  std::string main = PlaceMain("a");
  Copy(DebugSource(), absl::StrCat(tmp_, "/a/", debug_name_));
  LocateResult r = FindDebug(main, "/usr/bin/prog");
  ASSERT_TRUE(r.found.has_value()) << Describe(r);
  EXPECT_EQ(r.found->kind, Kind::kDebugFile);
  EXPECT_EQ(r.found->origin, Origin::kDebugLinkBeside);
  EXPECT_EQ(r.found->path, absl::StrCat(tmp_, "/a/", debug_name_));
  EXPECT_EQ(r.found->build_id, id_);
  EXPECT_FALSE(r.found->fetched);
  // The build-id directory was asked first, and said so.
  ASSERT_GE(r.attempts.size(), 2u);
  EXPECT_EQ(r.attempts[0].origin, Origin::kBuildIdDir);
  EXPECT_TRUE(absl::IsNotFound(r.attempts[0].status));
  EXPECT_TRUE(r.attempts.back().status.ok());
}

TEST_F(LocatorTest, DebugLinkInDotDebug) {
  std::string main = PlaceMain("b");
  Copy(DebugSource(), absl::StrCat(tmp_, "/b/.debug/", debug_name_));
  LocateResult r = FindDebug(main, main);
  ASSERT_TRUE(r.found.has_value()) << Describe(r);
  EXPECT_EQ(r.found->origin, Origin::kDebugLinkDotDebug);
}

TEST_F(LocatorTest, DebugLinkUnderADebugDirectoryByTheRecordedDirectory) {
  std::string main = PlaceMain("c");
  options_.debug_dirs = {tmp_ + "/nothing", tmp_ + "/dbg"};
  Copy(DebugSource(), absl::StrCat(tmp_, "/dbg/opt/app/bin/", debug_name_));
  LocateResult r = FindDebug(main, "/opt/app/bin/prog");
  ASSERT_TRUE(r.found.has_value()) << Describe(r);
  EXPECT_EQ(r.found->origin, Origin::kDebugLinkDebugDir);
  EXPECT_EQ(r.found->path, absl::StrCat(tmp_, "/dbg/opt/app/bin/", debug_name_));
}

TEST_F(LocatorTest, BuildIdDirectoryComesFirst) {
  std::string main = PlaceMain("d");
  Copy(DebugSource(), absl::StrCat(tmp_, "/d/", debug_name_));
  options_.debug_dirs = {tmp_ + "/dbg"};
  std::string by_id = absl::StrCat(tmp_, "/dbg/.build-id/", id_.substr(0, 2), "/",
                                   id_.substr(2), ".debug");
  Copy(DebugSource(), by_id);
  LocateResult r = FindDebug(main, main);
  ASSERT_TRUE(r.found.has_value()) << Describe(r);
  EXPECT_EQ(r.found->origin, Origin::kBuildIdDir);
  EXPECT_EQ(r.found->path, by_id);
  ASSERT_EQ(r.attempts.size(), 1u) << Describe(r);
}

TEST_F(LocatorTest, ADebugLinkCandidateWithAnotherCrcIsRejected) {
  std::string main = PlaceMain("e");
  absl::StatusOr<std::string> dbg = ReadFile(DebugSource());
  ASSERT_TRUE(dbg.ok());
  // Same build-id, other bytes: the CRC no longer matches.
  ASSERT_TRUE(WriteFile(absl::StrCat(tmp_, "/e/", debug_name_), *dbg + "x").ok());
  LocateResult r = FindDebug(main, main);
  EXPECT_FALSE(r.found.has_value()) << Describe(r);
  bool crc_rejected = false;
  for (const Attempt& a : r.attempts) {
    crc_rejected |= a.origin == Origin::kDebugLinkBeside &&
                    absl::IsFailedPrecondition(a.status) &&
                    absl::StrContains(a.status.message(), "CRC-32");
  }
  EXPECT_TRUE(crc_rejected) << Describe(r);
  EXPECT_NE(r.Summary().find("not found (tried "), std::string::npos);
}

TEST_F(LocatorTest, AnotherBuildsDebugFileIsRejectedByBuildId) {
  std::string main = PlaceMain("f");
  Copy(VariantPath("split", kRecursion) + ".debug", absl::StrCat(tmp_, "/f/", debug_name_));
  options_.debug_dirs = {tmp_ + "/dbg"};
  // Even filed under our build-id.
  Copy(VariantPath("split", kRecursion) + ".debug",
       absl::StrCat(tmp_, "/dbg/.build-id/", id_.substr(0, 2), "/", id_.substr(2), ".debug"));
  LocateResult r = FindDebug(main, main);
  EXPECT_FALSE(r.found.has_value()) << Describe(r);
  int mismatches = 0;
  for (const Attempt& a : r.attempts) {
    mismatches += absl::StrContains(a.status.message(), "build-id mismatch");
  }
  EXPECT_EQ(mismatches, 2) << Describe(r);
}

TEST_F(LocatorTest, TheMainFileByAnotherNameIsNotItsOwnDebugFile) {
  std::string main = PlaceMain("g");
  ASSERT_EQ(link(main.c_str(), absl::StrCat(tmp_, "/g/", debug_name_).c_str()), 0);
  LocateResult r = FindDebug(main, main);
  EXPECT_FALSE(r.found.has_value()) << Describe(r);
  bool itself = false;
  for (const Attempt& a : r.attempts) {
    itself |= absl::StrContains(a.status.message(), "is the main file itself");
  }
  EXPECT_TRUE(itself) << Describe(r);
}

TEST_F(LocatorTest, MiniDebugInfoWhenThereIsNoDebugFile) {
  LocateResult r = FindDebug(VariantPath("mini", kThreads), "/usr/bin/x", Want::kCfi);
  ASSERT_TRUE(r.found.has_value()) << Describe(r);
  EXPECT_EQ(r.found->kind, Kind::kMiniDebugInfo);
  EXPECT_EQ(r.found->origin, Origin::kMiniDebugInfo);
  ASSERT_NE(r.found->image, nullptr);
  EXPECT_EQ(r.found->build_id, id_);
  absl::StatusOr<ElfFile> img = ElfFile::FromImage(r.found->image, "mini");
  ASSERT_TRUE(img.ok());
  EXPECT_TRUE(img->Facts()->has_debug_frame);
}

TEST_F(LocatorTest, MiniDebugInfoWithoutCfiDoesNotAnswerForCfi) {
  LocateResult cfi = FindDebug(VariantPath("mini_symtab", kThreads), "/x", Want::kCfi);
  EXPECT_FALSE(cfi.found.has_value()) << Describe(cfi);
  ASSERT_FALSE(cfi.attempts.empty());
  EXPECT_EQ(cfi.attempts.back().origin, Origin::kMiniDebugInfo);
  EXPECT_TRUE(absl::StrContains(cfi.attempts.back().status.message(), "no .debug_frame"));
  LocateResult any = FindDebug(VariantPath("mini_symtab", kThreads), "/x", Want::kAny);
  ASSERT_TRUE(any.found.has_value()) << Describe(any);
  EXPECT_EQ(any.found->kind, Kind::kMiniDebugInfo);
}

TEST_F(LocatorTest, MainFileCandidatesInOrderVerifiedByBuildId) {
  std::string good = PlaceMain("h");
  MainFileQuery q;
  q.recorded_path = "/srv/app/prog";
  q.build_id = id_;
  q.candidates = {{tmp_ + "/missing/prog", Origin::kRecordedPath},
                  {BasePath(kRecursion), Origin::kPathMap},
                  {good, Origin::kSysroot}};
  LocateResult r = LocateMainFile(q, options_);
  ASSERT_TRUE(r.found.has_value()) << Describe(r);
  EXPECT_EQ(r.found->path, good);
  EXPECT_EQ(r.found->origin, Origin::kSysroot);
  EXPECT_EQ(r.found->kind, Kind::kMainFile);
  ASSERT_EQ(r.attempts.size(), 3u);
  EXPECT_TRUE(absl::IsNotFound(r.attempts[0].status));
  ASSERT_NE(r.mismatch(), nullptr);
  EXPECT_EQ(r.mismatch()->path, BasePath(kRecursion));

  // Unknown build-id: the first file that opens, as before.
  q.build_id.clear();
  r = LocateMainFile(q, options_);
  ASSERT_TRUE(r.found.has_value());
  EXPECT_EQ(r.found->path, BasePath(kRecursion));

  // Live targets: another inode at the path is not the mapped file.
  q.candidates = {{good, Origin::kRecordedPath}};
  struct stat st;
  ASSERT_EQ(stat(good.c_str(), &st), 0);
  q.inode = st.st_ino + 1;
  r = LocateMainFile(q, options_);
  EXPECT_FALSE(r.found.has_value());
  EXPECT_TRUE(absl::IsFailedPrecondition(r.attempts[0].status)) << Describe(r);
  q.inode = st.st_ino;
  EXPECT_TRUE(LocateMainFile(q, options_).found.has_value());
}

TEST_F(LocatorTest, MainFileFromTheBuildIdDirectory) {
  std::string good = PlaceMain("i");
  options_.debug_dirs = {tmp_ + "/dbg"};
  std::string link_path =
      absl::StrCat(tmp_, "/dbg/.build-id/", id_.substr(0, 2), "/", id_.substr(2));
  ASSERT_TRUE(MakeDirs(link_path.substr(0, link_path.rfind('/'))).ok());
  ASSERT_EQ(symlink(good.c_str(), link_path.c_str()), 0);
  MainFileQuery q{"/usr/bin/prog", id_, {{tmp_ + "/gone", Origin::kRecordedPath}}, 0};
  LocateResult r = LocateMainFile(q, options_);
  ASSERT_TRUE(r.found.has_value()) << Describe(r);
  EXPECT_EQ(r.found->origin, Origin::kBuildIdDir);
  EXPECT_EQ(r.found->path, link_path);
  // Not without a recorded build-id.
  q.build_id.clear();
  EXPECT_FALSE(LocateMainFile(q, options_).found.has_value());
}

TEST_F(LocatorTest, HookedReaderAndItsErrors) {
  std::string good = PlaceMain("j");
  int calls = 0;
  options_.read_build_id = [&](const std::string& p) -> absl::StatusOr<std::string> {
    ++calls;
    if (p == good) return absl::PermissionDeniedError("hook says no");
    return absl::NotFoundError("hook");
  };
  MainFileQuery q{"/usr/bin/prog", id_, {{good, Origin::kRecordedPath}}, 0};
  LocateResult r = LocateMainFile(q, options_);
  EXPECT_FALSE(r.found.has_value());
  EXPECT_EQ(calls, 1);
  EXPECT_TRUE(r.permission_denied());
}

TEST_F(LocatorTest, LocalDebugLookupsRunAsTheCaller) {
  std::string main = PlaceMain("k");
  Copy(DebugSource(), absl::StrCat(tmp_, "/k/", debug_name_));
  int calls = 0;
  // A caller who may read nothing: the hook does not run the lookups.
  options_.as_caller = [&](const std::function<void()>&) { ++calls; };
  LocateResult r = FindDebug(main, main);
  EXPECT_FALSE(r.found.has_value()) << Describe(r);
  EXPECT_EQ(calls, 1);
  EXPECT_TRUE(r.attempts.empty()) << Describe(r);
  options_.as_caller = [&](const std::function<void()>& fn) {
    ++calls;
    fn();
  };
  EXPECT_TRUE(FindDebug(main, main).found.has_value());
  EXPECT_EQ(calls, 2);
}

TEST(EffectiveDebugDirsTest, SysrootFirstThenTheHost) {
  LocateOptions o;
  o.sysroot = "/s/";
  o.debug_dirs = {"/usr/lib/debug/", "/s/dbg", "", "/usr/lib/debug"};
  EXPECT_EQ(EffectiveDebugDirs(o),
            (std::vector<std::string>{"/s/usr/lib/debug", "/usr/lib/debug", "/s/dbg"}));
  o.sysroot = "";
  EXPECT_EQ(EffectiveDebugDirs(o), (std::vector<std::string>{"/usr/lib/debug", "/s/dbg"}));
}

TEST(ClassifyCandidatesTest, FromTheirShape) {
  std::vector<Candidate> c = ClassifyCandidates(
      {"/usr/bin/x", "/proc/12/map_files/1000-2000", "/proc/12/root/usr/bin/x",
       "/sys/root/usr/bin/x", "/out/x", "/mapped/x"},
      "/usr/bin/x", "/sys/root", "/out/x");
  std::vector<Origin> origins;
  for (const Candidate& x : c) origins.push_back(x.origin);
  EXPECT_EQ(origins, (std::vector<Origin>{Origin::kRecordedPath, Origin::kMapFiles,
                                          Origin::kProcRoot, Origin::kSysroot,
                                          Origin::kExe, Origin::kPathMap}));
}

}  // namespace
}  // namespace unwindd::locate

// The debuginfod client and locators against a real `debuginfod -F` over
// fixture binaries, a stub server that answers with another build's file,
// one that accepts and never answers, and a port nobody listens on.
#include "unwinder/locate/debuginfod.h"

#include <stdlib.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "testdata/debuginfo/servers.h"
#include "unwinder/locate/locator.h"
#include "unwinder/locate/testing/fixtures.h"

// Counts closes of descriptors that were not open: see
// ARequestClosesNoDescriptorTwice.
std::atomic<int> bad_closes{0};

extern "C" int close(int fd) {
  if (syscall(SYS_close, fd) == 0) return 0;
  if (errno == EBADF) ++bad_closes;
  return -1;
}

namespace unwindd::locate {
namespace {

using debuginfo_testing::DebuginfodServer;
using debuginfo_testing::NewTempDir;
using debuginfo_testing::ReadFile;
using debuginfo_testing::StubHttpServer;
using debuginfo_testing::WriteFile;
using testing::BasePath;
using testing::kRecursion;
using testing::kSignals;
using testing::kThreads;
using testing::VariantPath;

std::string BuildIdOf(const std::string& path) {
  absl::StatusOr<ElfFile> f = ElfFile::Open(path);
  if (!f.ok()) return "";
  absl::StatusOr<ElfFacts> facts = f->Facts();
  return facts.ok() ? facts->build_id : "";
}

bool Exists(const std::string& p) {
  struct stat st;
  return stat(p.c_str(), &st) == 0;
}

class DebuginfodTest : public ::testing::Test {
 protected:
  // One server for the suite: the split threads binary and its debug file,
  // the split recursion binary and its debug file, and the signal-handler
  // binary with its DWARF in place (both executable and debuginfo).
  static void SetUpTestSuite() {
    server_dir_ = new std::string(NewTempDir("debuginfod-files."));
    for (const auto& [from, to] :
         std::vector<std::pair<std::string, std::string>>{
             {VariantPath("split", kThreads), "threads"},
             {VariantPath("split", kThreads) + ".debug", "threads.debug"},
             {VariantPath("split", kRecursion), "recursion"},
             {VariantPath("split", kRecursion) + ".debug", "recursion.debug"},
             {BasePath(kSignals), "signals"}}) {
      absl::StatusOr<std::string> b = ReadFile(from);
      ASSERT_TRUE(b.ok()) << b.status();
      ASSERT_TRUE(WriteFile(*server_dir_ + "/" + to, *b).ok());
    }
    absl::StatusOr<std::unique_ptr<DebuginfodServer>> s =
        DebuginfodServer::Start(*server_dir_, 5);
    ASSERT_TRUE(s.ok()) << s.status();
    server_ = s->release();
  }
  static void TearDownTestSuite() {
    delete server_;
    server_ = nullptr;
  }

  void SetUp() override {
    ASSERT_NE(server_, nullptr);
    cache_ = NewTempDir("debuginfod-cache.");
    // Each test starts with an empty libdebuginfod cache of its own.
    setenv("DEBUGINFOD_CACHE_PATH", cache_.c_str(), 1);
    id_ = BuildIdOf(VariantPath("split", kThreads));
    ASSERT_EQ(id_.size(), 40u);
  }

  std::unique_ptr<Debuginfod> Client(const std::string& url,
                                     absl::Duration timeout = absl::Seconds(20),
                                     uint64_t max_bytes = uint64_t{1} << 30) {
    absl::StatusOr<std::unique_ptr<Debuginfod>> d =
        Debuginfod::Create({url, timeout, max_bytes});
    EXPECT_TRUE(d.ok()) << d.status();
    return d.ok() ? *std::move(d) : nullptr;
  }

  static std::string* server_dir_;
  static DebuginfodServer* server_;
  std::string cache_, id_;
};

std::string* DebuginfodTest::server_dir_ = nullptr;
DebuginfodServer* DebuginfodTest::server_ = nullptr;

TEST_F(DebuginfodTest, ExecutableDownloadedOnceThenFromTheCache) {
  std::unique_ptr<Debuginfod> d = Client(server_->url());
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(Debuginfod::CacheDir(), cache_);
  absl::StatusOr<Fetched> cold = d->Fetch(FetchKind::kExecutable, id_);
  ASSERT_TRUE(cold.ok()) << cold.status() << "\n" << server_->Log();
  EXPECT_EQ(cold->path, absl::StrCat(cache_, "/", id_, "/executable"));
  EXPECT_TRUE(cold->downloaded);
  EXPECT_TRUE(absl::StartsWith(cold->url, server_->url())) << cold->url;
  EXPECT_EQ(*ReadFile(cold->path), *ReadFile(VariantPath("split", kThreads)));

  absl::StatusOr<Fetched> warm = d->Fetch(FetchKind::kExecutable, id_);
  ASSERT_TRUE(warm.ok()) << warm.status();
  EXPECT_EQ(warm->path, cold->path);
  EXPECT_FALSE(warm->downloaded);
  EXPECT_TRUE(warm->url.empty());
}

// libdebuginfod before 0.189 closes a config file's descriptor twice per
// request (elfutils PR29696): by the second close another thread may have
// been given that number, and its file is closed under it (in unwindd a
// streamed core read EBADF or another file's bytes). Fetch() makes the
// config files links to /dev/null, where the library closes once. Every
// close() of this process goes through CountingClose (the binary exports
// it as `close`, BUILD.bazel), so a second close shows as EBADF.
TEST_F(DebuginfodTest, ARequestClosesNoDescriptorTwice) {
  std::unique_ptr<Debuginfod> d = Client(server_->url());
  ASSERT_NE(d, nullptr);
  const int before = bad_closes.load();
  ASSERT_TRUE(d->Fetch(FetchKind::kExecutable, id_).ok());  // downloaded
  for (int i = 0; i < 5; ++i) {
    ASSERT_TRUE(d->Fetch(FetchKind::kExecutable, id_).ok());  // from the cache
  }
  EXPECT_EQ(bad_closes.load() - before, 0);
}

TEST_F(DebuginfodTest, DebuginfoIsTheDebugFile) {
  std::unique_ptr<Debuginfod> d = Client(server_->url());
  absl::StatusOr<Fetched> f = d->Fetch(FetchKind::kDebuginfo, id_);
  ASSERT_TRUE(f.ok()) << f.status();
  EXPECT_EQ(f->path, absl::StrCat(cache_, "/", id_, "/debuginfo"));
  EXPECT_EQ(*ReadFile(f->path), *ReadFile(VariantPath("split", kThreads) + ".debug"));
}

TEST_F(DebuginfodTest, UnknownAndMalformedBuildIds) {
  std::unique_ptr<Debuginfod> d = Client(server_->url());
  absl::StatusOr<Fetched> f =
      d->Fetch(FetchKind::kExecutable, "00112233445566778899aabbccddeeff00112233");
  EXPECT_TRUE(absl::IsNotFound(f.status())) << f.status();
  EXPECT_TRUE(absl::IsInvalidArgument(d->Fetch(FetchKind::kExecutable, "../x").status()));
  EXPECT_TRUE(absl::IsInvalidArgument(d->Fetch(FetchKind::kExecutable, "ABCD").status()));
}

TEST_F(DebuginfodTest, LargerThanTheLimit) {
  std::unique_ptr<Debuginfod> d = Client(server_->url(), absl::Seconds(20), 1000);
  absl::StatusOr<Fetched> f = d->Fetch(FetchKind::kDebuginfo, id_);
  EXPECT_TRUE(absl::IsResourceExhausted(f.status())) << f.status();
  EXPECT_FALSE(Exists(absl::StrCat(cache_, "/", id_, "/debuginfo")));
}

TEST_F(DebuginfodTest, AServerThatSendsAnotherBuildsFile) {
  absl::StatusOr<std::string> other = ReadFile(VariantPath("split", kRecursion));
  ASSERT_TRUE(other.ok());
  absl::StatusOr<std::unique_ptr<StubHttpServer>> stub =
      StubHttpServer::Start(StubHttpServer::Mode::kServeBytes, *other);
  ASSERT_TRUE(stub.ok()) << stub.status();
  std::unique_ptr<Debuginfod> d = Client((*stub)->url());
  absl::StatusOr<Fetched> f = d->Fetch(FetchKind::kExecutable, id_);
  ASSERT_TRUE(absl::IsDataLoss(f.status())) << f.status();
  EXPECT_TRUE(absl::StrContains(f.status().message(), id_)) << f.status();
  EXPECT_TRUE(absl::StrContains(f.status().message(),
                                BuildIdOf(VariantPath("split", kRecursion))))
      << f.status();
  EXPECT_EQ((*stub)->requests(), 1);
  // Not left in the cache to answer again.
  EXPECT_FALSE(Exists(absl::StrCat(cache_, "/", id_, "/executable")));

  // Through the locator: a per-module error, nothing found.
  LocateOptions o;
  o.debug_dirs = {cache_ + "/none"};
  o.debuginfod = d.get();
  LocateResult r = LocateMainFile({"/usr/bin/threads", id_, {}, 0}, o);
  EXPECT_FALSE(r.found.has_value());
  ASSERT_EQ(r.attempts.back().origin, Origin::kDebuginfod);
  EXPECT_TRUE(absl::IsDataLoss(r.attempts.back().status));
}

TEST_F(DebuginfodTest, AServerThatNeverAnswersIsGivenUpOnAtTheTimeout) {
  absl::StatusOr<std::unique_ptr<StubHttpServer>> stub =
      StubHttpServer::Start(StubHttpServer::Mode::kHang, "");
  ASSERT_TRUE(stub.ok()) << stub.status();
  std::unique_ptr<Debuginfod> d = Client((*stub)->url(), absl::Seconds(2));
  absl::Time t0 = absl::Now();
  absl::StatusOr<Fetched> f = d->Fetch(FetchKind::kExecutable, id_);
  absl::Duration took = absl::Now() - t0;
  EXPECT_TRUE(absl::IsDeadlineExceeded(f.status())) << f.status();
  EXPECT_TRUE(absl::StrContains(f.status().message(), (*stub)->url())) << f.status();
  // The callback runs at least once a second while libdebuginfod waits.
  EXPECT_GE(took, absl::Seconds(2));
  EXPECT_LT(took, absl::Seconds(10));
  EXPECT_GE((*stub)->requests(), 1);
  // No "not found" marker: the next request asks the server again.
  EXPECT_FALSE(Exists(absl::StrCat(cache_, "/", id_, "/executable")));
  t0 = absl::Now();
  EXPECT_TRUE(absl::IsDeadlineExceeded(d->Fetch(FetchKind::kExecutable, id_).status()));
  EXPECT_GE(absl::Now() - t0, absl::Seconds(2));
}

TEST_F(DebuginfodTest, NobodyListening) {
  absl::StatusOr<int> port = debuginfo_testing::FreePort();
  ASSERT_TRUE(port.ok());
  std::unique_ptr<Debuginfod> d =
      Client(absl::StrCat("http://127.0.0.1:", *port), absl::Seconds(10));
  absl::StatusOr<Fetched> f = d->Fetch(FetchKind::kExecutable, id_);
  EXPECT_TRUE(absl::IsUnavailable(f.status())) << f.status();
}

TEST_F(DebuginfodTest, OffUnlessConfigured) {
  unsetenv("DEBUGINFOD_URLS");
  absl::StatusOr<std::unique_ptr<Debuginfod>> d = Debuginfod::Create({});
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(*d, nullptr);
  EXPECT_FALSE(Debuginfod::Create({"x", absl::ZeroDuration(), 1}).ok());
  // From the environment, as eu-stack and gdb do.
  setenv("DEBUGINFOD_URLS", server_->url().c_str(), 1);
  d = Debuginfod::Create({});
  ASSERT_TRUE(d.ok());
  ASSERT_NE(*d, nullptr);
  EXPECT_EQ((*d)->urls(), server_->url());
}

// The whole chain: the main file exists only on the server, and its CFI
// only in the server's debuginfo.
TEST_F(DebuginfodTest, LocatorsFetchTheExecutableAndItsDebugInfo) {
  std::unique_ptr<Debuginfod> d = Client(server_->url());
  LocateOptions o;
  o.debug_dirs = {cache_ + "/none"};
  o.debuginfod = d.get();
  MainFileQuery q{"/srv/app/threads", id_, {{"/srv/app/threads", Origin::kRecordedPath}}, 0};
  LocateResult main = LocateMainFile(q, o);
  ASSERT_TRUE(main.found.has_value()) << main.Summary();
  EXPECT_EQ(main.found->origin, Origin::kDebuginfod);
  EXPECT_TRUE(main.found->fetched);
  EXPECT_TRUE(main.found->downloaded);
  EXPECT_EQ(main.found->path, absl::StrCat(cache_, "/", id_, "/executable"));
  EXPECT_TRUE(absl::IsNotFound(main.attempts[0].status));

  absl::StatusOr<ElfFile> f = ElfFile::Open(main.found->path);
  ASSERT_TRUE(f.ok());
  // Without permission to fetch, the (server-only) debug file is not found.
  absl::StatusOr<DebugFileQuery> dq = DebugFileQueryFor(*f, q.recorded_path, Want::kCfi, false);
  ASSERT_TRUE(dq.ok());
  EXPECT_FALSE(LocateDebugFile(*dq, o).found.has_value());
  dq->fetch = true;
  LocateResult dbg = LocateDebugFile(*dq, o);
  ASSERT_TRUE(dbg.found.has_value()) << dbg.Summary();
  EXPECT_EQ(dbg.found->kind, Kind::kDebugFile);
  EXPECT_EQ(dbg.found->origin, Origin::kDebuginfod);
  EXPECT_EQ(dbg.found->path, absl::StrCat(cache_, "/", id_, "/debuginfo"));
  EXPECT_TRUE(dbg.found->downloaded);
  // Warm: from the cache.
  LocateResult again = LocateMainFile(q, o);
  ASSERT_TRUE(again.found.has_value());
  EXPECT_TRUE(again.found->fetched);
  EXPECT_FALSE(again.found->downloaded);
}

// Privacy: a file the caller may not read locally is not fetched for it.
TEST_F(DebuginfodTest, NothingIsFetchedForAFileTheCallerMayNotRead) {
  absl::StatusOr<std::string> right = ReadFile(VariantPath("split", kThreads));
  absl::StatusOr<std::unique_ptr<StubHttpServer>> stub =
      StubHttpServer::Start(StubHttpServer::Mode::kServeBytes, *right);
  ASSERT_TRUE(stub.ok());
  std::unique_ptr<Debuginfod> d = Client((*stub)->url());
  LocateOptions o;
  o.debug_dirs = {cache_ + "/none"};
  o.debuginfod = d.get();
  // A local copy exists (stat succeeds) but the caller may not open it;
  // the hook plays the kernel's EACCES, as the tests run as root.
  const std::string existing = VariantPath("split", kThreads);
  o.read_build_id = [&](const std::string& p) -> absl::StatusOr<std::string> {
    if (p == existing) return absl::PermissionDeniedError("cannot open: Permission denied");
    return absl::NotFoundError(p);
  };
  MainFileQuery q{"/srv/secret/threads", id_, {{existing, Origin::kRecordedPath}}, 0};
  LocateResult r = LocateMainFile(q, o);
  EXPECT_FALSE(r.found.has_value());
  EXPECT_EQ((*stub)->requests(), 0);
  ASSERT_EQ(r.attempts.back().origin, Origin::kDebuginfod);
  EXPECT_TRUE(absl::IsPermissionDenied(r.attempts.back().status));
  EXPECT_TRUE(absl::StrContains(r.attempts.back().status.message(), "not fetched"));

  // The same module merely missing: fetched.
  q.candidates[0].path = "/nonexistent/threads";
  r = LocateMainFile(q, o);
  ASSERT_TRUE(r.found.has_value()) << r.Summary();
  EXPECT_EQ((*stub)->requests(), 1);
}

}  // namespace
}  // namespace unwindd::locate

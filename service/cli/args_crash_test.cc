// Parsing of the crash-pipeline commands and flags (docs/crash-pipelines.md):
// minidump, coredump, --minidump, --minidump-stack-bytes,
// --format=core-backtrace, --file, --directory.
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "gtest/gtest.h"
#include "service/cli/usage.h"
#include "service/cli/args.h"

namespace unwindd::service {
namespace {

absl::StatusOr<Command> Parse(std::vector<absl::string_view> args) {
  return ParseCommandLine(args);
}

TEST(CrashArgsTest, MinidumpTakesTheCoresFlags) {
  absl::StatusOr<Command> c = Parse({"minidump", "crash.dmp", "--sysroot=/srv/root",
                                     "--exe=/srv/app", "--path-map=/opt=/srv/opt",
                                     "--debug-dir=/d", "--tid=7", "--format=json"});
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->kind, Command::Kind::kMinidump);
  EXPECT_EQ(c->core, "crash.dmp");
  EXPECT_EQ(c->sysroot, "/srv/root");
  EXPECT_EQ(c->exe, "/srv/app");
  ASSERT_EQ(c->path_maps.size(), 1u);
  EXPECT_EQ(c->tids, std::vector<pid_t>{7});
  EXPECT_FALSE(c->core_backtrace);
}

TEST(CrashArgsTest, CoredumpWithAndWithoutMatch) {
  absl::StatusOr<Command> c = Parse({"coredump"});
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->kind, Command::Kind::kCoredump);
  EXPECT_EQ(c->match, "");
  c = Parse({"coredump", "crasher", "--file=a.journal", "--file=b.journal", "--sysroot=/r"});
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->match, "crasher");
  EXPECT_EQ(c->journal_files, (std::vector<std::string>{"a.journal", "b.journal"}));
  c = Parse({"coredump", "--directory=/var/log/journal/x"});
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->journal_directory, "/var/log/journal/x");
}

TEST(CrashArgsTest, CoreBacktraceIsForPostMortemCommandsOnly) {
  for (const char* cmd : {"core", "minidump"}) {
    absl::StatusOr<Command> c = Parse({cmd, "f", "--format=core-backtrace"});
    ASSERT_TRUE(c.ok()) << c.status();
    EXPECT_TRUE(c->core_backtrace);
    EXPECT_EQ(c->format, Format::kJson);
  }
  EXPECT_TRUE(Parse({"coredump", "--format=core-backtrace"})->core_backtrace);
  // A later --format wins.
  EXPECT_FALSE(Parse({"core", "f", "--format=core-backtrace", "--format=text"})->core_backtrace);
  EXPECT_FALSE(Parse({"pid", "1", "--format=core-backtrace"}).ok());
  EXPECT_FALSE(Parse({"perf", "p.data", "--format=core-backtrace"}).ok());
}

TEST(CrashArgsTest, MinidumpOutIsForCorePidAndCoredump) {
  for (std::vector<absl::string_view> ok :
       {std::vector<absl::string_view>{"core", "c", "--minidump=o.dmp"},
        {"pid", "1", "--minidump=o.dmp", "--minidump-stack-bytes=4096"},
        {"coredump", "x", "--minidump=o.dmp"}}) {
    absl::StatusOr<Command> c = Parse(ok);
    ASSERT_TRUE(c.ok()) << c.status();
    EXPECT_EQ(c->minidump_out, "o.dmp");
  }
  EXPECT_EQ(Parse({"pid", "1", "--minidump=o", "--minidump-stack-bytes=4096"})->minidump_stack_bytes,
            4096u);
  EXPECT_EQ(Parse({"pid", "1"})->minidump_stack_bytes, 65536u);
}

TEST(CrashArgsTest, Misuse) {
  for (std::vector<absl::string_view> args : std::vector<std::vector<absl::string_view>>{
           {"minidump"},
           {"minidump", "a", "b"},
           {"coredump", "a", "b"},
           {"minidump", "m", "--minidump=o"},
           {"demo", "--minidump=o"},
           {"pid", "1", "--minidump="},
           {"pid", "1", "--minidump=o", "--minidump-stack-bytes=0"},
           {"pid", "1", "--minidump=o", "--minidump-stack-bytes=999999999999"},
           {"core", "c", "--file=x.journal"},
           {"coredump", "--file=x", "--directory=y"},
           {"coredump", "--file="},
           {"pid", "1", "--sysroot=/r"},
           {"demo", "--exe=/x"},
       }) {
    absl::StatusOr<Command> c = Parse(args);
    EXPECT_TRUE(absl::IsInvalidArgument(c.status())) << args.size() << " " << c.status();
  }
}

TEST(CrashArgsTest, UsageNamesTheCommandsAndFlags) {
  EXPECT_TRUE(absl::StrContains(kUsage, "unwind minidump FILE"));
  EXPECT_TRUE(absl::StrContains(kUsage, "unwind coredump [MATCH]"));
  const std::string core(FindCommandUsage("core")->text);
  const std::string coredump(FindCommandUsage("coredump")->text);
  const std::string minidump(FindCommandUsage("minidump")->text);
  for (const char* s : {"--minidump=OUT", "--minidump-stack-bytes=N", "core-backtrace"}) {
    EXPECT_TRUE(absl::StrContains(core, s)) << s;
    EXPECT_TRUE(absl::StrContains(coredump, s)) << s;
  }
  EXPECT_TRUE(absl::StrContains(minidump, "core-backtrace"));
  EXPECT_FALSE(absl::StrContains(minidump, "--minidump=OUT"));
  for (const char* s : {"--file=JOURNAL", "--directory=DIR"}) {
    EXPECT_TRUE(absl::StrContains(coredump, s)) << s;
  }
}

}  // namespace
}  // namespace unwindd::service

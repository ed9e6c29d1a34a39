#include "service/cli/args.h"

#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "service/cli/usage.h"

namespace unwindd::service {
namespace {

absl::StatusOr<Command> Parse(std::vector<absl::string_view> args) {
  return ParseCommandLine(args);
}

TEST(CliTest, PidWithOptions) {
  absl::StatusOr<Command> c =
      Parse({"pid", "1234", "--tid=5", "--tid=6", "--format=json", "--max-frames=9"});
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->kind, Command::Kind::kPid);
  EXPECT_EQ(c->pid, 1234);
  EXPECT_EQ(c->tids, (std::vector<pid_t>{5, 6}));
  EXPECT_EQ(c->format, Format::kJson);
  EXPECT_EQ(c->max_frames, 9);
}

TEST(CliTest, Demo) {
  absl::StatusOr<Command> c = Parse({"demo"});
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->kind, Command::Kind::kDemo);
  EXPECT_EQ(c->format, Format::kText);
}

TEST(CliTest, Help) {
  EXPECT_EQ(Parse({"--help"})->kind, Command::Kind::kHelp);
}

TEST(CliTest, FlagValuesAfterASpace) {
  absl::StatusOr<Command> spaced =
      Parse({"pid", "1234", "--format", "json", "--tid", "5", "--max-frames", "9"});
  ASSERT_TRUE(spaced.ok()) << spaced.status();
  EXPECT_EQ(spaced->format, Format::kJson);
  EXPECT_EQ(spaced->tids, (std::vector<pid_t>{5}));
  EXPECT_EQ(spaced->max_frames, 9);
  absl::StatusOr<Command> perf =
      Parse({"perf", "-", "--format", "folded", "-o", "out.txt", "--pid", "7"});
  ASSERT_TRUE(perf.ok()) << perf.status();
  EXPECT_EQ(perf->path, "-");  // stdin
  EXPECT_EQ(perf->format, Format::kFolded);
  EXPECT_EQ(perf->output, "out.txt");
  EXPECT_EQ(perf->pids, (std::vector<pid_t>{7}));
  absl::StatusOr<Command> missing = Parse({"pid", "1", "--format"});
  EXPECT_TRUE(absl::IsInvalidArgument(missing.status()));
  EXPECT_EQ(missing.status().message(), "--format needs a value (--format=VALUE)");
}

TEST(CliTest, HelpOfOneCommand) {
  for (std::vector<absl::string_view> args : std::vector<std::vector<absl::string_view>>{
           {"help", "perf"}, {"perf", "--help"}, {"perf", "-h"}, {"perf", "x", "--bogus", "--help"},
           {"--format", "json", "perf", "--help"}}) {
    absl::StatusOr<Command> c = Parse(args);
    ASSERT_TRUE(c.ok()) << c.status();
    EXPECT_EQ(c->kind, Command::Kind::kHelp);
    EXPECT_EQ(c->help_topic, "perf");
  }
  EXPECT_EQ(Parse({"help"})->help_topic, "");
  EXPECT_EQ(Parse({"--help"})->help_topic, "");
  EXPECT_TRUE(absl::IsInvalidArgument(Parse({"help", "frobnicate"}).status()));
  EXPECT_TRUE(absl::IsInvalidArgument(Parse({"frobnicate", "--help"}).status()));
  // Every command has its usage, which names it.
  for (const CommandUsage& u : CommandUsages()) {
    EXPECT_TRUE(absl::StartsWith(u.text, "usage: unwind ")) << u.name;
    EXPECT_TRUE(absl::StrContains(u.text, absl::StrCat(" ", u.name))) << u.name;
    EXPECT_TRUE(absl::EndsWith(u.text, "\n")) << u.name;
    EXPECT_TRUE(absl::StrContains(kUsage, absl::StrCat("unwind ", u.name))) << u.name;
  }
  for (const char* flag : {"--server=ADDRESS", "--tls-ca=PEM", "--tls-cert=PEM",
                           "--tls-key=PEM", "--version"}) {
    EXPECT_TRUE(absl::StrContains(kUsage, flag)) << flag;
  }
}

TEST(CliTest, VersionHealthStatsForce) {
  EXPECT_EQ(Parse({"--version"})->kind, Command::Kind::kVersion);
  EXPECT_TRUE(absl::IsInvalidArgument(Parse({"pid", "1", "--version"}).status()));
  EXPECT_EQ(Parse({"health"})->kind, Command::Kind::kHealth);
  EXPECT_EQ(Parse({"stats", "--format=json"})->format, Format::kJson);
  EXPECT_TRUE(absl::IsInvalidArgument(Parse({"health", "--format=json"}).status()));
  EXPECT_TRUE(absl::IsInvalidArgument(Parse({"stats", "x"}).status()));
  EXPECT_TRUE(absl::IsInvalidArgument(Parse({"stats", "--tid=3"}).status()));
  EXPECT_TRUE(absl::IsInvalidArgument(Parse({"health", "--symbols"}).status()));
  EXPECT_TRUE(Parse({"profile", "--pid=1", "--force"})->force);
  EXPECT_TRUE(Parse({"perf", "p.data", "-f"})->force);
  EXPECT_FALSE(Parse({"perf", "p.data"})->force);
  EXPECT_TRUE(absl::IsInvalidArgument(Parse({"pid", "1", "--force"}).status()));
  // unwind_remote takes these out before it parses; here they are misuse.
  EXPECT_TRUE(absl::IsInvalidArgument(Parse({"pid", "1", "--tls-ca=x"}).status()));
}

TEST(CliTest, UsageErrorsPointToTheCommandsHelp) {
  EXPECT_EQ(SeeHelp({"pid", "1", "--bogus"}), "(see 'unwind pid --help')");
  EXPECT_EQ(SeeHelp({"--format=json", "core", "c"}), "(see 'unwind core --help')");
  EXPECT_EQ(SeeHelp({"frobnicate"}), "(see 'unwind --help')");
  EXPECT_EQ(SeeHelp({}), "(see 'unwind --help')");
  EXPECT_EQ(CommandName(Command::Kind::kCheckSframe), "check-sframe");
}

TEST(CliTest, Errors) {
  for (std::vector<absl::string_view> args : std::vector<std::vector<absl::string_view>>{
           {},
           {"pid"},
           {"pid", "abc"},
           {"pid", "-3"},
           {"pid", "0"},
           {"pid", "99999999999"},
           {"pid", "1", "2"},
           {"pid", "1", "--format=xml"},
           {"pid", "1", "--max-frames=0"},
           {"pid", "1", "--max-frames=100000000"},
           {"pid", "1", "--tid=x"},
           {"pid", "1", "--bogus"},
           {"demo", "--tid=3"},
           {"frobnicate"},
       }) {
    absl::StatusOr<Command> c = Parse(args);
    EXPECT_TRUE(absl::IsInvalidArgument(c.status()))
        << "args: " << args.size() << " " << (args.empty() ? "" : args[0]);
    if (!c.ok()) {
      EXPECT_EQ(std::string(c.status().message()).find('\n'), std::string::npos);
    }
  }
}

TEST(CliTest, Core) {
  absl::StatusOr<Command> c =
      Parse({"core", "/var/crash/core.zst", "--exe=/tmp/app", "--sysroot=/sr",
             "--path-map=/opt=/mnt/opt", "--path-map=/a/=/b", "--tid=7",
             "--format=json"});
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->kind, Command::Kind::kCore);
  EXPECT_EQ(c->core, "/var/crash/core.zst");
  EXPECT_EQ(c->exe, "/tmp/app");
  EXPECT_EQ(c->sysroot, "/sr");
  ASSERT_EQ(c->path_maps.size(), 2u);
  EXPECT_EQ(c->path_maps[0].from, "/opt");
  EXPECT_EQ(c->path_maps[0].to, "/mnt/opt");
  EXPECT_EQ(c->path_maps[1].from, "/a");
  EXPECT_EQ(c->tids, std::vector<pid_t>{7});
}

TEST(CliTest, CoreErrors) {
  for (std::vector<absl::string_view> args :
       std::vector<std::vector<absl::string_view>>{
           {"core"},
           {"core", "a", "b"},
           {"core", "a", "--path-map=nothing"},
           {"core", "a", "--path-map==/x"},
           {"pid", "1", "--exe=/x"},
           {"pid", "1", "--sysroot=/x"},
           {"demo", "--path-map=/a=/b"},
       }) {
    absl::StatusOr<Command> c = Parse(args);
    EXPECT_TRUE(absl::IsInvalidArgument(c.status())) << args.back();
  }
}

}  // namespace
}  // namespace unwindd::service

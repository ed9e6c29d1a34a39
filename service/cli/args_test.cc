#include "service/cli/args.h"

#include <vector>

#include "gtest/gtest.h"

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

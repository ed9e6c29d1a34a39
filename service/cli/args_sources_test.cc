// `--sources=LIST` and `check-sframe FILE` on the command line.
#include "gtest/gtest.h"
#include "service/cli/args.h"

namespace unwindd::service {
namespace {

absl::StatusOr<Command> Parse(std::vector<absl::string_view> args) {
  return ParseCommandLine(args);
}

TEST(CliSourcesTest, DefaultPolicy) {
  absl::StatusOr<Command> c = Parse({"pid", "12"});
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->sources.ToString(), "eh_frame,debug_frame,sframe,fp");
  EXPECT_FALSE(c->sources_given);
}

TEST(CliSourcesTest, SourcesInOrder) {
  absl::StatusOr<Command> c = Parse({"pid", "12", "--sources=sframe,eh_frame"});
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->sources.ToString(), "sframe,eh_frame");
  c = Parse({"--sources=fp,eh_frame", "demo"});
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->sources.ToString(), "fp,eh_frame");
}

TEST(CliSourcesTest, BadSources) {
  for (absl::string_view bad : {"--sources=", "--sources=dwarf",
                                "--sources=fp,fp", "--sources=sframe,"}) {
    absl::StatusOr<Command> c = Parse({"pid", "12", bad});
    EXPECT_TRUE(absl::IsInvalidArgument(c.status())) << bad;
  }
}

TEST(CliSourcesTest, CheckSframe) {
  absl::StatusOr<Command> c = Parse({"check-sframe", "/bin/true"});
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->kind, Command::Kind::kCheckSframe);
  EXPECT_EQ(c->path, "/bin/true");
  EXPECT_FALSE(Parse({"check-sframe"}).ok());
  EXPECT_FALSE(Parse({"check-sframe", "a", "b"}).ok());
  EXPECT_FALSE(Parse({"check-sframe", "a", "--sources=fp"}).ok());
  EXPECT_FALSE(Parse({"check-sframe", "a", "--tid=3"}).ok());
}

}  // namespace
}  // namespace unwindd::service

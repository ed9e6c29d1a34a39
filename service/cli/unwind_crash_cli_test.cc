// `unwind minidump` and `unwind coredump` as a user runs them on bad
// input: one readable line on stderr and exit 1; misuse exits 2 with a
// pointer to the command's usage. And --help names the new commands.
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "gtest/gtest.h"
#include "testdata/harness/subprocess.h"
#include "testdata/harness/tools.h"

namespace unwindd::service {
namespace {

harness::ToolOutput RunUnwind(std::vector<std::string> args) {
  args.insert(args.begin(), harness::RunfilesRoot() + "/service/unwind");
  absl::StatusOr<harness::ToolOutput> out = harness::RunTool(args, absl::Seconds(60));
  EXPECT_TRUE(out.ok()) << out.status();
  return out.value_or(harness::ToolOutput{});
}

void ExpectOneLineError(const harness::ToolOutput& out, absl::string_view contains) {
  EXPECT_EQ(out.exit_code, 1);
  EXPECT_EQ(out.stdout_text, "");
  std::vector<std::string> lines = absl::StrSplit(out.stderr_text, '\n', absl::SkipEmpty());
  ASSERT_EQ(lines.size(), 1u) << out.stderr_text;
  EXPECT_TRUE(absl::StartsWith(lines[0], "unwind: ")) << lines[0];
  EXPECT_TRUE(absl::StrContains(lines[0], contains)) << lines[0];
}

std::string Temp(const std::string& name, const std::string& bytes) {
  const char* t = std::getenv("TEST_TMPDIR");
  const std::string path = absl::StrCat(t ? t : "/tmp", "/", name);
  std::ofstream(path, std::ios::binary) << bytes;
  return path;
}

TEST(UnwindCrashCliTest, BadMinidumpsAreOneLineErrors) {
  ExpectOneLineError(RunUnwind({"minidump", "/nonexistent/crash.dmp"}), "No such file");
  ExpectOneLineError(RunUnwind({"minidump", Temp("elf.dmp", "\x7f" "ELF not a minidump")}),
                     "not a minidump");
  // A header whose directory lies past the end of the file.
  ExpectOneLineError(
      RunUnwind({"minidump", Temp("lying.dmp", std::string("MDMP\x93\xa7\0\0\x01\0\0\0\xff\xff\0\0", 16) +
                                                   std::string(16, '\0'))}),
      "stream directory");
}

TEST(UnwindCrashCliTest, AJournalThatIsNotOneIsAnError) {
  const harness::ToolOutput out =
      RunUnwind({"coredump", "--file=" + Temp("not.journal", "not a journal file")});
  EXPECT_EQ(out.exit_code, 1);
  EXPECT_TRUE(absl::StrContains(out.stderr_text, "unwind: ")) << out.stderr_text;
  EXPECT_EQ(out.stdout_text, "");
}

// One line: the error, and where the command's usage is.
TEST(UnwindCrashCliTest, MisuseExitsTwoAndPointsToTheUsage) {
  for (std::vector<std::string> args :
       {std::vector<std::string>{"minidump"}, {"coredump", "a", "b"},
        {"pid", "1", "--format=core-backtrace"}, {"core", "c", "--file=j"}}) {
    const harness::ToolOutput out = RunUnwind(args);
    EXPECT_EQ(out.exit_code, 2) << args[0];
    EXPECT_TRUE(absl::EndsWith(out.stderr_text,
                               absl::StrCat(" (see 'unwind ", args[0], " --help')\n")))
        << out.stderr_text;
    EXPECT_EQ(std::count(out.stderr_text.begin(), out.stderr_text.end(), '\n'), 1)
        << out.stderr_text;
  }
}

TEST(UnwindCrashCliTest, HelpNamesTheCommands) {
  const harness::ToolOutput out = RunUnwind({"--help"});
  EXPECT_EQ(out.exit_code, 0);
  EXPECT_TRUE(absl::StrContains(out.stdout_text, "unwind minidump FILE"));
  EXPECT_TRUE(absl::StrContains(out.stdout_text, "unwind coredump [MATCH]"));
}

}  // namespace
}  // namespace unwindd::service

#include "service/cli/perf/output_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <string>
#include <thread>

#include "gtest/gtest.h"

namespace unwindd::service::perf {
namespace {

std::string Slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(OutputFile, RegularFileAppearsOnlyWhenClosed) {
  const std::string path = ::testing::TempDir() + "/out.txt";
  absl::StatusOr<OutputFile> out = OutputFile::Open(path);
  ASSERT_TRUE(out.ok()) << out.status();
  std::fputs("hello\n", out->file());
  struct stat st;
  EXPECT_NE(stat(path.c_str(), &st), 0) << "visible before Close";
  ASSERT_TRUE(out->Close().ok());
  EXPECT_EQ(Slurp(path), "hello\n");
  EXPECT_NE(stat((path + ".tmp").c_str(), &st), 0);
}

TEST(OutputFile, UnclosedFileLeavesNothing) {
  const std::string path = ::testing::TempDir() + "/unclosed.txt";
  {
    absl::StatusOr<OutputFile> out = OutputFile::Open(path);
    ASSERT_TRUE(out.ok());
    std::fputs("half", out->file());
  }
  struct stat st;
  EXPECT_NE(stat(path.c_str(), &st), 0);
  EXPECT_NE(stat((path + ".tmp").c_str(), &st), 0);
}

// /dev/null stays the device: a rename over it would replace it with a
// regular file for every process on the machine.
TEST(OutputFile, DeviceIsWrittenInPlace) {
  absl::StatusOr<OutputFile> out = OutputFile::Open("/dev/null");
  ASSERT_TRUE(out.ok()) << out.status();
  for (int i = 0; i < 100000; ++i) std::fputs("0123456789abcdef\n", out->file());
  ASSERT_TRUE(out->Close().ok());
  struct stat st;
  ASSERT_EQ(stat("/dev/null", &st), 0);
  EXPECT_TRUE(S_ISCHR(st.st_mode));
  EXPECT_NE(stat("/dev/null.tmp", &st), 0);
}

TEST(OutputFile, FifoIsWrittenInPlace) {
  const std::string path = ::testing::TempDir() + "/fifo";
  unlink(path.c_str());
  ASSERT_EQ(mkfifo(path.c_str(), 0600), 0);
  std::string got;
  std::thread reader([&] { got = Slurp(path); });
  absl::StatusOr<OutputFile> out = OutputFile::Open(path);
  ASSERT_TRUE(out.ok()) << out.status();
  std::fputs("through the fifo\n", out->file());
  ASSERT_TRUE(out->Close().ok());
  reader.join();
  EXPECT_EQ(got, "through the fifo\n");
  struct stat st;
  ASSERT_EQ(stat(path.c_str(), &st), 0);
  EXPECT_TRUE(S_ISFIFO(st.st_mode));
}

TEST(OutputFile, UncreatableDirectoryIsAnError) {
  absl::StatusOr<OutputFile> out = OutputFile::Open("/nonexistent-dir/x/out.txt");
  EXPECT_FALSE(out.ok());
}

}  // namespace
}  // namespace unwindd::service::perf

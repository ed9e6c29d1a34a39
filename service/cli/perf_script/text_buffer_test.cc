#include "service/cli/perf_script/text_buffer.h"

#include <cstring>
#include <string>
#include <utility>

#include "gtest/gtest.h"

namespace unwindd::cli {
namespace {

TEST(TextBufferTest, ExtendHandsOutExactlyTheBytesAskedFor) {
  TextBuffer b;
  EXPECT_TRUE(b.empty());
  std::memcpy(b.Extend(3), "abc", 3);
  b.Append("de");
  b.push_back('f');
  EXPECT_EQ(b.view(), "abcdef");
  EXPECT_EQ(b.size(), 6u);
}

TEST(TextBufferTest, GrowsPastItsStorageKeepingTheText) {
  TextBuffer b;
  std::string want;
  for (int i = 0; i < 10000; ++i) {
    const char c = static_cast<char>('a' + i % 26);
    b.push_back(c);
    want.push_back(c);
  }
  b.Append(std::string(100000, 'z'));
  want.append(100000, 'z');
  EXPECT_EQ(b.view(), want);
}

TEST(TextBufferTest, ClearKeepsTheStorageAndForgetsTheText) {
  TextBuffer b;
  b.Append("old text");
  const char* storage = b.view().data();
  b.clear();
  EXPECT_TRUE(b.empty());
  b.Append("new");
  EXPECT_EQ(b.view(), "new");
  EXPECT_EQ(b.view().data(), storage);  // no new allocation
}

TEST(TextBufferTest, MovedTextStaysAndTheSourceIsEmpty) {
  TextBuffer a;
  a.Append(std::string(5000, 'x'));
  TextBuffer b(std::move(a));
  EXPECT_EQ(b.view(), std::string(5000, 'x'));
  EXPECT_TRUE(a.empty());  // NOLINT(bugprone-use-after-move): defined state
  a.Append("again");
  EXPECT_EQ(a.view(), "again");
  TextBuffer c;
  c.Append("old");
  c = std::move(b);
  EXPECT_EQ(c.view(), std::string(5000, 'x'));
}

}  // namespace
}  // namespace unwindd::cli

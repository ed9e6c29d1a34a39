#include "service/common/json.h"
#include "service/common/utf8.h"

#include <string>

#include "gtest/gtest.h"

namespace unwindd::service {
namespace {

TEST(JsonString, EscapesWhatJsonRequires) {
  EXPECT_EQ(JsonString("a\"b\\c\nd\te"), R"("a\"b\\c\nd\te")");
  EXPECT_EQ(JsonString(std::string("\x01\x1f", 2)), R"("\u0001\u001f")");
  EXPECT_EQ(JsonString(std::string("a\0b", 3)), R"("a\u0000b")");
}

TEST(JsonString, KeepsValidUtf8) {
  // é (2 bytes), € (3), 𝄞 (4): copied as they are.
  const std::string s = "/lib/\xc3\xa9\xe2\x82\xac\xf0\x9d\x84\x9e.so";
  EXPECT_EQ(JsonString(s), "\"" + s + "\"");
}

TEST(JsonString, EscapesEachByteThatIsNotUtf8) {
  EXPECT_EQ(JsonString("/tmp/\xff/lib.so"), R"("/tmp/\u00ff/lib.so")");
  // A lone continuation byte, a truncated sequence at the end, an overlong
  // '/', a UTF-16 surrogate, a code point above U+10FFFF.
  EXPECT_EQ(JsonString("\x80"), R"("\u0080")");
  EXPECT_EQ(JsonString("a\xe2\x82"), R"("a\u00e2\u0082")");
  EXPECT_EQ(JsonString("\xc0\xaf"), R"("\u00c0\u00af")");
  EXPECT_EQ(JsonString("\xed\xa0\x80"), R"("\u00ed\u00a0\u0080")");
  EXPECT_EQ(JsonString("\xf4\x90\x80\x80"), R"("\u00f4\u0090\u0080\u0080")");
  // A valid sequence right after an invalid byte is kept.
  EXPECT_EQ(JsonString("\xff\xc3\xa9"), "\"\\u00ff\xc3\xa9\"");
}

TEST(Utf8Lossy, ReplacesEachStrayByte) {
  EXPECT_TRUE(IsUtf8("/lib/\xc3\xa9.so"));
  EXPECT_FALSE(IsUtf8("/tmp/\xff.so"));
  EXPECT_EQ(Utf8Lossy("/lib/\xc3\xa9.so"), "/lib/\xc3\xa9.so");
  EXPECT_EQ(Utf8Lossy("/tmp/\xff\xc3(.so"), "/tmp/\xef\xbf\xbd\xef\xbf\xbd(.so");
  EXPECT_EQ(Utf8LossySize("/tmp/\xff\xc3(.so"), Utf8Lossy("/tmp/\xff\xc3(.so").size());
  EXPECT_TRUE(IsUtf8(Utf8Lossy("\xed\xa0\x80\xf4\x90\x80\x80")));
}

TEST(Utf8SequenceLength, Boundaries) {
  EXPECT_EQ(Utf8SequenceLength(""), 0u);
  EXPECT_EQ(Utf8SequenceLength("a"), 1u);
  EXPECT_EQ(Utf8SequenceLength("\xc2\x80"), 2u);          // U+0080
  EXPECT_EQ(Utf8SequenceLength("\xdf\xbf"), 2u);          // U+07FF
  EXPECT_EQ(Utf8SequenceLength("\xe0\xa0\x80"), 3u);      // U+0800
  EXPECT_EQ(Utf8SequenceLength("\xef\xbf\xbf"), 3u);      // U+FFFF
  EXPECT_EQ(Utf8SequenceLength("\xf0\x90\x80\x80"), 4u);  // U+10000
  EXPECT_EQ(Utf8SequenceLength("\xf4\x8f\xbf\xbf"), 4u);  // U+10FFFF
  EXPECT_EQ(Utf8SequenceLength("\xc1\xbf"), 0u);
  EXPECT_EQ(Utf8SequenceLength("\xe0\x9f\xbf"), 0u);
  EXPECT_EQ(Utf8SequenceLength("\xf0\x8f\xbf\xbf"), 0u);
  EXPECT_EQ(Utf8SequenceLength("\xf5\x80\x80\x80"), 0u);
}

}  // namespace
}  // namespace unwindd::service

#include "testdata/harness/json.h"

#include <string>

#include "gtest/gtest.h"

namespace unwindd::harness {
namespace {

TEST(JsonTest, ParsesUnwindOutputShape) {
  absl::StatusOr<JsonValue> doc = ParseJson(R"({"threads": [
    {"tid": 1234, "stop": "end_of_stack",
     "frames": [{"pc": "0x7f1c2a6f16", "method": "initial", "ok": true,
                 "module": null}]}]})");
  ASSERT_TRUE(doc.ok()) << doc.status();
  ASSERT_TRUE(doc->is_object());
  const JsonValue* threads = doc->Find("threads");
  ASSERT_NE(threads, nullptr);
  ASSERT_TRUE(threads->is_array());
  ASSERT_EQ(threads->elements().size(), 1u);
  const JsonValue& t = threads->elements()[0];
  EXPECT_EQ(t.Find("tid")->AsInt64(), 1234);
  EXPECT_EQ(t.Find("stop")->text(), "end_of_stack");
  const JsonValue& frame = t.Find("frames")->elements()[0];
  EXPECT_EQ(frame.Find("pc")->text(), "0x7f1c2a6f16");
  EXPECT_TRUE(frame.Find("ok")->is_bool());
  EXPECT_TRUE(frame.Find("ok")->bool_value());
  EXPECT_TRUE(frame.Find("module")->is_null());
  EXPECT_EQ(frame.Find("missing"), nullptr);
  // Member order is kept.
  ASSERT_EQ(t.members().size(), 3u);
  EXPECT_EQ(t.members()[0].key, "tid");
  EXPECT_EQ(t.members()[2].key, "frames");
}

TEST(JsonTest, Scalars) {
  EXPECT_TRUE(ParseJson("null")->is_null());
  EXPECT_FALSE(ParseJson(" false ")->bool_value());
  EXPECT_EQ(ParseJson("\"\"")->text(), "");
  EXPECT_TRUE(ParseJson("[]")->elements().empty());
  EXPECT_TRUE(ParseJson("{}")->members().empty());
}

TEST(JsonTest, NumbersKeepTheirLiteral) {
  EXPECT_EQ(ParseJson("9223372036854775807")->AsInt64(),
            int64_t{9223372036854775807});
  EXPECT_EQ(ParseJson("-0")->AsInt64(), 0);
  EXPECT_EQ(ParseJson("-12")->AsInt64(), -12);
  // Valid JSON numbers that are not int64s.
  EXPECT_EQ(ParseJson("1.5")->text(), "1.5");
  EXPECT_EQ(ParseJson("1.5")->AsInt64(), std::nullopt);
  EXPECT_EQ(ParseJson("2E+10")->AsInt64(), std::nullopt);
  EXPECT_EQ(ParseJson("0.25e-3")->text(), "0.25e-3");
  EXPECT_EQ(ParseJson("9223372036854775808")->AsInt64(), std::nullopt);
  EXPECT_EQ(ParseJson("\"12\"")->AsInt64(), std::nullopt);
}

TEST(JsonTest, StringEscapes) {
  EXPECT_EQ(ParseJson(R"("a\"b\\c\/d\b\f\n\r\t")")->text(),
            "a\"b\\c/d\b\f\n\r\t");
  EXPECT_EQ(ParseJson(R"("\u0041\u00e9\u20AC")")->text(),
            "A\xC3\xA9\xE2\x82\xAC");
  // U+1F600 as a surrogate pair.
  EXPECT_EQ(ParseJson(R"("\uD83D\uDE00")")->text(), "\xF0\x9F\x98\x80");
  // Raw UTF-8 passes through.
  EXPECT_EQ(ParseJson("\"\xC3\xA9\"")->text(), "\xC3\xA9");
}

TEST(JsonTest, RejectsMalformedDocuments) {
  const char* bad[] = {
      "",
      " ",
      "[1,]",
      "{\"a\":1,}",
      "[1 2]",
      "{\"a\" 1}",
      "{a:1}",
      "{\"a\":1,\"a\":2}",  // Duplicate key.
      "01",
      "-",
      "1.",
      ".5",
      "1e",
      "+1",
      "NaN",
      "Infinity",
      "tru",
      "nul",
      "\"abc",
      "\"a\nb\"",     // Raw control character.
      "\"\\x41\"",    // Unknown escape.
      "\"\\u12\"",    // Short \u escape.
      "\"\\u0x12\"",  // Not hex digits.
      "\"\\uDE00\"",  // Lone low surrogate.
      "\"\\uD83D\"",  // High surrogate without a low one.
      "\"\\uD83Dx\"",
      "\"\\uD83D\\u0041\"",
      "[1] [2]",
      "{} x",
      "[1]]",
      "// comment\n1",
  };
  for (const char* text : bad) {
    absl::StatusOr<JsonValue> v = ParseJson(text);
    EXPECT_FALSE(v.ok()) << "accepted: " << text;
    if (!v.ok()) {
      EXPECT_EQ(v.status().code(), absl::StatusCode::kInvalidArgument);
    }
  }
}

TEST(JsonTest, NestingIsBounded) {
  std::string ok(kMaxJsonDepth, '[');
  ok += std::string(kMaxJsonDepth, ']');
  EXPECT_TRUE(ParseJson(ok).ok());
  // Deeper than the limit fails cleanly instead of overflowing the stack.
  std::string deep(100000, '[');
  deep += std::string(100000, ']');
  absl::StatusOr<JsonValue> v = ParseJson(deep);
  ASSERT_FALSE(v.ok());
  EXPECT_NE(v.status().message().find("nesting"), std::string::npos);
}

TEST(JsonTest, ErrorsNameTheOffset) {
  absl::StatusOr<JsonValue> v = ParseJson("[1, x]");
  ASSERT_FALSE(v.ok());
  EXPECT_NE(v.status().message().find("offset 4"), std::string::npos)
      << v.status();
}

}  // namespace
}  // namespace unwindd::harness

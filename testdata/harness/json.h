// A small, strict JSON (RFC 8259) parser for reading `unwind --format=json`
// output in tests. No external dependency; the whole document is parsed into a
// tree of JsonValue.
//
//   absl::StatusOr<JsonValue> doc = ParseJson(R"({"threads": []})");
//   const JsonValue* threads = doc->Find("threads");
//
// Strict means: exactly one value with only whitespace around it, no trailing
// commas, no comments, no leading zeros, no NaN/Infinity, no raw control
// characters in strings, no unpaired UTF-16 surrogates in \u escapes, no
// duplicate object keys, nesting at most kMaxJsonDepth deep. Numbers keep
// their literal text, so 64-bit integers (tids, counts) round-trip exactly;
// AsInt64() converts on demand.
#ifndef UNWINDD_TESTDATA_HARNESS_JSON_H_
#define UNWINDD_TESTDATA_HARNESS_JSON_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace unwindd::harness {

inline constexpr int kMaxJsonDepth = 128;

struct JsonMember;

class JsonValue {
 public:
  enum class Type { kNull, kBool, kNumber, kString, kArray, kObject };

  static JsonValue Null();
  static JsonValue Bool(bool b);
  // `literal` must already be a valid JSON number; the parser guarantees it.
  static JsonValue Number(std::string literal);
  static JsonValue String(std::string s);
  static JsonValue Array(std::vector<JsonValue> elements);
  static JsonValue Object(std::vector<JsonMember> members);

  Type type() const { return type_; }
  bool is_null() const { return type_ == Type::kNull; }
  bool is_bool() const { return type_ == Type::kBool; }
  bool is_number() const { return type_ == Type::kNumber; }
  bool is_string() const { return type_ == Type::kString; }
  bool is_array() const { return type_ == Type::kArray; }
  bool is_object() const { return type_ == Type::kObject; }

  // Each accessor is only meaningful for its own type (empty/false otherwise).
  bool bool_value() const { return bool_; }
  // The number's literal text, or the decoded (UTF-8) string.
  const std::string& text() const { return text_; }
  const std::vector<JsonValue>& elements() const { return elements_; }
  const std::vector<JsonMember>& members() const { return members_; }

  // The member named `key` of an object, or nullptr (also for non-objects).
  const JsonValue* Find(absl::string_view key) const;
  // The number as an int64 if it is an integer literal in range.
  std::optional<int64_t> AsInt64() const;

 private:
  // Out of line: clang instantiates the members' destructors where the
  // constructor is defined, and JsonMember is still incomplete here.
  explicit JsonValue(Type type);

  Type type_;
  bool bool_ = false;
  std::string text_;
  std::vector<JsonValue> elements_;
  std::vector<JsonMember> members_;
};

struct JsonMember {
  std::string key;
  JsonValue value;
};

// Parses one JSON document. Errors are InvalidArgument with the byte offset.
absl::StatusOr<JsonValue> ParseJson(absl::string_view text);

// A short human-readable name of a type ("object", "string", ...), for
// error messages.
absl::string_view JsonTypeName(JsonValue::Type type);

}  // namespace unwindd::harness

#endif  // UNWINDD_TESTDATA_HARNESS_JSON_H_

#include "testdata/harness/json.h"

#include <utility>

#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_format.h"

namespace unwindd::harness {

JsonValue::JsonValue(Type type) : type_(type) {}

JsonValue JsonValue::Null() { return JsonValue(Type::kNull); }

JsonValue JsonValue::Bool(bool b) {
  JsonValue v(Type::kBool);
  v.bool_ = b;
  return v;
}

JsonValue JsonValue::Number(std::string literal) {
  JsonValue v(Type::kNumber);
  v.text_ = std::move(literal);
  return v;
}

JsonValue JsonValue::String(std::string s) {
  JsonValue v(Type::kString);
  v.text_ = std::move(s);
  return v;
}

JsonValue JsonValue::Array(std::vector<JsonValue> elements) {
  JsonValue v(Type::kArray);
  v.elements_ = std::move(elements);
  return v;
}

JsonValue JsonValue::Object(std::vector<JsonMember> members) {
  JsonValue v(Type::kObject);
  v.members_ = std::move(members);
  return v;
}

const JsonValue* JsonValue::Find(absl::string_view key) const {
  for (const JsonMember& m : members_) {
    if (m.key == key) return &m.value;
  }
  return nullptr;
}

std::optional<int64_t> JsonValue::AsInt64() const {
  int64_t out;
  // SimpleAtoi rejects fractions and exponents, and reports overflow.
  if (type_ != Type::kNumber || !absl::SimpleAtoi(text_, &out)) {
    return std::nullopt;
  }
  return out;
}

absl::string_view JsonTypeName(JsonValue::Type type) {
  switch (type) {
    case JsonValue::Type::kNull:
      return "null";
    case JsonValue::Type::kBool:
      return "bool";
    case JsonValue::Type::kNumber:
      return "number";
    case JsonValue::Type::kString:
      return "string";
    case JsonValue::Type::kArray:
      return "array";
    case JsonValue::Type::kObject:
      return "object";
  }
  return "?";
}

namespace {

// Recursive descent over the RFC 8259 grammar. `pos_` only moves forward;
// every error names the offset it was found at.
class Parser {
 public:
  explicit Parser(absl::string_view text) : text_(text) {}

  absl::StatusOr<JsonValue> ParseDocument() {
    absl::StatusOr<JsonValue> v = ParseValue(0);
    if (!v.ok()) return v;
    SkipWhitespace();
    if (pos_ != text_.size()) return Error("trailing characters");
    return v;
  }

 private:
  absl::Status Error(absl::string_view what) const {
    return absl::InvalidArgumentError(
        absl::StrFormat("JSON: %s at offset %d", what, pos_));
  }

  bool AtEnd() const { return pos_ >= text_.size(); }
  char Peek() const { return AtEnd() ? '\0' : text_[pos_]; }

  void SkipWhitespace() {
    while (!AtEnd() && (Peek() == ' ' || Peek() == '\t' || Peek() == '\n' ||
                        Peek() == '\r')) {
      ++pos_;
    }
  }

  bool Consume(absl::string_view word) {
    if (text_.substr(pos_, word.size()) != word) return false;
    pos_ += word.size();
    return true;
  }

  absl::StatusOr<JsonValue> ParseValue(int depth) {
    if (depth > kMaxJsonDepth) return Error("nesting too deep");
    SkipWhitespace();
    switch (Peek()) {
      case '{':
        return ParseObject(depth);
      case '[':
        return ParseArray(depth);
      case '"': {
        absl::StatusOr<std::string> s = ParseString();
        if (!s.ok()) return s.status();
        return JsonValue::String(*std::move(s));
      }
      case 't':
        if (Consume("true")) return JsonValue::Bool(true);
        break;
      case 'f':
        if (Consume("false")) return JsonValue::Bool(false);
        break;
      case 'n':
        if (Consume("null")) return JsonValue::Null();
        break;
      default:
        if (Peek() == '-' || (Peek() >= '0' && Peek() <= '9')) {
          return ParseNumber();
        }
    }
    return Error(AtEnd() ? "unexpected end" : "unexpected character");
  }

  absl::StatusOr<JsonValue> ParseObject(int depth) {
    ++pos_;  // '{'
    std::vector<JsonMember> members;
    SkipWhitespace();
    if (Consume("}")) return JsonValue::Object(std::move(members));
    for (;;) {
      SkipWhitespace();
      if (Peek() != '"') return Error("expected a string key");
      absl::StatusOr<std::string> key = ParseString();
      if (!key.ok()) return key.status();
      for (const JsonMember& m : members) {
        if (m.key == *key) return Error("duplicate key");
      }
      SkipWhitespace();
      if (!Consume(":")) return Error("expected ':'");
      absl::StatusOr<JsonValue> value = ParseValue(depth + 1);
      if (!value.ok()) return value.status();
      members.push_back(JsonMember{*std::move(key), *std::move(value)});
      SkipWhitespace();
      if (Consume("}")) return JsonValue::Object(std::move(members));
      if (!Consume(",")) return Error("expected ',' or '}'");
    }
  }

  absl::StatusOr<JsonValue> ParseArray(int depth) {
    ++pos_;  // '['
    std::vector<JsonValue> elements;
    SkipWhitespace();
    if (Consume("]")) return JsonValue::Array(std::move(elements));
    for (;;) {
      absl::StatusOr<JsonValue> value = ParseValue(depth + 1);
      if (!value.ok()) return value.status();
      elements.push_back(*std::move(value));
      SkipWhitespace();
      if (Consume("]")) return JsonValue::Array(std::move(elements));
      if (!Consume(",")) return Error("expected ',' or ']'");
    }
  }

  // number = [ "-" ] ( "0" / 1-9 *DIGIT ) [ "." 1*DIGIT ] [ e [+-] 1*DIGIT ]
  absl::StatusOr<JsonValue> ParseNumber() {
    const size_t start = pos_;
    Consume("-");
    if (Consume("0")) {
      if (IsDigit(Peek())) return Error("leading zero");
    } else if (!SkipDigits()) {
      return Error("expected a digit");
    }
    if (Consume(".") && !SkipDigits()) return Error("expected a digit");
    if (Peek() == 'e' || Peek() == 'E') {
      ++pos_;
      if (Peek() == '+' || Peek() == '-') ++pos_;
      if (!SkipDigits()) return Error("expected a digit");
    }
    return JsonValue::Number(std::string(text_.substr(start, pos_ - start)));
  }

  static bool IsDigit(char c) { return c >= '0' && c <= '9'; }

  // Returns whether at least one digit was skipped.
  bool SkipDigits() {
    const size_t start = pos_;
    while (IsDigit(Peek())) ++pos_;
    return pos_ > start;
  }

  absl::StatusOr<std::string> ParseString() {
    ++pos_;  // '"'
    std::string out;
    for (;;) {
      if (AtEnd()) return Error("unterminated string");
      const char c = text_[pos_++];
      if (c == '"') return out;
      if (static_cast<unsigned char>(c) < 0x20) {
        --pos_;
        return Error("control character in string");
      }
      if (c != '\\') {
        out.push_back(c);
        continue;
      }
      if (AtEnd()) return Error("unterminated string");
      const char e = text_[pos_++];
      switch (e) {
        case '"':
        case '\\':
        case '/':
          out.push_back(e);
          break;
        case 'b':
          out.push_back('\b');
          break;
        case 'f':
          out.push_back('\f');
          break;
        case 'n':
          out.push_back('\n');
          break;
        case 'r':
          out.push_back('\r');
          break;
        case 't':
          out.push_back('\t');
          break;
        case 'u': {
          absl::Status s = ParseUnicodeEscape(out);
          if (!s.ok()) return s;
          break;
        }
        default:
          --pos_;
          return Error("bad escape");
      }
    }
  }

  // Exactly four hex digits. (absl::SimpleHexAtoi would also take "0x",
  // signs and surrounding whitespace, which JSON does not allow.)
  absl::StatusOr<uint32_t> ParseHex4() {
    uint32_t v = 0;
    for (int i = 0; i < 4; ++i, ++pos_) {
      const char c = Peek();
      uint32_t digit;
      if (c >= '0' && c <= '9') {
        digit = c - '0';
      } else if (c >= 'a' && c <= 'f') {
        digit = c - 'a' + 10;
      } else if (c >= 'A' && c <= 'F') {
        digit = c - 'A' + 10;
      } else {
        return Error("expected 4 hex digits");
      }
      v = v * 16 + digit;
    }
    return v;
  }

  // Called after "\u"; appends the code point as UTF-8. A high surrogate
  // must be followed by "\u" and a low surrogate (RFC 8259 §7).
  absl::Status ParseUnicodeEscape(std::string& out) {
    absl::StatusOr<uint32_t> unit = ParseHex4();
    if (!unit.ok()) return unit.status();
    uint32_t cp = *unit;
    if (cp >= 0xDC00 && cp <= 0xDFFF) return Error("unpaired low surrogate");
    if (cp >= 0xD800 && cp <= 0xDBFF) {
      if (!Consume("\\u")) return Error("unpaired high surrogate");
      absl::StatusOr<uint32_t> low = ParseHex4();
      if (!low.ok()) return low.status();
      if (*low < 0xDC00 || *low > 0xDFFF) {
        return Error("unpaired high surrogate");
      }
      cp = 0x10000 + ((cp - 0xD800) << 10) + (*low - 0xDC00);
    }
    AppendUtf8(cp, out);
    return absl::OkStatus();
  }

  static void AppendUtf8(uint32_t cp, std::string& out) {
    if (cp < 0x80) {
      out.push_back(static_cast<char>(cp));
    } else if (cp < 0x800) {
      out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
      out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else if (cp < 0x10000) {
      out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
      out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
      out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else {
      out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
      out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
      out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
      out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    }
  }

  absl::string_view text_;
  size_t pos_ = 0;
};

}  // namespace

absl::StatusOr<JsonValue> ParseJson(absl::string_view text) {
  return Parser(text).ParseDocument();
}

}  // namespace unwindd::harness

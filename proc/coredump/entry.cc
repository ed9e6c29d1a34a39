#include "proc/coredump/entry.h"

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "arch/le_bytes.h"

namespace unwindd::proc::coredump {

bool ValidFieldName(absl::string_view name) {
  // systemd's journal_field_valid(): at most 64 characters, [A-Z0-9_],
  // not starting with a digit.
  if (name.empty() || name.size() > 64) return false;
  if (absl::ascii_isdigit(static_cast<unsigned char>(name[0]))) return false;
  for (char c : name) {
    if (!(c >= 'A' && c <= 'Z') && !absl::ascii_isdigit(static_cast<unsigned char>(c)) &&
        c != '_') {
      return false;
    }
  }
  return true;
}

absl::StatusOr<std::pair<absl::string_view, absl::string_view>> SplitField(
    absl::string_view data) {
  const size_t eq = data.find('=');
  if (eq == absl::string_view::npos) {
    return absl::InvalidArgumentError("journal field without '='");
  }
  const absl::string_view name = data.substr(0, eq);
  if (!ValidFieldName(name)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "invalid journal field name '", absl::CHexEscape(name.substr(0, 64)), "'"));
  }
  return std::make_pair(name, data.substr(eq + 1));
}

std::optional<bool> ParseBoolean(absl::string_view v) {
  for (absl::string_view t : {"1", "yes", "y", "true", "t", "on"}) {
    if (absl::EqualsIgnoreCase(v, t)) return true;
  }
  for (absl::string_view f : {"0", "no", "n", "false", "f", "off"}) {
    if (absl::EqualsIgnoreCase(v, f)) return false;
  }
  return std::nullopt;
}

std::vector<std::pair<uint64_t, uint64_t>> ParseAuxv(absl::string_view raw,
                                                     int word_size) {
  std::vector<std::pair<uint64_t, uint64_t>> out;
  if (word_size != 4 && word_size != 8) return out;
  const absl::Span<const uint8_t> b(reinterpret_cast<const uint8_t*>(raw.data()),
                                    raw.size());
  const size_t pair = 2 * static_cast<size_t>(word_size);
  for (size_t at = 0; at + pair <= b.size(); at += pair) {
    const uint64_t type = arch::LoadLe(b, at, word_size);
    if (type == 0) break;  // AT_NULL
    out.emplace_back(type, arch::LoadLe(b, at + word_size, word_size));
  }
  return out;
}

absl::Status CoredumpEntry::AddField(absl::string_view data) {
  absl::StatusOr<std::pair<absl::string_view, absl::string_view>> f = SplitField(data);
  if (!f.ok()) return f.status();
  const auto [name, value] = *f;
  if (name == "COREDUMP") {
    if (!has_core_) {
      has_core_ = true;
      core_ = std::string(value);
    }
    return absl::OkStatus();
  }
  if (value.size() > kMaxFieldBytes) {
    return absl::ResourceExhaustedError(absl::StrFormat(
        "journal field %s has %d bytes (at most %d)", name, value.size(), kMaxFieldBytes));
  }
  if (Get(name)) return absl::OkStatus();
  if (fields_.size() >= kMaxFields || total_ + data.size() > kMaxTotalBytes) {
    return absl::ResourceExhaustedError("the journal entry has too many fields");
  }
  total_ += data.size();
  fields_.emplace_back(std::string(name), std::string(value));
  return absl::OkStatus();
}

std::optional<std::string> CoredumpEntry::Get(absl::string_view name) const {
  for (const auto& [k, v] : fields_) {
    if (k == name) return v;
  }
  return std::nullopt;
}

std::optional<int64_t> CoredumpEntry::Number(absl::string_view name) const {
  std::optional<std::string> v = Get(name);
  int64_t n = 0;
  if (!v || !absl::SimpleAtoi(*v, &n)) return std::nullopt;
  return n;
}

void CoredumpEntry::set_core_bytes(std::string bytes) {
  has_core_ = true;
  core_ = std::move(bytes);
}

bool CoredumpEntry::is_coredump() const {
  return Get("MESSAGE_ID").value_or("") == kMessageCoredump;
}

bool CoredumpEntry::truncated() const {
  std::optional<std::string> v = Get("COREDUMP_TRUNCATED");
  return v && ParseBoolean(*v).value_or(false);
}

absl::StatusOr<std::vector<Mapping>> CoredumpEntry::ProcMaps() const {
  std::optional<std::string> v = Get("COREDUMP_PROC_MAPS");
  if (!v) return std::vector<Mapping>();
  return ParseMaps(*v);
}

std::vector<std::pair<uint64_t, uint64_t>> CoredumpEntry::ProcAuxv(int word_size) const {
  std::optional<std::string> v = Get("COREDUMP_PROC_AUXV");
  if (!v) return {};
  return ParseAuxv(*v, word_size);
}

}  // namespace unwindd::proc::coredump

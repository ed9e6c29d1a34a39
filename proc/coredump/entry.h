// A systemd-coredump journal entry: its fields, as sd_journal_get_data
// hands them over ("NAME=value", the value any bytes), and the values
// `unwind coredump` needs from them. Parsing is kept apart from reading
// the journal (journal.h) so that it can be tested and fuzzed on its own:
// the entry's fields come from the crashed process (its command line, its
// comm, its maps) and from whoever wrote the journal file.
//
//   CoredumpEntry e;
//   absl::Status s = e.AddField("COREDUMP_PID=4242");
//   e.Number("COREDUMP_PID");   // 4242
//
// Field names follow the journal's rules (systemd's journal_field_valid):
// 1-64 characters, uppercase letters, digits and '_', not starting with a
// digit. The names systemd-coredump writes are in its coredump.c and in
// systemd.journal-fields(7).
#ifndef UNWINDD_PROC_COREDUMP_ENTRY_H_
#define UNWINDD_PROC_COREDUMP_ENTRY_H_

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "proc/maps.h"

namespace unwindd::proc::coredump {

// SD_MESSAGE_COREDUMP and SD_MESSAGE_BACKTRACE (systemd's sd-messages.h):
// an entry with a core, and one with only a backtrace (from
// systemd-coredump --backtrace, e.g. for a container's crash).
inline constexpr absl::string_view kMessageCoredump = "fc2e22bc6ee647b6b90729ab34a250b1";
inline constexpr absl::string_view kMessageBacktrace = "1f4e0a44a88649939aaea34fc6da8c95";

// Bounds on what an entry may make us hold.
inline constexpr size_t kMaxFields = 1024;
inline constexpr size_t kMaxFieldBytes = 4 << 20;  // every field but COREDUMP
inline constexpr size_t kMaxTotalBytes = 32 << 20;

// "NAME=value" -> {NAME, value}. InvalidArgument if there is no '=' or the
// name is not a valid journal field name.
absl::StatusOr<std::pair<absl::string_view, absl::string_view>> SplitField(
    absl::string_view data);
bool ValidFieldName(absl::string_view name);

// systemd's parse_boolean: 1/yes/y/true/t/on and 0/no/n/false/f/off.
std::optional<bool> ParseBoolean(absl::string_view v);

// An auxiliary vector as COREDUMP_PROC_AUXV holds it (raw Elf64_auxv_t,
// or Elf32_auxv_t for `word_size` 4) -> (type, value) up to AT_NULL.
std::vector<std::pair<uint64_t, uint64_t>> ParseAuxv(absl::string_view raw,
                                                     int word_size);

class CoredumpEntry {
 public:
  // Adds one field as the journal gives it. The COREDUMP field (the core
  // itself, when the journal stores it) is kept aside: core_bytes(). A
  // field repeated keeps its first value, as coredumpctl's retrieve()
  // keeps the last it sees of fields that cannot repeat; InvalidArgument
  // for a malformed field, ResourceExhausted past the bounds.
  absl::Status AddField(absl::string_view data);

  const std::vector<std::pair<std::string, std::string>>& fields() const {
    return fields_;
  }
  // The value of `name`; nullopt if absent.
  std::optional<std::string> Get(absl::string_view name) const;
  // A decimal field (COREDUMP_PID, COREDUMP_SIGNAL, ...); nullopt if
  // absent or not a number.
  std::optional<int64_t> Number(absl::string_view name) const;

  bool has_core_field() const { return has_core_; }
  // The COREDUMP field's bytes (may be empty if the reader left them out).
  const std::string& core_bytes() const { return core_; }
  void set_core_bytes(std::string bytes);

  // Where the journal has it (set by the reader).
  std::string cursor;
  uint64_t realtime_usec = 0;

  // Derived values.
  bool is_coredump() const;     // MESSAGE_ID is SD_MESSAGE_COREDUMP
  bool truncated() const;       // COREDUMP_TRUNCATED is true
  // COREDUMP_PROC_MAPS parsed (an empty vector if absent); DataLoss if
  // malformed.
  absl::StatusOr<std::vector<Mapping>> ProcMaps() const;
  // COREDUMP_PROC_AUXV parsed for `word_size`-byte words.
  std::vector<std::pair<uint64_t, uint64_t>> ProcAuxv(int word_size) const;

 private:
  std::vector<std::pair<std::string, std::string>> fields_;
  size_t total_ = 0;
  bool has_core_ = false;
  std::string core_;
};

}  // namespace unwindd::proc::coredump

#endif  // UNWINDD_PROC_COREDUMP_ENTRY_H_

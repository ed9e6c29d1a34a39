#include "proc/core_notes.h"

#include <algorithm>

#include "absl/strings/str_format.h"
#include "memory/byte_reader.h"

namespace unwindd::proc {
namespace {

using memory::ByteReader;

// Note header: namesz, descsz, type.
constexpr uint64_t kNoteHeaderSize = 12;
// A note name longer than this is not one any producer writes.
constexpr uint32_t kMaxNoteName = 256;
// elf_prpsinfo: pr_fname[16] and pr_psargs[80].
constexpr size_t kFnameSize = 16;
constexpr size_t kPsargsSize = 80;
// siginfo_t is 128 bytes on every Linux arch.
constexpr size_t kSigInfoSize = 128;

uint64_t AlignUp(uint64_t v, uint64_t align) {
  return (v + align - 1) / align * align;  // callers bound v far below 2^63
}

absl::StatusOr<uint64_t> Word(ByteReader& r, int word_size) {
  if (word_size == 8) return r.U64();
  absl::StatusOr<uint32_t> v = r.U32();
  if (!v.ok()) return v.status();
  return uint64_t{*v};
}

std::string FixedString(absl::Span<const uint8_t> bytes) {
  auto end = std::find(bytes.begin(), bytes.end(), 0);
  return std::string(bytes.begin(), end);
}

uint32_t LoadLe32(absl::Span<const uint8_t> b, size_t off) {
  return b[off] | (b[off + 1] << 8) | (b[off + 2] << 16) |
         (uint32_t{b[off + 3]} << 24);
}

uint64_t LoadLeWord(absl::Span<const uint8_t> b, size_t off, int word_size) {
  uint64_t v = 0;
  for (int i = word_size - 1; i >= 0; --i) v = (v << 8) | b[off + i];
  return v;
}

}  // namespace

ParsedNotes ParseNotes(absl::Span<const uint8_t> bytes, uint64_t file_offset,
                       uint64_t align) {
  ParsedNotes out;
  if (align != 8) align = 4;  // gABI: 4 unless the segment says 8
  uint64_t pos = 0;
  // Each note takes at least a header, so this bounds the loop.
  while (pos + kNoteHeaderSize <= bytes.size()) {
    const uint64_t at = file_offset + pos;
    if (out.notes.size() >= kMaxCoreNotes) {
      out.error = absl::ResourceExhaustedError(absl::StrFormat(
          "more than %d notes: the ones from file offset 0x%x on are ignored",
          kMaxCoreNotes, at));
      return out;
    }
    const uint32_t namesz = LoadLe32(bytes, pos);
    const uint32_t descsz = LoadLe32(bytes, pos + 4);
    const uint32_t type = LoadLe32(bytes, pos + 8);
    if (namesz > kMaxNoteName) {
      out.error = absl::DataLossError(absl::StrFormat(
          "note at file offset 0x%x has a %d-byte name", at, namesz));
      return out;
    }
    // Offsets are relative to the (aligned) start of the segment, so the
    // 8-byte rule (desc starts 8-aligned: 16 after a 4-byte "GNU" name) and
    // the 4-byte one are the same formula.
    const uint64_t name_at = pos + kNoteHeaderSize;
    const uint64_t desc_at = AlignUp(name_at + namesz, align);
    const uint64_t next = AlignUp(desc_at + descsz, align);
    // 64-bit arithmetic on 32-bit sizes cannot overflow.
    if (desc_at + descsz > bytes.size()) {
      out.error = absl::DataLossError(absl::StrFormat(
          "note at file offset 0x%x (type 0x%x) needs %d bytes of description "
          "but the notes end at file offset 0x%x",
          at, type, descsz, file_offset + bytes.size()));
      return out;
    }
    CoreNote note;
    note.name = FixedString(bytes.subspan(name_at, namesz));
    note.type = type;
    note.desc = bytes.subspan(desc_at, descsz);
    note.offset = at;
    out.notes.push_back(std::move(note));
    pos = next;
  }
  // Trailing bytes shorter than a header: padding some producers leave.
  return out;
}

absl::StatusOr<std::vector<NtFileEntry>> ParseNtFile(
    absl::Span<const uint8_t> desc, int word_size) {
  ByteReader r(desc);
  absl::StatusOr<uint64_t> count = Word(r, word_size);
  absl::StatusOr<uint64_t> page_size = Word(r, word_size);
  if (!count.ok() || !page_size.ok()) {
    return absl::DataLossError(absl::StrFormat(
        "NT_FILE note of %d bytes has no count and page size", desc.size()));
  }
  // Each entry needs three words and at least a NUL for its name.
  const uint64_t per_entry = 3 * static_cast<uint64_t>(word_size) + 1;
  if (*count > kMaxNtFileEntries || *count > r.remaining() / per_entry) {
    return absl::DataLossError(absl::StrFormat(
        "NT_FILE note claims %d files but has %d bytes for them", *count,
        r.remaining()));
  }
  if (*page_size == 0 || (*page_size & (*page_size - 1)) != 0 ||
      *page_size > (uint64_t{1} << 30)) {
    return absl::DataLossError(absl::StrFormat(
        "NT_FILE page size %d is not a power of two", *page_size));
  }
  std::vector<NtFileEntry> out(*count);
  for (uint64_t i = 0; i < *count; ++i) {
    absl::StatusOr<uint64_t> start = Word(r, word_size);
    absl::StatusOr<uint64_t> end = Word(r, word_size);
    absl::StatusOr<uint64_t> pages = Word(r, word_size);
    if (!start.ok() || !end.ok() || !pages.ok()) {
      return absl::DataLossError(
          absl::StrFormat("NT_FILE entry %d is cut short", i));
    }
    if (*end < *start) {
      return absl::DataLossError(absl::StrFormat(
          "NT_FILE entry %d ends at 0x%x before it starts at 0x%x", i, *end,
          *start));
    }
    if (*pages > UINT64_MAX / *page_size) {
      return absl::DataLossError(absl::StrFormat(
          "NT_FILE entry %d has file offset %d pages of %d bytes: overflows", i,
          *pages, *page_size));
    }
    out[i].start = *start;
    out[i].end = *end;
    out[i].offset = *pages * *page_size;
  }
  for (uint64_t i = 0; i < *count; ++i) {
    absl::StatusOr<absl::string_view> name = r.CString();
    if (!name.ok()) {
      return absl::DataLossError(
          absl::StrFormat("NT_FILE note has %d names for %d files", i, *count));
    }
    out[i].path = std::string(*name);
  }
  return out;
}

absl::StatusOr<std::vector<std::pair<uint64_t, uint64_t>>> ParseAuxv(
    absl::Span<const uint8_t> desc, int word_size) {
  std::vector<std::pair<uint64_t, uint64_t>> out;
  ByteReader r(desc);
  // Bounded by the note's size: every pair consumes 2 words.
  while (r.remaining() >= 2 * static_cast<size_t>(word_size)) {
    uint64_t type = *Word(r, word_size);
    uint64_t value = *Word(r, word_size);
    if (type == 0) return out;  // AT_NULL
    out.emplace_back(type, value);
  }
  if (r.remaining() != 0) {
    return absl::DataLossError(absl::StrFormat(
        "NT_AUXV note of %d bytes is not a whole number of entries",
        desc.size()));
  }
  return out;
}

absl::StatusOr<PrpsInfo> ParsePrpsInfo(absl::Span<const uint8_t> desc,
                                       int word_size) {
  // pr_state, pr_sname, pr_zomb, pr_nice (chars), pr_flag (unsigned long,
  // word-aligned), pr_uid, pr_gid (__kernel_uid_t: 32-bit on 64-bit arches,
  // 16-bit on i386 and in x86_64's compat layout), four pid_t, pr_fname,
  // pr_psargs.
  const size_t flag_end = word_size == 8 ? 16 : 8;
  const size_t id_size = word_size == 8 ? 4 : 2;
  const size_t pid_off = flag_end + 2 * id_size;
  const size_t fname_off = pid_off + 4 * 4;
  const size_t need = fname_off + kFnameSize + kPsargsSize;
  if (desc.size() < need) {
    return absl::DataLossError(absl::StrFormat(
        "NT_PRPSINFO note is %d bytes, need %d", desc.size(), need));
  }
  PrpsInfo out;
  out.pid = static_cast<pid_t>(LoadLe32(desc, pid_off));
  out.fname = FixedString(desc.subspan(fname_off, kFnameSize));
  out.psargs = FixedString(desc.subspan(fname_off + kFnameSize, kPsargsSize));
  return out;
}

absl::StatusOr<SignalInfo> ParseSigInfo(absl::Span<const uint8_t> desc,
                                        int word_size) {
  if (desc.size() < kSigInfoSize) {
    return absl::DataLossError(absl::StrFormat(
        "NT_SIGINFO note is %d bytes, need %d", desc.size(), kSigInfoSize));
  }
  SignalInfo out;
  out.number = static_cast<int>(LoadLe32(desc, 0));
  const int code = static_cast<int32_t>(LoadLe32(desc, 8));
  out.code = code;
  // The union is word-aligned after the three ints.
  const size_t u = word_size == 8 ? 16 : 12;
  const bool from_process = code <= 0;  // SI_USER, SI_QUEUE, SI_TKILL...
  const bool fault = code > 0 && code != 0x80 &&
                     (out.number == 11 || out.number == 7 || out.number == 4 ||
                      out.number == 8 || out.number == 5);
  if (from_process) {
    out.sender_pid = static_cast<pid_t>(LoadLe32(desc, u));
    out.sender_uid = LoadLe32(desc, u + 4);
  } else if (fault) {
    out.fault_address = LoadLeWord(desc, u, word_size);
  }
  return out;
}

}  // namespace unwindd::proc

#include "proc/jit/jitdump.h"

#include <cstring>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_format.h"
#include "absl/strings/string_view.h"
#include "absl/strings/strip.h"

namespace unwindd::proc::jit {
namespace {

// Reads the dump's integers in its own byte order, with bounds checks.
class Reader {
 public:
  Reader(absl::Span<const uint8_t> s, bool swap) : s_(s), swap_(swap) {}

  bool U32(size_t at, uint32_t* v) const {
    if (at > s_.size() || s_.size() - at < 4) return false;
    std::memcpy(v, s_.data() + at, 4);
    if (swap_) *v = __builtin_bswap32(*v);
    return true;
  }
  bool U64(size_t at, uint64_t* v) const {
    if (at > s_.size() || s_.size() - at < 8) return false;
    std::memcpy(v, s_.data() + at, 8);
    if (swap_) *v = __builtin_bswap64(*v);
    return true;
  }

 private:
  absl::Span<const uint8_t> s_;
  bool swap_;
};

// struct jr_prefix: u32 id, u32 total_size, u64 timestamp.
constexpr size_t kPrefixSize = 16;
// CODE_LOAD's fixed part after the prefix: pid, tid, vma, code_addr,
// code_size, code_index.
constexpr size_t kLoadFixed = 4 + 4 + 8 + 8 + 8 + 8;
// CODE_MOVE's: pid, tid, vma, old_code_addr, new_code_addr, code_size,
// code_index.
constexpr size_t kMoveFixed = 4 + 4 + 8 + 8 + 8 + 8 + 8;
// CODE_UNWINDING_INFO's: unwinding_size, eh_frame_hdr_size, mapped_size.
constexpr size_t kUnwindFixed = 8 + 8 + 8;

// The unwinding data waiting for the CODE_LOAD it describes.
struct Unwinding {
  absl::Span<const uint8_t> eh_frame, eh_frame_hdr;
  bool pending = false;
};

}  // namespace

bool IsJitDumpPath(absl::string_view path) {
  const size_t slash = path.rfind('/');
  absl::string_view name = slash == absl::string_view::npos ? path : path.substr(slash + 1);
  if (!absl::ConsumePrefix(&name, "jit-") || !absl::ConsumeSuffix(&name, ".dump")) {
    return false;
  }
  if (name.empty()) return false;
  for (char c : name) {
    if (!absl::ascii_isdigit(static_cast<unsigned char>(c))) return false;
  }
  return true;
}

absl::StatusOr<JitDump> ParseJitDump(std::shared_ptr<const std::vector<uint8_t>> bytes) {
  if (bytes == nullptr || bytes->size() < kJitHeaderSize) {
    return absl::DataLossError("not a jitdump: shorter than its 40-byte header");
  }
  const absl::Span<const uint8_t> all(bytes->data(), bytes->size());
  JitDump out;
  uint32_t magic;
  std::memcpy(&magic, all.data(), 4);
  if (magic == __builtin_bswap32(kJitDumpMagic)) {
    out.swapped = true;
  } else if (magic != kJitDumpMagic) {
    return absl::DataLossError(absl::StrFormat("not a jitdump: magic 0x%08x", magic));
  }
  const Reader h(all, out.swapped);
  uint32_t version, header_size, pad;
  h.U32(4, &version);
  h.U32(8, &header_size);
  h.U32(12, &out.elf_mach);
  h.U32(16, &pad);
  h.U32(20, &out.pid);
  h.U64(24, &out.timestamp);
  h.U64(32, &out.flags);
  if (version != 1) {
    return absl::UnimplementedError(absl::StrFormat("jitdump version %d (1 is known)", version));
  }
  // Later versions may have a longer header; the records start after it.
  if (header_size < kJitHeaderSize || header_size > all.size()) {
    return absl::DataLossError(
        absl::StrFormat("jitdump header says it is %d bytes (file: %d)", header_size, all.size()));
  }
  Unwinding unwinding;
  size_t at = header_size;
  while (at < all.size()) {
    uint32_t id, size;
    uint64_t time;
    if (!h.U32(at, &id) || !h.U32(at + 4, &size) || !h.U64(at + 8, &time) ||
        size < kPrefixSize || size > all.size() - at) {
      // A record cut short (a dump still being written) or a broken
      // framing: the records before it are what there is.
      out.truncated = true;
      break;
    }
    const absl::Span<const uint8_t> rec = all.subspan(at, size);
    const Reader r(rec, out.swapped);
    at += size;
    switch (static_cast<JitRecordType>(id)) {
      case JitRecordType::kCodeLoad: {
        JitCode c;
        c.time = time;
        c.bytes = bytes;
        uint64_t vma;
        if (size < kPrefixSize + kLoadFixed) {
          ++out.skipped;
          break;
        }
        r.U32(16, &c.pid);
        r.U32(20, &c.tid);
        r.U64(24, &vma);
        r.U64(32, &c.code_addr);
        r.U64(40, &c.code_size);
        r.U64(48, &c.code_index);
        const size_t name_at = kPrefixSize + kLoadFixed;
        const void* nul = std::memchr(rec.data() + name_at, 0, size - name_at);
        if (nul == nullptr) {
          ++out.skipped;
          break;
        }
        const size_t name_len = static_cast<const uint8_t*>(nul) - (rec.data() + name_at);
        const size_t code_at = name_at + name_len + 1;
        // The code is the record's last code_size bytes (it follows the
        // name; perf reads it from there, whatever padding is between).
        if (c.code_size == 0 || c.code_size > kMaxJitCodeBytes || c.code_size > size - code_at ||
            c.code_addr + c.code_size < c.code_addr || out.codes.size() >= kMaxJitCodes) {
          ++out.skipped;
          unwinding.pending = false;
          break;
        }
        c.name.assign(reinterpret_cast<const char*>(rec.data() + name_at),
                      std::min(name_len, kMaxJitName));
        c.code = rec.subspan(size - c.code_size, c.code_size);
        if (unwinding.pending) {
          c.eh_frame = unwinding.eh_frame;
          c.eh_frame_hdr = unwinding.eh_frame_hdr;
          unwinding.pending = false;
        }
        out.codes.push_back(std::move(c));
        break;
      }
      case JitRecordType::kCodeMove: {
        uint64_t vma, old_addr, new_addr, code_size, code_index;
        if (size < kPrefixSize + kMoveFixed) {
          ++out.skipped;
          break;
        }
        r.U64(24, &vma);
        r.U64(32, &old_addr);
        r.U64(40, &new_addr);
        r.U64(48, &code_size);
        r.U64(56, &code_index);
        // The latest load of that code at the old address moves: a copy of
        // it (same bytes, same unwinding) at the new one, from now on.
        for (size_t i = out.codes.size(); i-- > 0;) {
          JitCode& c = out.codes[i];
          if (c.code_addr != old_addr || c.code_index != code_index || c.moved) continue;
          if (out.codes.size() >= kMaxJitCodes ||
              new_addr + c.code_size < new_addr) {
            ++out.skipped;
            break;
          }
          c.moved = true;
          JitCode m = c;
          m.moved = false;
          m.time = time;
          m.code_addr = new_addr;
          out.codes.push_back(std::move(m));
          break;
        }
        break;
      }
      case JitRecordType::kCodeUnwindingInfo: {
        uint64_t unwinding_size, hdr_size, mapped_size;
        if (size < kPrefixSize + kUnwindFixed) {
          ++out.skipped;
          break;
        }
        r.U64(16, &unwinding_size);
        r.U64(24, &hdr_size);
        r.U64(32, &mapped_size);
        const size_t data_at = kPrefixSize + kUnwindFixed;
        if (unwinding_size > size - data_at || hdr_size > unwinding_size) {
          ++out.skipped;
          unwinding.pending = false;
          break;
        }
        const absl::Span<const uint8_t> data = rec.subspan(data_at, unwinding_size);
        unwinding.pending = true;
        // mapped_size 0: the code has no CFI (its frames keep a frame
        // pointer); the table that comes with it is empty.
        if (mapped_size == 0) {
          unwinding.eh_frame = {};
          unwinding.eh_frame_hdr = {};
        } else {
          unwinding.eh_frame = data.first(unwinding_size - hdr_size);
          unwinding.eh_frame_hdr = data.subspan(unwinding_size - hdr_size);
        }
        break;
      }
      case JitRecordType::kCodeClose:
        out.closed = true;
        break;
      case JitRecordType::kCodeDebugInfo:
        break;  // line tables: nothing to unwind with
      default:
        ++out.skipped;
        break;
    }
    if (out.closed) break;
  }
  return out;
}

}  // namespace unwindd::proc::jit

#include "testdata/aarch64/live/snapshot_text.h"

#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace unwindd::testdata::live {
namespace {

constexpr absl::string_view kPrefix = "UWD-SNAP ";
constexpr size_t kBytesPerLine = 64;

std::string Hex(uint64_t v) { return absl::StrFormat("0x%x", v); }

std::string PacLine(absl::string_view which,
                    const std::optional<arch::PacMask>& pac) {
  if (!pac) return absl::StrCat(kPrefix, "pac ", which, " none\n");
  return absl::StrCat(kPrefix, "pac ", which, " ", Hex(pac->data_mask), " ",
                      Hex(pac->insn_mask), "\n");
}

// "bytes"/"zero" lines for `data` at target address `address`.
void AppendBytes(uint64_t address, const std::vector<uint8_t>& data,
                 std::string* out) {
  size_t i = 0;
  while (i < data.size()) {
    size_t n = std::min(kBytesPerLine, data.size() - i);
    size_t zeros = 0;
    while (i + zeros < data.size() && data[i + zeros] == 0) ++zeros;
    if (zeros >= kBytesPerLine) {
      absl::StrAppend(out, kPrefix, "zero ", Hex(address + i), " ", zeros, "\n");
      i += zeros;
      continue;
    }
    absl::StrAppend(out, kPrefix, "bytes ", Hex(address + i), " ");
    for (size_t k = 0; k < n; ++k) absl::StrAppendFormat(out, "%02x", data[i + k]);
    out->push_back('\n');
    i += n;
  }
}

bool ParseHex(absl::string_view s, uint64_t* out) {
  if (!absl::ConsumePrefix(&s, "0x") || s.empty() || s.size() > 16) return false;
  return absl::SimpleHexAtoi(s, out);
}

int HexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;
}

// Parser state for one "begin" ... "end" block.
class BlockParser {
 public:
  absl::Status Line(const std::vector<absl::string_view>& w) {
    const absl::string_view kind = w[0];
    if (kind == "pac") return Pac(w);
    if (kind == "map") return Map(w);
    if (kind == "vdso") return Vdso(w);
    if (kind == "thread") return Thread(w);
    if (kind == "reg") return Reg(w);
    if (kind == "bytes" || kind == "zero") return Bytes(w);
    return absl::InvalidArgumentError(absl::StrCat("unknown line kind ", kind));
  }
  Capture& capture() { return capture_; }

 private:
  absl::Status Pac(const std::vector<absl::string_view>& w) {
    std::optional<arch::PacMask>* dst;
    if (w.size() >= 2 && w[1] == "target") {
      dst = &capture_.pac_target;
    } else if (w.size() >= 2 && w[1] == "raw") {
      dst = &capture_.pac_raw;
    } else {
      return absl::InvalidArgumentError("pac: want target or raw");
    }
    if (w.size() == 3 && w[2] == "none") return absl::OkStatus();
    arch::PacMask m;
    if (w.size() != 4 || !ParseHex(w[2], &m.data_mask) ||
        !ParseHex(w[3], &m.insn_mask)) {
      return absl::InvalidArgumentError("pac: want two hex masks");
    }
    *dst = m;
    return absl::OkStatus();
  }

  absl::Status Map(const std::vector<absl::string_view>& w) {
    proc::Mapping m;
    if (w.size() != 7 || !ParseHex(w[1], &m.start) || !ParseHex(w[2], &m.end) ||
        w[3].size() != 4 || !ParseHex(w[4], &m.offset) ||
        !absl::SimpleAtoi(w[5], &m.inode) || m.end <= m.start) {
      return absl::InvalidArgumentError("map: want start end perms offset inode path");
    }
    if (capture_.mappings.size() >= kMaxCaptureMappings) {
      return absl::InvalidArgumentError("too many mappings");
    }
    m.read = w[3][0] == 'r';
    m.write = w[3][1] == 'w';
    m.exec = w[3][2] == 'x';
    m.shared = w[3][3] == 's';
    if (w[6] != "-") m.path = std::string(w[6]);
    capture_.mappings.push_back(std::move(m));
    return absl::OkStatus();
  }

  absl::Status Vdso(const std::vector<absl::string_view>& w) {
    if (w.size() != 3 || !ParseHex(w[1], &capture_.vdso_address)) {
      return absl::InvalidArgumentError("vdso: want address size");
    }
    section_ = &capture_.vdso;
    section_address_ = capture_.vdso_address;
    return absl::OkStatus();
  }

  absl::Status Thread(const std::vector<absl::string_view>& w) {
    CapturedThread t;
    if (w.size() != 3 || !absl::SimpleAtoi(w[1], &t.tid) ||
        !ParseHex(w[2], &t.stack_address)) {
      return absl::InvalidArgumentError("thread: want tid stack-address");
    }
    if (capture_.threads.size() >= kMaxCaptureThreads) {
      return absl::InvalidArgumentError("too many threads");
    }
    capture_.threads.push_back(std::move(t));
    section_ = &capture_.threads.back().stack;
    section_address_ = capture_.threads.back().stack_address;
    return absl::OkStatus();
  }

  absl::Status Reg(const std::vector<absl::string_view>& w) {
    int reg = 0;
    uint64_t value = 0;
    if (capture_.threads.empty()) {
      return absl::InvalidArgumentError("reg before thread");
    }
    if (w.size() != 3 || !absl::SimpleAtoi(w[1], &reg) || reg < 0 ||
        reg >= arch::kMaxRegisters || !ParseHex(w[2], &value)) {
      return absl::InvalidArgumentError("reg: want number value");
    }
    capture_.threads.back().registers.Set(reg, value);
    return absl::OkStatus();
  }

  absl::Status Bytes(const std::vector<absl::string_view>& w) {
    uint64_t address = 0;
    if (section_ == nullptr) {
      return absl::InvalidArgumentError("bytes outside a vdso or thread section");
    }
    if (w.size() != 3 || !ParseHex(w[1], &address)) {
      return absl::InvalidArgumentError("bytes/zero: want address data");
    }
    if (address != section_address_ + section_->size()) {
      return absl::InvalidArgumentError(
          absl::StrFormat("bytes at 0x%x do not follow 0x%x + %d", address,
                          section_address_, section_->size()));
    }
    size_t n = 0;
    if (w[0] == "zero") {
      if (!absl::SimpleAtoi(w[2], &n)) {
        return absl::InvalidArgumentError("zero: bad count");
      }
    } else {
      if (w[2].size() % 2 != 0 || w[2].size() > 2 * kBytesPerLine) {
        return absl::InvalidArgumentError("bytes: bad hex length");
      }
      n = w[2].size() / 2;
    }
    if (n > kMaxCaptureBytes - section_->size()) {
      return absl::InvalidArgumentError("section larger than the limit");
    }
    if (w[0] == "zero") {
      section_->resize(section_->size() + n, 0);
      return absl::OkStatus();
    }
    for (size_t i = 0; i < n; ++i) {
      int hi = HexDigit(w[2][2 * i]), lo = HexDigit(w[2][2 * i + 1]);
      if (hi < 0 || lo < 0) return absl::InvalidArgumentError("bytes: bad hex");
      section_->push_back(static_cast<uint8_t>(hi * 16 + lo));
    }
    return absl::OkStatus();
  }

  Capture capture_;
  std::vector<uint8_t>* section_ = nullptr;
  uint64_t section_address_ = 0;
};

}  // namespace

std::string FormatCapture(const Capture& c) {
  std::string out = absl::StrCat(kPrefix, "begin pid=", c.pid, " arch=aarch64\n");
  out += PacLine("target", c.pac_target);
  out += PacLine("raw", c.pac_raw);
  for (const proc::Mapping& m : c.mappings) {
    absl::StrAppend(&out, kPrefix, "map ", Hex(m.start), " ", Hex(m.end), " ",
                    m.read ? "r" : "-", m.write ? "w" : "-", m.exec ? "x" : "-",
                    m.shared ? "s" : "p", " ", Hex(m.offset), " ", m.inode, " ",
                    m.path.empty() || m.path.find(' ') != std::string::npos
                        ? "-"
                        : m.path,
                    "\n");
  }
  if (!c.vdso.empty()) {
    absl::StrAppend(&out, kPrefix, "vdso ", Hex(c.vdso_address), " ",
                    c.vdso.size(), "\n");
    AppendBytes(c.vdso_address, c.vdso, &out);
  }
  for (const CapturedThread& t : c.threads) {
    absl::StrAppend(&out, kPrefix, "thread ", t.tid, " ", Hex(t.stack_address), "\n");
    for (int r = 0; r < arch::kMaxRegisters; ++r) {
      if (t.registers.Valid(r)) {
        absl::StrAppend(&out, kPrefix, "reg ", r, " ", Hex(t.registers.Get(r)), "\n");
      }
    }
    AppendBytes(t.stack_address, t.stack, &out);
  }
  absl::StrAppend(&out, kPrefix, "end\n");
  return out;
}

absl::StatusOr<std::vector<Capture>> ParseCaptures(absl::string_view text) {
  std::vector<Capture> out;
  std::optional<BlockParser> block;
  int line_number = 0;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    ++line_number;
    // A serial console ends lines with "\r\n".
    line = absl::StripTrailingAsciiWhitespace(line);
    if (!absl::ConsumePrefix(&line, kPrefix)) continue;
    std::vector<absl::string_view> w =
        absl::StrSplit(line, ' ', absl::SkipEmpty());
    if (w.empty()) continue;
    absl::Status status;
    if (w[0] == "begin") {
      if (block) status = absl::InvalidArgumentError("begin inside a block");
      block.emplace();
      for (absl::string_view kv : absl::MakeConstSpan(w).subspan(1)) {
        if (absl::ConsumePrefix(&kv, "pid=") &&
            !absl::SimpleAtoi(kv, &block->capture().pid)) {
          status = absl::InvalidArgumentError("begin: bad pid");
        }
      }
    } else if (!block) {
      status = absl::InvalidArgumentError("line outside a begin/end block");
    } else if (w[0] == "end") {
      out.push_back(std::move(block->capture()));
      block.reset();
    } else {
      status = block->Line(w);
    }
    if (!status.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "capture text line ", line_number, ": ", status.message()));
    }
  }
  if (block) return absl::InvalidArgumentError("capture block without end");
  return out;
}

}  // namespace unwindd::testdata::live

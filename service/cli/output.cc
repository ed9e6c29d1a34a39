#include "service/cli/output.h"

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstring>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "proc/signal_info.h"

namespace unwindd::service {
namespace {

std::string Hex(uint64_t v) { return absl::StrFormat("\"0x%x\"", v); }

const std::string& SymbolOf(const FrameSymbols* symbols, size_t t, size_t i) {
  static const std::string* const kNone = new std::string();
  if (symbols == nullptr || t >= symbols->size() || i >= (*symbols)[t].size()) {
    return *kNone;
  }
  return (*symbols)[t][i];
}

std::string SignalJson(const proc::SignalInfo& s) {
  std::string out = absl::StrCat("{\"number\": ", s.number, ", \"name\": ",
                                 JsonString(proc::SignalName(s.number)));
  if (s.code) {
    absl::StrAppend(&out, ", \"code\": ", *s.code);
    absl::string_view name = proc::SignalCodeName(s.number, *s.code);
    if (!name.empty()) absl::StrAppend(&out, ", \"code_name\": ", JsonString(name));
  }
  if (s.fault_address) {
    absl::StrAppend(&out, ", \"fault_address\": ", Hex(*s.fault_address));
  }
  if (s.sender_pid) absl::StrAppend(&out, ", \"sender_pid\": ", *s.sender_pid);
  if (s.sender_uid) absl::StrAppend(&out, ", \"sender_uid\": ", *s.sender_uid);
  return out + "}";
}

std::string SignalText(const proc::SignalInfo& s) {
  std::string out = proc::SignalName(s.number);
  if (s.code) {
    absl::string_view name = proc::SignalCodeName(s.number, *s.code);
    absl::StrAppend(&out, " (", name.empty() ? absl::StrCat("code ", *s.code)
                                             : std::string(name), ")");
  }
  if (s.fault_address) {
    absl::StrAppendFormat(&out, " fault address 0x%x", *s.fault_address);
  }
  if (s.sender_pid) absl::StrAppend(&out, " from pid ", *s.sender_pid);
  return out;
}

std::string CoreJson(const CoreSummary& c) {
  std::string out = absl::StrCat(
      "{\"file\": ", JsonString(c.core), ", \"compression\": ",
      JsonString(c.compression), ", \"executable\": ", JsonString(c.executable),
      ", \"modules_from\": ", JsonString(c.modules_from), ", \"files\": [");
  for (size_t i = 0; i < c.files.size(); ++i) {
    const CoreSummary::File& f = c.files[i];
    absl::StrAppend(&out, i ? ",\n    " : "\n    ", "{\"path\": ", JsonString(f.path),
                    ", \"state\": ", JsonString(f.state));
    if (!f.file.empty()) absl::StrAppend(&out, ", \"file\": ", JsonString(f.file));
    if (f.fetched) out += ", \"fetched\": true";
    absl::StrAppend(&out, ", \"build_id\": ", JsonString(f.build_id));
    if (!f.file_build_id.empty()) {
      absl::StrAppend(&out, ", \"file_build_id\": ", JsonString(f.file_build_id));
    }
    out += "}";
  }
  out += "], \"warnings\": [";
  for (size_t i = 0; i < c.warnings.size(); ++i) {
    absl::StrAppend(&out, i ? ",\n    " : "\n    ", JsonString(c.warnings[i]));
  }
  out += "]";
  if (!c.metadata.empty()) {
    out += ", \"metadata\": {";
    for (size_t i = 0; i < c.metadata.size(); ++i) {
      absl::StrAppend(&out, i ? ",\n    " : "\n    ", JsonString(c.metadata[i].key),
                      ": ", JsonString(c.metadata[i].value));
    }
    out += "}";
  }
  return out + "}";
}

std::string CoreText(const CoreSummary& c) {
  std::string out = absl::StrCat(c.kind, ": ", c.core);
  if (c.compression != "none") absl::StrAppend(&out, " (", c.compression, ")");
  absl::StrAppend(&out, ", executable ", c.executable.empty() ? "?" : c.executable,
                  ", modules from ", c.modules_from, "\n");
  // Which file stood for the executable here (--exe, --sysroot, or its
  // recorded path): the one whose build-id matched.
  for (const CoreSummary::File& f : c.files) {
    if (f.path != c.executable || f.state != "found" || f.file.empty()) continue;
    absl::StrAppend(&out, "executable file: ", f.file,
                    f.file_build_id.empty() ? "" : " build-id ", f.file_build_id, "\n");
  }
  for (const CoreSummary::Fact& f : c.metadata) {
    absl::StrAppend(&out, f.label, ": ", f.value, "\n");
  }
  for (const CoreSummary::File& f : c.files) {
    if (f.state == "missing") {
      absl::StrAppend(&out, "missing: ", f.path, "\n");
    } else if (f.state == "mismatch") {
      absl::StrAppend(&out, "mismatch: ", f.path, ": ", f.file, " has build-id ",
                      f.file_build_id, ", the core recorded ", f.build_id, "\n");
    }
  }
  return out;
}

}  // namespace

std::string PackageJson(const proc::PackageNote& p) {
  std::string out = "{";
  for (size_t i = 0; i < p.fields.size(); ++i) {
    absl::StrAppend(&out, i ? ", " : "", JsonString(p.fields[i].first), ": ",
                    JsonString(p.fields[i].second));
  }
  return out + "}";
}

void AppendFrameJson(const unwinder::Frame& f, const unwinder::ModuleInfo* m,
                     absl::string_view symbol, std::string* out, bool file_offset,
                     const proc::PackageNote* package) {
  absl::StrAppend(out, "{\"pc\": ", Hex(f.pc), ", \"sp\": ", Hex(f.sp),
                  ", \"method\": \"", unwinder::MethodName(f.method), "\"");
  if (m != nullptr) {
    absl::StrAppend(out, ", \"module\": ", JsonString(m->path),
                    ", \"build_id\": ", JsonString(m->build_id));
    if (m->bias_known) absl::StrAppend(out, ", \"rel_pc\": ", Hex(f.rel_pc));
    if (file_offset) absl::StrAppend(out, ", \"file_offset\": ", Hex(f.file_offset));
    if (!m->file.empty()) absl::StrAppend(out, ", \"file\": ", JsonString(m->file));
    if (m->mismatch) *out += ", \"module_mismatch\": true";
    if (!m->error.empty()) {
      absl::StrAppend(out, ", \"module_error\": ", JsonString(m->error));
    }
    if (m->from_memory) *out += ", \"from_memory\": true";
    if (!m->jit_name.empty()) absl::StrAppend(out, ", \"jit_name\": ", JsonString(m->jit_name));
    if (m->fetched) *out += ", \"fetched\": true";
    if (!m->debug_kind.empty()) {
      absl::StrAppend(out, ", \"debug_file\": ",
                      JsonString(m->debug_file.empty() ? "[.gnu_debugdata]" : m->debug_file),
                      ", \"debug_kind\": ", JsonString(m->debug_kind));
      if (m->debug_fetched) *out += ", \"debug_fetched\": true";
    }
    if (package != nullptr) absl::StrAppend(out, ", \"package\": ", PackageJson(*package));
  }
  if (!symbol.empty()) absl::StrAppend(out, ", \"symbol\": ", JsonString(symbol));
  *out += "}";
}

std::string FormatJson(const unwinder::ProcessStacks& stacks,
                       const CoreSummary* core, const FrameSymbols* symbols) {
  return FormatJson(stacks, OutputExtras{.core = core, .symbols = symbols});
}

std::string FormatText(const unwinder::ProcessStacks& stacks,
                       const CoreSummary* core, const FrameSymbols* symbols) {
  return FormatText(stacks, OutputExtras{.core = core, .symbols = symbols});
}

namespace {

std::string SignatureJson(const CrashSignature& s) {
  std::string out = absl::StrCat("{\"duphash\": ", JsonString(s.duphash),
                                 ", \"crash_thread\": ", s.crash_tid,
                                 ", \"signal\": ", s.signal, ", \"frames\": [");
  for (size_t i = 0; i < s.frames.size(); ++i) {
    absl::StrAppend(&out, i ? ", " : "", JsonString(s.frames[i]));
  }
  return out + "]}";
}

const proc::PackageNote* PackageOf(const ModulePackages* p, int module) {
  if (p == nullptr || module < 0 || static_cast<size_t>(module) >= p->size()) {
    return nullptr;
  }
  const std::optional<proc::PackageNote>& n = (*p)[module];
  return n ? &*n : nullptr;
}

}  // namespace

namespace {

// The text a format writes, handed on in pieces of about kPiece bytes
// (never a line split) when there is an `emit`, else kept whole in `out`.
// A one-shot command writes each piece as it is made: a deep stack's
// whole text was fresh heap, a page fault per 4 KiB, where a piece
// reuses the memory of the one before.
class Pieces {
 public:
  // `estimate`: about how long the whole text is; a short one is not
  // given a whole piece's room (fresh memory touched for nothing).
  Pieces(std::string& out, const TextPieces* emit, size_t estimate = 0)
      : out_(out), emit_(emit) {
    if (emit_ != nullptr) out_.reserve(std::min(kPiece + 1024, estimate));
  }
  // After a line: hands on what is there once it is a piece.
  void EndLine() {
    if (emit_ != nullptr && out_.size() >= kPiece) Flush();
  }
  void Finish() {
    if (emit_ != nullptr && !out_.empty()) Flush();
  }

 private:
  static constexpr size_t kPiece = 16 << 10;
  void Flush() {
    (*emit_)(out_);
    out_.clear();
  }
  std::string& out_;
  const TextPieces* emit_;
};

void JsonInto(const unwinder::ProcessStacks& stacks, const OutputExtras& extras,
              std::string& out, Pieces& pieces) {
  const CoreSummary* core = extras.core;
  const FrameSymbols* symbols = extras.symbols;
  out += "{";
  if (core != nullptr) {
    absl::StrAppend(&out, JsonString(core->kind), ": ", CoreJson(*core), ",\n ");
  }
  if (extras.signature != nullptr) {
    absl::StrAppend(&out, "\"signature\": ", SignatureJson(*extras.signature), ",\n ");
  }
  out += "\"threads\": [";
  for (size_t t = 0; t < stacks.threads.size(); ++t) {
    const unwinder::ThreadStack& th = stacks.threads[t];
    absl::StrAppend(&out, t ? ",\n  " : "\n  ", "{\"tid\": ", th.tid,
                    ", \"stop\": \"", unwinder::StopReasonName(th.stop), "\"");
    if (!th.stop_detail.empty()) {
      absl::StrAppend(&out, ", \"stop_detail\": ", JsonString(th.stop_detail));
    }
    if (th.signal) absl::StrAppend(&out, ", \"signal\": ", SignalJson(*th.signal));
    out += ", \"frames\": [";
    for (size_t i = 0; i < th.frames.size(); ++i) {
      const unwinder::Frame& f = th.frames[i];
      out += i ? ",\n    " : "\n    ";
      AppendFrameJson(f, f.module >= 0 ? &stacks.modules[f.module] : nullptr,
                      SymbolOf(symbols, t, i), &out, /*file_offset=*/true,
                      PackageOf(extras.packages, f.module));
      pieces.EndLine();
    }
    out += "]}";
  }
  out += stacks.threads.empty() ? "]}\n" : "\n]}\n";
  pieces.Finish();
}

// Each byte's two lowercase hex digits.
constexpr std::array<char, 512> kHexPairs = [] {
  std::array<char, 512> t{};
  for (int b = 0; b < 256; ++b) {
    t[2 * b] = "0123456789abcdef"[b >> 4];
    t[2 * b + 1] = "0123456789abcdef"[b & 0xf];
  }
  return t;
}();

// Lowercase hex of `v` at `p`, at least `width` (<= 16) digits, zero-padded:
// what "%0*x" prints, without a format parser per frame, two digits a step.
// Returns the end.
char* WriteHex(char* p, uint64_t v, int width) {
  int n = v == 0 ? 1 : (67 - __builtin_clzll(v)) / 4;
  if (n < width) n = width;
  char* q = p + n;
  for (; q - p >= 2; v >>= 8) {
    q -= 2;
    std::memcpy(q, &kHexPairs[2 * (v & 0xff)], 2);
  }
  if (q > p) *p = "0123456789abcdef"[v & 0xf];
  return p + n;
}

// Decimal `v` at `p`; returns the end.
char* WriteDecimal(char* p, uint64_t v) {
  char buf[20];
  int n = 0;
  do {
    buf[n++] = static_cast<char>('0' + v % 10);
    v /= 10;
  } while (v != 0);
  while (n > 0) *p++ = buf[--n];
  return p;
}

// FormatText's size, near enough to reserve it once.
size_t TextEstimate(const unwinder::ProcessStacks& stacks) {
  size_t estimate = 64;
  for (const unwinder::ThreadStack& th : stacks.threads) {
    estimate += 64 + th.stop_detail.size();
    for (const unwinder::Frame& f : th.frames) {
      estimate += 64 + (f.module >= 0 ? stacks.modules[f.module].path.size() : 0);
    }
  }
  return estimate;
}

// A line per frame, a few hundred in a deep `unwind pid`: the numbers are
// written through a pointer into a small buffer, the strings appended
// whole.
void TextInto(const unwinder::ProcessStacks& stacks, const OutputExtras& extras,
              std::string& out, Pieces& pieces) {
  const CoreSummary* core = extras.core;
  const FrameSymbols* symbols = extras.symbols;
  if (stacks.pid != 0) {
    absl::StrAppend(&out, "PID ", stacks.pid, " - ", core ? core->kind : "process", "\n");
  }
  if (core != nullptr) out += CoreText(*core);
  if (extras.signature != nullptr && !extras.signature->duphash.empty()) {
    absl::StrAppend(&out, "signature: ", extras.signature->duphash, " (thread ",
                    extras.signature->crash_tid, ")\n");
  }
  if (extras.packages != nullptr) {
    // coredumpctl info's "Module X from deb NAME-VERSION", one per module.
    for (size_t i = 0; i < stacks.modules.size() && i < extras.packages->size(); ++i) {
      const std::optional<proc::PackageNote>& p = (*extras.packages)[i];
      if (!p) continue;
      absl::StrAppend(&out, "package: ", stacks.modules[i].path, " from ", p->Get("type"),
                      " ", p->Get("name"), "-", p->Get("version"), "\n");
    }
  }
  const int width = 2 * arch::GetArchInfo(stacks.arch).address_size;
  for (size_t t = 0; t < stacks.threads.size(); ++t) {
    const unwinder::ThreadStack& th = stacks.threads[t];
    absl::StrAppend(&out, "TID ", th.tid, ":\n");
    if (th.signal) absl::StrAppend(&out, "signal: ", SignalText(*th.signal), "\n");
    for (size_t i = 0; i < th.frames.size(); ++i) {
      const unwinder::Frame& f = th.frames[i];
      const std::string& sym = SymbolOf(symbols, t, i);
      const unwinder::ModuleInfo* m = f.module >= 0 ? &stacks.modules[f.module] : nullptr;
      // The whole line in one buffer, one append: "#%-2d 0x%0*x", the
      // symbol, the module and its offset, the method, a note. 256 bytes
      // hold all but the strings (numbers, the method's name, the longest
      // note: under 140), which are sized in.
      const size_t room =
          256 + sym.size() + (m ? m->path.size() + m->jit_name.size() : 0);
      char local[1024];
      std::string big;
      char* line = local;
      if (room > sizeof(local)) {
        big.resize(room);
        line = big.data();
      }
      char* p = line;
      auto put = [&p](absl::string_view v) {
        if (v.empty()) return;  // its data() may be null, which memcpy may not take
        std::memcpy(p, v.data(), v.size());
        p += v.size();
      };
      *p++ = '#';
      p = WriteDecimal(p, i);
      if (i < 10) *p++ = ' ';
      put(" 0x");
      p = WriteHex(p, f.pc, width);
      if (!sym.empty()) {
        *p++ = ' ';
        put(sym);
      }
      absl::string_view note;
      if (m != nullptr) {
        *p++ = ' ';
        put(m->path);
        if (m->bias_known) {
          put("+0x");
          p = WriteHex(p, f.rel_pc, 1);
        }
        if (!m->jit_name.empty() && sym.empty()) {
          // Generated code: the runtime's name for it.
          *p++ = ' ';
          put(m->jit_name);
        }
        if (m->mismatch) {
          note = " (build-id mismatch)";
        } else if (m->from_memory) {
          note = " (unwind info from the core's memory)";
        } else if (!m->error.empty()) {
          note = " (no file)";
        }
      }
      put(" [");
      put(unwinder::MethodName(f.method));
      *p++ = ']';
      put(note);
      *p++ = '\n';
      out.append(line, static_cast<size_t>(p - line));
      pieces.EndLine();
    }
    absl::StrAppend(&out, "stop: ", unwinder::StopReasonName(th.stop));
    if (!th.stop_detail.empty()) absl::StrAppend(&out, " (", th.stop_detail, ")");
    out += "\n";
  }
  pieces.Finish();
}

}  // namespace

std::string FormatJson(const unwinder::ProcessStacks& stacks, const OutputExtras& extras) {
  std::string out;
  Pieces whole(out, nullptr);
  JsonInto(stacks, extras, out, whole);
  return out;
}

std::string FormatText(const unwinder::ProcessStacks& stacks, const OutputExtras& extras) {
  std::string out;
  out.reserve(TextEstimate(stacks));
  Pieces whole(out, nullptr);
  TextInto(stacks, extras, out, whole);
  return out;
}

void WriteJson(const unwinder::ProcessStacks& stacks, const OutputExtras& extras,
               const TextPieces& emit) {
  std::string piece;
  // A frame's JSON is about three times its line of text.
  Pieces pieces(piece, &emit, 3 * TextEstimate(stacks));
  JsonInto(stacks, extras, piece, pieces);
}

void WriteText(const unwinder::ProcessStacks& stacks, const OutputExtras& extras,
               const TextPieces& emit) {
  std::string piece;
  Pieces pieces(piece, &emit, TextEstimate(stacks));
  TextInto(stacks, extras, piece, pieces);
}

void WriteStacks(const unwinder::ProcessStacks& stacks, const OutputExtras& extras, bool json,
                 std::FILE* out) {
  auto write = [out](absl::string_view piece) { std::fwrite(piece.data(), 1, piece.size(), out); };
  if (json) {
    WriteJson(stacks, extras, write);
  } else {
    WriteText(stacks, extras, write);
  }
}

}  // namespace unwindd::service

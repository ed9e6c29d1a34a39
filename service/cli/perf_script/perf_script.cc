#include "service/cli/perf_script/perf_script.h"

#include <algorithm>
#include <array>
#include <cstring>

#include "absl/base/attributes.h"
#include "absl/strings/match.h"

namespace unwindd::cli {
namespace {

// tools/perf/util/map.c: is_anon_memory / is_no_dso_memory — mappings
// whose addresses perf prints unconverted.
bool IdentityMapped(const std::string& path) {
  return path.empty() || path == "//anon" || path == "/dev/zero" ||
         path == "/anon_hugepage" || absl::StartsWith(path, "[stack") ||
         path == "[heap]" || absl::StartsWith(path, "/SYSV") ||
         path == "[vsyscall]";
}

}  // namespace

namespace {

// "00" .. "ff": two digits per table load in WriteHex16.
constexpr std::array<char, 512> kHexPairs = [] {
  std::array<char, 512> t{};
  constexpr char kDigits[] = "0123456789abcdef";
  for (int i = 0; i < 256; ++i) {
    t[2 * i] = kDigits[i >> 4];
    t[2 * i + 1] = kDigits[i & 0xf];
  }
  return t;
}();

// Writes `v` as lowercase hex at `p`, right-aligned in 16 columns
// (printf's "%16x"; a uint64_t has at most 16 digits); returns the end.
// Two digits per step: this runs for every frame line.
ABSL_ATTRIBUTE_ALWAYS_INLINE inline char* WriteHex16(char* p, uint64_t v) {
  std::memset(p, ' ', 16);
  char* d = p + 16;
  while (v >= 0x100) {
    d -= 2;
    std::memcpy(d, &kHexPairs[2 * (v & 0xff)], 2);
    v >>= 8;
  }
  if (v >= 0x10) {
    std::memcpy(d - 2, &kHexPairs[2 * v], 2);
  } else {
    d[-1] = kHexPairs[2 * v + 1];
  }
  return p + 16;
}

// "+0x" and `v` in lowercase hex without padding (perf's "+0x%lx").
char* WriteHexOffset(char* p, uint64_t v) {
  *p++ = '+';
  *p++ = '0';
  *p++ = 'x';
  int digits = 1;
  while (digits < 16 && (v >> (4 * digits)) != 0) ++digits;
  for (int i = digits - 1; i >= 0; --i) *p++ = "0123456789abcdef"[(v >> (4 * i)) & 0xf];
  return p;
}

// "00" "01" ... "99".
constexpr std::array<char, 200> kDecimalPairs = [] {
  std::array<char, 200> t{};
  for (int i = 0; i < 100; ++i) {
    t[2 * i] = static_cast<char>('0' + i / 10);
    t[2 * i + 1] = static_cast<char>('0' + i % 10);
  }
  return t;
}();

// "%<width>u" with zero or space padding, two digits at a time.
void AppendDecimal(uint64_t v, int width, char pad, TextBuffer* out) {
  char buf[20];
  char* d = buf + 20;
  while (v >= 100) {
    d -= 2;
    std::memcpy(d, &kDecimalPairs[2 * (v % 100)], 2);
    v /= 100;
  }
  if (v >= 10) {
    d -= 2;
    std::memcpy(d, &kDecimalPairs[2 * v], 2);
  } else {
    *--d = static_cast<char>('0' + v);
  }
  const int n = static_cast<int>(buf + 20 - d);
  const int total = std::max(width, n);
  char* p = out->Extend(total);
  std::memset(p, pad, total - n);
  std::memcpy(p + total - n, d, n);
}

}  // namespace

std::string FormatPerfScriptHeader(const PerfScriptHeader& h) {
  TextBuffer out;
  AppendPerfScriptHeader(h, &out);
  return std::string(out.view());
}

void AppendPerfScriptHeader(const PerfScriptHeader& h, TextBuffer* out) {
  // builtin-script.c perf_sample__fprintf_start (perf 6.1): "%s " for the
  // comm when callchains are printed, "%5d " tid, "[%03d] " cpu, the time
  // as "%5lu.%06lu: " (microseconds), then process_event's "%10lu "
  // period and "%s: " event name.
  out->Append(h.comm);
  out->push_back(' ');
  AppendDecimal(h.tid, 5, ' ', out);
  out->push_back(' ');
  if (h.cpu.has_value()) {
    out->push_back('[');
    AppendDecimal(*h.cpu, 3, '0', out);
    out->Append("] ");
  }
  AppendDecimal(h.time_ns / 1000000000, 5, ' ', out);
  out->push_back('.');
  AppendDecimal((h.time_ns % 1000000000) / 1000, 6, '0', out);
  out->Append(": ");
  AppendDecimal(h.period, 10, ' ', out);
  out->push_back(' ');
  out->Append(h.event);
  out->Append(": \n");
}

PerfScriptMappings::PerfScriptMappings(absl::Span<const proc::Mapping> mappings,
                                       const Names& names) {
  entries_.reserve(mappings.size());
  const std::string perf_map_path = names.pid > 0 ? proc::jit::PerfMapPath(names.pid) : "";
  for (size_t i = 0; i < mappings.size(); ++i) {
    const proc::Mapping& m = mappings[i];
    const bool identity = IdentityMapped(m.path);
    const bool by_map = names.pid > 0 && proc::jit::NamedByPerfMap(m);
    entries_.push_back({m.start, m.end, m.offset, identity,
                        by_map                         ? perf_map_path
                        : identity && m.path.empty() ? "//anon"
                                                     : m.path,
                        i < names.code_names.size() ? names.code_names[i] : std::string(),
                        by_map ? names.perf_map : nullptr});
  }
}

const PerfScriptMappings::Entry* PerfScriptMappings::Search(uint64_t address) const {
  auto it = std::upper_bound(entries_.begin(), entries_.end(), address,
                             [](uint64_t a, const Entry& e) { return a < e.start; });
  if (it == entries_.begin()) return nullptr;
  --it;
  return address < it->end ? &*it : nullptr;
}

PerfFrameAddress PerfScriptMappings::Address(absl::Span<const unwinder::Frame> frames,
                                             size_t i, FrameAddresses kind) const {
  const Entry* hint = nullptr;
  return AddressWithHint(frames, i, kind, &hint);
}

std::string FormatPerfScriptFrames(const unwinder::ThreadStack& stack,
                                   absl::Span<const proc::Mapping> mappings) {
  TextBuffer out;
  AppendPerfScriptFrames(stack, PerfScriptMappings(mappings), &out);
  return std::string(out.view());
}

void AppendPerfScriptFrames(const unwinder::ThreadStack& stack,
                            const PerfScriptMappings& mappings, TextBuffer* out,
                            FrameAddresses kind) {
  // This runs for every frame of every sample: the addresses first, then
  // the buffer extended once by the exact length and the lines written
  // through a pointer.
  constexpr absl::string_view kMiddle = " [unknown] (";
  constexpr size_t kFixed = 1 + 16 + kMiddle.size() + 2;  // "\t", "%16x", ..., ")\n"
  thread_local std::vector<PerfFrameAddress> addresses;
  addresses.clear();
  size_t length = 0;
  const PerfScriptMappings::Entry* hint = nullptr;
  for (size_t i = 0; i < stack.frames.size(); ++i) {
    addresses.push_back(mappings.AddressWithHint(stack.frames, i, kind, &hint));
    const PerfFrameAddress& a = addresses.back();
    length += kFixed + a.dso.size();
    // " NAME+0x" and up to 16 digits in place of " [unknown] ".
    if (!a.symbol.empty()) length += a.symbol.size() + 2 + 16;
  }
  char* const begin = out->Extend(length);
  char* p = begin;
  for (const PerfFrameAddress& a : addresses) {
    *p++ = '\t';
    p = WriteHex16(p, a.address);
    if (a.symbol.empty()) {
      std::memcpy(p, kMiddle.data(), kMiddle.size());
      p += kMiddle.size();
    } else {
      *p++ = ' ';
      std::memcpy(p, a.symbol.data(), a.symbol.size());
      p += a.symbol.size();
      p = WriteHexOffset(p, a.symbol_offset);
      *p++ = ' ';
      *p++ = '(';
    }
    std::memcpy(p, a.dso.data(), a.dso.size());
    p += a.dso.size();
    *p++ = ')';
    *p++ = '\n';
  }
  out->Shrink(length - static_cast<size_t>(p - begin));
}

std::string FormatPerfScriptKernelFrames(absl::Span<const uint64_t> ips) {
  TextBuffer out;
  AppendPerfScriptKernelFrames(ips, &out);
  return std::string(out.view());
}

void AppendPerfScriptKernelFrames(absl::Span<const uint64_t> ips, TextBuffer* out) {
  constexpr absl::string_view kRest = " [unknown] ([kernel.kallsyms])\n";
  for (uint64_t ip : ips) {
    char* p = out->Extend(1 + 16 + kRest.size());
    *p++ = '\t';
    p = WriteHex16(p, ip);
    std::memcpy(p, kRest.data(), kRest.size());
  }
}

}  // namespace unwindd::cli

#include "service/cli/perf_script/perf_script.h"

#include <algorithm>
#include <cstring>

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

// Writes `v` as lowercase hex at `p`, right-aligned in 16 columns
// (printf's "%16x"; a uint64_t has at most 16 digits); returns the end.
char* WriteHex16(char* p, uint64_t v) {
  char* d = p + 16;
  do {
    *--d = "0123456789abcdef"[v & 0xf];
    v >>= 4;
  } while (v != 0);
  std::memset(p, ' ', d - p);
  return p + 16;
}

// Appends "%16x": the hot loop of perf-script output, without a format
// parser.
void AppendHex16(uint64_t v, std::string* out) {
  const size_t at = out->size();
  out->resize(at + 16);
  WriteHex16(out->data() + at, v);
}

// "%<width>u" with zero or space padding.
void AppendDecimal(uint64_t v, int width, char pad, std::string* out) {
  char buf[20];
  int n = 0;
  do {
    buf[19 - n++] = static_cast<char>('0' + v % 10);
    v /= 10;
  } while (v != 0);
  if (width > n) out->append(width - n, pad);
  out->append(buf + 20 - n, n);
}

}  // namespace

std::string FormatPerfScriptHeader(const PerfScriptHeader& h) {
  std::string out;
  AppendPerfScriptHeader(h, &out);
  return out;
}

void AppendPerfScriptHeader(const PerfScriptHeader& h, std::string* out) {
  // builtin-script.c perf_sample__fprintf_start (perf 6.1): "%s " for the
  // comm when callchains are printed, "%5d " tid, "[%03d] " cpu, the time
  // as "%5lu.%06lu: " (microseconds), then process_event's "%10lu "
  // period and "%s: " event name.
  out->append(h.comm);
  out->push_back(' ');
  AppendDecimal(h.tid, 5, ' ', out);
  out->push_back(' ');
  if (h.cpu.has_value()) {
    out->push_back('[');
    AppendDecimal(*h.cpu, 3, '0', out);
    out->append("] ");
  }
  AppendDecimal(h.time_ns / 1000000000, 5, ' ', out);
  out->push_back('.');
  AppendDecimal((h.time_ns % 1000000000) / 1000, 6, '0', out);
  out->append(": ");
  AppendDecimal(h.period, 10, ' ', out);
  out->push_back(' ');
  out->append(h.event);
  out->append(": \n");
}

PerfScriptMappings::PerfScriptMappings(absl::Span<const proc::Mapping> mappings) {
  entries_.reserve(mappings.size());
  for (const proc::Mapping& m : mappings) {
    const bool identity = IdentityMapped(m.path);
    entries_.push_back({m.start, m.end, m.offset, identity,
                        identity && m.path.empty() ? "//anon" : m.path});
  }
}

const PerfScriptMappings::Entry* PerfScriptMappings::Find(uint64_t address,
                                                          const Entry* hint) const {
  if (hint != nullptr && address >= hint->start && address < hint->end) return hint;
  auto it = std::upper_bound(entries_.begin(), entries_.end(), address,
                             [](uint64_t a, const Entry& e) { return a < e.start; });
  if (it == entries_.begin()) return nullptr;
  --it;
  return address < it->end ? &*it : nullptr;
}

PerfFrameAddress PerfScriptMappings::Address(absl::Span<const unwinder::Frame> frames,
                                             size_t i) const {
  const Entry* hint = nullptr;
  return AddressWithHint(frames, i, &hint);
}

PerfFrameAddress PerfScriptMappings::AddressWithHint(absl::Span<const unwinder::Frame> frames,
                                                     size_t i, const Entry** hint) const {
  const unwinder::Frame& f = frames[i];
  const bool exact = i == 0 || f.method == unwinder::Method::kSignal;
  const uint64_t lookup = exact || f.pc == 0 ? f.pc : f.pc - 1;
  const Entry* e = Find(lookup, *hint);
  if (e == nullptr) return {lookup, "[unknown]"};
  *hint = e;
  if (e->identity) return {lookup, e->dso};
  return {lookup - e->start + e->offset, e->dso};
}

std::string FormatPerfScriptFrames(const unwinder::ThreadStack& stack,
                                   absl::Span<const proc::Mapping> mappings) {
  std::string out;
  AppendPerfScriptFrames(stack, PerfScriptMappings(mappings), &out);
  return out;
}

void AppendPerfScriptFrames(const unwinder::ThreadStack& stack,
                            const PerfScriptMappings& mappings, std::string* out) {
  // This runs for every frame of every sample: the addresses first, then
  // one resize to the exact length and the lines written through a pointer.
  constexpr absl::string_view kMiddle = " [unknown] (";
  constexpr size_t kFixed = 1 + 16 + kMiddle.size() + 2;  // "\t", "%16x", ..., ")\n"
  thread_local std::vector<PerfFrameAddress> addresses;
  addresses.clear();
  size_t length = 0;
  const PerfScriptMappings::Entry* hint = nullptr;
  for (size_t i = 0; i < stack.frames.size(); ++i) {
    addresses.push_back(mappings.AddressWithHint(stack.frames, i, &hint));
    length += kFixed + addresses.back().dso.size();
  }
  const size_t old_size = out->size();
  out->resize(old_size + length);
  char* p = out->data() + old_size;
  for (const PerfFrameAddress& a : addresses) {
    *p++ = '\t';
    p = WriteHex16(p, a.address);
    std::memcpy(p, kMiddle.data(), kMiddle.size());
    p += kMiddle.size();
    std::memcpy(p, a.dso.data(), a.dso.size());
    p += a.dso.size();
    *p++ = ')';
    *p++ = '\n';
  }
}

std::string FormatPerfScriptKernelFrames(absl::Span<const uint64_t> ips) {
  std::string out;
  AppendPerfScriptKernelFrames(ips, &out);
  return out;
}

void AppendPerfScriptKernelFrames(absl::Span<const uint64_t> ips, std::string* out) {
  for (uint64_t ip : ips) {
    out->push_back('\t');
    AppendHex16(ip, out);
    out->append(" [unknown] ([kernel.kallsyms])\n");
  }
}

}  // namespace unwindd::cli

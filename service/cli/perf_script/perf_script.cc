#include "service/cli/perf_script/perf_script.h"

#include <algorithm>

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

// Appends `v` as lowercase hex, right-aligned in `width` columns (printf's
// "%<width>x"): the hot loop of perf-script output, without a format parser.
void AppendHex(uint64_t v, int width, std::string* out) {
  char buf[16];
  int n = 0;
  do {
    buf[15 - n++] = "0123456789abcdef"[v & 0xf];
    v >>= 4;
  } while (v != 0);
  if (width > n) out->append(width - n, ' ');
  out->append(buf + 16 - n, n);
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

const PerfScriptMappings::Entry* PerfScriptMappings::Find(uint64_t address) const {
  auto it = std::upper_bound(entries_.begin(), entries_.end(), address,
                             [](uint64_t a, const Entry& e) { return a < e.start; });
  if (it == entries_.begin()) return nullptr;
  --it;
  return address < it->end ? &*it : nullptr;
}

PerfFrameAddress PerfScriptMappings::Address(absl::Span<const unwinder::Frame> frames,
                                             size_t i) const {
  const unwinder::Frame& f = frames[i];
  const bool exact = i == 0 || f.method == unwinder::Method::kSignal;
  const uint64_t lookup = exact || f.pc == 0 ? f.pc : f.pc - 1;
  const Entry* e = Find(lookup);
  if (e == nullptr) return {lookup, "[unknown]"};
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
  for (size_t i = 0; i < stack.frames.size(); ++i) {
    const PerfFrameAddress a = mappings.Address(stack.frames, i);
    out->push_back('\t');
    AppendHex(a.address, 16, out);
    out->append(" [unknown] (");
    out->append(a.dso.data(), a.dso.size());
    out->append(")\n");
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
    AppendHex(ip, 16, out);
    out->append(" [unknown] ([kernel.kallsyms])\n");
  }
}

}  // namespace unwindd::cli

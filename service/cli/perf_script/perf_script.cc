#include "service/cli/perf_script/perf_script.h"

#include <algorithm>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

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

const proc::Mapping* FindMapping(absl::Span<const proc::Mapping> maps,
                                 uint64_t addr) {
  auto it = std::upper_bound(
      maps.begin(), maps.end(), addr,
      [](uint64_t a, const proc::Mapping& m) { return a < m.start; });
  if (it == maps.begin()) return nullptr;
  --it;
  return it->Contains(addr) ? &*it : nullptr;
}

}  // namespace

std::string FormatPerfScriptHeader(const PerfScriptHeader& h) {
  // builtin-script.c perf_sample__fprintf_start (perf 6.1): "%s " for the
  // comm when callchains are printed, "%5d " tid, "[%03d] " cpu, the time
  // as "%5lu.%06lu: " (microseconds), then process_event's "%10lu "
  // period and "%s: " event name.
  std::string out = absl::StrFormat("%s %5d ", h.comm, h.tid);
  if (h.cpu.has_value()) absl::StrAppendFormat(&out, "[%03d] ", *h.cpu);
  absl::StrAppendFormat(&out, "%5u.%06u: ", h.time_ns / 1000000000,
                        (h.time_ns % 1000000000) / 1000);
  absl::StrAppendFormat(&out, "%10u %s: \n", h.period, h.event);
  return out;
}

PerfFrameAddress PerfScriptAddress(absl::Span<const unwinder::Frame> frames,
                                   size_t i,
                                   absl::Span<const proc::Mapping> mappings) {
  const unwinder::Frame& f = frames[i];
  const bool exact = i == 0 || f.method == unwinder::Method::kSignal;
  const uint64_t lookup = exact || f.pc == 0 ? f.pc : f.pc - 1;
  const proc::Mapping* m = FindMapping(mappings, lookup);
  if (m == nullptr) return {lookup, "[unknown]"};
  if (IdentityMapped(m->path)) return {lookup, m->path.empty() ? "//anon" : m->path};
  return {lookup - m->start + m->offset, m->path};
}

std::string FormatPerfScriptFrames(const unwinder::ThreadStack& stack,
                                   absl::Span<const proc::Mapping> mappings) {
  std::string out;
  for (size_t i = 0; i < stack.frames.size(); ++i) {
    PerfFrameAddress a = PerfScriptAddress(stack.frames, i, mappings);
    absl::StrAppendFormat(&out, "\t%16x [unknown] (%s)\n", a.address, a.dso);
  }
  return out;
}

std::string FormatPerfScriptKernelFrames(absl::Span<const uint64_t> ips) {
  std::string out;
  for (uint64_t ip : ips) {
    absl::StrAppendFormat(&out, "\t%16x [unknown] ([kernel.kallsyms])\n", ip);
  }
  return out;
}

}  // namespace unwindd::cli

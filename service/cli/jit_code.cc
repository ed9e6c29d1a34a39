#include "service/cli/jit_code.h"

#include <algorithm>
#include <utility>

#include "absl/strings/match.h"
#include "proc/jit/gdb_jit.h"
#include "proc/jit/jit_code.h"

namespace unwindd::service {
namespace {

// A mapping of a file that is still there under its name: code a runtime
// loaded, not code it wrote. The kernel's own code ([vdso], [vsyscall])
// counts as filed too.
bool Filed(const proc::Mapping& m) {
  if (m.path == "[vdso]" || m.path == "[vsyscall]") return true;
  return !m.path.empty() && m.path[0] == '/' && !m.deleted &&
         !absl::StartsWith(m.path, "/memfd:") && !absl::StartsWith(m.path, "/dev/");
}

}  // namespace

std::unique_ptr<proc::Target> WithAnnouncedCode(proc::Target& target,
                                                std::vector<std::string>* warnings) {
  std::vector<proc::jit::JitRegion> regions = proc::jit::FindJitCode(target, warnings);
  for (proc::jit::JitRegion& r : proc::jit::FindGdbJitCode(target, warnings)) {
    regions.push_back(std::move(r));
  }
  if (regions.empty()) return nullptr;
  return proc::jit::WithJitCode(target, std::move(regions));
}

bool RanUnfiledCode(const unwinder::ProcessStacks& stacks, const proc::Target& target) {
  // By start, whatever order the target lists them in (a core's need not
  // be sorted).
  std::vector<const proc::Mapping*> by_start;
  by_start.reserve(target.mappings().size());
  for (const proc::Mapping& m : target.mappings()) by_start.push_back(&m);
  std::sort(by_start.begin(), by_start.end(),
            [](const proc::Mapping* a, const proc::Mapping* b) { return a->start < b->start; });
  // Frames mostly run in the mapping of the frame before (a deep
  // recursion, a library's own calls): that one is tried first, where the
  // search would find it too (no mapping starts between it and the frame).
  size_t last = by_start.size();
  for (const unwinder::ThreadStack& t : stacks.threads) {
    for (const unwinder::Frame& f : t.frames) {
      // A return address is looked up one byte back, in its call (a call
      // that ends a mapping returns past it); registers and a signal frame
      // give the instruction itself.
      const bool exact =
          f.method == unwinder::Method::kInitial || f.method == unwinder::Method::kSignal;
      const uint64_t at = exact || f.pc == 0 ? f.pc : f.pc - 1;
      if (last < by_start.size() && by_start[last]->Contains(at) &&
          (last + 1 == by_start.size() || by_start[last + 1]->start > at)) {
        continue;
      }
      // The last mapping starting at or below it. Where a core's mappings
      // overlap, an earlier one may hold it too: then this says unfiled,
      // and the cost is only the look for announced code.
      auto it = std::upper_bound(by_start.begin(), by_start.end(), at,
                                 [](uint64_t a, const proc::Mapping* m) { return a < m->start; });
      const proc::Mapping* holder =
          it != by_start.begin() && (*(it - 1))->Contains(at) ? *(it - 1) : nullptr;
      if (holder == nullptr || !Filed(*holder)) return true;
      last = static_cast<size_t>(it - by_start.begin()) - 1;
    }
  }
  return false;
}

unwinder::ProcessStacks UnwindWithAnnouncedCode(proc::Target& target,
                                                unwinder::ModuleCache& cache,
                                                const unwinder::UnwindOptions& options,
                                                std::vector<std::string>* warnings) {
  unwinder::ProcessStacks stacks = unwinder::UnwindTarget(target, cache, options);
  if (options.cancel != nullptr && options.cancel->load()) return stacks;
  if (!RanUnfiledCode(stacks, target)) return stacks;
  std::unique_ptr<proc::Target> jit = WithAnnouncedCode(target, warnings);
  if (jit == nullptr) return stacks;
  return unwinder::UnwindTarget(*jit, cache, options);
}

}  // namespace unwindd::service

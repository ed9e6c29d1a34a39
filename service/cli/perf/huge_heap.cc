#include "service/cli/perf/huge_heap.h"

#include <malloc.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>

namespace unwindd::service::perf {
namespace {

constexpr uintptr_t kHugePage = uintptr_t{2} << 20;
// Address space the heap grows into (not memory: pages become resident when
// touched). Past it, glibc extends the heap with pages of the usual size.
constexpr size_t kHeapSpan = size_t{512} << 20;

}  // namespace

void UseHugePagesForHeap() {
  // Every thread allocates from the main arena, the heap marked below
  // (a thread's own arena would be another mapping of small pages); the
  // pipeline's threads allocate little once warm, so they rarely contend.
  mallopt(M_ARENA_MAX, 1);
  // Grow the heap by the whole span at once, keep what is freed, and serve
  // large blocks from it too rather than from mappings of their own.
  mallopt(M_TOP_PAD, static_cast<int>(kHeapSpan));
  mallopt(M_TRIM_THRESHOLD, static_cast<int>(kHeapSpan));
  mallopt(M_MMAP_THRESHOLD, 32 << 20);
  // An allocation larger than what the heap has left makes glibc extend it
  // by the span, from the end of its top chunk (where `probe` goes).
  void* probe = std::malloc(2 * kHugePage);
  if (probe == nullptr) return;
  const uintptr_t at = reinterpret_cast<uintptr_t>(probe);
  const uintptr_t top = reinterpret_cast<uintptr_t>(sbrk(0));
  const uintptr_t from = (at + kHugePage - 1) & ~(kHugePage - 1);
  std::free(probe);  // back into the top chunk, which starts at `at` again
  if (top <= from + kHugePage) return;
  madvise(reinterpret_cast<void*>(from), top - from, MADV_HUGEPAGE);
  // glibc carves new blocks from the start of the top chunk: the part below
  // the first huge page boundary (small pages, up to 2 MiB) is given to a
  // block that is never used, so that what the command allocates next
  // lies in huge pages. Kept reachable (it is not a leak).
  static void* spacer = nullptr;
  if (spacer == nullptr && from - at > 64) spacer = std::malloc(from - at - 64);
}

}  // namespace unwindd::service::perf

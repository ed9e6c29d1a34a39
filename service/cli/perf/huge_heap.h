// The heap of a long-running CLI command (`unwind perf`, `unwind profile`)
// in transparent huge pages: one page fault per 2 MiB of heap instead of
// one per 4 KiB page.
//
//   UseHugePagesForHeap();  // once, before the threads start
//
// What a profile builds (its stack tree, tables, the pprof encoding) grows
// with the number of distinct stacks, and every new 4 KiB page of it was a
// page fault: on a VM whose page tables the host shadows, a fault costs
// several microseconds, and a 12,000-sample recording took ~3,000 of them.
// The heap (glibc's main arena, which every thread then shares) gets a
// large span of address space up front, marked MADV_HUGEPAGE (the kernel's
// "madvise" mode of transparent huge pages); pages are still only touched,
// and made resident, as the heap grows.
#ifndef UNWINDD_SERVICE_CLI_PERF_HUGE_HEAP_H_
#define UNWINDD_SERVICE_CLI_PERF_HUGE_HEAP_H_

namespace unwindd::service::perf {

// Best effort: a kernel without transparent huge pages, or a heap glibc
// cannot grow in place, keeps 4 KiB pages.
void UseHugePagesForHeap();

}  // namespace unwindd::service::perf

#endif  // UNWINDD_SERVICE_CLI_PERF_HUGE_HEAP_H_

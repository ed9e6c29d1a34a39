// Facts about code read with binutils (objdump, readelf), a tool that is
// neither ours nor the one compared with: what end-to-end tests use to
// confirm the rules under which our frames differ from another tool's
// (testdata/perf), or to name a function by its FDE.
//
//   absl::StatusOr<bool> call = IsCallSite(dso, ra - 1);
//
// Addresses are file addresses (p_vaddr space); FileAddress converts the
// file offsets perf script prints.
#ifndef UNWINDD_TESTDATA_HARNESS_BINUTILS_FACTS_H_
#define UNWINDD_TESTDATA_HARNESS_BINUTILS_FACTS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace unwindd::harness {

// The file address of file offset `offset` (readelf -l's PT_LOAD segments).
absl::StatusOr<uint64_t> FileAddress(const std::string& dso, uint64_t offset);

// [start, end) of the FDE (readelf --debug-dump=frames) covering `addr` in
// `dso`'s `section` (".eh_frame" or ".debug_frame"), or nullopt if none
// does.
absl::StatusOr<std::optional<std::pair<uint64_t, uint64_t>>> FdeCovering(
    const std::string& dso, uint64_t addr, absl::string_view section = ".eh_frame");

// Whether the CFI row for `addr` (readelf --debug-dump=frames-interp) marks
// the return address undefined: the outermost frame, such as a new thread's
// first one.
absl::StatusOr<bool> ReturnAddressUndefinedAt(const std::string& dso, uint64_t addr);

// The registers (readelf's names) that the CFI row for `addr` says are
// saved below the frame's sp: the row's CFA is "rsp+N" and the register's
// rule "c-M" with M > N, so its slot CFA - M lies below rsp. Empty if none
// is, or the CFA is not rsp-based.
absl::StatusOr<std::vector<std::string>> SavedBelowSpAt(const std::string& dso,
                                                        uint64_t addr);

// Whether a `pop` or a `leave` ran between the start of the CFI row in
// effect at `addr` (the instruction just before it included: the row
// changes after the pop) and `addr` (objdump -d from the start of the FDE
// that covers `addr`).
absl::StatusOr<bool> AfterPop(const std::string& dso, uint64_t addr);

// Whether the instruction at or containing `addr` is a call, disassembled
// (objdump -d) from the start of the FDE (.eh_frame's, else .debug_frame's)
// that covers it.
absl::StatusOr<bool> IsCallSite(const std::string& dso, uint64_t addr);

// Whether the instructions just before `addr` are x86_64's rt_sigreturn
// trampoline, `mov $0xf,%rax; syscall`, and `addr` is where it returns to.
absl::StatusOr<bool> FollowsRtSigreturn(const std::string& dso, uint64_t addr);

}  // namespace unwindd::harness

#endif  // UNWINDD_TESTDATA_HARNESS_BINUTILS_FACTS_H_

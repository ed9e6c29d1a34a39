// `unwind check-sframe FILE`: for every PC that both .sframe and .eh_frame
// of a binary cover, does SFrame recover the same CFA, return address and
// frame pointer as the compiler's CFI? A tool for toolchain developers
// (an assembler's --gsframe output checked against its own .eh_frame).
//
//   absl::StatusOr<std::shared_ptr<Module>> m = Module::OpenFile(path);
//   absl::StatusOr<CheckReport> r = CheckSframe(**m);
//   std::cout << FormatCheckReport(*r);   // one line per disagreement
//
// Rows are compared by what they compute, not how they are written: both
// are applied to the same synthetic registers (every register a distinct,
// far-apart value) over a synthetic memory (every word a hash of its
// address), so "rsp+16" and an equivalent DWARF expression agree, and
// different rules disagree unless the registers happen to coincide, which
// the chosen values make impossible for offsets below 4 GiB. PCMASK FDEs
// are checked block by block; rows whose CFA is an expression, PC by PC.
#ifndef UNWINDD_UNWINDER_SFRAME_CHECK_H_
#define UNWINDD_UNWINDER_SFRAME_CHECK_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "unwinder/module.h"

namespace unwindd::unwinder::sframe {

struct Disagreement {
  uint64_t pc_lo = 0;       // file address, inclusive
  uint64_t pc_hi = 0;       // file address, exclusive
  uint64_t function = 0;    // the SFrame FDE's function start
  std::string what;         // "CFA", "RA", "FP", "RA signing", comma-separated
  std::string sframe_rule;  // e.g. "CFA=rsp+24 RA=[CFA-8] FP=same"
  std::string eh_frame_rule;  // e.g. "CFA=rsp+16 RA=[CFA-8] FP=same"
};

struct CheckReport {
  std::string file;
  int sframe_version = 0;
  uint32_t fdes = 0;                        // SFrame FDEs examined
  uint64_t pcs_compared = 0;                // PCs both sections cover
  uint64_t pcs_sframe_only = 0;             // PCs only .sframe covers
  std::vector<Disagreement> disagreements;  // adjacent equal ones merged
  std::vector<std::string> errors;          // FDEs that could not be read
  bool ok() const { return disagreements.empty() && errors.empty(); }
};

// Bounds on the work one check does, whatever the file claims (a mutated
// FDE can claim a 2.6 GB function, or a PCMASK block of one byte repeated
// over it):
//  - a function is checked only over the bytes the file has for it (up to
//    the end of the PT_LOAD segment that holds its start), and over at most
//    kMaxCheckedPcsPerFunction of them;
//  - a check makes at most kCheckStepsBase + kCheckStepsPerFileByte * (the
//    file's size) row lookups and comparisons, and then checks no further
//    function: real files need about one per byte of code.
// Each cut adds an entry to `errors` saying what was left out.
inline constexpr uint64_t kMaxCheckedPcsPerFunction = uint64_t{1} << 20;
inline constexpr uint64_t kCheckStepsBase = uint64_t{1} << 16;
inline constexpr uint64_t kCheckStepsPerFileByte = 4;

// The bounds above, as one check applies them (a fuzzer or a test may
// tighten them; the CLI uses the defaults).
struct CheckLimits {
  uint64_t max_pcs_per_function = kMaxCheckedPcsPerFunction;
  uint64_t steps_base = kCheckStepsBase;
  uint64_t steps_per_file_byte = kCheckStepsPerFileByte;
};

// FailedPrecondition if the module has no usable .sframe (the message says
// why) or no .eh_frame.
absl::StatusOr<CheckReport> CheckSframe(Module& module,
                                        const CheckLimits& limits = {});

// A summary line, then "0x<lo>-0x<hi> in 0x<function>: <what> differ:
// .sframe <rule> | .eh_frame <rule>" per disagreement and one line per error.
std::string FormatCheckReport(const CheckReport& report);

}  // namespace unwindd::unwinder::sframe

#endif  // UNWINDD_UNWINDER_SFRAME_CHECK_H_

#include "unwinder/sframe/check.h"

#include <algorithm>
#include <optional>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "arch/register_set.h"
#include "memory/memory.h"
#include "unwinder/cfi/apply.h"
#include "unwinder/sframe/rule_text.h"

namespace unwindd::unwinder::sframe {
namespace {

// Rows whose CFA is an expression may depend on the PC (PLT entries);
// they are checked PC by PC up to this many PCs per range.
constexpr uint64_t kMaxPcsPerExpressionRange = 4096;

// Every aligned 8-byte word holds a hash of its address.
class HashMemory : public memory::Memory {
 public:
  size_t Read(uint64_t addr, absl::Span<uint8_t> dst) override {
    for (size_t i = 0; i < dst.size(); ++i) {
      const uint64_t a = addr + i;
      dst[i] = static_cast<uint8_t>(Word(a & ~uint64_t{7}) >> (8 * (a & 7)));
    }
    return dst.size();
  }

 private:
  static uint64_t Word(uint64_t a) {
    uint64_t x = a * 0x9e3779b97f4a7c15ULL;
    x ^= x >> 29;
    return (x * 0xbf58476d1ce4e5b9ULL) | 1;
  }
};

// Distinct registers 4 GiB apart, 16-byte aligned, below the top of the
// 47-bit user address space.
arch::RegisterSet SyntheticRegisters(arch::Arch a, uint64_t pc) {
  arch::RegisterSet regs(a);
  const arch::ArchInfo& info = arch::GetArchInfo(a);
  for (int r = 0; r < info.num_regs; ++r) {
    regs.Set(r, 0x100000000000ULL + (static_cast<uint64_t>(r) + 1) * 0x100000000ULL);
  }
  regs.set_pc(pc);
  return regs;
}

struct Outcome {
  absl::Status status;
  uint64_t cfa = 0;
  std::optional<uint64_t> ra;  // nullopt: undefined or unknown
  std::optional<uint64_t> fp;
  bool ra_signed = false;
};

Outcome Evaluate(const Row& row, arch::Arch a, uint64_t pc) {
  HashMemory memory;
  arch::RegisterSet regs = SyntheticRegisters(a, pc);
  Outcome out;
  out.ra_signed = row.ra_signed;
  absl::StatusOr<ApplyResult> r = ApplyRow(row, regs, memory, 0);
  if (!r.ok()) {
    out.status = r.status();
    return out;
  }
  const arch::ArchInfo& info = arch::GetArchInfo(a);
  out.cfa = r->cfa;
  if (!r->ra_undefined && r->caller.Valid(info.pc)) out.ra = r->caller.pc();
  if (r->caller.Valid(info.fp)) out.fp = r->caller.Get(info.fp);
  return out;
}

// "" when the two agree, else which parts differ.
std::string Differences(const Outcome& s, const Outcome& e) {
  if (!s.status.ok() || !e.status.ok()) {
    return s.status.ok() == e.status.ok() ? "" : "applicability";
  }
  std::vector<std::string> what;
  if (s.cfa != e.cfa) what.push_back("CFA");
  if (s.ra != e.ra) what.push_back("RA");
  if (s.fp != e.fp) what.push_back("FP");
  if (s.ra_signed != e.ra_signed) what.push_back("RA signing");
  return absl::StrJoin(what, ",");
}

class Checker {
 public:
  Checker(Module& module, const SframeSection& sframe, const CheckLimits& limits,
          CheckReport& report)
      : module_(module),
        sframe_(sframe),
        report_(report),
        max_pcs_per_function_(limits.max_pcs_per_function),
        max_steps_(limits.steps_base +
                   limits.steps_per_file_byte * module.image_size()) {}

  void CheckFde(const Fde& fde);
  // The step budget is spent: no further FDE is checked.
  bool exhausted() const { return steps_ >= max_steps_; }
  uint64_t max_steps() const { return max_steps_; }

 private:
  void CheckRange(const Fde& fde, const Fre& fre, uint64_t lo, uint64_t hi);
  void Compare(const Fde& fde, const Row& s_row, const Row& e_row, uint64_t lo,
               uint64_t hi);
  void Record(const Fde& fde, uint64_t lo, uint64_t hi, std::string what,
              const Row& s_row, const Row& e_row);

  Module& module_;
  const SframeSection& sframe_;
  CheckReport& report_;
  const SourcePolicy eh_only_ = SourcePolicy::Of({Source::kEhFrame});
  const uint64_t max_pcs_per_function_;
  const uint64_t max_steps_;
  uint64_t steps_ = 0;  // row lookups and comparisons so far
};

void Checker::CheckFde(const Fde& fde) {
  absl::StatusOr<std::vector<Fre>> fres = sframe_.GetFres(fde);
  if (!fres.ok()) {
    report_.errors.push_back(fres.status().ToString());
    return;
  }
  // PCINC: one pass; PCMASK: the same FREs again in every block.
  const uint64_t block =
      fde.pc_type == kPcTypeMask ? fde.rep_size : fde.func_size;
  if (block == 0) return;
  // The function's code as far as the file has it, and no further than
  // the per-function limit.
  const uint64_t in_file = module_.ImageBytesAt(fde.func_start).size();
  const uint64_t size = std::min<uint64_t>(
      {fde.func_size, in_file, max_pcs_per_function_});
  const uint64_t end = fde.func_start + size;
  if (size < fde.func_size) {
    report_.errors.push_back(absl::StrFormat(
        "FDE %u (function 0x%x): claims 0x%x bytes, of which the file has "
        "0x%x (at most 0x%x are checked per function); checked 0x%x-0x%x "
        "only",
        fde.index, fde.func_start, fde.func_size, in_file,
        max_pcs_per_function_, fde.func_start, end));
  }
  // Only FREs that start inside a block cover any of it: with those alone,
  // the loops below take at most one step per PC, however many FREs the
  // FDE lists (a PCMASK FDE repeats them in every block).
  std::vector<size_t> starting;
  for (size_t j = 0; j < fres->size(); ++j) {
    if ((*fres)[j].start < block) starting.push_back(j);
  }
  for (uint64_t base = fde.func_start; base < end; base += block) {
    const uint64_t block_end = std::min(base + block, end);
    for (size_t k = 0; k < starting.size(); ++k) {
      if (exhausted()) return;
      const size_t j = starting[k];
      const uint64_t lo = base + (*fres)[j].start;
      const uint64_t hi =
          k + 1 < starting.size()
              ? std::min(base + (*fres)[starting[k + 1]].start, block_end)
              : block_end;
      ++steps_;
      if (lo < hi) CheckRange(fde, (*fres)[j], lo, hi);
    }
  }
}

void Checker::CheckRange(const Fde& fde, const Fre& fre, uint64_t lo,
                         uint64_t hi) {
  absl::StatusOr<Row> s_row = sframe_.RowFor(FreMatch{fde, fre, lo, hi});
  if (!s_row.ok()) {
    report_.errors.push_back(
        absl::StrFormat("0x%x: %s", lo, s_row.status().ToString()));
    return;
  }
  for (uint64_t pc = lo; pc < hi && !exhausted();) {
    ++steps_;
    absl::StatusOr<ModuleRow> e_row =
        module_.FindRow(arch::FrameAddress::InstructionPointer(pc), eh_only_);
    if (!e_row.ok()) {
      report_.pcs_sframe_only += hi - pc;
      return;
    }
    const uint64_t next = std::clamp(e_row->row.pc_hi, pc + 1, hi);
    Compare(fde, *s_row, e_row->row, pc, next);
    report_.pcs_compared += next - pc;
    pc = next;
  }
}

void Checker::Compare(const Fde& fde, const Row& s_row, const Row& e_row,
                      uint64_t lo, uint64_t hi) {
  const bool per_pc = s_row.cfa.kind == CfaRule::Kind::kExpression ||
                      e_row.cfa.kind == CfaRule::Kind::kExpression;
  const uint64_t step_hi =
      per_pc ? std::min(hi, lo + kMaxPcsPerExpressionRange) : lo + 1;
  for (uint64_t pc = lo; pc < step_hi && !exhausted(); ++pc) {
    ++steps_;
    const arch::Arch a = module_.arch();
    std::string what =
        Differences(Evaluate(s_row, a, pc), Evaluate(e_row, a, pc));
    const uint64_t to = per_pc ? pc + 1 : hi;
    if (!what.empty()) Record(fde, pc, to, std::move(what), s_row, e_row);
  }
}

void Checker::Record(const Fde& fde, uint64_t lo, uint64_t hi, std::string what,
                     const Row& s_row, const Row& e_row) {
  const arch::Arch a = module_.arch();
  Disagreement d{lo,
                 hi,
                 fde.func_start,
                 std::move(what),
                 RowText(s_row, a),
                 RowText(e_row, a)};
  if (!report_.disagreements.empty()) {
    Disagreement& last = report_.disagreements.back();
    if (last.pc_hi == d.pc_lo && last.what == d.what &&
        last.sframe_rule == d.sframe_rule &&
        last.eh_frame_rule == d.eh_frame_rule) {
      last.pc_hi = d.pc_hi;
      return;
    }
  }
  report_.disagreements.push_back(std::move(d));
}

}  // namespace

absl::StatusOr<CheckReport> CheckSframe(Module& module,
                                        const CheckLimits& limits) {
  const SframeSection* sframe = module.sframe();
  if (sframe == nullptr) {
    return absl::FailedPreconditionError(absl::StrCat(
        module.name(),
        ": no usable .sframe section: ", module.sframe_status().message()));
  }
  if (!module.has_eh_frame()) {
    return absl::FailedPreconditionError(
        absl::StrCat(module.name(), ": no .eh_frame section to compare with"));
  }
  CheckReport report;
  report.file = module.name();
  report.sframe_version = sframe->header().version;
  Checker checker(module, *sframe, limits, report);
  for (uint32_t i = 0; i < sframe->num_fdes(); ++i) {
    if (checker.exhausted()) {
      report.errors.push_back(absl::StrFormat(
          "stopped after %u row lookups and comparisons (the limit for a "
          "file of %u bytes): FDEs %u-%u were not checked",
          checker.max_steps(), module.image_size(), i,
          sframe->num_fdes() - 1));
      break;
    }
    absl::StatusOr<Fde> fde = sframe->GetFde(i);
    if (!fde.ok()) {
      report.errors.push_back(fde.status().ToString());
      continue;
    }
    ++report.fdes;
    checker.CheckFde(*fde);
  }
  return report;
}

std::string FormatCheckReport(const CheckReport& r) {
  std::string out = absl::StrFormat(
      "%s: .sframe v%d, %u functions; %u PCs compared with .eh_frame (%u only "
      "in .sframe); %u disagreements, %u errors\n",
      r.file, r.sframe_version, r.fdes, r.pcs_compared, r.pcs_sframe_only,
      r.disagreements.size(), r.errors.size());
  for (const Disagreement& d : r.disagreements) {
    absl::StrAppendFormat(
        &out, "0x%x-0x%x in 0x%x: %s differ: .sframe %s | .eh_frame %s\n",
        d.pc_lo, d.pc_hi, d.function, d.what, d.sframe_rule, d.eh_frame_rule);
  }
  for (const std::string& e : r.errors)
    absl::StrAppend(&out, "error: ", e, "\n");
  return out;
}

}  // namespace unwindd::unwinder::sframe

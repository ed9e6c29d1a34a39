#include "testdata/harness/binutils_facts.h"

#include <map>
#include <mutex>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "testdata/harness/subprocess.h"

namespace unwindd::harness {
namespace {

constexpr absl::Duration kTimeout = absl::Seconds(60);

// readelf exits 1 after dumping libc's frames, silently: what it printed is
// what counts.
absl::StatusOr<std::string> Run(const std::vector<std::string>& argv) {
  absl::StatusOr<harness::ToolOutput> out = harness::RunTool(argv, kTimeout);
  if (!out.ok()) return out.status();
  if (out->exit_code != 0 && (argv[0] != "readelf" || out->stdout_text.empty())) {
    return absl::InternalError(absl::StrCat(absl::StrJoin(argv, " "), " exited with ",
                                            out->exit_code, ": ", out->stderr_text));
  }
  return out->stdout_text;
}

// What a tool printed for these arguments, run once per process.
absl::StatusOr<std::string> RunOnce(const std::vector<std::string>& argv) {
  static std::mutex mu;
  static std::map<std::vector<std::string>, absl::StatusOr<std::string>> cache;
  std::lock_guard<std::mutex> lock(mu);
  auto it = cache.find(argv);
  if (it == cache.end()) it = cache.emplace(argv, Run(argv)).first;
  return it->second;
}

struct Fde {
  std::string section;  // ".eh_frame" or ".debug_frame"
  uint64_t lo = 0, hi = 0;
};

// Every FDE range of `dso`, with its section, read once per file.
absl::StatusOr<std::vector<Fde>> Fdes(const std::string& dso) {
  static std::mutex mu;
  static std::map<std::string, std::vector<Fde>> cache;
  std::lock_guard<std::mutex> lock(mu);
  if (auto it = cache.find(dso); it != cache.end()) return it->second;
  absl::StatusOr<std::string> text = Run({"readelf", "--debug-dump=frames", dso});
  if (!text.ok()) return text.status();
  std::vector<Fde> out;
  std::string section;
  // "Contents of the .eh_frame section:", then
  // "00002540 ... FDE cie=0000252c pc=000000000003c04f..000000000003c059"
  for (absl::string_view line : absl::StrSplit(*text, '\n')) {
    if (absl::ConsumePrefix(&line, "Contents of the ")) {
      section = std::string(line.substr(0, line.find(' ')));
      continue;
    }
    const size_t pc = line.find(" pc=");
    if (!absl::StrContains(line, " FDE ") || pc == absl::string_view::npos) continue;
    std::vector<absl::string_view> range =
        absl::StrSplit(line.substr(pc + 4), absl::MaxSplits("..", 1));
    uint64_t lo, hi;
    if (range.size() == 2 && absl::SimpleHexAtoi(range[0], &lo) &&
        absl::SimpleHexAtoi(absl::StripAsciiWhitespace(range[1]), &hi)) {
      out.push_back({section, lo, hi});
    }
  }
  cache[dso] = out;
  return out;
}

// objdump -d over [lo, hi): (address, mnemonic and operands) per instruction.
absl::StatusOr<std::vector<std::pair<uint64_t, std::string>>> Disassemble(
    const std::string& dso, uint64_t lo, uint64_t hi) {
  absl::StatusOr<std::string> text =
      RunOnce({"objdump", "-d", "--no-show-raw-insn", absl::StrFormat("--start-address=0x%x", lo),
               absl::StrFormat("--stop-address=0x%x", hi), dso});
  if (!text.ok()) return text.status();
  std::vector<std::pair<uint64_t, std::string>> out;
  // "   3c057:\tsyscall"
  for (absl::string_view line : absl::StrSplit(*text, '\n')) {
    std::vector<absl::string_view> f = absl::StrSplit(line, absl::MaxSplits(":\t", 1));
    uint64_t addr;
    if (f.size() == 2 && absl::SimpleHexAtoi(absl::StripAsciiWhitespace(f[0]), &addr)) {
      out.emplace_back(addr, std::string(absl::StripAsciiWhitespace(f[1])));
    }
  }
  return out;
}

}  // namespace

absl::StatusOr<uint64_t> FileAddress(const std::string& dso, uint64_t offset) {
  absl::StatusOr<std::string> text = RunOnce({"readelf", "-lW", dso});
  if (!text.ok()) return text.status();
  // "  LOAD 0x026000 0x0000000000026000 0x0000000000026000 0x1550fc ..."
  for (absl::string_view line : absl::StrSplit(*text, '\n')) {
    std::vector<absl::string_view> f =
        absl::StrSplit(absl::StripAsciiWhitespace(line), ' ', absl::SkipWhitespace());
    uint64_t off, vaddr, filesz;
    if (f.size() >= 5 && f[0] == "LOAD" && absl::SimpleHexAtoi(f[1], &off) &&
        absl::SimpleHexAtoi(f[2], &vaddr) && absl::SimpleHexAtoi(f[4], &filesz) &&
        offset >= off && offset - off < filesz) {
      return offset - off + vaddr;
    }
  }
  return absl::NotFoundError(absl::StrFormat("%s: no PT_LOAD holds offset 0x%x", dso, offset));
}

absl::StatusOr<std::optional<std::pair<uint64_t, uint64_t>>> FdeCovering(
    const std::string& dso, uint64_t addr, absl::string_view section) {
  absl::StatusOr<std::vector<Fde>> fdes = Fdes(dso);
  if (!fdes.ok()) return fdes.status();
  for (const Fde& f : *fdes) {
    if (f.section == section && addr >= f.lo && addr < f.hi) {
      return std::optional(std::make_pair(f.lo, f.hi));
    }
  }
  return std::optional<std::pair<uint64_t, uint64_t>>();
}

namespace {

// The CFI row (readelf --debug-dump=frames-interp) in effect at `addr`:
// column name ("CFA", "rbx", "ra", ...) -> rule ("rsp+8", "c-16", "u"), and
// "LOC" -> where the row starts (hex). Empty when no FDE covers `addr`.
absl::StatusOr<std::map<std::string, std::string>> RowAt(const std::string& dso,
                                                          uint64_t addr) {
  absl::StatusOr<std::string> text = RunOnce({"readelf", "--debug-dump=frames-interp", dso});
  if (!text.ok()) return text.status();
  // An FDE line ("... FDE cie=... pc=LO..HI"), its column header ("LOC CFA
  // rbx ra"), then one row per location ("00000000001098e1 rsp+8 u").
  bool in_fde = false;
  std::vector<absl::string_view> columns;
  std::map<std::string, std::string> row;  // the last row at or before addr
  for (absl::string_view line : absl::StrSplit(*text, '\n')) {
    const size_t pc = line.find(" pc=");
    if (absl::StrContains(line, " FDE ") && pc != absl::string_view::npos) {
      if (in_fde) break;  // addr's FDE is over
      std::vector<absl::string_view> range =
          absl::StrSplit(line.substr(pc + 4), absl::MaxSplits("..", 1));
      uint64_t lo, hi;
      in_fde = range.size() == 2 && absl::SimpleHexAtoi(range[0], &lo) &&
               absl::SimpleHexAtoi(absl::StripAsciiWhitespace(range[1]), &hi) &&
               addr >= lo && addr < hi;
      continue;
    }
    if (!in_fde) continue;
    std::vector<absl::string_view> f =
        absl::StrSplit(absl::StripAsciiWhitespace(line), ' ', absl::SkipWhitespace());
    if (!f.empty() && f[0] == "LOC") {
      columns = f;
      continue;
    }
    uint64_t loc;
    if (f.empty() || !absl::SimpleHexAtoi(f[0], &loc) || loc > addr) continue;
    row.clear();
    row["LOC"] = std::string(f[0]);
    for (size_t i = 1; i < columns.size() && i < f.size(); ++i) {
      row[std::string(columns[i])] = std::string(f[i]);
    }
  }
  return row;
}

}  // namespace

absl::StatusOr<bool> ReturnAddressUndefinedAt(const std::string& dso, uint64_t addr) {
  absl::StatusOr<std::map<std::string, std::string>> row = RowAt(dso, addr);
  if (!row.ok()) return row.status();
  auto ra = row->find("ra");
  return ra != row->end() && ra->second == "u";
}

absl::StatusOr<std::vector<std::string>> SavedBelowSpAt(const std::string& dso,
                                                        uint64_t addr) {
  absl::StatusOr<std::map<std::string, std::string>> row = RowAt(dso, addr);
  if (!row.ok()) return row.status();
  std::vector<std::string> out;
  auto cfa = row->find("CFA");
  int64_t n;
  if (cfa == row->end() || !absl::StartsWith(cfa->second, "rsp+") ||
      !absl::SimpleAtoi(cfa->second.substr(4), &n)) {
    return out;
  }
  for (const auto& [reg, rule] : *row) {
    int64_t m;
    if (reg != "CFA" && reg != "ra" && reg != "LOC" && absl::StartsWith(rule, "c-") &&
        absl::SimpleAtoi(rule.substr(2), &m) && m > n) {
      out.push_back(reg);  // CFA - m = rsp + n - m < rsp
    }
  }
  return out;
}

absl::StatusOr<bool> AfterPop(const std::string& dso, uint64_t addr) {
  absl::StatusOr<std::optional<std::pair<uint64_t, uint64_t>>> fde = FdeCovering(dso, addr);
  if (!fde.ok()) return fde.status();
  absl::StatusOr<std::map<std::string, std::string>> row = RowAt(dso, addr);
  if (!row.ok()) return row.status();
  uint64_t loc;
  if (!fde->has_value() || !row->contains("LOC") || !absl::SimpleHexAtoi(row->at("LOC"), &loc)) {
    return false;
  }
  absl::StatusOr<std::vector<std::pair<uint64_t, std::string>>> insns =
      Disassemble(dso, (*fde)->first, addr + 1);
  if (!insns.ok()) return insns.status();
  if (insns->empty() || insns->back().first != addr) return false;
  // The row that names the slot below sp starts after the instruction that
  // popped it: look from the instruction before the row's start to addr.
  for (size_t i = insns->size() - 1; i-- > 0;) {
    const std::string& insn = (*insns)[i].second;
    if (absl::StartsWith(insn, "pop") || absl::StartsWith(insn, "leave")) return true;
    if ((*insns)[i].first < loc) break;
  }
  return false;
}

absl::StatusOr<bool> IsCallSite(const std::string& dso, uint64_t addr) {
  absl::StatusOr<std::optional<std::pair<uint64_t, uint64_t>>> fde = FdeCovering(dso, addr);
  if (!fde.ok()) return fde.status();
  if (!fde->has_value()) fde = FdeCovering(dso, addr, ".debug_frame");
  if (!fde.ok()) return fde.status();
  if (!fde->has_value()) return false;
  absl::StatusOr<std::vector<std::pair<uint64_t, std::string>>> insns =
      Disassemble(dso, (*fde)->first, addr + 1);
  if (!insns.ok()) return insns.status();
  if (insns->empty()) return false;
  return absl::StartsWith(insns->back().second, "call");
}

absl::StatusOr<bool> FollowsRtSigreturn(const std::string& dso, uint64_t addr) {
  if (addr < 9) return false;
  absl::StatusOr<std::vector<std::pair<uint64_t, std::string>>> insns =
      Disassemble(dso, addr - 9, addr);
  if (!insns.ok()) return insns.status();
  return insns->size() == 2 && (*insns)[0].first == addr - 9 &&
         absl::StartsWith((*insns)[0].second, "mov") &&
         absl::StrContains((*insns)[0].second, "$0xf,%rax") &&
         (*insns)[1].first == addr - 2 && (*insns)[1].second == "syscall";
}

}  // namespace unwindd::harness

#include "testdata/sframe/fixtures.h"

#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <unistd.h>

#include <fstream>
#include <sstream>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "arch/frame_address.h"
#include "testdata/harness/tools.h"
#include "unwinder/sframe/expr_arena.h"

namespace unwindd::sframe_fixtures {
namespace {

absl::StatusOr<std::string> ReadFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot read ", path));
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

bool Hex(absl::string_view s, uint64_t* out) {
  return absl::SimpleHexAtoi(s, out);
}

}  // namespace

const std::vector<SframeFixture>& SframeFixtures() {
  static const auto* const kFixtures = new std::vector<SframeFixture>{
      {"threads_c_sframe_v1_pie", 1, true, ""},
      {"threads_c_sframe_v2_nopie", 2, true, ""},
      {"threads_c_sframe_v2_pie", 2, true, "plt.got"},
      {"threads_c_sframe_v3_pie", 3, true, "plt.got"},
      {"realign_sframe_v3_nopie", 3, true, ""},
      {"signal_handler_sframe_v3_nopie", 3, true, ""},
      {"threads_c_sframe_v2_nopie_disagree", 2, true, "planted"},
      {"threads_c_sframe_v1_aarch64", 1, false, ""},
      {"threads_c_sframe_v2_aarch64", 2, false, ""},
      {"threads_c_sframe_v3_aarch64", 3, false, ""},
  };
  return *kFixtures;
}

std::string SframeFixturePath(absl::string_view name) {
  return harness::FixturePath(absl::StrCat("sframe/", name));
}

absl::StatusOr<GoldenSframe> ParseGolden(absl::string_view text) {
  GoldenSframe g;
  for (absl::string_view raw : absl::StrSplit(text, '\n')) {
    absl::string_view line = absl::StripAsciiWhitespace(raw);
    if (absl::ConsumePrefix(&line, "Version: SFRAME_VERSION_")) {
      if (!absl::SimpleAtoi(line, &g.version)) return absl::DataLossError(raw);
    } else if (absl::ConsumePrefix(&line, "Num FDEs: ")) {
      if (!absl::SimpleAtoi(line, &g.num_fdes)) return absl::DataLossError(raw);
    } else if (absl::ConsumePrefix(&line, "Num FREs: ")) {
      if (!absl::SimpleAtoi(line, &g.num_fres)) return absl::DataLossError(raw);
    } else if (absl::ConsumePrefix(&line, "func idx [")) {
      // func idx [3]: pc = 0x1050, size = 32 bytes[, pauth = B key][, attr =
      // "F"]
      GoldenFunction f;
      std::vector<absl::string_view> parts = absl::StrSplit(line, ", ");
      absl::string_view pc = parts[0].substr(parts[0].find("0x") + 2);
      absl::string_view size = parts.size() > 1 ? parts[1] : "";
      if (!Hex(pc, &f.pc) || !absl::ConsumePrefix(&size, "size = ") ||
          !absl::SimpleAtoi(size.substr(0, size.find(' ')), &f.size)) {
        return absl::DataLossError(absl::StrCat("bad function line: ", raw));
      }
      for (size_t i = 2; i < parts.size(); ++i) {
        if (absl::StartsWith(parts[i], "pauth = B")) f.pauth_key_b = true;
        absl::string_view a = parts[i];
        if (absl::ConsumePrefix(&a, "attr = \""))
          f.attrs = std::string(a.substr(0, a.find('"')));
      }
      g.functions.push_back(f);
    } else if (absl::StartsWith(line, "STARTPC")) {
      if (g.functions.empty())
        return absl::DataLossError("rows before a function");
      g.functions.back().pc_mask = absl::StartsWith(line, "STARTPC[m]");
    } else if (!g.functions.empty()) {
      // Rows start with the 16-digit STARTPC; anything else is not a row.
      std::vector<absl::string_view> cols =
          absl::StrSplit(line, ' ', absl::SkipWhitespace());
      GoldenRow r;
      if (cols.empty() || cols[0].size() != 16 || !Hex(cols[0], &r.pc))
        continue;
      if (cols.size() >= 3 && cols[1] == "RA" && cols[2] == "undefined") {
        r.ra_undefined = true;
      } else if (cols.size() == 4) {
        r.cfa = std::string(cols[1]);
        r.fp = std::string(cols[2]);
        r.ra = std::string(cols[3]);
      } else {
        return absl::DataLossError(absl::StrCat("bad row: ", raw));
      }
      g.functions.back().rows.push_back(r);
    }
  }
  if (g.version == 0)
    return absl::DataLossError("no SFrame version in the dump");
  return g;
}

absl::StatusOr<GoldenSframe> ReadGolden(absl::string_view fixture) {
  absl::StatusOr<std::string> text = ReadFile(
      SframeFixturePath(absl::StrCat("golden/", fixture, ".sframe.txt")));
  if (!text.ok()) return text.status();
  return ParseGolden(*text);
}

absl::StatusOr<Planted> ReadPlanted() {
  absl::StatusOr<std::string> text = ReadFile(SframeFixturePath(
      "golden/threads_c_sframe_v2_nopie_disagree.planted.txt"));
  if (!text.ok()) return text.status();
  std::vector<absl::string_view> f =
      absl::StrSplit(absl::StripAsciiWhitespace(*text), ' ');
  Planted p;
  if (f.size() != 4 || !Hex(f[0], &p.pc_lo) || !Hex(f[1], &p.pc_hi) ||
      !absl::SimpleAtoi(f[2], &p.old_offset) ||
      !absl::SimpleAtoi(f[3], &p.new_offset)) {
    return absl::DataLossError(absl::StrCat("bad planted file: ", *text));
  }
  return p;
}

std::optional<Section> FindSection(const std::string& file,
                                   absl::string_view name) {
  elf_version(EV_CURRENT);
  int fd = open(file.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  Elf* elf = elf_begin(fd, ELF_C_READ, nullptr);
  std::optional<Section> out;
  size_t shstrndx = 0;
  if (elf != nullptr && elf_getshdrstrndx(elf, &shstrndx) == 0) {
    for (Elf_Scn* scn = elf_nextscn(elf, nullptr); scn;
         scn = elf_nextscn(elf, scn)) {
      GElf_Shdr sh;
      if (gelf_getshdr(scn, &sh) == nullptr) continue;
      const char* n = elf_strptr(elf, shstrndx, sh.sh_name);
      if (n != nullptr && name == n)
        out = Section{sh.sh_addr, sh.sh_size, sh.sh_offset};
    }
  }
  if (elf != nullptr) elf_end(elf);
  close(fd);
  return out;
}

namespace {

std::string Basename(absl::string_view path) {
  return std::string(path.substr(path.rfind('/') + 1));
}

// Calls `check(tid, i, frame, callee, callee_at)` for every frame i >= 1
// whose callee (frame i - 1) is in `fixture`; `callee_at` is the callee's
// address in the file: an instruction pointer for frame 0 and a frame a
// signal interrupted, else a return address.
template <typename F>
void ForFramesFromFixture(const harness::UnwindOutput& out,
                          absl::string_view fixture, MethodCheck& result,
                          F check) {
  for (const auto& [tid, thread] : out.threads) {
    for (size_t i = 1; i < thread.frames.size(); ++i) {
      const harness::UnwindFrame& callee = thread.frames[i - 1];
      if (Basename(callee.module) != fixture) continue;
      uint64_t rel = 0;
      if (!harness::ParseHexPc(callee.rel_pc, &rel)) {
        result.failures.push_back(
            absl::StrFormat("tid %d frame %d: no rel_pc", tid, i - 1));
        continue;
      }
      const bool ip = i == 1 || callee.method == "signal";
      check(tid, i, thread.frames[i], callee,
            ip ? arch::FrameAddress::InstructionPointer(rel)
               : arch::FrameAddress::ReturnAddress(rel));
    }
  }
}

}  // namespace

MethodCheck CheckSframeMethods(const harness::UnwindOutput& out,
                               absl::string_view fixture,
                               const GoldenSframe& golden) {
  MethodCheck r;
  for (const auto& [tid, thread] : out.threads) {
    for (size_t i = 1; i < thread.frames.size(); ++i) {
      if (thread.frames[i].method != "sframe") continue;
      ++r.frames;
      if (Basename(thread.frames[i - 1].module) != fixture) {
        r.failures.push_back(absl::StrFormat("tid %d frame %d: sframe from %s",
                                             tid, i,
                                             thread.frames[i - 1].module));
      }
    }
  }
  ForFramesFromFixture(
      out, fixture, r,
      [&](int64_t tid, size_t i, const harness::UnwindFrame& frame,
          const harness::UnwindFrame& callee, arch::FrameAddress at) {
        const uint64_t lookup = at.LookupAddress();
        for (const GoldenFunction& f : golden.functions) {
          if (lookup >= f.pc && lookup - f.pc < f.size &&
              frame.method != "sframe") {
            r.failures.push_back(absl::StrFormat(
                "tid %d frame %d: %s from %s, which .sframe covers", tid, i,
                frame.method, callee.rel_pc));
          }
        }
      });
  return r;
}

MethodCheck CheckFramePointerMethods(const harness::UnwindOutput& out,
                                     absl::string_view fixture,
                                     unwinder::Module& module,
                                     const harness::SymbolNames& names) {
  MethodCheck r;
  for (const auto& [tid, thread] : out.threads) {
    for (const harness::UnwindFrame& f : thread.frames)
      r.frames += f.method == "frame_pointer";
  }
  const unwinder::SourcePolicy eh_only =
      unwinder::SourcePolicy::Of({unwinder::Source::kEhFrame});
  ForFramesFromFixture(
      out, fixture, r,
      [&](int64_t tid, size_t i, const harness::UnwindFrame& frame,
          const harness::UnwindFrame& callee, arch::FrameAddress at) {
        absl::StatusOr<unwinder::ModuleRow> cfi = module.FindRow(at, eh_only);
        if (!cfi.ok()) {
          r.failures.push_back(absl::StrFormat("tid %d frame %d: %s", tid,
                                               i - 1, cfi.status().ToString()));
          return;
        }
        const unwinder::Row& row = cfi->row;
        using Kind = unwinder::RegisterRule::Kind;
        const bool classic =
            row.cfa.kind == unwinder::CfaRule::Kind::kRegOffset &&
            row.cfa.reg == 6 && row.cfa.offset == 16 &&
            row.regs[6].kind == Kind::kOffset && row.regs[6].value == -16;
        std::optional<unwinder::sframe::BregRule> saved =
            row.regs[6].kind == Kind::kExpression
                ? unwinder::sframe::ParseBreg(row.regs[6].expr)
                : std::nullopt;
        const bool drap = saved.has_value() && saved->reg == 6 &&
                          saved->offset == 0 && !saved->deref;
        auto name = names.find(callee.pc);
        const bool cold =
            name != names.end() && absl::StrContains(name->second, ".cold");
        const bool is_fp = frame.method == "frame_pointer";
        if ((classic || drap) && !cold && !is_fp) {
          r.failures.push_back(absl::StrFormat(
              "tid %d frame %d: %s from %s, where the frame record is in place",
              tid, i, frame.method, callee.rel_pc));
        } else if (!classic && !drap && is_fp) {
          r.failures.push_back(
              absl::StrFormat("tid %d frame %d: frame_pointer from %s, which "
                              "keeps no frame record",
                              tid, i, callee.rel_pc));
        }
      });
  return r;
}

absl::StatusOr<LiveComparison> CompareLiveWithEuStack(pid_t pid,
                                                      absl::string_view sources) {
  LiveComparison out;
  absl::StatusOr<harness::UnwindOutput> ours = harness::UnwindFrames(
      absl::StrCat(harness::RunfilesRoot(), "/service/unwind"), pid,
      {absl::StrCat("--sources=", sources)});
  if (!ours.ok()) return ours.status();
  out.ours = *std::move(ours);
  absl::StatusOr<harness::ThreadFrames> eu = harness::EuStackFrames(pid, &out.names);
  if (!eu.ok()) return eu.status();
  out.vs_eu_stack = harness::CompareThreadFrames("unwind", out.ours.Pcs(), "eu-stack",
                                                 *eu, &out.names);
  return out;
}

}  // namespace unwindd::sframe_fixtures

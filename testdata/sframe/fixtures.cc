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
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "testdata/harness/tools.h"

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
      // func idx [3]: pc = 0x1050, size = 32 bytes[, pauth = B key][, attr = "F"]
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
        if (absl::ConsumePrefix(&a, "attr = \"")) f.attrs = std::string(a.substr(0, a.find('"')));
      }
      g.functions.push_back(f);
    } else if (absl::StartsWith(line, "STARTPC")) {
      if (g.functions.empty()) return absl::DataLossError("rows before a function");
      g.functions.back().pc_mask = absl::StartsWith(line, "STARTPC[m]");
    } else if (!g.functions.empty()) {
      // Rows start with the 16-digit STARTPC; anything else is not a row.
      std::vector<absl::string_view> cols =
          absl::StrSplit(line, ' ', absl::SkipWhitespace());
      GoldenRow r;
      if (cols.empty() || cols[0].size() != 16 || !Hex(cols[0], &r.pc)) continue;
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
  if (g.version == 0) return absl::DataLossError("no SFrame version in the dump");
  return g;
}

absl::StatusOr<GoldenSframe> ReadGolden(absl::string_view fixture) {
  absl::StatusOr<std::string> text =
      ReadFile(SframeFixturePath(absl::StrCat("golden/", fixture, ".sframe.txt")));
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
      !absl::SimpleAtoi(f[2], &p.old_offset) || !absl::SimpleAtoi(f[3], &p.new_offset)) {
    return absl::DataLossError(absl::StrCat("bad planted file: ", *text));
  }
  return p;
}

std::optional<Section> FindSection(const std::string& file, absl::string_view name) {
  elf_version(EV_CURRENT);
  int fd = open(file.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  Elf* elf = elf_begin(fd, ELF_C_READ, nullptr);
  std::optional<Section> out;
  size_t shstrndx = 0;
  if (elf != nullptr && elf_getshdrstrndx(elf, &shstrndx) == 0) {
    for (Elf_Scn* scn = elf_nextscn(elf, nullptr); scn; scn = elf_nextscn(elf, scn)) {
      GElf_Shdr sh;
      if (gelf_getshdr(scn, &sh) == nullptr) continue;
      const char* n = elf_strptr(elf, shstrndx, sh.sh_name);
      if (n != nullptr && name == n) out = Section{sh.sh_addr, sh.sh_size, sh.sh_offset};
    }
  }
  if (elf != nullptr) elf_end(elf);
  close(fd);
  return out;
}

}  // namespace unwindd::sframe_fixtures

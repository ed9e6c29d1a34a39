// Our pprof output read by a real consumer: `go tool pprof` (Debian's
// golang-go, which vendors github.com/google/pprof). Stacks are made of
// functions of two real fixture binaries (a PIE and a non-PIE executable),
// mapped at addresses the way the kernel would map them, plus a module
// whose file is missing, the [vdso], kernel frames and an address in no
// module. Then:
// - `go tool pprof -raw -symbolize=none` must print exactly those samples
//   (values, labels, leaf-first addresses, each in its mapping), and those
//   mappings (start/limit/offset, file, build-id, no symbol flags);
// - `go tool pprof -raw -symbolize=local:demangle=none` must report, for
//   each fixture address (a function's entry), the source line libdw finds
//   there, and for C functions their name: pprof opens the file at the
//   mapping's path and maps the address into the ELF's own address space,
//   which lands on that line only if the mapping says where the file was
//   loaded. (Go's cmd/pprof symbolizes with its own objTool, not binutils:
//   DWARF only, names only from DW_AT_name, no inline frames, no build-id
//   check, and it ignores file_offset; the build-ids are checked as text.)
// The expected values come from the ELF files (libelf, libdw), not from
// Profile.
//
// Skips when `go` is not installed. `go tool pprof` gets a temporary HOME,
// PPROF_TMPDIR, PPROF_BINARY_PATH, GOCACHE and GOPATH, GOTOOLCHAIN=local
// and GOFLAGS= so that it neither downloads anything nor writes outside
// the test's directory.
#include <elfutils/libdw.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "absl/time/time.h"
#include "gtest/gtest.h"
#include "service/cli/profile/pprof.h"
#include "service/cli/profile/profile.h"
#include "testdata/harness/subprocess.h"
#include "testdata/harness/tools.h"

namespace unwindd::profile {
namespace {

constexpr uint64_t kPage = 0x1000;

std::optional<std::string> FindInPath(const std::string& name) {
  const char* path = std::getenv("PATH");
  if (path == nullptr) return std::nullopt;
  for (absl::string_view dir : absl::StrSplit(path, ':', absl::SkipEmpty())) {
    std::string candidate = absl::StrCat(dir, "/", name);
    if (access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return std::nullopt;
}

struct Function {
  std::string name;
  uint64_t vaddr = 0;  // in the ELF file's address space
  uint64_t size = 0;
};

// What the test needs from a fixture, read with libelf.
struct ElfFacts {
  bool pie = false;  // ET_DYN
  std::string build_id;
  uint64_t seg_vaddr = 0, seg_offset = 0, seg_memsz = 0;  // the PF_X PT_LOAD
  std::vector<Function> functions;  // unique-address FUNCs in that segment
};

absl::StatusOr<ElfFacts> ReadElf(const std::string& path) {
  elf_version(EV_CURRENT);
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return absl::NotFoundError("cannot open " + path);
  Elf* elf = elf_begin(fd, ELF_C_READ, nullptr);
  ElfFacts facts;
  absl::Status status = absl::OkStatus();
  GElf_Ehdr eh;
  size_t nphdr = 0;
  if (elf == nullptr || gelf_getehdr(elf, &eh) == nullptr ||
      elf_getphdrnum(elf, &nphdr) != 0) {
    status = absl::DataLossError("not an ELF file: " + path);
  } else {
    facts.pie = eh.e_type == ET_DYN;
    for (size_t i = 0; i < nphdr; ++i) {
      GElf_Phdr ph;
      if (gelf_getphdr(elf, i, &ph) != nullptr && ph.p_type == PT_LOAD &&
          (ph.p_flags & PF_X)) {
        facts.seg_vaddr = ph.p_vaddr;
        facts.seg_offset = ph.p_offset;
        facts.seg_memsz = ph.p_memsz;
      }
    }
    std::map<uint64_t, int> at_address;  // FUNC symbols per address
    std::set<std::string> names;
    std::vector<Function> all;
    size_t shstrndx = 0;
    elf_getshdrstrndx(elf, &shstrndx);
    for (Elf_Scn* scn = elf_nextscn(elf, nullptr); scn != nullptr;
         scn = elf_nextscn(elf, scn)) {
      GElf_Shdr sh;
      Elf_Data* data = elf_getdata(scn, nullptr);
      if (gelf_getshdr(scn, &sh) == nullptr || data == nullptr) continue;
      if (sh.sh_type == SHT_NOTE) {
        size_t pos = 0, name_off = 0, desc_off = 0;
        GElf_Nhdr nh;
        while ((pos = gelf_getnote(data, pos, &nh, &name_off, &desc_off)) > 0) {
          if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 &&
              memcmp(static_cast<char*>(data->d_buf) + name_off, "GNU", 4) ==
                  0) {
            const auto* d =
                static_cast<const unsigned char*>(data->d_buf) + desc_off;
            for (size_t b = 0; b < nh.n_descsz; ++b) {
              absl::StrAppendFormat(&facts.build_id, "%02x", d[b]);
            }
          }
        }
      } else if (sh.sh_type == SHT_SYMTAB && sh.sh_entsize != 0) {
        for (size_t i = 0; i < sh.sh_size / sh.sh_entsize; ++i) {
          GElf_Sym sym;
          if (gelf_getsym(data, static_cast<int>(i), &sym) == nullptr ||
              GELF_ST_TYPE(sym.st_info) != STT_FUNC || sym.st_value == 0) {
            continue;
          }
          ++at_address[sym.st_value];
          const char* name = elf_strptr(elf, sh.sh_link, sym.st_name);
          if (name == nullptr) continue;
          names.insert(name);
          // Only plain .text: main sits in .text.startup, split-off parts
          // in .text.unlikely, and their DWARF has DW_AT_ranges.
          GElf_Shdr in;
          Elf_Scn* home = elf_getscn(elf, sym.st_shndx);
          const char* section =
              home != nullptr && gelf_getshdr(home, &in) != nullptr
                  ? elf_strptr(elf, shstrndx, in.sh_name)
                  : nullptr;
          if (sym.st_size >= 2 && section != nullptr &&
              std::string(section) == ".text") {
            all.push_back({name, sym.st_value, sym.st_size});
          }
        }
      }
    }
    for (const Function& f : all) {
      // Aliases (D1/D2 destructors) and functions with split-off parts
      // (".cold") would make the expected name ambiguous.
      if (at_address[f.vaddr] != 1 || absl::StrContains(f.name, ".") ||
          names.contains(f.name + ".cold") || f.vaddr < facts.seg_vaddr ||
          f.vaddr + f.size > facts.seg_vaddr + facts.seg_memsz) {
        continue;
      }
      facts.functions.push_back(f);
    }
  }
  if (elf != nullptr) elf_end(elf);
  close(fd);
  if (!status.ok()) return status;
  if (facts.build_id.empty() || facts.seg_memsz == 0) {
    return absl::DataLossError(path + ": no build-id or no executable PT_LOAD");
  }
  return facts;
}

// The three largest functions, main aside: Go 1.19's symbolizer finds no
// line at all for main in these fixtures (gcc emits main in .text.startup,
// and the compile unit then has DW_AT_ranges).
std::vector<Function> Pick(const ElfFacts& facts) {
  std::vector<Function> fns;
  for (const Function& f : facts.functions) {
    if (f.name != "main") fns.push_back(f);
  }
  std::sort(fns.begin(), fns.end(), [](const Function& a, const Function& b) {
    return a.size > b.size || (a.size == b.size && a.vaddr < b.vaddr);
  });
  if (fns.size() > 3) fns.resize(3);
  return fns;
}

absl::string_view BaseName(absl::string_view path) {
  const size_t slash = path.rfind('/');
  return slash == absl::string_view::npos ? path : path.substr(slash + 1);
}

// "file.c:LINE" of the DWARF line-table row holding `vaddr` (an address in
// the ELF's own address space), read with libdw: what a symbolizer must
// report for it.
absl::StatusOr<std::string> SourceLine(const std::string& path,
                                       uint64_t vaddr) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return absl::NotFoundError("cannot open " + path);
  Dwarf* dw = dwarf_begin(fd, DWARF_C_READ);
  absl::StatusOr<std::string> out =
      absl::NotFoundError(absl::StrFormat("%s: no line for 0x%x", path, vaddr));
  Dwarf_Die cu;
  if (dw != nullptr && dwarf_addrdie(dw, vaddr, &cu) != nullptr) {
    Dwarf_Line* line = dwarf_getsrc_die(&cu, vaddr);
    int lineno = 0;
    const char* src =
        line != nullptr ? dwarf_linesrc(line, nullptr, nullptr) : nullptr;
    if (src != nullptr && dwarf_lineno(line, &lineno) == 0) {
      out = absl::StrCat(BaseName(src), ":", lineno);
    }
  }
  if (dw != nullptr) dwarf_end(dw);
  close(fd);
  return out;
}

// A fixture's executable PT_LOAD mapped the way the kernel maps it (and
// /proc/PID/maps and perf's MMAP2 show it) in a process that loaded the
// file at `base` (0 for a non-PIE executable): from the segment's page, at
// the file offset of that page. go tool pprof's own symbolizer (Go's
// cmd/pprof objTool, which it uses instead of binutils) relies on exactly
// this: it takes memory_start minus the PF_X segment's vaddr as the load
// bias and ignores file_offset.
struct Mapped {
  std::string path;
  ElfFacts facts;
  std::vector<Function> picks;
  uint64_t base = 0;
  Module module;

  uint64_t Address(const Function& f) const { return base + f.vaddr; }
};

absl::StatusOr<Mapped> MapFixture(const std::string& name, uint64_t pie_base) {
  Mapped m;
  m.path = harness::FixturePath(name);
  absl::StatusOr<ElfFacts> facts = ReadElf(m.path);
  if (!facts.ok()) return facts.status();
  m.facts = *facts;
  m.picks = Pick(m.facts);
  if (m.picks.size() < 3) {
    return absl::NotFoundError(name + ": fewer than 3 usable functions");
  }
  m.base = m.facts.pie ? pie_base : 0;
  const uint64_t seg_end = m.facts.seg_vaddr + m.facts.seg_memsz;
  m.module = {.path = m.path,
              .build_id = m.facts.build_id,
              .start = m.base + (m.facts.seg_vaddr & ~(kPage - 1)),
              .limit = m.base + ((seg_end + kPage - 1) & ~(kPage - 1)),
              .file_offset = m.facts.seg_offset & ~(kPage - 1),
              .load_bias = m.base};
  return m;
}

// `go tool pprof ARGS...` in a sealed environment.
absl::StatusOr<std::string> GoToolPprof(const std::string& go,
                                        const std::string& tmp,
                                        const std::vector<std::string>& args) {
  std::vector<std::string> argv = {
      "env",
      absl::StrCat("HOME=", tmp),
      absl::StrCat("PPROF_TMPDIR=", tmp),
      absl::StrCat("PPROF_BINARY_PATH=", tmp, "/binaries"),
      absl::StrCat("GOCACHE=", tmp, "/gocache"),
      absl::StrCat("GOPATH=", tmp, "/gopath"),
      "GOTOOLCHAIN=local",
      "GOFLAGS=",
      "GOPROXY=off",
      go,
      "tool",
      "pprof"};
  argv.insert(argv.end(), args.begin(), args.end());
  absl::StatusOr<harness::ToolOutput> out =
      harness::RunTool(argv, absl::Seconds(120));
  if (!out.ok()) return out.status();
  if (out->exit_code != 0) {
    return absl::InternalError(absl::StrCat(
        "go tool pprof exited with ", out->exit_code, ": ", out->stderr_text));
  }
  return out->stdout_text;
}

// `-raw` output: profile.Profile.String() in pprof's profile/profile.go.
struct RawProfile {
  std::vector<std::string> header;  // lines before "Samples:"
  std::string sample_types;         // the line after "Samples:"
  struct Sample {
    std::vector<int64_t> values;
    std::vector<uint64_t> locations;
    std::vector<std::string> labels;  // label lines, trimmed
  };
  std::vector<Sample> samples;
  struct Location {
    uint64_t address = 0;
    uint64_t mapping = 0;  // 0: none
    // One "FUNCTION BASENAME:LINE" per line of the location (FUNCTION may
    // be empty), innermost first; none when not symbolized.
    std::vector<std::string> lines;
  };
  std::map<uint64_t, Location> locations;
  struct Mapping {
    std::string range;  // "0xSTART/0xLIMIT/0xOFFSET"
    std::string file, build_id, bits;
  };
  std::map<uint64_t, Mapping> mappings;
};

uint64_t ParseU64(absl::string_view s, int base = 10) {
  uint64_t v = 0;
  if (base == 16) {
    s = absl::StripPrefix(s, "0x");
    EXPECT_TRUE(absl::SimpleHexAtoi(s, &v)) << s;
  } else {
    EXPECT_TRUE(absl::SimpleAtoi(s, &v)) << s;
  }
  return v;
}

RawProfile ParseRaw(const std::string& text) {
  RawProfile raw;
  enum {
    kHeader,
    kSampleTypes,
    kSamples,
    kLocations,
    kMappings
  } part = kHeader;
  uint64_t last_location = 0;
  for (absl::string_view line : absl::StrSplit(text, '\n', absl::SkipEmpty())) {
    if (line == "Samples:") {
      part = kSampleTypes;
      continue;
    }
    if (line == "Locations") {
      part = kLocations;
      continue;
    }
    if (line == "Mappings") {
      part = kMappings;
      continue;
    }
    switch (part) {
      case kHeader:
        raw.header.emplace_back(line);
        break;
      case kSampleTypes:
        raw.sample_types = std::string(line);
        part = kSamples;
        break;
      case kSamples: {
        // "          3    3000000: 1 2 3 " or a label line (16 spaces).
        std::pair<absl::string_view, absl::string_view> vl =
            absl::StrSplit(line, absl::MaxSplits(':', 1));
        bool numbers = !vl.second.empty() || absl::EndsWith(line, ":");
        for (char c : vl.first) numbers &= (c == ' ' || absl::ascii_isdigit(c));
        if (numbers) {
          RawProfile::Sample s;
          for (absl::string_view v :
               absl::StrSplit(vl.first, ' ', absl::SkipEmpty())) {
            s.values.push_back(static_cast<int64_t>(ParseU64(v)));
          }
          for (absl::string_view id :
               absl::StrSplit(vl.second, ' ', absl::SkipEmpty())) {
            s.locations.push_back(ParseU64(id));
          }
          raw.samples.push_back(std::move(s));
        } else if (!raw.samples.empty()) {
          raw.samples.back().labels.emplace_back(
              absl::StripAsciiWhitespace(line));
        }
        break;
      }
      case kLocations: {
        // "     1: 0x1234 M=1 FN FILE:LINE s=N" (FN may be empty, leaving
        // two spaces; "M=1 " is absent without a mapping), then 13 spaces
        // and "FN FILE:LINE s=N" for each further line of the location.
        absl::string_view rest = line;
        const std::vector<absl::string_view> t =
            absl::StrSplit(line, ' ', absl::SkipEmpty());
        if (t.size() >= 2 && absl::EndsWith(t[0], ":") &&
            absl::StartsWith(t[1], "0x")) {
          last_location = ParseU64(absl::StripSuffix(t[0], ":"));
          RawProfile::Location& loc = raw.locations[last_location];
          loc.address = ParseU64(t[1], 16);
          rest = rest.substr(rest.find(t[1]) + t[1].size() + 1);
          if (absl::StartsWith(rest, "M=")) {
            const size_t space = rest.find(' ');
            loc.mapping = ParseU64(rest.substr(2, space - 2));
            rest =
                space == absl::string_view::npos ? "" : rest.substr(space + 1);
          }
        } else {
          rest = absl::StripPrefix(rest, "             ");
        }
        if (rest.empty()) break;
        const std::vector<absl::string_view> fields = absl::StrSplit(rest, ' ');
        if (fields.size() < 2) {
          ADD_FAILURE() << "location line: " << line;
          break;
        }
        raw.locations[last_location].lines.push_back(
            absl::StrCat(fields[0], " ", BaseName(fields[1])));
        break;
      }
      case kMappings: {
        // "1: 0xSTART/0xLIMIT/0xOFFSET FILE BUILDID BITS" (empty fields
        // leave two spaces).
        std::vector<std::string> t = absl::StrSplit(line, ' ');
        if (t.size() < 4) {
          ADD_FAILURE() << "mapping line: " << line;
          break;
        }
        raw.mappings[ParseU64(absl::StripSuffix(t[0], ":"))] = {
            t[1], t[2], t[3], t.size() > 4 ? t[4] : ""};
        break;
      }
    }
  }
  return raw;
}

std::string MappingText(const std::string& file, const std::string& build_id,
                        uint64_t start, uint64_t limit, uint64_t offset) {
  return absl::StrFormat("%s %s 0x%x/0x%x/0x%x", file, build_id, start, limit,
                         offset);
}

// One sample as text, so that a mismatch prints as a readable diff:
// "3 3000000 | 0x... FILE BUILDID 0xS/0xL/0xO ; ... | comm:[demo] | ...".
std::string SampleText(const std::vector<int64_t>& values,
                       const std::vector<std::string>& frames,
                       const std::vector<std::string>& labels) {
  return absl::StrCat(absl::StrJoin(values, " "), " | ",
                      absl::StrJoin(frames, " ; "), " | ",
                      absl::StrJoin(labels, " | "));
}

class PprofGoToolTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::optional<std::string> go = FindInPath("go");
    if (!go) {
      GTEST_SKIP() << "`go` is not on PATH: install Debian's golang-go "
                      "(scripts/requirements.txt) to run go tool pprof";
    }
    go_ = *go;
    const char* tmp = std::getenv("TEST_TMPDIR");
    ASSERT_NE(tmp, nullptr) << "run under bazel test";
    tmp_ = tmp;
  }

  std::string go_, tmp_;
};

TEST_F(PprofGoToolTest, PrintsOurStacksAndSymbolizesThem) {
  absl::StatusOr<Mapped> pie = MapFixture("demo_O2_nofp_pie", 0x555555554000);
  absl::StatusOr<Mapped> exec = MapFixture("threads_c_O2_fp_nopie", 0);
  ASSERT_TRUE(pie.ok()) << pie.status();
  ASSERT_TRUE(exec.ok()) << exec.status();
  ASSERT_TRUE(pie->facts.pie);
  ASSERT_FALSE(exec->facts.pie);
  // A module whose file is gone, with a non-zero file offset: pprof must
  // keep every field of it as it is.
  const Module gone{.path = "/nonexistent/libgone.so.1",
                    .build_id = "00112233445566778899aabbccddeeff00112233",
                    .start = 0x7f0000000000,
                    .limit = 0x7f0000010000,
                    .file_offset = 0x3000,
                    .file_found = false};
  const Module vdso{
      .path = "[vdso]", .start = 0x7ffff7fc1000, .limit = 0x7ffff7fc3000};

  Profile profile;
  const int pie_m = profile.AddModule(pie->module).value_or(-1);
  const int exec_m = profile.AddModule(exec->module).value_or(-1);
  const int gone_m = profile.AddModule(gone).value_or(-1);
  const int vdso_m = profile.AddModule(vdso).value_or(-1);
  ASSERT_TRUE(pie_m >= 0 && exec_m >= 0 && gone_m >= 0 && vdso_m >= 0);
  const std::vector<Function>& pf = pie->picks;
  const std::vector<Function>& ef = exec->picks;
  auto at = [](const Mapped& m, const Function& f, bool ret, int module) {
    // A return address: the byte after a call. One past the function's
    // first byte keeps the lookup address (address - 1) at its entry.
    return Frame{m.Address(f) + (ret ? 1 : 0), ret, module};
  };
  // Leaf first.
  const Frame s1[] = {at(*pie, pf[2], false, pie_m),
                      at(*pie, pf[1], true, pie_m),
                      at(*pie, pf[0], true, pie_m)};
  const Frame s2[] = {at(*exec, ef[1], false, exec_m),
                      at(*exec, ef[2], true, exec_m),
                      at(*exec, ef[0], true, exec_m)};
  const Frame s2_kernel[] = {
      {.address = 0xffffffff81001234},
      {.address = 0xffffffff81005679, .return_address = true}};
  const Frame s3[] = {
      {.address = 0x7f0000001234, .module = gone_m},
      {.address = 0x7ffff7fc1801, .return_address = true, .module = vdso_m},
      at(*pie, pf[0], true, pie_m)};
  const Frame s4[] = {{.address = 0x1000}};
  const ThreadLabels demo1{.pid = 4242, .tid = 4242, .comm = "demo"};
  const ThreadLabels demo2{.pid = 4242, .tid = 4243, .comm = "demo"};
  const ThreadLabels threads{.pid = 77, .tid = 78, .comm = "threads_c"};
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(profile.AddSample(demo1, s1, {}, {1, 1000000}).ok());
  }
  ASSERT_TRUE(profile.AddSample(threads, s2, s2_kernel, {1, 1000000}).ok());
  ASSERT_TRUE(profile.AddSample(demo2, s3, {}, {2, 2000000}).ok());
  ASSERT_TRUE(profile.AddSample({.pid = 5}, s4, {}, {1, 5}).ok());

  absl::StatusOr<std::string> gz =
      WritePprof(profile, {.duration_nanos = 3000000000, .period = 1000000});
  ASSERT_TRUE(gz.ok()) << gz.status();
  const std::string file = tmp_ + "/profile.pb.gz";
  {
    std::ofstream out(file, std::ios::binary);
    out << *gz;
    ASSERT_TRUE(out.good()) << "cannot write " << file;
  }

  // The expected output, from the ELF facts and the frames above.
  const std::string pie_map =
      MappingText(pie->path, pie->facts.build_id, pie->module.start,
                  pie->module.limit, pie->module.file_offset);
  const std::string exec_map =
      MappingText(exec->path, exec->facts.build_id, exec->module.start,
                  exec->module.limit, exec->module.file_offset);
  const std::string gone_map =
      MappingText(gone.path, gone.build_id, gone.start, gone.limit, 0x3000);
  const std::string vdso_map =
      MappingText("[vdso]", "", vdso.start, vdso.limit, 0);
  // The implicit kernel mapping spans the kernel lookup addresses.
  const std::string kernel_map = MappingText(
      "[kernel.kallsyms]", "", 0xffffffff81001234, 0xffffffff81005679, 0);
  auto frame = [](uint64_t address, const std::string& mapping) {
    return absl::StrFormat("0x%x %s", address, mapping);
  };
  const std::vector<std::string> want_samples = {
      SampleText({3, 3000000},
                 {frame(pie->Address(pf[2]), pie_map),
                  frame(pie->Address(pf[1]), pie_map),
                  frame(pie->Address(pf[0]), pie_map)},
                 {"comm:[demo]", "pid:[4242] tid:[4242]"}),
      SampleText({1, 1000000},
                 {frame(0xffffffff81001234, kernel_map),
                  frame(0xffffffff81005678, kernel_map),
                  frame(exec->Address(ef[1]), exec_map),
                  frame(exec->Address(ef[2]), exec_map),
                  frame(exec->Address(ef[0]), exec_map)},
                 {"comm:[threads_c]", "pid:[77] tid:[78]"}),
      SampleText(
          {2, 2000000},
          {frame(0x7f0000001234, gone_map), frame(0x7ffff7fc1800, vdso_map),
           frame(pie->Address(pf[0]), pie_map)},
          {"comm:[demo]", "pid:[4242] tid:[4243]"}),
      SampleText({1, 5}, {"0x1000 (no mapping)"}, {"pid:[5]"}),
  };

  absl::StatusOr<std::string> text =
      GoToolPprof(go_, tmp_, {"-raw", "-symbolize=none", file});
  ASSERT_TRUE(text.ok()) << text.status();
  const RawProfile raw = ParseRaw(*text);
  EXPECT_EQ(raw.sample_types, "samples/count cpu/nanoseconds[dflt]") << *text;
  EXPECT_TRUE(std::find(raw.header.begin(), raw.header.end(),
                        "PeriodType: cpu nanoseconds") != raw.header.end())
      << *text;
  EXPECT_TRUE(std::find(raw.header.begin(), raw.header.end(),
                        "Period: 1000000") != raw.header.end())
      << *text;
  EXPECT_TRUE(std::find(raw.header.begin(), raw.header.end(),
                        "Comment: file not found: /nonexistent/libgone.so.1 "
                        "build-id 00112233445566778899aabbccddeeff00112233") !=
              raw.header.end())
      << *text;

  auto mapping_text = [&](uint64_t id) -> std::string {
    auto it = raw.mappings.find(id);
    if (it == raw.mappings.end()) return absl::StrCat("<no mapping ", id, ">");
    const RawProfile::Mapping& m = it->second;
    std::vector<std::string> r = absl::StrSplit(m.range, '/');
    if (r.size() != 3) return "<bad range " + m.range + ">";
    return MappingText(m.file, m.build_id, ParseU64(r[0], 16),
                       ParseU64(r[1], 16), ParseU64(r[2], 16));
  };
  std::vector<std::string> got_samples;
  for (const RawProfile::Sample& s : raw.samples) {
    std::vector<std::string> frames;
    for (uint64_t id : s.locations) {
      const RawProfile::Location& loc = raw.locations.at(id);
      frames.push_back(loc.mapping == 0
                           ? absl::StrFormat("0x%x (no mapping)", loc.address)
                           : frame(loc.address, mapping_text(loc.mapping)));
      EXPECT_TRUE(loc.lines.empty()) << "symbolized despite =none";
    }
    got_samples.push_back(SampleText(s.values, frames, s.labels));
  }
  EXPECT_EQ(got_samples, want_samples) << *text;
  // Exactly the five mappings the locations use, none claiming symbols.
  EXPECT_EQ(raw.mappings.size(), 5u) << *text;
  for (const auto& [id, m] : raw.mappings) EXPECT_EQ(m.bits, "") << id;

  // Local symbolization: pprof opens each fixture by its path, checks its
  // build-id, maps each address to the ELF's and names the function.
  absl::StatusOr<std::string> symbolized =
      GoToolPprof(go_, tmp_, {"-raw", "-symbolize=local:demangle=none", file});
  ASSERT_TRUE(symbolized.ok()) << symbolized.status();
  const RawProfile sym = ParseRaw(*symbolized);
  // Expected: the source line libdw finds at the function's entry, and
  // for C functions (not C++, whose out-of-line DIEs have no DW_AT_name
  // of their own, so Go finds none) the function's name.
  std::map<uint64_t, std::string> want_lines;
  for (const Mapped* m : {&*pie, &*exec}) {
    for (const Function& f : m->picks) {
      absl::StatusOr<std::string> src = SourceLine(m->path, f.vaddr);
      ASSERT_TRUE(src.ok()) << src.status();
      want_lines[m->Address(f)] =
          absl::StrCat(absl::StartsWith(f.name, "_Z") ? "" : f.name, " ", *src);
    }
  }
  std::map<uint64_t, std::string> got_lines;
  for (const auto& [id, loc] : sym.locations) {
    if (!want_lines.contains(loc.address)) continue;
    // The last line is the function the address is in; earlier ones would
    // be functions inlined into it (Go's symbolizer reports none).
    got_lines[loc.address] =
        loc.lines.empty() ? "<not symbolized>" : loc.lines.back();
  }
  EXPECT_EQ(want_lines.size(), 6u);
  EXPECT_EQ(got_lines, want_lines) << *symbolized;
}

}  // namespace
}  // namespace unwindd::profile

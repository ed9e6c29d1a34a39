// The committed core (fixture/, made by fixture/make_fixture.sh): a crash in
// a signal handler, recorded from binaries that no longer exist at their
// recorded paths, with the libraries it ran with in fixture/sysroot. Its
// golden output must come out the same on any machine, with any libc, and
// also when the core is compressed; without the files, or with the wrong
// ones, or cut short, the output must say so, never crash.
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "gtest/gtest.h"
#include "testdata/core/core_tools.h"
#include "testdata/harness/json.h"
#include "testdata/harness/subprocess.h"
#include "testdata/harness/tools.h"

namespace unwindd::harness {
namespace {

namespace fs = std::filesystem;

std::string Slurp(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

class FixtureCoreTest : public ::testing::Test {
 protected:
  // The golden files were made in fixture/ with relative arguments, so the
  // output names the same relative paths here.
  void SetUp() override {
    ASSERT_EQ(
        chdir(absl::StrCat(RunfilesRoot(), "/testdata/core/fixture").c_str()),
        0);
    tmp_ = std::getenv("TEST_TMPDIR") ? std::getenv("TEST_TMPDIR") : "/tmp";
  }

  ToolOutput Unwind(std::vector<std::string> args) {
    args.insert(args.begin(),
                {absl::StrCat(RunfilesRoot(), "/service/unwind"), "core"});
    absl::StatusOr<ToolOutput> out = RunTool(args, absl::Seconds(60));
    EXPECT_TRUE(out.ok()) << out.status();
    return out.ok() ? *out : ToolOutput{};
  }

  std::string tmp_;
};

TEST_F(FixtureCoreTest, GoldenTextAndJson) {
  ToolOutput text = Unwind({"core", "--sysroot=sysroot", "--exe=crasher"});
  EXPECT_EQ(text.exit_code, 0) << text.stderr_text;
  EXPECT_EQ(text.stdout_text, Slurp("golden.txt"));
  EXPECT_EQ(text.stderr_text, "");
  ToolOutput json =
      Unwind({"core", "--sysroot=sysroot", "--exe=crasher", "--format=json"});
  EXPECT_EQ(json.stdout_text, Slurp("golden.json"));
  // The crashing thread says why, and passes through the signal frame.
  EXPECT_TRUE(absl::StrContains(
      json.stdout_text,
      "\"code_name\": \"SEGV_MAPERR\", \"fault_address\": \"0x0\""));
  EXPECT_TRUE(absl::StrContains(json.stdout_text, "\"method\": \"signal\""));
}

TEST_F(FixtureCoreTest, GdbWithTheFixtureSysrootAgrees) {
  absl::StatusOr<std::vector<ThreadFrames>> gdb = GdbCoreFrames(
      "crasher", {"core"},
      {"set sysroot " + fs::absolute("sysroot").string(),
       "set solib-search-path " +
           fs::absolute("sysroot/usr/lib/x86_64-linux-gnu").string()});
  ASSERT_TRUE(gdb.ok()) << gdb.status();
  absl::StatusOr<UnwindOutput> golden = ParseUnwindJson(Slurp("golden.json"));
  ASSERT_TRUE(golden.ok()) << golden.status();
  Comparison c = CompareThreadFrames("golden", golden->Pcs(), "gdb", (*gdb)[0]);
  EXPECT_TRUE(c.ok()) << c.diff;
  EXPECT_EQ(c.threads, 3);
}

TEST_F(FixtureCoreTest, PathMapGivesTheSameFrames) {
  ToolOutput out = Unwind({"core", "--path-map=/tmp/unwindd-core-fixture=.",
                           "--path-map=/usr/lib/x86_64-linux-gnu=sysroot/usr/"
                           "lib/x86_64-linux-gnu"});
  EXPECT_EQ(out.exit_code, 0) << out.stderr_text;
  // The same, but for which file stood for the executable: the one the
  // path map named.
  std::string golden = Slurp("golden.txt");
  const std::string exe_line = "\nexecutable file: crasher ";
  ASSERT_NE(golden.find(exe_line), std::string::npos);
  golden.replace(golden.find(exe_line), exe_line.size(), "\nexecutable file: ./crasher ");
  EXPECT_EQ(out.stdout_text, golden);
}

TEST_F(FixtureCoreTest, CompressedCoresGiveTheSameFrames) {
  const std::string golden = Slurp("golden.txt");
  // Everything after the "core: ..." line, which names the file.
  auto body = [](const std::string& text) {
    return text.substr(text.find("\nTID"));
  };
  for (const auto& [tool, ext] :
       std::vector<std::pair<std::string, std::string>>{
           {"zstd", "zst"}, {"xz", "xz"}, {"lz4", "lz4"}}) {
    const std::string packed = absl::StrCat(tmp_, "/core.", ext);
    absl::StatusOr<ToolOutput> c = RunTool(
        {"sh", "-c", absl::StrCat(tool, " -q -c < core > '", packed, "'")},
        absl::Seconds(30));
    ASSERT_TRUE(c.ok() && c->exit_code == 0) << tool;
    ToolOutput out = Unwind({packed, "--sysroot=sysroot", "--exe=crasher"});
    EXPECT_EQ(out.exit_code, 0) << out.stderr_text;
    EXPECT_TRUE(
        absl::StrContains(out.stdout_text, absl::StrCat("(", tool, ")")))
        << out.stdout_text;
    EXPECT_EQ(body(out.stdout_text), body(golden)) << tool;
  }
}

TEST_F(FixtureCoreTest, MissingFilesAreNamed) {
  fs::create_directories(tmp_ + "/empty");
  ToolOutput out =
      Unwind({"core", "--sysroot=" + tmp_ + "/empty", "--format=json"});
  EXPECT_EQ(out.exit_code, 0) << out.stderr_text;
  absl::StatusOr<JsonValue> doc = ParseJson(out.stdout_text);
  ASSERT_TRUE(doc.ok()) << doc.status();
  const JsonValue* files = doc->Find("core")->Find("files");
  ASSERT_EQ(files->elements().size(), 3u);
  for (const JsonValue& f : files->elements()) {
    EXPECT_EQ(f.Find("state")->text(), "missing");
    EXPECT_EQ(f.Find("build_id")->text().size(), 40u);  // from the core
    EXPECT_TRUE(absl::StrContains(out.stderr_text, f.Find("path")->text()));
  }
  for (const JsonValue& t : doc->Find("threads")->elements()) {
    const JsonValue& frame0 = t.Find("frames")->elements().at(0);
    EXPECT_TRUE(
        absl::StrContains(frame0.Find("module_error")->text(), "not found"));
    // The bias still comes from the ELF header the core dumped.
    EXPECT_NE(frame0.Find("rel_pc"), nullptr);
  }
}

TEST_F(FixtureCoreTest, WrongBuildIsAMismatchNotAnUnwind) {
  ToolOutput out =
      Unwind({"core", "--sysroot=sysroot", "--format=json",
              "--exe=sysroot/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2"});
  EXPECT_EQ(out.exit_code, 0) << out.stderr_text;
  EXPECT_TRUE(absl::StrContains(out.stdout_text, "\"state\": \"mismatch\""));
  EXPECT_TRUE(absl::StrContains(out.stdout_text, "\"module_mismatch\": true"));
  EXPECT_TRUE(absl::StrContains(out.stderr_text, "recorded"));
  ToolOutput text =
      Unwind({"core", "--sysroot=sysroot",
              "--exe=sysroot/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2"});
  EXPECT_TRUE(absl::StrContains(text.stdout_text, "(build-id mismatch)"));
}

TEST_F(FixtureCoreTest, TruncatedCoresSayWhatIsMissing) {
  const std::string full = Slurp("core");
  absl::StatusOr<UnwindOutput> golden = ParseUnwindJson(Slurp("golden.json"));
  ASSERT_TRUE(golden.ok());
  int complete_threads = 0;
  for (size_t cut : {size_t{100}, full.size() / 100, full.size() / 4,
                     full.size() / 2, full.size() - 4096, full.size() - 1}) {
    const std::string path = absl::StrCat(tmp_, "/core.cut", cut);
    std::ofstream(path, std::ios::binary) << full.substr(0, cut);
    ToolOutput out =
        Unwind({path, "--sysroot=sysroot", "--exe=crasher", "--format=json"});
    // An error (exit 1, one line) or a partial result; never a crash.
    ASSERT_LE(out.exit_code, 1) << cut << ": " << out.stderr_text;
    if (out.exit_code == 1) {
      EXPECT_EQ(
          std::count(out.stderr_text.begin(), out.stderr_text.end(), '\n'), 1)
          << out.stderr_text;
      continue;
    }
    EXPECT_TRUE(absl::StrContains(out.stderr_text, "truncated")) << cut;
    absl::StatusOr<UnwindOutput> ours = ParseUnwindJson(out.stdout_text);
    ASSERT_TRUE(ours.ok()) << ours.status();
    if (cut >= full.size() - 4096) {
      for (const auto& [tid, frames] : ours->Pcs()) {
        complete_threads += frames == golden->Pcs().at(tid);
      }
    }
  }
  // Cutting the last page loses one segment, not every thread.
  EXPECT_GT(complete_threads, 0);
}

// Finds the first note of `type` in an x86_64 core and returns the file
// offset of its description (0 if none): a tiny walk over the PT_NOTE
// segment, enough to doctor the fixture.
size_t FindNoteDesc(const std::string& core, uint32_t type) {
  auto le = [&](size_t off, int n) {
    uint64_t v = 0;
    for (int i = n - 1; i >= 0; --i) v = (v << 8) | uint8_t(core[off + i]);
    return v;
  };
  const uint64_t phoff = le(32, 8), phnum = le(56, 2);
  for (uint64_t i = 0; i < phnum; ++i) {
    const size_t ph = phoff + i * 56;
    if (le(ph, 4) != 4) continue;  // PT_NOTE
    size_t pos = le(ph + 8, 8);
    const size_t end = pos + le(ph + 32, 8);
    while (pos + 12 <= end) {
      const uint64_t namesz = le(pos, 4), descsz = le(pos + 4, 4);
      const size_t desc = pos + 12 + ((namesz + 3) & ~uint64_t{3});
      if (le(pos + 8, 4) == type) return desc;
      pos = desc + ((descsz + 3) & ~uint64_t{3});
    }
  }
  return 0;
}

// Cores without NT_FILE (qemu-user, minimal dumpers): the same frames from
// the dynamic linker's list, and, without AT_PHDR either, from the ELF
// headers the core dumped.
TEST_F(FixtureCoreTest, ModulesWithoutNtFile) {
  std::string core = Slurp("core");
  const size_t nt_file = FindNoteDesc(core, 0x46494c45);
  ASSERT_NE(nt_file, 0u);
  core[nt_file - 4] ^= 0x70;  // the note's type: no longer NT_FILE
  const std::string no_nt_file = tmp_ + "/core.no_nt_file";
  std::ofstream(no_nt_file, std::ios::binary) << core;
  absl::StatusOr<UnwindOutput> golden = ParseUnwindJson(Slurp("golden.json"));
  ASSERT_TRUE(golden.ok());

  ToolOutput out = Unwind(
      {no_nt_file, "--sysroot=sysroot", "--exe=crasher", "--format=json"});
  EXPECT_EQ(out.exit_code, 0) << out.stderr_text;
  EXPECT_TRUE(
      absl::StrContains(out.stdout_text, "\"modules_from\": \"link_map\""));
  absl::StatusOr<UnwindOutput> ours = ParseUnwindJson(out.stdout_text);
  ASSERT_TRUE(ours.ok()) << ours.status();
  EXPECT_EQ(ours->Pcs(), golden->Pcs());

  // NT_AUXV without AT_PHDR (3): no way to the dynamic section.
  const size_t auxv = FindNoteDesc(core, 6);
  ASSERT_NE(auxv, 0u);
  for (size_t at = auxv; core[at] != 0 || core[at + 1] != 0; at += 16) {
    if (core[at] == 3 && core[at + 1] == 0) core[at] = 0x7f;
  }
  const std::string no_phdr = tmp_ + "/core.no_phdr";
  std::ofstream(no_phdr, std::ios::binary) << core;
  out =
      Unwind({no_phdr, "--sysroot=sysroot", "--exe=crasher", "--format=json"});
  EXPECT_EQ(out.exit_code, 0) << out.stderr_text;
  EXPECT_TRUE(
      absl::StrContains(out.stdout_text, "\"modules_from\": \"elf_headers\""));
  ours = ParseUnwindJson(out.stdout_text);
  ASSERT_TRUE(ours.ok()) << ours.status();
  EXPECT_EQ(ours->Pcs(), golden->Pcs());
}

}  // namespace
}  // namespace unwindd::harness

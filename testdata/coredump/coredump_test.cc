// `unwind coredump` against coredumpctl. A crash of the crasher fixture
// (a kernel core, or gdb's gcore where kernel.core_pattern pipes cores
// away) is filed in a journal the way systemd-coredump files crashes, as
// several entries (systemd-journal-remote writes the journal file):
//   t1  crasher, pid P, the core zstd-compressed under coredump/ (present)
//   t2  other, pid 777, its core file gone (missing)
//   t3  crasher, pid P+1, the core in the entry itself (Storage=journal)
//   t4  crasher, pid P+2, the core cut short before its NT_FILE note
//       (COREDUMP_TRUNCATED) with COREDUMP_PROC_MAPS and _PROC_AUXV
//   t5  crasher, pid P+3, the same cut core without them
//   t6  other, pid 888, a backtrace-only entry (no core), the newest
// For each MATCH, coredumpctl (`-1 info MATCH`) says which entry is the
// newest match and what its metadata is; `unwind coredump MATCH` must
// pick the same entry, print the same metadata, and unwind its core to
// the frames `unwind core` gives for the original core.
#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "gtest/gtest.h"
#include "testdata/core/core_tools.h"
#include "testdata/coredump/coredump_tools.h"
#include "testdata/harness/frames.h"
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

std::string Unwind() { return RunfilesRoot() + "/service/unwind"; }

// What every test here shares, made once.
struct World {
  std::string tools, dir, exe, core, journal;
  pid_t pid = 0;
  std::string kind;  // "kernel" or "gcore"
  UnwindOutput core_frames;
  std::string skip;  // why the tests skip, if they do
};

const World& TheWorld() {
  static World* w = [] {
    auto* w = new World;
    absl::StatusOr<std::string> tools = SystemdTools();
    if (absl::IsUnavailable(tools.status())) {
      w->skip = std::string(tools.status().message());
      return w;
    }
    EXPECT_TRUE(tools.ok()) << tools.status();
    if (!tools.ok()) return w;
    w->tools = *tools;
    const char* tmp = std::getenv("TEST_TMPDIR");
    w->dir = absl::StrCat(tmp ? tmp : "/tmp", "/coredump_test");
    fs::remove_all(w->dir);
    fs::create_directories(w->dir + "/bin");
    fs::create_directories(w->dir + "/coredump");
    w->exe = w->dir + "/bin/crasher";
    fs::copy_file(RunfilesRoot() + "/testdata/coredump/crasher", w->exe);

    struct rlimit unlimited = {RLIM_INFINITY, RLIM_INFINITY};
    setrlimit(RLIMIT_CORE, &unlimited);
    EXPECT_EQ(chdir(w->dir.c_str()), 0);
    absl::StatusOr<RunningProgram> p = StartProgram(w->exe);
    EXPECT_TRUE(p.ok()) << p.status();
    if (!p.ok()) return w;
    w->pid = p->pid();
    const std::string maps = Slurp(absl::StrCat("/proc/", w->pid, "/maps"));
    const std::string auxv = Slurp(absl::StrCat("/proc/", w->pid, "/auxv"));
    // SIGUSR1: the crasher's handler stores through a null pointer.
    absl::StatusOr<std::string> core = CrashAndFindKernelCore(*p, SIGUSR1, w->dir);
    w->kind = "kernel";
    if (absl::IsFailedPrecondition(core.status())) {
      std::cout << "no kernel core (" << core.status() << "): gcore instead\n";
      core = Gcore(w->pid, w->dir + "/gcore");
      w->kind = "gcore";
    }
    EXPECT_TRUE(core.ok()) << core.status();
    if (!core.ok()) return w;
    w->core = *core;
    p->Kill();

    absl::StatusOr<UnwindCoreResult> ours = UnwindCoreFrames(Unwind(), w->core, {});
    EXPECT_TRUE(ours.ok()) << ours.status();
    if (ours.ok()) w->core_frames = ours->frames;

    // systemd-coredump's file name: core.COMM.UID.BOOT_ID.PID.USEC.zst
    const std::string boot = "0123456789abcdef0123456789abcdef";
    const std::string zst =
        absl::StrCat(w->dir, "/coredump/core.crasher.0.", boot, ".", w->pid, ".1700000000000000.zst");
    absl::StatusOr<ToolOutput> z = RunTool({"zstd", "-q", "-f", w->core, "-o", zst}, absl::Seconds(60));
    EXPECT_TRUE(z.ok() && z->exit_code == 0);
    // The core cut at its NT_FILE note, as a core cut by ProcessSizeMax
    // can be: the first thread's registers stay, the module list goes.
    const std::string whole = Slurp(w->core);
    std::string cut = whole;
    for (size_t at = whole.find("CORE"); at != std::string::npos; at = whole.find("CORE", at + 1)) {
      // Elf64_Nhdr: namesz(4) descsz(4) type(4), then "CORE\0"; NT_FILE is
      // 0x46494c45, "ELIF" in the file.
      if (at < 12) continue;
      if (whole.compare(at - 4, 4, "ELIF") == 0) {
        cut = whole.substr(0, at - 12);
        break;
      }
    }
    EXPECT_LT(cut.size(), whole.size()) << "no NT_FILE note in the core";
    const std::string cut_path = w->dir + "/coredump/core.crasher.cut";
    std::ofstream(cut_path, std::ios::binary) << cut;

    auto base = [&](const std::string& usec) -> std::vector<std::pair<std::string, std::string>> {
      return {{"__REALTIME_TIMESTAMP", usec},
              {"__MONOTONIC_TIMESTAMP", usec.substr(0, 6)},
              {"_BOOT_ID", boot},
              {"_MACHINE_ID", "fedcba9876543210fedcba9876543210"},
              {"PRIORITY", "2"},
              {"SYSLOG_IDENTIFIER", "systemd-coredump"},
              {"MESSAGE_ID", "fc2e22bc6ee647b6b90729ab34a250b1"},
              {"COREDUMP_UID", "0"},
              {"COREDUMP_GID", "0"},
              {"COREDUMP_HOSTNAME", "crashbox"},
              {"COREDUMP_TIMESTAMP", usec}};
    };
    auto crasher = [&](pid_t pid, const std::string& usec) {
      auto f = base(usec);
      f.insert(f.end(), {{"COREDUMP_PID", absl::StrCat(pid)},
                         {"COREDUMP_SIGNAL", "11"},
                         {"COREDUMP_SIGNAL_NAME", "SIGSEGV"},
                         {"COREDUMP_COMM", "crasher"},
                         {"COREDUMP_EXE", w->exe},
                         {"COREDUMP_CMDLINE", w->exe + " --flag"},
                         {"COREDUMP_PACKAGE_NAME", "unwindd-crasher"},
                         {"COREDUMP_PACKAGE_VERSION", "1.2-3"},
                         {"MESSAGE", absl::StrCat("Process ", pid,
                                                  " (crasher) of user 0 dumped core.\n\nStack trace "
                                                  "of thread ",
                                                  pid, ":\n#0  0x0 n/a")}});
      return f;
    };
    std::string exported;
    auto e1 = crasher(w->pid, "1700000000000000");
    e1.push_back({"COREDUMP_FILENAME", zst});
    exported += ExportEntry(e1);
    auto e2 = base("1700000100000000");
    e2.insert(e2.end(), {{"COREDUMP_PID", "777"}, {"COREDUMP_SIGNAL", "6"},
                         {"COREDUMP_COMM", "other"}, {"COREDUMP_EXE", "/usr/bin/other"},
                         {"COREDUMP_FILENAME", "/var/lib/systemd/coredump/core.other.gone.zst"},
                         {"MESSAGE", "Process 777 (other) of user 0 dumped core."}});
    exported += ExportEntry(e2);
    auto e3 = crasher(w->pid + 1, "1700000200000000");
    e3.push_back({"COREDUMP", whole});
    exported += ExportEntry(e3);
    auto e4 = crasher(w->pid + 2, "1700000300000000");
    e4.insert(e4.end(), {{"COREDUMP_FILENAME", cut_path}, {"COREDUMP_TRUNCATED", "1"},
                         {"COREDUMP_PROC_MAPS", maps}, {"COREDUMP_PROC_AUXV", auxv}});
    exported += ExportEntry(e4);
    auto e5 = crasher(w->pid + 3, "1700000400000000");
    e5.insert(e5.end(), {{"COREDUMP_FILENAME", cut_path}, {"COREDUMP_TRUNCATED", "1"}});
    exported += ExportEntry(e5);
    auto e6 = base("1700000500000000");
    e6[6].second = "1f4e0a44a88649939aaea34fc6da8c95";  // SD_MESSAGE_BACKTRACE
    e6.insert(e6.end(), {{"COREDUMP_PID", "888"}, {"COREDUMP_SIGNAL", "6"},
                         {"COREDUMP_COMM", "other"}, {"MESSAGE", "Process 888 (other) crashed."}});
    exported += ExportEntry(e6);
    w->journal = w->dir + "/journal/x.journal";
    fs::create_directories(w->dir + "/journal");
    absl::Status s = WriteJournal(w->tools, exported, w->journal);
    EXPECT_TRUE(s.ok()) << s;
    return w;
  }();
  return *w;
}

struct CommandResult {
  int exit_code = 0;
  std::string out, err;
  std::map<std::string, std::string> facts;  // label -> value
};

// `unwind coredump --file=JOURNAL MATCH --format=json`: the metadata from
// the "core" object's "metadata", or (no core) from the lines on stderr.
CommandResult RunCoredump(const std::vector<std::string>& args) {
  std::vector<std::string> argv = {Unwind(), "coredump", "--format=json", "--max-frames=4096"};
  argv.insert(argv.end(), args.begin(), args.end());
  absl::StatusOr<ToolOutput> out = RunTool(argv, absl::Seconds(120));
  EXPECT_TRUE(out.ok()) << out.status();
  CommandResult r;
  if (!out.ok()) return r;
  r.exit_code = out->exit_code;
  r.out = out->stdout_text;
  r.err = out->stderr_text;
  for (absl::string_view line : absl::StrSplit(r.err, '\n')) {
    const size_t colon = line.find(": ");
    if (colon != absl::string_view::npos && !absl::StartsWith(line, "unwind")) {
      r.facts[std::string(line.substr(0, colon))] = std::string(line.substr(colon + 2));
    }
  }
  absl::StatusOr<JsonValue> doc = ParseJson(r.out);
  if (r.exit_code == 0 && doc.ok()) {
    static const std::map<std::string, std::string> kLabels = {
        {"pid", "PID"}, {"comm", "COMM"}, {"uid", "UID"}, {"gid", "GID"},
        {"signal", "Signal"}, {"timestamp", "Timestamp"}, {"command_line", "Command Line"},
        {"executable", "Executable"}, {"boot_id", "Boot ID"}, {"machine_id", "Machine ID"},
        {"hostname", "Hostname"}, {"storage", "Storage"}, {"package", "Package"},
        {"message", "Message"}};
    const JsonValue* core = doc->Find("core");
    const JsonValue* meta = core != nullptr ? core->Find("metadata") : nullptr;
    if (meta != nullptr) {
      for (const JsonMember& m : meta->members()) {
        auto it = kLabels.find(m.key);
        if (it != kLabels.end()) r.facts[it->second] = m.value.text();
      }
    }
  }
  return r;
}

// What coredumpctl prints, in our form: "26836 (crasher)" is our PID and
// COMM; a UID's user name and a time's age are coredumpctl's additions.
void ExpectSameMetadata(const CoredumpctlInfo& want, const CommandResult& got) {
  auto ours = [&](const std::string& label) {
    auto it = got.facts.find(label);
    return it == got.facts.end() ? std::string("(none)") : it->second;
  };
  for (const auto& [label, value] : want) {
    std::string expected = value;
    if (label == "UID" || label == "GID" || label == "Timestamp") {
      expected = expected.substr(0, expected.find(" ("));
    }
    if (label == "Size on Disk" || label == "Reason") continue;
    std::string actual = ours(label);
    if (label == "PID" && got.facts.contains("COMM")) {
      actual = absl::StrCat(actual, " (", ours("COMM"), ")");
    }
    EXPECT_EQ(actual, expected) << label;
  }
}

class CoredumpTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!TheWorld().skip.empty()) GTEST_SKIP() << TheWorld().skip;
    ASSERT_FALSE(TheWorld().journal.empty());
  }
};

TEST_F(CoredumpTest, EachMatchPicksCoredumpctlsEntryWithItsMetadata) {
  const World& w = TheWorld();
  const std::vector<std::string> matches = {
      absl::StrCat(w.pid), "crasher", w.exe, "other", "COREDUMP_SIGNAL=11",
      absl::StrCat(w.pid + 1), absl::StrCat(w.pid + 2), "777", "888", "COREDUMP_UID=0"};
  for (const std::string& match : matches) {
    SCOPED_TRACE(match);
    absl::StatusOr<CoredumpctlInfo> want = Coredumpctl(w.tools, w.journal, match);
    ASSERT_TRUE(want.ok()) << want.status();
    CommandResult got = RunCoredump({"--file=" + w.journal, match});
    ExpectSameMetadata(*want, got);
  }
  // No match at all: the newest entry of all, the backtrace-only one,
  // whose metadata is printed, and which has no core to unwind.
  absl::StatusOr<CoredumpctlInfo> newest = Coredumpctl(w.tools, w.journal, "");
  CommandResult got = RunCoredump({"--file=" + w.journal});
  EXPECT_EQ(got.exit_code, 1);
  EXPECT_TRUE(absl::StrContains(got.err, "has no core")) << got.err;
  if (newest.ok()) ExpectSameMetadata(*newest, got);
  // Nothing matches: coredumpctl finds nothing either.
  EXPECT_TRUE(absl::IsNotFound(Coredumpctl(w.tools, w.journal, "nosuchcomm").status()));
  got = RunCoredump({"--file=" + w.journal, "nosuchcomm"});
  EXPECT_EQ(got.exit_code, 1);
  EXPECT_TRUE(absl::StrContains(got.err, "no coredump entry matches COREDUMP_COMM=nosuchcomm"))
      << got.err;
}

TEST_F(CoredumpTest, ZstdOnDiskAndInTheJournalUnwindLikeTheCore) {
  const World& w = TheWorld();
  const ThreadFrames want = w.core_frames.Pcs();
  for (pid_t pid : {w.pid, w.pid + 1}) {
    SCOPED_TRACE(pid);
    // --file, and the directory that holds the journal.
    for (const std::string& where : {"--file=" + w.journal, "--directory=" + w.dir + "/journal"}) {
      CommandResult got = RunCoredump({where, absl::StrCat(pid)});
      ASSERT_EQ(got.exit_code, 0) << got.err;
      absl::StatusOr<UnwindOutput> frames = ParseUnwindJson(got.out);
      ASSERT_TRUE(frames.ok()) << frames.status();
      Comparison c = CompareThreadFrames("unwind coredump", frames->Pcs(), "unwind core", want);
      EXPECT_TRUE(c.ok()) << c.diff;
      EXPECT_EQ(got.facts["Storage"],
                pid == w.pid ? absl::StrCat(w.dir, "/coredump/core.crasher.0.",
                                            "0123456789abcdef0123456789abcdef.", w.pid,
                                            ".1700000000000000.zst (present)")
                             : "journal");
      // The crasher's ELF package note, per module.
      EXPECT_TRUE(absl::StrContains(got.out, "\"package\": {\"type\": \"deb\""));
      EXPECT_TRUE(absl::StrContains(got.out, "\"name\": \"unwindd-crasher\", \"version\": \"1.2-3\""));
    }
  }
}

TEST_F(CoredumpTest, ATruncatedCoreTakesTheEntrysMaps) {
  const World& w = TheWorld();
  CommandResult with = RunCoredump({"--file=" + w.journal, absl::StrCat(w.pid + 2)});
  ASSERT_EQ(with.exit_code, 0) << with.err;
  EXPECT_EQ(with.facts["Storage"],
            absl::StrCat(w.dir, "/coredump/core.crasher.cut (truncated)"));
  EXPECT_TRUE(absl::StrContains(with.out, "\"modules_from\": \"proc_maps\"")) << with.out.substr(0, 800);
  absl::StatusOr<UnwindOutput> frames = ParseUnwindJson(with.out);
  ASSERT_TRUE(frames.ok()) << frames.status();
  // The first thread's registers survive the cut; its stack does not.
  ASSERT_TRUE(frames->threads.contains(w.pid));
  const UnwindThread& t = frames->threads.at(w.pid);
  ASSERT_FALSE(t.frames.empty());
  EXPECT_EQ(t.frames[0].pc, w.core_frames.threads.at(w.pid).frames[0].pc);
  EXPECT_EQ(t.frames[0].module, w.exe);

  // The same core without COREDUMP_PROC_MAPS: no module for the PC.
  CommandResult without = RunCoredump({"--file=" + w.journal, absl::StrCat(w.pid + 3)});
  ASSERT_EQ(without.exit_code, 0) << without.err;
  frames = ParseUnwindJson(without.out);
  ASSERT_TRUE(frames.ok()) << frames.status();
  EXPECT_EQ(frames->threads.at(w.pid).frames[0].module, "");
}

TEST_F(CoredumpTest, AMissingCoreIsAnErrorWithTheMetadata) {
  const World& w = TheWorld();
  CommandResult got = RunCoredump({"--file=" + w.journal, "777"});
  EXPECT_EQ(got.exit_code, 1);
  EXPECT_TRUE(absl::StrContains(got.err, "is missing")) << got.err;
  EXPECT_EQ(got.facts["PID"], "777");
}

TEST_F(CoredumpTest, CoreBacktraceAndMinidumpFromAnEntry) {
  const World& w = TheWorld();
  const std::string md = w.dir + "/entry.dmp";
  absl::StatusOr<ToolOutput> out = RunTool(
      {Unwind(), "coredump", "--file=" + w.journal, absl::StrCat(w.pid),
       "--format=core-backtrace", "--minidump=" + md},
      absl::Seconds(120));
  ASSERT_TRUE(out.ok()) << out.status();
  ASSERT_EQ(out->exit_code, 0) << out->stderr_text;
  absl::StatusOr<JsonValue> doc = ParseJson(out->stdout_text);
  ASSERT_TRUE(doc.ok()) << doc.status() << out->stdout_text;
  ASSERT_NE(doc->Find("duphash"), nullptr);
  EXPECT_EQ(doc->Find("executable")->text(), w.exe);
  // The minidump's size against the compressed core on disk.
  EXPECT_TRUE(absl::StrContains(out->stderr_text, "wrote minidump")) << out->stderr_text;
  EXPECT_TRUE(fs::exists(md));
}

}  // namespace
}  // namespace unwindd::harness

#include "testdata/aarch64/live/console_log.h"

#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace unwindd::testdata::live {
namespace {

constexpr size_t kMaxFixtures = 4096;
constexpr size_t kMaxBlockBytes = size_t{64} << 20;

// "key=value" words after the first `skip` words, as a map.
std::map<std::string, std::string> KeyValues(
    const std::vector<absl::string_view>& words, size_t skip) {
  std::map<std::string, std::string> kv;
  for (size_t i = skip; i < words.size(); ++i) {
    std::pair<absl::string_view, absl::string_view> p =
        absl::StrSplit(words[i], absl::MaxSplits('=', 1));
    kv[std::string(p.first)] = std::string(p.second);
  }
  return kv;
}

absl::Status Error(int line_no, absl::string_view what) {
  return absl::InvalidArgumentError(
      absl::StrCat("console line ", line_no, ": ", what));
}

// The value of `key="..."` starting at or after `from` in `s`, or "" and npos.
absl::string_view Quoted(absl::string_view s, absl::string_view key,
                         size_t from, size_t* next) {
  const std::string pat = absl::StrCat(key, "=\"");
  size_t at = s.find(pat, from);
  if (at == absl::string_view::npos) {
    *next = absl::string_view::npos;
    return "";
  }
  at += pat.size();
  size_t end = s.find('"', at);
  if (end == absl::string_view::npos) {
    *next = absl::string_view::npos;
    return "";
  }
  *next = end + 1;
  return s.substr(at, end - at);
}

}  // namespace

const ToolBlock* FixtureRun::Block(absl::string_view kind) const {
  auto it = blocks.find(std::string(kind));
  return it == blocks.end() ? nullptr : &it->second;
}

bool FixtureRun::pac() const { return absl::EndsWith(name, "_pac"); }

absl::StatusOr<ConsoleLog> ParseConsoleLog(absl::string_view text) {
  ConsoleLog log;
  ToolBlock* open = nullptr;
  std::string open_kind, open_name;
  int line_no = 0;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    ++line_no;
    absl::ConsumeSuffix(&line, "\r");
    if (open != nullptr) {
      if (absl::StartsWith(line, "UWD-BLOCK-END ")) {
        std::vector<absl::string_view> w = absl::StrSplit(line, ' ', absl::SkipEmpty());
        std::map<std::string, std::string> kv = KeyValues(w, 3);
        if (w.size() < 4 || w[1] != open_kind || w[2] != open_name ||
            !absl::SimpleAtoi(kv["rc"], &open->exit_code)) {
          return Error(line_no, "bad or mismatched UWD-BLOCK-END");
        }
        open = nullptr;
        continue;
      }
      if (open->text.size() + line.size() + 1 > kMaxBlockBytes) {
        return Error(line_no, "block too large");
      }
      absl::StrAppend(&open->text, line, "\n");
      continue;
    }
    std::vector<absl::string_view> w = absl::StrSplit(line, ' ', absl::SkipEmpty());
    if (w.empty()) continue;
    FixtureRun* current = log.fixtures.empty() ? nullptr : &log.fixtures.back();
    if (w[0] == "UWD-BLOCK") {
      if (w.size() != 3) return Error(line_no, "bad UWD-BLOCK");
      if (current == nullptr || current->name != w[2] || current->done) {
        return Error(line_no, "UWD-BLOCK outside its fixture");
      }
      open_kind = std::string(w[1]);
      open_name = std::string(w[2]);
      open = &current->blocks[open_kind];
      *open = ToolBlock{};
      continue;
    }
    if (w[0] != "UWD-LIVE" || w.size() < 2) continue;
    std::map<std::string, std::string> kv = KeyValues(w, 2);
    if (w[1] == "begin") {
      log.kernel = kv["kernel"];
    } else if (w[1] == "hwcap") {
      log.paca = kv["paca"] == "1";
      log.pacg = kv["pacg"] == "1";
      log.bti = kv["bti"] == "1";
    } else if (w[1] == "fixture") {
      if (w.size() < 3) return Error(line_no, "fixture without a name");
      if (log.fixtures.size() >= kMaxFixtures) return Error(line_no, "too many fixtures");
      kv = KeyValues(w, 3);
      FixtureRun f;
      f.name = std::string(w[2]);
      if (!absl::SimpleAtoi(kv["pid"], &f.pid) ||
          !absl::SimpleAtoi(kv["threads"], &f.threads)) {
        return Error(line_no, "fixture: bad pid or threads");
      }
      f.ready = kv["ready"] == "1";
      log.fixtures.push_back(std::move(f));
    } else if (w[1] == "tracer" || w[1] == "capture" || w[1] == "done") {
      if (w.size() < 3 || current == nullptr || current->name != w[2]) {
        return Error(line_no, absl::StrCat(w[1], " outside its fixture"));
      }
      kv = KeyValues(w, 3);
      if (w[1] == "tracer") {
        TracerCheck t;
        t.after = kv["after"];
        if (!absl::SimpleAtoi(kv["tid"], &t.tid) ||
            !absl::SimpleAtoi(kv["tracerpid"], &t.tracer_pid)) {
          return Error(line_no, "tracer: bad tid or tracerpid");
        }
        current->tracers.push_back(std::move(t));
      } else if (w[1] == "capture") {
        if (!absl::SimpleAtoi(kv["rc"], &current->capture_exit_code)) {
          return Error(line_no, "capture: bad rc");
        }
      } else {
        current->done = true;
      }
    } else if (w[1] == "end") {
      log.ended = true;
      if (!absl::SimpleAtoi(kv["fixtures"], &log.end_fixtures) ||
          !absl::SimpleAtod(kv["uptime"], &log.uptime_s)) {
        return Error(line_no, "end: bad fixtures or uptime");
      }
    }
  }
  if (open != nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat("console: block ", open_kind, " ", open_name, " does not end"));
  }
  return log;
}

absl::StatusOr<GdbMiFrames> ParseGdbMiFrames(absl::string_view text) {
  GdbMiFrames out;
  int64_t tid = -1;
  int line_no = 0;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    ++line_no;
    if (absl::StartsWith(line, "Thread ")) {
      // "Thread 2 (Thread 0xffff... (LWP 860) "name"):" or "Thread 1 (LWP 5):"
      size_t at = line.find("(LWP ");
      if (at == absl::string_view::npos) return Error(line_no, "gdb: thread without LWP");
      absl::string_view rest = line.substr(at + 5);
      rest = rest.substr(0, rest.find(')'));
      if (!absl::SimpleAtoi(rest, &tid) || out.pcs.count(tid) != 0) {
        return Error(line_no, "gdb: bad or repeated LWP");
      }
      out.pcs[tid];  // a thread with no frame list is still a thread
      continue;
    }
    if (!absl::ConsumePrefix(&line, "^done,stack=[")) continue;
    if (tid < 0) return Error(line_no, "gdb: frame list before a thread header");
    std::vector<uint64_t>& pcs = out.pcs[tid];
    if (!pcs.empty()) return Error(line_no, "gdb: two frame lists for one thread");
    // frame={level="0",addr="0x...",[addr_flags="PAC",]func="...",...},...
    for (absl::string_view frame : absl::StrSplit(line, "frame={", absl::SkipEmpty())) {
      size_t next = 0;
      absl::string_view level = Quoted(frame, "level", 0, &next);
      absl::string_view addr = Quoted(frame, "addr", 0, &next);
      int level_no = -1;
      uint64_t pc = 0;
      if (!absl::SimpleAtoi(level, &level_no) ||
          level_no != static_cast<int>(pcs.size()) || !harness::ParseHexPc(addr, &pc)) {
        return Error(line_no, absl::StrCat("gdb: bad frame ", frame));
      }
      if (Quoted(frame, "func", 0, &next) == "<signal handler called>") {
        out.signal_frames[tid].push_back(level_no);
      }
      if (Quoted(frame, "addr_flags", 0, &next) == "PAC") ++out.pac_flagged[tid];
      pcs.push_back(pc);
    }
  }
  return out;
}

}  // namespace unwindd::testdata::live

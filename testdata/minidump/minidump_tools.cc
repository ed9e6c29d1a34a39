#include "testdata/minidump/minidump_tools.h"

#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "testdata/harness/subprocess.h"
#include "testdata/harness/tools.h"

namespace unwindd::harness {
namespace {

namespace fs = std::filesystem;
constexpr absl::Duration kTimeout = absl::Seconds(120);

std::string Failure(absl::string_view tool, const ToolOutput& out) {
  return absl::StrCat(tool, " exited with ", out.exit_code, "; stderr:\n",
                      out.stderr_text.substr(0, 4000), "\nstdout:\n",
                      out.stdout_text.substr(0, 4000));
}

}  // namespace

absl::StatusOr<std::string> BreakpadTools() {
  // The first call installs (~2 minutes), later ones find the cache.
  absl::StatusOr<ToolOutput> out =
      RunTool({"bash", RunfilesRoot() + "/scripts/breakpad_tools.sh"}, absl::Minutes(40));
  if (!out.ok()) return out.status();
  if (out->exit_code == 77) {
    return absl::UnavailableError(
        absl::StrCat("Breakpad's tools: ", absl::StripTrailingAsciiWhitespace(out->stderr_text)));
  }
  if (out->exit_code != 0) return absl::InternalError(Failure("breakpad_tools.sh", *out));
  return std::string(absl::StripTrailingAsciiWhitespace(out->stdout_text));
}

absl::Status CopyProcFiles(pid_t pid, const std::string& dir) {
  fs::create_directories(dir);
  for (const char* f : {"maps", "auxv", "cmdline", "environ", "status"}) {
    std::ifstream in(absl::StrCat("/proc/", pid, "/", f), std::ios::binary);
    if (!in) return absl::NotFoundError(absl::StrCat("/proc/", pid, "/", f));
    std::ofstream out(absl::StrCat(dir, "/", f), std::ios::binary);
    out << in.rdbuf();
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> Core2md(const std::string& tools, const std::string& core,
                                    const std::string& procfs, const std::string& out) {
  absl::StatusOr<ToolOutput> r = RunTool({tools + "/bin/core2md", core, procfs, out}, kTimeout);
  if (!r.ok()) return r.status();
  if (r->exit_code != 0) return absl::InternalError(Failure("core2md", *r));
  return out;
}

namespace {

// `readelf --debug-dump=frames FILE`: FDE offset -> [pc_lo, pc_hi), per
// section (".eh_frame", ".debug_frame").
std::map<std::pair<std::string, uint64_t>, std::pair<uint64_t, uint64_t>> FdeRanges(
    const std::string& file) {
  std::map<std::pair<std::string, uint64_t>, std::pair<uint64_t, uint64_t>> out;
  absl::StatusOr<ToolOutput> r = RunTool({"readelf", "--debug-dump=frames", file}, kTimeout);
  if (!r.ok() || r->exit_code != 0) return out;
  std::string section;
  for (absl::string_view line : absl::StrSplit(r->stdout_text, '\n')) {
    if (absl::ConsumePrefix(&line, "Contents of the ")) {
      section = std::string(line.substr(0, line.find(' ')));
      continue;
    }
    // "00000228 00000044 0000022c FDE cie=00000000 pc=000008a0..00000ab5"
    std::vector<absl::string_view> w = absl::StrSplit(line, ' ', absl::SkipEmpty());
    if (w.size() < 6 || w[3] != "FDE" || !absl::ConsumePrefix(&w[5], "pc=")) continue;
    std::vector<absl::string_view> pc = absl::StrSplit(w[5], "..");
    uint64_t off = 0, lo = 0, hi = 0;
    if (pc.size() == 2 && absl::SimpleHexAtoi(w[0], &off) && absl::SimpleHexAtoi(pc[0], &lo) &&
        absl::SimpleHexAtoi(pc[1], &hi)) {
      out[{section, off}] = {lo, hi};
    }
  }
  return out;
}

}  // namespace

absl::Status DumpSyms(const std::string& tools, const std::vector<std::string>& files,
                      const std::string& dir, UntranslatableCfi* untranslatable) {
  for (const std::string& f : files) {
    // Stored under the file's own name, the one a minidump's module list
    // has (the mapped path's): dump_syms would name a library by its
    // DT_SONAME (libstdc++.so.6 for libstdc++.so.6.0.30, linux-gate.so.1
    // for the vDSO), where minidump_stackwalk would not look.
    const std::string base = fs::path(f).filename();
    absl::StatusOr<ToolOutput> r =
        RunTool({tools + "/bin/dump_syms", "-v", "-n", base, f}, kTimeout);
    if (!r.ok()) return r.status();
    // dump_syms fails for files it cannot use (no symbols at all): those
    // modules are unwound by stack scanning, which is left out anyway.
    if (r->exit_code != 0 || !absl::StartsWith(r->stdout_text, "MODULE ")) continue;
    // "MODULE Linux x86_64 <ID> <name>"
    const std::string first = r->stdout_text.substr(0, r->stdout_text.find('\n'));
    std::vector<std::string> parts = absl::StrSplit(first, ' ');
    if (parts.size() < 5) continue;
    // "FILE, section '.eh_frame': the call frame entry at offset 0x228
    // uses a DWARF expression to describe how to recover register ...,
    // but this translator cannot yet translate DWARF expressions ..."
    std::map<std::pair<std::string, uint64_t>, std::pair<uint64_t, uint64_t>> fdes;
    for (absl::string_view line : absl::StrSplit(r->stderr_text, '\n')) {
      if (!absl::StrContains(line, "cannot yet translate")) continue;
      const size_t sec = line.find("section '");
      const size_t at = line.find("at offset 0x");
      if (sec == absl::string_view::npos || at == absl::string_view::npos) continue;
      const absl::string_view name = line.substr(sec + 9, line.find('\'', sec + 9) - sec - 9);
      absl::string_view off = line.substr(at + 12);
      off = off.substr(0, off.find(' '));
      uint64_t o = 0;
      if (!absl::SimpleHexAtoi(off, &o)) continue;
      if (fdes.empty()) fdes = FdeRanges(f);
      auto it = fdes.find({std::string(name), o});
      if (it != fdes.end()) (*untranslatable)[base].push_back(it->second);
    }
    const std::string& id = parts[3];
    const std::string d = absl::StrCat(dir, "/", base, "/", id);
    fs::create_directories(d);
    std::ofstream(absl::StrCat(d, "/", base, ".sym")) << r->stdout_text;
  }
  return absl::OkStatus();
}

bool MinidumpDump::Holds(uint64_t addr) const {
  for (const auto& [lo, hi] : ranges) {
    if (addr >= lo && addr < hi) return true;
  }
  return false;
}

absl::StatusOr<MinidumpDump> ReadWithMinidumpDump(const std::string& tools,
                                                  const std::string& minidump) {
  absl::StatusOr<ToolOutput> r = RunTool({tools + "/bin/minidump_dump", minidump}, kTimeout);
  if (!r.ok()) return r.status();
  // minidump_dump exits 1 when a stream Linux writers never write (misc
  // info, memory info list) is absent, Breakpad's own core2md's included:
  // an ERROR is only one when the line before it does not say the stream
  // is "not present".
  absl::string_view previous;
  for (absl::string_view line : absl::StrSplit(r->stderr_text, '\n')) {
    if (absl::StrContains(line, "ERROR") && !absl::StrContains(previous, "not present")) {
      return absl::InternalError(absl::StrCat("minidump_dump: ", line, "\n", Failure("minidump_dump", *r)));
    }
    previous = line;
  }
  MinidumpDump dump;
  std::vector<int64_t>& tids = dump.tids;
  bool in_thread = false;
  bool in_memory_list = false;
  uint64_t range_start = 0;
  for (absl::string_view line : absl::StrSplit(r->stdout_text, '\n')) {
    line = absl::StripAsciiWhitespace(line);
    if (line == "MDRawThread") in_thread = true;
    if (line == "MinidumpMemoryList") in_memory_list = true;
    // Memory list regions: "start_of_memory_range = 0x...", then
    // "memory.data_size = 0x..." (a thread's own are "stack.start_...").
    {
      std::vector<absl::string_view> kv = absl::StrSplit(line, '=');
      uint64_t v = 0;
      if (in_memory_list && kv.size() == 2 &&
          absl::SimpleHexAtoi(absl::StripPrefix(absl::StripAsciiWhitespace(kv[1]), "0x"), &v)) {
        const absl::string_view key = absl::StripAsciiWhitespace(kv[0]);
        if (key == "start_of_memory_range") range_start = v;
        if (key == "memory.data_size") dump.ranges.emplace_back(range_start, range_start + v);
      }
    }
    // "  thread_id                   = 0xd94"
    if (!in_thread || !absl::ConsumePrefix(&line, "thread_id")) continue;
    std::vector<absl::string_view> kv = absl::StrSplit(line, '=');
    uint64_t v = 0;
    if (kv.size() == 2 && absl::SimpleHexAtoi(absl::StripPrefix(
                              absl::StripAsciiWhitespace(kv[1]), "0x"), &v)) {
      tids.push_back(static_cast<int64_t>(v));
    }
    in_thread = false;
  }
  if (tids.empty()) return absl::InternalError(Failure("minidump_dump (no MDRawThread)", *r));
  return dump;
}

ThreadFrames CutWhereNotCaptured(const UnwindOutput& md, const UnwindOutput& full,
                                 const MinidumpDump& dump, int* cut) {
  ThreadFrames out = full.Pcs();
  for (const auto& [tid, t] : md.threads) {
    auto it = full.threads.find(tid);
    if (it == full.threads.end()) continue;
    const std::vector<UnwindFrame>& f = it->second.frames;
    const size_t n = t.frames.size();
    if (t.stop != "memory_error" || n >= f.size()) continue;
    bool prefix = true;
    for (size_t i = 0; i < n; ++i) prefix &= t.frames[i].pc == f[i].pc;
    if (!prefix || f[n].sp == 0 || dump.Holds(f[n].sp)) continue;
    out[tid].resize(n);
    ++*cut;
  }
  return out;
}

ThreadFrames CutLike(const ThreadFrames& other, const ThreadFrames& cut_full) {
  ThreadFrames out = other;
  for (auto& [tid, pcs] : out) {
    auto it = cut_full.find(tid);
    if (it != cut_full.end() && it->second.size() < pcs.size()) pcs.resize(it->second.size());
  }
  return out;
}

absl::StatusOr<StackwalkOutput> Stackwalk(const std::string& tools,
                                          const std::string& minidump,
                                          const std::string& symbols) {
  absl::StatusOr<ToolOutput> r =
      RunTool({tools + "/bin/minidump_stackwalk", minidump, symbols}, kTimeout);
  if (!r.ok()) return r.status();
  if (r->exit_code != 0) return absl::InternalError(Failure("minidump_stackwalk", *r));
  StackwalkOutput out;
  int thread = -1;
  for (absl::string_view line : absl::StrSplit(r->stdout_text, '\n')) {
    absl::string_view t = absl::StripAsciiWhitespace(line);
    if (absl::ConsumePrefix(&t, "Thread ")) {
      // "Thread 0 (crashed)"
      std::vector<absl::string_view> w = absl::StrSplit(t, ' ');
      if (!absl::SimpleAtoi(w[0], &thread)) return absl::InternalError(std::string(line));
      out[thread];
      continue;
    }
    if (thread < 0) continue;
    // " 3  libc.so.6!read + 0x4c": a new frame.
    std::vector<absl::string_view> w = absl::StrSplit(t, absl::MaxSplits(' ', 1));
    int index = 0;
    if (!w.empty() && absl::SimpleAtoi(w[0], &index) && !absl::StartsWith(line, "    ")) {
      if (index != static_cast<int>(out[thread].size())) {
        return absl::InternalError(absl::StrCat("frame ", index, " out of order: ", line));
      }
      out[thread].push_back({0, "", w.size() > 1 ? std::string(absl::StripAsciiWhitespace(w[1])) : ""});
      continue;
    }
    if (out[thread].empty()) continue;
    StackwalkFrame& f = out[thread].back();
    if (absl::ConsumePrefix(&t, "Found by: ")) {
      f.trust = std::string(t);
      continue;
    }
    // Register lines: "rsp = 0x..   rip = 0x..", "eip = 0x..", " pc = 0x..".
    std::vector<absl::string_view> tokens = absl::StrSplit(t, ' ', absl::SkipEmpty());
    for (size_t i = 0; i + 2 < tokens.size(); ++i) {
      if ((tokens[i] == "rip" || tokens[i] == "eip" || tokens[i] == "pc") &&
          tokens[i + 1] == "=") {
        uint64_t pc = 0;
        if (ParseHexPc(tokens[i + 2], &pc)) f.pc = pc;
      }
    }
  }
  return out;
}

namespace {

// Our frame is in a function whose CFI dump_syms could not translate.
bool Untranslatable(const UnwindFrame& f, size_t index, const UntranslatableCfi& u) {
  uint64_t rel = 0;
  if (f.module.empty() || !ParseHexPc(f.rel_pc, &rel)) return false;
  auto it = u.find(fs::path(f.module).filename());
  if (it == u.end()) return false;
  // A caller's return address is looked up one byte back.
  const uint64_t at = index == 0 || f.method == "signal" ? rel : rel - 1;
  for (const auto& [lo, hi] : it->second) {
    if (at >= lo && at < hi) return true;
  }
  return false;
}

}  // namespace

CfiComparison CompareCfiFrames(const StackwalkOutput& breakpad,
                               const std::vector<int64_t>& tids,
                               const UnwindOutput& unwound,
                               const UntranslatableCfi& untranslatable) {
  const ThreadFrames ours = unwound.Pcs();
  CfiComparison c;
  for (const auto& [index, frames] : breakpad) {
    if (index < 0 || static_cast<size_t>(index) >= tids.size()) {
      absl::StrAppend(&c.diff, "Breakpad's thread ", index, " is not in minidump_dump's list\n");
      continue;
    }
    const int64_t tid = tids[index];
    auto it = ours.find(tid);
    if (it == ours.end()) {
      absl::StrAppend(&c.diff, "thread ", tid, ": not in ours\n");
      continue;
    }
    ++c.threads;
    for (size_t i = 0; i < frames.size(); ++i) {
      const StackwalkFrame& f = frames[i];
      if (f.trust != "given as instruction pointer in context" &&
          f.trust != "call frame info") {
        break;
      }
      const std::vector<UnwindFrame>& mine = unwound.threads.at(tid).frames;
      if (i < mine.size() && mine[i].method == "signal") break;
      const bool last = i < mine.size() && Untranslatable(mine[i], i, untranslatable);
      ++c.frames;
      if (i >= it->second.size() || it->second[i] != f.pc) {
        absl::StrAppendFormat(&c.diff, "thread %d frame %d: Breakpad 0x%x (%s, %s), ours %s\n",
                              tid, i, f.pc, f.trust, f.where,
                              i < it->second.size() ? absl::StrFormat("0x%x", it->second[i])
                                                    : std::string("none"));
        break;
      }
      if (last) break;  // its caller is Breakpad's guess
    }
  }
  return c;
}

absl::Status ExtractVdso(pid_t pid, const std::string& dir) {
  std::ifstream maps(absl::StrCat("/proc/", pid, "/maps"));
  for (std::string line; std::getline(maps, line);) {
    if (!absl::EndsWith(line, "[vdso]")) continue;
    uint64_t lo = 0, hi = 0;
    const std::string range = line.substr(0, line.find(' '));
    if (!absl::SimpleHexAtoi(range.substr(0, range.find('-')), &lo) ||
        !absl::SimpleHexAtoi(range.substr(range.find('-') + 1), &hi) || hi <= lo) {
      return absl::InternalError(line);
    }
    std::ifstream mem(absl::StrCat("/proc/", pid, "/mem"), std::ios::binary);
    mem.seekg(static_cast<std::streamoff>(lo));
    std::string bytes(hi - lo, '\0');
    if (!mem.read(bytes.data(), bytes.size())) return absl::InternalError("reading the vDSO");
    fs::create_directories(dir);
    std::ofstream(dir + "/linux-gate.so", std::ios::binary) << bytes;
    return absl::OkStatus();
  }
  return absl::NotFoundError("no [vdso] mapping");
}

absl::StatusOr<ThreadFrames> LldbMinidumpFrames(const std::string& minidump,
                                                const std::string& search_dir) {
  // Debian 12's lldb cannot load its Python (the embedded interpreter is
  // missing): only plain commands, with formats that print what we parse.
  // `thread backtrace` prints each thread with thread-stop-format.
  absl::StatusOr<ToolOutput> r = RunTool(
      {"lldb", "--no-lldbinit", "-b", "-O", "settings set symbols.enable-external-lookup false",
       "-O", "settings set target.exec-search-paths '" + search_dir + "'", "-O",
       "settings set thread-stop-format 'UWD-TID ${thread.id}\\n'", "-O",
       "settings set frame-format 'UWD-PC ${frame.reg.pc} ${frame.sp}\\n'", "-c", minidump,
       "-o", "thread backtrace all"},
      kTimeout);
  if (!r.ok()) return r.status();
  if (r->exit_code != 0) return absl::InternalError(Failure("lldb", *r));
  ThreadFrames frames;
  std::vector<uint64_t>* current = nullptr;
  uint64_t last_pc = 0, last_sp = 0;
  for (absl::string_view line : absl::StrSplit(r->stdout_text, '\n')) {
    absl::string_view t = absl::StripAsciiWhitespace(line);
    // The selected thread and frame are marked with "* ".
    if (absl::ConsumePrefix(&t, "* ")) t = absl::StripAsciiWhitespace(t);
    uint64_t v = 0;
    if (absl::ConsumePrefix(&t, "UWD-TID ")) {
      // ${thread.id} is hex ("0x0d94").
      if (!ParseHexPc(t, &v) || frames.count(static_cast<int64_t>(v)) != 0) {
        return absl::InternalError(absl::StrCat("lldb: bad thread line ", line));
      }
      current = &frames[static_cast<int64_t>(v)];
    } else if (absl::ConsumePrefix(&t, "UWD-PC ")) {
      std::vector<absl::string_view> pc_sp = absl::StrSplit(t, ' ');
      uint64_t sp = 0;
      if (current == nullptr || pc_sp.size() != 2 || !ParseHexPc(pc_sp[0], &v) ||
          !ParseHexPc(pc_sp[1], &sp)) {
        return absl::InternalError(absl::StrCat("lldb: bad frame line ", line));
      }
      // The frames lldb adds for functions inlined at a PC share the
      // registers (pc and sp) of the frame they were inlined into.
      if (!current->empty() && v == last_pc && sp == last_sp) continue;
      current->push_back(v);
      last_pc = v;
      last_sp = sp;
    }
  }
  if (frames.empty()) return absl::InternalError(Failure("lldb (no threads)", *r));
  return frames;
}

absl::StatusOr<UnwindMinidumpResult> UnwindMinidumpFrames(
    const std::string& unwind, const std::string& minidump,
    const std::vector<std::string>& args) {
  std::vector<std::string> argv = {unwind, "minidump", minidump};
  argv.insert(argv.end(), args.begin(), args.end());
  argv.insert(argv.end(), {"--format=json", "--max-frames=4096"});
  absl::StatusOr<ToolOutput> out = RunTool(argv, kTimeout);
  if (!out.ok()) return out.status();
  if (out->exit_code != 0) return absl::InternalError(Failure("unwind minidump", *out));
  absl::StatusOr<UnwindOutput> parsed = ParseUnwindJson(out->stdout_text);
  if (!parsed.ok()) {
    return absl::InternalError(absl::StrCat(parsed.status().message(), "\n",
                                            Failure("unwind minidump", *out)));
  }
  return UnwindMinidumpResult{*std::move(parsed), out->stdout_text, out->stderr_text};
}

std::vector<std::string> MappedFiles(pid_t pid) {
  std::ifstream maps(absl::StrCat("/proc/", pid, "/maps"));
  std::set<std::string> seen;
  std::vector<std::string> out;
  for (std::string line; std::getline(maps, line);) {
    const size_t slash = line.find('/');
    if (slash == std::string::npos) continue;
    std::string path = line.substr(slash);
    if (absl::EndsWith(path, " (deleted)")) continue;
    if (seen.insert(path).second) out.push_back(path);
  }
  return out;
}

}  // namespace unwindd::harness

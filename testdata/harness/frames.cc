#include "testdata/harness/frames.h"

#include <algorithm>
#include <set>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "testdata/harness/json.h"

namespace unwindd::harness {
namespace {

absl::Status ParseError(absl::string_view tool, int line_no,
                        absl::string_view line, absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrFormat(
      "%s output line %d: %s: \"%s\"", tool, line_no, what, line));
}

// Rows of context shown before the first difference, and rows after it.
constexpr int kContextBefore = 3;
constexpr int kRowsAfter = 12;

std::string PcColumn(const std::vector<uint64_t>& pcs, size_t i) {
  return i < pcs.size() ? absl::StrFormat("0x%016x", pcs[i]) : "-";
}

}  // namespace

bool ParseHexPc(absl::string_view text, uint64_t* out) {
  if (!absl::ConsumePrefix(&text, "0x") || text.empty() || text.size() > 16) {
    return false;
  }
  for (char c : text) {
    if (!absl::ascii_isxdigit(static_cast<unsigned char>(c))) return false;
  }
  return absl::SimpleHexAtoi(text, out);
}

absl::StatusOr<ThreadFrames> ParseEuStackOutput(absl::string_view text,
                                                SymbolNames* names) {
  ThreadFrames threads;
  std::vector<uint64_t>* current = nullptr;
  int line_no = 0;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    ++line_no;
    if (line.empty() || absl::StartsWith(line, "PID ")) continue;
    if (absl::ConsumePrefix(&line, "TID ")) {
      int64_t tid;
      if (!absl::ConsumeSuffix(&line, ":") || !absl::SimpleAtoi(line, &tid)) {
        return ParseError("eu-stack", line_no, line, "bad TID line");
      }
      if (threads.count(tid) != 0) {
        return ParseError("eu-stack", line_no, line, "duplicate TID");
      }
      current = &threads[tid];
      continue;
    }
    if (!absl::ConsumePrefix(&line, "#") || current == nullptr) {
      return ParseError("eu-stack", line_no, line, "unexpected line");
    }
    // "#3  0x000055d3c2a01234 - 1 ReadForever": the "- 1" (printed with -a)
    // says the tool looked the address up at pc-1; the PC itself is printed
    // as read.
    std::vector<absl::string_view> words =
        absl::StrSplit(line, ' ', absl::SkipEmpty());
    size_t index;
    uint64_t pc;
    if (words.size() < 2 || !absl::SimpleAtoi(words[0], &index) ||
        index != current->size() || !ParseHexPc(words[1], &pc)) {
      return ParseError("eu-stack", line_no, line, "bad frame line");
    }
    current->push_back(pc);
    size_t name_start = 2;
    if (words.size() >= 4 && words[2] == "-" && words[3] == "1") name_start = 4;
    if (names != nullptr && words.size() > name_start) {
      (*names)[pc] =
          absl::StrJoin(words.begin() + name_start, words.end(), " ");
    }
  }
  return threads;
}

absl::StatusOr<ThreadFrames> ParseGdbOutput(absl::string_view text) {
  ThreadFrames threads;
  std::vector<uint64_t>* current = nullptr;
  bool ended = false;
  int line_no = 0;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    ++line_no;
    if (!absl::StartsWith(line, "UWD-")) continue;  // gdb's own messages.
    if (ended) return ParseError("gdb", line_no, line, "line after UWD-END");
    if (line == "UWD-END") {
      ended = true;
    } else if (absl::ConsumePrefix(&line, "UWD-TID ")) {
      int64_t tid;
      if (!absl::SimpleAtoi(line, &tid) || threads.count(tid) != 0) {
        return ParseError("gdb", line_no, line, "bad or duplicate TID");
      }
      current = &threads[tid];
    } else if (absl::ConsumePrefix(&line, "UWD-PC ")) {
      uint64_t pc;
      if (current == nullptr || !ParseHexPc(line, &pc)) {
        return ParseError("gdb", line_no, line, "bad PC line");
      }
      current->push_back(pc);
    } else {
      return ParseError("gdb", line_no, line, "unknown UWD- line");
    }
  }
  if (!ended) {
    return absl::InvalidArgumentError(
        "gdb output has no UWD-END line: the frame script did not finish");
  }
  return threads;
}

ThreadFrames UnwindOutput::Pcs() const {
  ThreadFrames out;
  for (const auto& [tid, thread] : threads) {
    std::vector<uint64_t>& pcs = out[tid];
    for (const UnwindFrame& f : thread.frames) pcs.push_back(f.pc);
  }
  return out;
}

std::string UnwindOutput::Describe() const {
  std::string out;
  for (const auto& [tid, thread] : threads) {
    absl::StrAppend(&out, "  tid ", tid, ": stop=", thread.stop, ", ",
                    thread.frames.size(), " frames, methods:");
    for (const UnwindFrame& f : thread.frames) {
      absl::StrAppend(&out, " ", f.method);
    }
    absl::StrAppend(&out, "\n");
  }
  return out;
}

absl::StatusOr<UnwindOutput> ParseUnwindJson(absl::string_view text) {
  absl::StatusOr<JsonValue> doc = ParseJson(text);
  if (!doc.ok()) return doc.status();
  auto bad = [](absl::string_view what) {
    return absl::InvalidArgumentError(absl::StrCat("unwind JSON: ", what));
  };
  const JsonValue* threads = doc->Find("threads");
  if (threads == nullptr || !threads->is_array()) {
    return bad("no \"threads\" array");
  }
  UnwindOutput out;
  for (const JsonValue& t : threads->elements()) {
    const JsonValue* tid = t.Find("tid");
    const JsonValue* stop = t.Find("stop");
    const JsonValue* frames = t.Find("frames");
    if (tid == nullptr || !tid->AsInt64().has_value()) {
      return bad("thread without an integer \"tid\"");
    }
    if (stop == nullptr || !stop->is_string()) {
      return bad(absl::StrCat("thread ", *tid->AsInt64(), ": no \"stop\""));
    }
    if (frames == nullptr || !frames->is_array()) {
      return bad(absl::StrCat("thread ", *tid->AsInt64(), ": no \"frames\""));
    }
    if (out.threads.count(*tid->AsInt64()) != 0) {
      return bad(absl::StrCat("duplicate tid ", *tid->AsInt64()));
    }
    UnwindThread& thread = out.threads[*tid->AsInt64()];
    thread.stop = stop->text();
    for (const JsonValue& f : frames->elements()) {
      UnwindFrame frame;
      const JsonValue* pc = f.Find("pc");
      if (pc == nullptr || !pc->is_string() ||
          !ParseHexPc(pc->text(), &frame.pc)) {
        return bad(absl::StrCat("thread ", *tid->AsInt64(), " frame ",
                                thread.frames.size(), ": bad \"pc\""));
      }
      if (const JsonValue* sp = f.Find("sp"); sp != nullptr) {
        if (!sp->is_string() || !ParseHexPc(sp->text(), &frame.sp)) {
          return bad(absl::StrCat("thread ", *tid->AsInt64(), " frame ",
                                  thread.frames.size(), ": bad \"sp\""));
        }
      }
      for (auto [key, field] : {std::pair{"method", &frame.method},
                                std::pair{"module", &frame.module},
                                std::pair{"rel_pc", &frame.rel_pc}}) {
        const JsonValue* v = f.Find(key);
        if (v == nullptr) continue;
        if (!v->is_string()) {
          return bad(absl::StrCat("\"", key, "\" not a string"));
        }
        *field = v->text();
      }
      thread.frames.push_back(std::move(frame));
    }
  }
  return out;
}

ThreadFrames ApplyI386EuStackRule(const ThreadFrames& full,
                                  const ThreadFrames& eu_stack,
                                  const SymbolNames& names, int* cut) {
  ThreadFrames out = full;
  int n = 0;
  for (auto& [tid, pcs] : out) {
    auto eu = eu_stack.find(tid);
    if (eu == eu_stack.end() || eu->second.empty() ||
        eu->second.size() >= pcs.size() ||
        !std::equal(eu->second.begin(), eu->second.end(), pcs.begin())) {
      continue;
    }
    auto name = names.find(eu->second.back());
    if (name == names.end() || name->second != "main") continue;
    pcs.resize(eu->second.size());
    ++n;
  }
  if (cut != nullptr) *cut = n;
  return out;
}

Comparison CompareThreadFrames(absl::string_view left_name,
                               const ThreadFrames& left,
                               absl::string_view right_name,
                               const ThreadFrames& right,
                               const SymbolNames* names) {
  Comparison result;
  std::set<int64_t> tids;
  for (const auto& [tid, pcs] : left) tids.insert(tid);
  for (const auto& [tid, pcs] : right) tids.insert(tid);
  for (int64_t tid : tids) {
    ++result.threads;
    auto l = left.find(tid);
    auto r = right.find(tid);
    if (l == left.end() || r == right.end()) {
      const bool in_left = l != left.end();
      absl::StrAppendFormat(&result.diff, "thread %d: only in %s (%d frames)\n",
                            tid, in_left ? left_name : right_name,
                            in_left ? l->second.size() : r->second.size());
      continue;
    }
    const std::vector<uint64_t>& a = l->second;
    const std::vector<uint64_t>& b = r->second;
    if (a == b) {
      ++result.matched;
      continue;
    }
    const size_t rows = std::max(a.size(), b.size());
    size_t first = 0;
    while (first < a.size() && first < b.size() && a[first] == b[first]) {
      ++first;
    }
    absl::StrAppendFormat(
        &result.diff,
        "thread %d: first difference at frame %d (%s %d frames, %s %d)\n", tid,
        first, left_name, a.size(), right_name, b.size());
    absl::StrAppendFormat(&result.diff, "      %3s  %-18s  %-18s\n", "#",
                          left_name, right_name);
    const size_t begin = first > kContextBefore ? first - kContextBefore : 0;
    const size_t end = std::min(rows, first + kRowsAfter);
    if (begin > 0) {
      absl::StrAppendFormat(&result.diff, "      ... %d equal frames\n", begin);
    }
    for (size_t i = begin; i < end; ++i) {
      const bool same = i < a.size() && i < b.size() && a[i] == b[i];
      std::string name;
      if (names != nullptr) {
        for (const std::vector<uint64_t>* side : {&a, &b}) {
          auto it = i < side->size() ? names->find((*side)[i]) : names->end();
          if (it != names->end()) {
            name = it->second;
            break;
          }
        }
      }
      absl::StrAppendFormat(&result.diff, "  %s %3d  %-18s  %-18s  %s\n",
                            i == first ? ">" : (same ? " " : "!"), i,
                            PcColumn(a, i), PcColumn(b, i), name);
    }
    if (end < rows) {
      absl::StrAppendFormat(&result.diff, "      ... %d more frames\n",
                            rows - end);
    }
  }
  return result;
}

int CountMatchedBoth(const ThreadFrames& ours, const ThreadFrames& ours_for_eu,
                     const ThreadFrames& eu_stack, const ThreadFrames& gdb) {
  int matched = 0;
  for (const auto& [tid, frames] : ours) {
    auto e = eu_stack.find(tid);
    auto g = gdb.find(tid);
    auto f = ours_for_eu.find(tid);
    if (e != eu_stack.end() && g != gdb.end() && f != ours_for_eu.end() &&
        e->second == f->second && g->second == frames) {
      ++matched;
    }
  }
  return matched;
}

}  // namespace unwindd::harness

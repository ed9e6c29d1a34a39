#include "service/cli/output.h"

#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "gtest/gtest.h"

namespace unwindd::service {
namespace {

unwinder::ProcessStacks Sample() {
  unwinder::ProcessStacks s;
  s.pid = 42;
  s.modules.push_back({"/lib/libc.so.6", "abcd", 0x7f0000000000, 0x7f0000100000,
                       0x7f0000000000});
  unwinder::ThreadStack t;
  t.tid = 42;
  t.stop = unwinder::StopReason::kEndOfStack;
  t.frames.push_back({0x7f0000001234, 0x7ffd0000, unwinder::Method::kInitial, 0,
                      0x1234, 0x1234});
  t.frames.push_back({0x401000, 0x7ffd0100, unwinder::Method::kEhFrame, -1, 0});
  s.threads.push_back(t);
  unwinder::ThreadStack gone;
  gone.tid = 43;
  gone.stop = unwinder::StopReason::kThreadGone;
  gone.stop_detail = "thread \"43\" has exited";
  s.threads.push_back(gone);
  return s;
}

TEST(OutputTest, Json) {
  EXPECT_EQ(FormatJson(Sample()),
            "{\"threads\": [\n"
            "  {\"tid\": 42, \"stop\": \"end_of_stack\", \"frames\": [\n"
            "    {\"pc\": \"0x7f0000001234\", \"sp\": \"0x7ffd0000\", "
            "\"method\": \"initial\", \"module\": \"/lib/libc.so.6\", "
            "\"build_id\": \"abcd\", \"rel_pc\": \"0x1234\", \"file_offset\": \"0x1234\"},\n"
            "    {\"pc\": \"0x401000\", \"sp\": \"0x7ffd0100\", \"method\": "
            "\"eh_frame\"}]},\n"
            "  {\"tid\": 43, \"stop\": \"thread_gone\", \"stop_detail\": "
            "\"thread \\\"43\\\" has exited\", \"frames\": []}\n"
            "]}\n");
}

TEST(OutputTest, JsonEmpty) {
  EXPECT_EQ(FormatJson(unwinder::ProcessStacks{}), "{\"threads\": []}\n");
}

TEST(OutputTest, Text) {
  EXPECT_EQ(FormatText(Sample()),
            "PID 42 - process\n"
            "TID 42:\n"
            "#0  0x00007f0000001234 /lib/libc.so.6+0x1234 [initial]\n"
            "#1  0x0000000000401000 [eh_frame]\n"
            "stop: end_of_stack\n"
            "TID 43:\n"
            "stop: thread_gone (thread \"43\" has exited)\n");
}

TEST(OutputTest, JsonStringEscapes) {
  EXPECT_EQ(JsonString("a\"b\\c\n\x01"), "\"a\\\"b\\\\c\\n\\u0001\"");
}

// What `unwind core` adds: the "core" object, a thread's signal, and per
// frame the state of the module's file.
unwinder::ProcessStacks CoreSample() {
  unwinder::ProcessStacks s;
  s.pid = 7;
  unwinder::ModuleInfo missing{"/opt/app", "aa", 0x400000, 0x401000, 0};
  missing.bias_known = false;
  missing.error = "/opt/app not found (tried /sr/opt/app)";
  s.modules.push_back(missing);
  unwinder::ModuleInfo wrong{"/lib/libc.so.6", "bb", 0x7f0000000000,
                             0x7f0000100000, 0x7f0000000000};
  wrong.mismatch = true;
  wrong.error = "build-id mismatch";
  wrong.file = "/sr/lib/libc.so.6";
  s.modules.push_back(wrong);
  unwinder::ThreadStack t;
  t.tid = 7;
  t.signal = proc::SignalInfo{.number = 11, .code = 1, .fault_address = 0};
  t.frames.push_back({0x400010, 0x7ffd0000, unwinder::Method::kInitial, 0, 0, 0x10});
  t.frames.push_back({0x7f0000000020, 0x7ffd0010, unwinder::Method::kEhFrame, 1,
                      0x20, 0x20});
  s.threads.push_back(t);
  return s;
}

CoreSummary Summary() {
  CoreSummary c;
  c.core = "core.zst";
  c.compression = "zstd";
  c.executable = "/opt/app";
  c.modules_from = "nt_file";
  c.files.push_back({"/opt/app", "missing", "", "aa", ""});
  c.files.push_back({"/lib/libc.so.6", "mismatch", "/sr/lib/libc.so.6", "bb", "cc"});
  c.warnings.push_back("core.zst is truncated");
  return c;
}

TEST(OutputTest, CoreJson) {
  CoreSummary c = Summary();
  EXPECT_EQ(
      FormatJson(CoreSample(), &c),
      "{\"core\": {\"file\": \"core.zst\", \"compression\": \"zstd\", "
      "\"executable\": \"/opt/app\", \"modules_from\": \"nt_file\", \"files\": [\n"
      "    {\"path\": \"/opt/app\", \"state\": \"missing\", \"build_id\": \"aa\"},\n"
      "    {\"path\": \"/lib/libc.so.6\", \"state\": \"mismatch\", \"file\": "
      "\"/sr/lib/libc.so.6\", \"build_id\": \"bb\", \"file_build_id\": \"cc\"}], "
      "\"warnings\": [\n    \"core.zst is truncated\"]},\n"
      " \"threads\": [\n"
      "  {\"tid\": 7, \"stop\": \"end_of_stack\", \"signal\": {\"number\": 11, "
      "\"name\": \"SIGSEGV\", \"code\": 1, \"code_name\": \"SEGV_MAPERR\", "
      "\"fault_address\": \"0x0\"}, \"frames\": [\n"
      "    {\"pc\": \"0x400010\", \"sp\": \"0x7ffd0000\", \"method\": \"initial\", "
      "\"module\": \"/opt/app\", \"build_id\": \"aa\", \"file_offset\": \"0x10\", \"module_error\": "
      "\"/opt/app not found (tried /sr/opt/app)\"},\n"
      "    {\"pc\": \"0x7f0000000020\", \"sp\": \"0x7ffd0010\", \"method\": "
      "\"eh_frame\", \"module\": \"/lib/libc.so.6\", \"build_id\": \"bb\", "
      "\"rel_pc\": \"0x20\", \"file_offset\": \"0x20\", \"file\": \"/sr/lib/libc.so.6\", \"module_mismatch\": "
      "true, \"module_error\": \"build-id mismatch\"}]}\n"
      "]}\n");
}

TEST(OutputTest, CoreText) {
  CoreSummary c = Summary();
  EXPECT_EQ(FormatText(CoreSample(), &c),
            "PID 7 - core\n"
            "core: core.zst (zstd), executable /opt/app, modules from nt_file\n"
            "missing: /opt/app\n"
            "mismatch: /lib/libc.so.6: /sr/lib/libc.so.6 has build-id cc, the "
            "core recorded bb\n"
            "TID 7:\n"
            "signal: SIGSEGV (SEGV_MAPERR) fault address 0x0\n"
            "#0  0x0000000000400010 /opt/app [initial] (no file)\n"
            "#1  0x00007f0000000020 /lib/libc.so.6+0x20 [eh_frame] (build-id "
            "mismatch)\n"
            "stop: end_of_stack\n");
}

// The text's hex numbers, at every length, as "%x" and "%016x" print them.
TEST(OutputTest, HexOfEveryLength) {
  unwinder::ProcessStacks s;
  s.modules.push_back({"/m", "", 0, ~uint64_t{0}, 0});
  unwinder::ThreadStack t;
  t.tid = 1;
  std::string want = "TID 1:\n";
  uint64_t v = 0;
  for (int i = 0; i <= 16; ++i) {
    t.frames.push_back({v, 0, unwinder::Method::kEhFrame, 0, v, v});
    want += absl::StrFormat("#%-2d 0x%016x /m+0x%x [eh_frame]\n", i, v, v);
    v = (v << 4) | (0xf - i % 16);
  }
  s.threads.push_back(t);
  want += "stop: end_of_stack\n";
  EXPECT_EQ(FormatText(s), want);
}

// A deep stack's text, written in pieces as it is made: the pieces in order
// are the whole text, each ends a line, and there is more than one.
TEST(OutputTest, PiecesAreTheWholeTextInLines) {
  unwinder::ProcessStacks s = Sample();
  for (int t = 0; t < 3; ++t) {
    unwinder::ThreadStack deep;
    deep.tid = 100 + t;
    for (uint64_t i = 0; i < 700; ++i) {
      deep.frames.push_back({0x7f0000001000 + i, 0x7ffd0000 + 64 * i, unwinder::Method::kEhFrame,
                             0, 0x1000 + i, 0x1000 + i});
    }
    s.threads.push_back(deep);
  }
  const OutputExtras extras;
  for (bool json : {false, true}) {
    std::vector<std::string> pieces;
    auto emit = [&pieces](absl::string_view p) { pieces.emplace_back(p); };
    if (json) {
      WriteJson(s, extras, emit);
    } else {
      WriteText(s, extras, emit);
    }
    std::string whole;
    for (const std::string& p : pieces) {
      ASSERT_FALSE(p.empty());
      EXPECT_LE(p.size(), 20u << 10);
      whole += p;
    }
    EXPECT_EQ(whole, json ? FormatJson(s, extras) : FormatText(s, extras));
    EXPECT_GT(pieces.size(), 3u) << (json ? "json" : "text");
    // Every piece but the last ends inside the frame lists, after a line.
    for (size_t i = 0; i + 1 < pieces.size(); ++i) {
      EXPECT_EQ(pieces[i].back(), json ? '}' : '\n') << i;
    }
  }
}

}  // namespace
}  // namespace unwindd::service

// --debug-dir, --debuginfod, --symbols on the command line, and what the
// output says about files and debug information found elsewhere.
#include "gtest/gtest.h"
#include "service/cli/args.h"
#include "service/cli/output.h"

namespace unwindd::service {
namespace {

absl::StatusOr<Command> Parse(std::vector<absl::string_view> args) {
  return ParseCommandLine(args);
}

TEST(CliBinariesTest, Flags) {
  absl::StatusOr<Command> c = Parse({"core", "c", "--debug-dir=/a", "--debug-dir=/b",
                                     "--debuginfod=http://x:1", "--debuginfod=http://y",
                                     "--debuginfod-timeout=5",
                                     "--debuginfod-max-bytes=1000", "--symbols"});
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->debug_dirs, (std::vector<std::string>{"/a", "/b"}));
  EXPECT_EQ(c->debuginfod_urls, "http://x:1 http://y");
  EXPECT_EQ(c->debuginfod_timeout_s, 5);
  EXPECT_EQ(c->debuginfod_max_bytes, 1000u);
  EXPECT_TRUE(c->symbols);
  c = Parse({"pid", "1", "--no-debuginfod", "--symbols"});
  ASSERT_TRUE(c.ok());
  EXPECT_TRUE(c->no_debuginfod);
  EXPECT_TRUE(c->debug_dirs.empty());
  EXPECT_EQ(c->debuginfod_timeout_s, 30);
}

TEST(CliBinariesTest, Misuse) {
  for (std::vector<absl::string_view> bad :
       {std::vector<absl::string_view>{"pid", "1", "--debug-dir="},
        {"pid", "1", "--debuginfod="},
        {"pid", "1", "--debuginfod=http://x", "--no-debuginfod"},
        {"pid", "1", "--debuginfod-timeout=0"},
        {"pid", "1", "--debuginfod-max-bytes=-1"},
        {"check-sframe", "/bin/true", "--symbols"},
        {"check-sframe", "/bin/true", "--debug-dir=/x"}}) {
    EXPECT_TRUE(absl::IsInvalidArgument(Parse(bad).status())) << bad.back();
  }
}

unwinder::ProcessStacks Fetched() {
  unwinder::ProcessStacks s;
  s.pid = 7;
  unwinder::ModuleInfo m{"/srv/app", "b349", 0x1000, 0x5000, 0x1000};
  m.file = "/c/debuginfod_client/b349/executable";
  m.file_origin = "debuginfod";
  m.fetched = true;
  m.debug_file = "/c/debuginfod_client/b349/debuginfo";
  m.debug_kind = "debug";
  m.debug_fetched = true;
  s.modules.push_back(m);
  unwinder::ModuleInfo mini{"/lib/x.so", "77", 0x9000, 0xa000, 0x9000};
  mini.debug_kind = "minidebuginfo";
  s.modules.push_back(mini);
  unwinder::ThreadStack t;
  t.tid = 7;
  t.frames.push_back({0x1234, 0x10, unwinder::Method::kInitial, 0, 0x234, 0x1234});
  t.frames.push_back({0x9100, 0x20, unwinder::Method::kDebugFrame, 1, 0x100, 0x2100});
  s.threads.push_back(t);
  return s;
}

TEST(CliBinariesTest, JsonSaysWhereFilesCameFromAndNamesFrames) {
  FrameSymbols sym = {{"main+0x4", ""}};
  EXPECT_EQ(FormatJson(Fetched(), nullptr, &sym),
            "{\"threads\": [\n"
            "  {\"tid\": 7, \"stop\": \"end_of_stack\", \"frames\": [\n"
            "    {\"pc\": \"0x1234\", \"sp\": \"0x10\", \"method\": \"initial\", "
            "\"module\": \"/srv/app\", \"build_id\": \"b349\", \"rel_pc\": \"0x234\", "
            "\"file_offset\": \"0x1234\", \"file\": \"/c/debuginfod_client/b349/executable\", \"fetched\": true, "
            "\"debug_file\": \"/c/debuginfod_client/b349/debuginfo\", "
            "\"debug_kind\": \"debug\", \"debug_fetched\": true, "
            "\"symbol\": \"main+0x4\"},\n"
            "    {\"pc\": \"0x9100\", \"sp\": \"0x20\", \"method\": \"debug_frame\", "
            "\"module\": \"/lib/x.so\", \"build_id\": \"77\", \"rel_pc\": \"0x100\", "
            "\"file_offset\": \"0x2100\", \"debug_file\": \"[.gnu_debugdata]\", \"debug_kind\": "
            "\"minidebuginfo\"}]}\n"
            "]}\n");
  // Without --symbols, no "symbol".
  EXPECT_EQ(FormatJson(Fetched()).find("symbol"), std::string::npos);
}

TEST(CliBinariesTest, TextPutsTheSymbolAfterThePcAsEuStackDoes) {
  FrameSymbols sym = {{"main+0x4", ""}};
  EXPECT_EQ(FormatText(Fetched(), nullptr, &sym),
            "PID 7 - process\n"
            "TID 7:\n"
            "#0  0x0000000000001234 main+0x4 /srv/app+0x234 [initial]\n"
            "#1  0x0000000000009100 /lib/x.so+0x100 [debug_frame]\n"
            "stop: end_of_stack\n");
}

}  // namespace
}  // namespace unwindd::service

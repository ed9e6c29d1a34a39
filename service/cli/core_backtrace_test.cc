#include "service/cli/core_backtrace.h"

#include "gtest/gtest.h"
#include "testdata/harness/json.h"

namespace unwindd::service {
namespace {

using harness::JsonValue;

// The member `key` of an object (a null value when absent).
const JsonValue& At(const JsonValue& v, absl::string_view key) {
  static const JsonValue* const kNull = new JsonValue(JsonValue::Null());
  const JsonValue* f = v.Find(key);
  return f != nullptr ? *f : *kNull;
}
int64_t Int(const JsonValue& v) { return v.AsInt64().value_or(-1); }

unwinder::ProcessStacks Stacks() {
  unwinder::ProcessStacks s;
  unwinder::ModuleInfo exe;
  exe.path = "/usr/bin/app";
  exe.build_id = "8b82031fbc977eff9d4918b45f8d9c09972892e7";
  exe.start = 0x555500000000;
  s.modules = {exe};
  unwinder::ThreadStack t;
  t.tid = 7;
  t.signal = proc::SignalInfo{.number = 6, .code = -6};
  unwinder::Frame a;
  a.pc = 0x555500001234;
  a.module = 0;
  unwinder::Frame b;
  b.pc = 0x7f0000000010;  // no module
  t.frames = {a, b};
  unwinder::ThreadStack other;
  other.tid = 8;
  s.threads = {other, t};
  return s;
}

TEST(CoreBacktraceTest, WritesSatyrsCoreBacktraceJson) {
  const unwinder::ProcessStacks s = Stacks();
  const CrashSignature sig = ComputeSignature(s);
  const std::string out = FormatCoreBacktrace(s, "/usr/bin/app", sig, nullptr);
  absl::StatusOr<harness::JsonValue> v = harness::ParseJson(out);
  ASSERT_TRUE(v.ok()) << v.status() << "\n" << out;
  EXPECT_EQ(Int(At(*v, "signal")), 6);
  EXPECT_EQ(At(*v, "executable").text(), "/usr/bin/app");
  EXPECT_EQ(At(*v, "duphash").text(), sig.duphash);
  const std::vector<JsonValue>& threads = At(*v, "stacktrace").elements();
  ASSERT_EQ(threads.size(), 2u);
  EXPECT_EQ(threads[0].Find("crash_thread"), nullptr);
  EXPECT_TRUE(At(threads[1], "crash_thread").bool_value());
  EXPECT_EQ(Int(At(threads[1], "tid")), 7);
  const std::vector<JsonValue>& frames = At(threads[1], "frames").elements();
  ASSERT_EQ(frames.size(), 2u);
  // Decimal numbers, as satyr writes them.
  EXPECT_EQ(Int(At(frames[0], "address")), 0x555500001234);
  EXPECT_EQ(At(frames[0], "build_id").text(), "8b82031fbc977eff9d4918b45f8d9c09972892e7");
  EXPECT_EQ(Int(At(frames[0], "build_id_offset")), 0x1234);
  EXPECT_EQ(frames[0].Find("function_name"), nullptr);
  EXPECT_EQ(frames[0].Find("file_name"), nullptr);
  // Outside every module: the address is also the offset (satyr's
  // resolve_frame), and there is no build_id.
  EXPECT_EQ(frames[1].Find("build_id"), nullptr);
  EXPECT_EQ(Int(At(frames[1], "build_id_offset")), 0x7f0000000010);
}

TEST(CoreBacktraceTest, SymbolsAddFunctionAndFileNames) {
  const unwinder::ProcessStacks s = Stacks();
  const FrameSymbols symbols = {{}, {"crash_here+0x1e", ""}};
  const std::string out = FormatCoreBacktrace(s, "", ComputeSignature(s), &symbols);
  absl::StatusOr<harness::JsonValue> v = harness::ParseJson(out);
  ASSERT_TRUE(v.ok()) << v.status() << "\n" << out;
  EXPECT_EQ(v->Find("executable"), nullptr);
  const JsonValue& f = At(At(*v, "stacktrace").elements()[1], "frames").elements()[0];
  EXPECT_EQ(At(f, "function_name").text(), "crash_here");
  EXPECT_EQ(At(f, "file_name").text(), "/usr/bin/app");
}

TEST(CoreBacktraceTest, FunctionNameDropsTheOffset) {
  EXPECT_EQ(FunctionName("main+0x1e"), "main");
  EXPECT_EQ(FunctionName("operator+(A, B)+0x4"), "operator+(A, B)");
  EXPECT_EQ(FunctionName("plain"), "plain");
}

}  // namespace
}  // namespace unwindd::service

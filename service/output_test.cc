#include "service/output.h"

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
                      0x1234});
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
            "\"build_id\": \"abcd\", \"rel_pc\": \"0x1234\"},\n"
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

}  // namespace
}  // namespace unwindd::service

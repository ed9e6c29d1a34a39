#include "proc/minidump/writer.h"

#include <sys/mman.h>
#include <unistd.h>

#include <map>

#include "absl/strings/match.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "memory/testing/map_memory.h"
#include "proc/minidump/context.h"
#include "proc/minidump/format.h"
#include "proc/minidump/reader.h"

namespace unwindd::proc::minidump {
namespace {

using ::testing::ElementsAre;

// A target of two threads over a MapMemory: thread 10 crashed with SIGSEGV.
class FakeTarget : public Target {
 public:
  // `alt_stack`: thread 11 runs a signal handler on a 1 MiB alternate
  // stack; the code it interrupted is on its own stack.
  explicit FakeTarget(bool alt_stack = false) : alt_stack_(alt_stack) {
    Mapping exe;
    exe.start = 0x400000;
    exe.end = 0x402000;
    exe.read = exe.exec = true;
    exe.path = "/opt/app/prog";
    Mapping exe_data = exe;
    exe_data.start = 0x402000;
    exe_data.end = 0x403000;
    exe_data.offset = 0x2000;
    exe_data.exec = false;
    exe_data.write = true;
    Mapping bss;  // anonymous, between two mappings of one file
    bss.start = 0x403000;
    bss.end = 0x404000;
    Mapping exe_tail = exe_data;
    exe_tail.start = 0x404000;
    exe_tail.end = 0x405000;
    exe_tail.offset = 0x3000;
    Mapping stack;
    stack.start = 0x7ff00000;
    stack.end = 0x7ff10000;
    stack.read = stack.write = true;
    stack.path = "[stack]";
    Mapping vdso;
    vdso.start = 0x7fff0000;
    vdso.end = 0x7fff1000;
    vdso.read = vdso.exec = true;
    vdso.path = "[vdso]";
    Mapping alt;
    alt.start = 0x60000000;
    alt.end = 0x60100000;
    alt.read = alt.write = true;
    maps_ = {alt, exe, exe_data, bss, exe_tail, stack, vdso};
    for (uint64_t a = 0x60000000; a < 0x60010000; a += 8) mem_.PutLe(a, a, 8);
    for (uint64_t a = 0x7ff00000; a < 0x7ff10000; a += 8) mem_.PutLe(a, a, 8);
    for (uint64_t a = 0x400000; a < 0x400400; a += 8) mem_.PutLe(a, ~a, 8);
    mem_.Put(0x7fff0000, std::vector<uint8_t>(0x1000, 0x77));
  }
  arch::Arch arch() const override { return arch::Arch::kX86_64; }
  pid_t pid() const override { return 10; }
  std::vector<pid_t> Threads() const override { return {10, 11, 12}; }
  absl::StatusOr<arch::RegisterSet> InitialRegisters(pid_t tid) override {
    if (tid == 12) return absl::NotFoundError("thread 12 is gone");
    arch::RegisterSet r(arch::Arch::kX86_64);
    // Thread 10 crashed in the vDSO: its PC's bytes overlap the vDSO image.
    r.set_pc(tid == 10 ? 0x7fff0800 : 0x400200);
    r.set_sp(tid == 10 ? 0x7ff0f000 : alt_stack_ ? 0x60000100 : 0x7ff08000);
    r.Set(3, 0x3333 + tid);
    return r;
  }
  memory::Memory& memory() override { return mem_; }
  const std::vector<Mapping>& mappings() const override { return maps_; }
  std::vector<std::string> FileCandidates(const Mapping& m) const override { return {}; }
  std::optional<SignalInfo> ThreadSignal(pid_t tid) const override {
    if (tid != 10) return std::nullopt;
    return SignalInfo{.number = 11, .code = 1, .fault_address = 0xdead};
  }
  std::string RecordedBuildId(const Mapping& m) const override {
    return m.path == "/opt/app/prog" ? "0011223344556677" : "";
  }

 private:
  bool alt_stack_;
  std::vector<Mapping> maps_;
  memory::testing::MapMemory mem_;
};

MinidumpFile Read(const std::vector<uint8_t>& bytes) {
  auto fd = std::make_shared<memory::ScopedFd>(memfd_create("md", MFD_CLOEXEC));
  EXPECT_EQ(write(fd->get(), bytes.data(), bytes.size()),
            static_cast<ssize_t>(bytes.size()));
  absl::StatusOr<MinidumpFile> f = MinidumpFile::Read(fd, bytes.size(), "w.dmp");
  EXPECT_TRUE(f.ok()) << f.status();
  return *std::move(f);
}

TEST(MinidumpWriterTest, ThreadsStacksModulesExceptionAndStreams) {
  FakeTarget target;
  ProcessInfo info;
  info.command_line = std::string("prog\0-x\0", 8);
  info.os = "Linux 6.1.0 #1 SMP x86_64";
  MinidumpWriteResult result;
  absl::StatusOr<std::vector<uint8_t>> bytes =
      BuildMinidump(target, info, {.max_stack_bytes = 0x400}, &result);
  ASSERT_TRUE(bytes.ok()) << bytes.status();
  EXPECT_EQ(result.bytes, bytes->size());
  EXPECT_EQ(result.threads, 2u);
  ASSERT_EQ(result.warnings.size(), 1u);
  EXPECT_THAT(result.warnings[0], ::testing::HasSubstr("thread 12 left out"));
  // Both stacks were cut at 0x400 bytes (plus the red zone below SP).
  EXPECT_EQ(result.truncated_stacks, 2u);
  EXPECT_EQ(result.stack_bytes, 2u * (0x400 + 128));

  const MinidumpFile f = Read(*bytes);
  ASSERT_EQ(f.threads().size(), 2u);
  EXPECT_EQ(f.threads()[0].tid, 10u);
  EXPECT_EQ(f.threads()[0].stack.start, 0x7ff0f000u - 128);
  EXPECT_EQ(f.threads()[0].stack.size, 0x400u + 128);
  absl::StatusOr<std::vector<uint8_t>> ctx =
      f.ReadLocation(f.threads()[1].context, kMaxContextBytes);
  ASSERT_TRUE(ctx.ok());
  absl::StatusOr<arch::RegisterSet> regs = ParseContext(*ctx, arch::Arch::kX86_64);
  ASSERT_TRUE(regs.ok()) << regs.status();
  EXPECT_EQ(regs->pc(), 0x400200u);
  EXPECT_EQ(regs->Get(3), 0x3333u + 11);

  // One module per file (its anonymous .bss gap included), the vDSO under
  // Breakpad's name, build-ids in 'BpEL' records.
  ASSERT_EQ(f.modules().size(), 2u);
  EXPECT_EQ(f.modules()[0].name, "/opt/app/prog");
  EXPECT_EQ(f.modules()[0].base, 0x400000u);
  EXPECT_EQ(f.modules()[0].size, 0x5000u);
  EXPECT_EQ(f.modules()[0].build_id, "0011223344556677");
  EXPECT_EQ(f.modules()[1].name, "linux-gate.so");

  // Memory: the stacks, the vDSO image, and 256 bytes around the crashing
  // PC, which lie inside the vDSO's and so are left out: ranges may not
  // overlap.
  std::vector<uint64_t> starts;
  uint64_t end = 0;
  for (const MemoryRange& r : f.memory()) {
    EXPECT_GE(r.start, end) << "overlapping memory ranges";
    end = r.start + r.size;
    starts.push_back(r.start);
  }
  EXPECT_THAT(starts, ElementsAre(0x7ff08000u - 128, 0x7ff0f000u - 128, 0x7fff0000u));

  ASSERT_TRUE(f.exception().has_value());
  EXPECT_EQ(f.exception()->tid, 10u);
  EXPECT_EQ(f.exception()->code, 11u);
  EXPECT_EQ(f.exception()->flags, 1u);
  EXPECT_EQ(f.exception()->address, 0xdeadu);
  EXPECT_EQ(f.exception()->context.rva, f.threads()[0].context.rva);
  ASSERT_TRUE(f.system_info().has_value());
  EXPECT_EQ(f.system_info()->cpu_architecture, kCpuAmd64);
  EXPECT_EQ(f.system_info()->csd_version, "Linux 6.1.0 #1 SMP x86_64");
  EXPECT_EQ(f.process_id(), 10u);
  EXPECT_EQ(*f.linux_streams().cmdline, info.command_line);
  ASSERT_TRUE(f.linux_streams().maps.has_value());
  EXPECT_TRUE(absl::StrContains(*f.linux_streams().maps,
                                "00402000-00403000 rw-p 00002000 00:00 0 /opt/app/prog"))
      << *f.linux_streams().maps;
  EXPECT_FALSE(f.linux_streams().environ.has_value());
  EXPECT_TRUE(f.warnings().empty());
}

TEST(MinidumpWriterTest, StacksStopAtTheirMappingAndAtUnreadableBytes) {
  FakeTarget target;
  MinidumpWriteResult result;
  absl::StatusOr<std::vector<uint8_t>> bytes =
      BuildMinidump(target, {}, {.max_stack_bytes = 1 << 20}, &result);
  ASSERT_TRUE(bytes.ok()) << bytes.status();
  EXPECT_EQ(result.truncated_stacks, 0u);
  const MinidumpFile f = Read(*bytes);
  EXPECT_EQ(f.threads()[0].stack.start + f.threads()[0].stack.size, 0x7ff10000u);
  absl::StatusOr<std::vector<uint8_t>> stack = f.ReadLocation(
      {static_cast<uint32_t>(f.threads()[0].stack.size),
       static_cast<uint32_t>(f.threads()[0].stack.file_offset)},
      1 << 20);
  ASSERT_TRUE(stack.ok());
  EXPECT_EQ(LoadU64(*stack, 128), 0x7ff0f000u);  // the word at SP
}

bool Holds(const MinidumpFile& f, uint64_t addr) {
  for (const MemoryRange& r : f.memory()) {
    if (addr >= r.start && addr - r.start < r.size) return true;
  }
  return false;
}

TEST(MinidumpWriterTest, FramesOnAnotherStackBringThatStackToo) {
  FakeTarget target(/*alt_stack=*/true);
  MinidumpWriteResult result;
  // Without the frames, the alternate stack alone uses the whole budget.
  absl::StatusOr<std::vector<uint8_t>> bytes =
      BuildMinidump(target, {}, {.max_stack_bytes = 0x8000}, &result);
  ASSERT_TRUE(bytes.ok()) << bytes.status();
  EXPECT_TRUE(Holds(Read(*bytes), 0x60000100 + 0x7f00));
  EXPECT_FALSE(Holds(Read(*bytes), 0x7ff08100));

  // With them (the handler's on the alternate stack, then the interrupted
  // code's on the thread's stack), both stacks, within the same budget.
  MinidumpWriteOptions options{.max_stack_bytes = 0x8000};
  options.frames[11] = {{0x400200, 0x60000100}, {0x400210, 0x60000180},
                        {0x400220, 0x7ff08000}, {0x400230, 0x7ff08100}};
  bytes = BuildMinidump(target, {}, options, &result);
  ASSERT_TRUE(bytes.ok()) << bytes.status();
  const MinidumpFile f = Read(*bytes);
  EXPECT_TRUE(Holds(f, 0x60000100 - 128));
  EXPECT_TRUE(Holds(f, 0x7ff08000 - 128));
  EXPECT_TRUE(Holds(f, 0x7ff08100 + 0x1000));
  EXPECT_EQ(f.threads()[1].stack.start, 0x60000100u - 128);
  EXPECT_LE(result.stack_bytes, 2u * (0x8000 + 2 * 128));
}

TEST(MinidumpWriterTest, RefusesAStackBoundPastTheLimit) {
  FakeTarget target;
  MinidumpWriteResult result;
  EXPECT_TRUE(absl::IsInvalidArgument(
      BuildMinidump(target, {}, {.max_stack_bytes = kMaxStackBytesLimit + 1}, &result)
          .status()));
}

}  // namespace
}  // namespace unwindd::proc::minidump

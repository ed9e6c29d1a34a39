// JIT code as modules: the ELF image proc/jit/genelf builds for a jitdump's
// code is opened by Module like a file, and its rows are the runtime's CFI.
#include <elf.h>

#include <memory>
#include <vector>

#include "gtest/gtest.h"
#include "memory/testing/map_memory.h"
#include "proc/jit/genelf.h"
#include "proc/jit/jit_code.h"
#include "proc/jit/jitdump.h"
#include "proc/jit/testing/dump_writer.h"
#include "unwinder/module.h"
#include "unwinder/module_cache.h"
#include "unwinder/unwinder.h"

namespace unwindd::unwinder {
namespace {

using proc::Mapping;
using proc::jit::BuildJitElf;
using proc::jit::JitDump;
using proc::jit::JitMapping;
using proc::jit::kJitTextOffset;
using proc::jit::ParseJitDump;
using proc::jit::testing::Cfi;
using proc::jit::testing::Code;
using proc::jit::testing::DumpWriter;

// The image genelf builds is a module: its CFI gives the rows the FDE says
// at the code's module-relative PCs (0x80 + offset), and the mapping it
// names has the load bias code_addr - 0x80.
TEST(JitImageTest, ImagesAreModulesWithTheRuntimesCfi) {
  std::vector<uint8_t> eh, hdr;
  Cfi(Code().size(), &eh, &hdr);
  DumpWriter w;
  w.Unwinding(eh, hdr, 1).Load(2000, 0x7f0000001003, Code(), 7, "JS:*fib");
  absl::StatusOr<JitDump> d = ParseJitDump(w.Bytes());
  ASSERT_TRUE(d.ok()) << d.status();
  absl::StatusOr<std::shared_ptr<const std::vector<uint8_t>>> image =
      BuildJitElf(d->codes[0], d->elf_mach);
  ASSERT_TRUE(image.ok()) << image.status();
  absl::StatusOr<std::shared_ptr<Module>> m =
      Module::FromImage(**image, "jitted-4242-7.so");
  ASSERT_TRUE(m.ok()) << m.status();
  const Mapping mapping = JitMapping(d->codes[0], d->pid, "/tmp/run");
  // perf inject's file for it, next to the dump.
  EXPECT_EQ(mapping.path, "/tmp/run/jitted-4242-7.so");
  EXPECT_EQ(mapping.end - mapping.start, Code().size());
  absl::StatusOr<uint64_t> bias = (*m)->LoadBias(mapping.start, mapping.offset);
  ASSERT_TRUE(bias.ok()) << bias.status();
  EXPECT_EQ(*bias, 0x7f0000001003u - kJitTextOffset);
  auto row_at = [&](uint64_t offset) {
    return (*m)->FindRow(arch::FrameAddress::InstructionPointer(kJitTextOffset + offset),
                         *SourcePolicy::Parse("eh_frame"));
  };
  absl::StatusOr<ModuleRow> entry = row_at(0);
  ASSERT_TRUE(entry.ok()) << entry.status();
  EXPECT_EQ(entry->row.cfa.reg, 7);
  EXPECT_EQ(entry->row.cfa.offset, 8);
  absl::StatusOr<ModuleRow> body = row_at(10);
  ASSERT_TRUE(body.ok()) << body.status();
  EXPECT_EQ(body->row.cfa.reg, 6);
  EXPECT_EQ(body->row.cfa.offset, 16);
  EXPECT_EQ(body->row.regs[6].value, -16);
  EXPECT_TRUE(absl::IsNotFound(row_at(Code().size() + 8).status()));
  // Without CFI the image is code and a symbol: the frame pointer's.
  w.raw().clear();
  DumpWriter bare;
  bare.Load(1, 0x1000, Code(), 1, "bare");
  absl::StatusOr<JitDump> b = ParseJitDump(bare.Bytes());
  ASSERT_TRUE(b.ok());
  image = BuildJitElf(b->codes[0], EM_X86_64);
  ASSERT_TRUE(image.ok());
  m = Module::FromImage(**image, "bare");
  ASSERT_TRUE(m.ok()) << m.status();
  absl::StatusOr<ModuleRow> fp =
      (*m)->FindRow(arch::FrameAddress::InstructionPointer(kJitTextOffset + 10),
                    *SourcePolicy::Parse("eh_frame,fp"));
  ASSERT_TRUE(fp.ok()) << fp.status();
  EXPECT_EQ(fp->method, Method::kFramePointer);
  EXPECT_FALSE(BuildJitElf(b->codes[0], EM_PPC).ok());
}

// A process whose code is in one anonymous r-x mapping (a JIT's code
// space) and a stack.
class CodeSpaceTarget : public proc::Target {
 public:
  static constexpr uint64_t kCode = 0x7f0000000000;
  static constexpr uint64_t kStack = 0x7ffd0000;
  CodeSpaceTarget(arch::RegisterSet regs) : regs_(regs) {
    Mapping code;
    code.start = kCode, code.end = kCode + 0x100000, code.read = code.exec = true;
    Mapping stack;
    stack.start = kStack, stack.end = kStack + 0x10000, stack.read = stack.write = true;
    stack.path = "[stack]";
    maps_ = {code, stack};
  }
  arch::Arch arch() const override { return regs_.arch(); }
  pid_t pid() const override { return 4242; }
  std::vector<pid_t> Threads() const override { return {4242}; }
  absl::StatusOr<arch::RegisterSet> InitialRegisters(pid_t) override { return regs_; }
  memory::Memory& memory() override { return mem_; }
  const std::vector<Mapping>& mappings() const override { return maps_; }
  std::vector<std::string> FileCandidates(const Mapping&) const override { return {}; }
  memory::testing::MapMemory& mem() { return mem_; }

 private:
  arch::RegisterSet regs_;
  memory::testing::MapMemory mem_;
  std::vector<Mapping> maps_;
};

// f (whose CFI the dump gives) called by g (which keeps a frame pointer),
// called by h: the walk goes through f with the runtime's CFI, then g and
// h by frame pointer, each a module named as perf names them, with the
// runtime's name for the code; without the dump, f is only a frame-pointer
// frame in anonymous memory.
TEST(JitImageTest, TheWalkUsesTheDumpsCodeAsModules) {
  const uint64_t f = CodeSpaceTarget::kCode + 0x1000, g = f + 0x1000, h = g + 0x1000;
  std::vector<uint8_t> eh, hdr;
  Cfi(Code().size(), &eh, &hdr);
  DumpWriter w;
  w.Unwinding(eh, hdr, 1).Load(10, f, Code(), 7, "JS:*f");
  w.Unwinding({}, {}, 0).Load(11, g, Code(), 8, "JS:~g");
  w.Load(12, h, Code(), 9, "JS:~h");
  absl::StatusOr<JitDump> d = ParseJitDump(w.Bytes());
  ASSERT_TRUE(d.ok()) << d.status();
  absl::StatusOr<std::vector<proc::jit::JitRegion>> regions = proc::jit::JitRegions(*d, "");
  ASSERT_TRUE(regions.ok()) << regions.status();

  // f at +10 (after push %rbp; mov %rsp,%rbp): rbp -> [saved rbp (g's
  // frame), return into g]; g's frame -> [h's frame, return into h];
  // h's frame -> [0, return into h's caller 0x1234].
  const uint64_t f_fp = CodeSpaceTarget::kStack + 0x100;
  const uint64_t g_fp = f_fp + 0x40, h_fp = g_fp + 0x40;
  arch::RegisterSet regs(arch::Arch::kX86_64);
  regs.set_pc(f + 10);
  regs.set_sp(f_fp - 0x20);
  regs.Set(6, f_fp);
  CodeSpaceTarget base(regs);
  auto put = [&](uint64_t at, uint64_t v) { base.mem().PutLe(at, v, 8); };
  put(f_fp, g_fp);
  put(f_fp + 8, g + 20);
  put(g_fp, h_fp);
  put(g_fp + 8, h + 20);
  put(h_fp, 0);
  put(h_fp + 8, 0x1234);
  std::unique_ptr<proc::Target> jit = proc::jit::WithJitCode(base, *regions);
  ModuleCache cache;
  ProcessStacks with = UnwindTarget(*jit, cache, {});
  ASSERT_EQ(with.threads.size(), 1u);
  const ThreadStack& t = with.threads[0];
  ASSERT_GE(t.frames.size(), 3u) << t.stop_detail;
  EXPECT_EQ(t.frames[0].pc, f + 10);
  EXPECT_EQ(t.frames[1].pc, g + 20);
  EXPECT_EQ(t.frames[1].method, Method::kEhFrame);  // f's CFI
  EXPECT_EQ(t.frames[2].pc, h + 20);
  EXPECT_EQ(t.frames[2].method, Method::kFramePointer);
  EXPECT_EQ(t.frames[0].rel_pc, kJitTextOffset + 10);
  ASSERT_GE(t.frames[0].module, 0);
  EXPECT_EQ(with.modules[t.frames[0].module].path, "jitted-4242-7.so");
  EXPECT_EQ(with.modules[t.frames[0].module].jit_name, "JS:*f");
  EXPECT_EQ(with.modules[t.frames[1].module].jit_name, "JS:~g");
  // Without it: anonymous memory, no module, frame-pointer frames only.
  ProcessStacks without = UnwindTarget(base, cache, {});
  ASSERT_GE(without.threads[0].frames.size(), 2u);
  EXPECT_EQ(without.threads[0].frames[0].module, -1);
  EXPECT_EQ(without.threads[0].frames[1].method, Method::kFramePointer);
}

// Code addresses are reused after a GC: a later load over an earlier one's
// range replaces the part it covers, as a later mmap would.
TEST(JitImageTest, LaterLoadsReplaceWhatTheyCover) {
  DumpWriter w;
  std::vector<uint8_t> big = Code();
  big.resize(0x100, 0x90);
  w.Load(1, 0x10000, big, 1, "old").Load(2, 0x10040, Code(), 2, "new");
  absl::StatusOr<JitDump> d = ParseJitDump(w.Bytes());
  ASSERT_TRUE(d.ok());
  absl::StatusOr<std::vector<proc::jit::JitRegion>> regions = proc::jit::JitRegions(*d, "");
  ASSERT_TRUE(regions.ok());
  Mapping anon;
  anon.start = 0x8000, anon.end = 0x20000, anon.read = anon.exec = true;
  const std::vector<Mapping> laid = proc::jit::LayOver({anon}, *regions);
  ASSERT_EQ(laid.size(), 5u);
  EXPECT_EQ(laid[0].start, 0x8000u);  // anonymous, before
  EXPECT_EQ(laid[1].path, "jitted-4242-1.so");
  EXPECT_EQ(laid[1].end, 0x10040u);
  EXPECT_EQ(laid[2].path, "jitted-4242-2.so");
  EXPECT_EQ(laid[3].path, "jitted-4242-1.so");  // the old code's tail
  EXPECT_EQ(laid[3].start, 0x10040u + Code().size());
  EXPECT_EQ(laid[3].offset, kJitTextOffset + 0x40 + Code().size());
  EXPECT_EQ(laid[4].start, 0x10100u);  // anonymous, after
}

}  // namespace
}  // namespace unwindd::unwinder

// GDB JIT interface symfiles as modules: an ET_REL object registered as
// LLVM's ORC registers it (section headers patched with load addresses,
// .eh_frame relocated by .rela.eh_frame) is walked by its CFI, each frame
// named after its function; without it the same stack is not walked.
#include <elf.h>

#include <memory>
#include <vector>

#include "gtest/gtest.h"
#include "memory/testing/map_memory.h"
#include "proc/jit/gdb_jit.h"
#include "proc/jit/jit_code.h"
#include "proc/jit/testing/symfile_writer.h"
#include "unwinder/module_cache.h"
#include "unwinder/unwinder.h"

namespace unwindd::unwinder {
namespace {

using proc::Mapping;
using proc::jit::testing::EhFrame;
using proc::jit::testing::EhFramePcBeginOffset;
using proc::jit::testing::SymfileWriter;

constexpr uint64_t kCode = 0x7f0000000000;
constexpr uint64_t kText = kCode + 0x2000;
constexpr uint64_t kEh = kCode + 0x8;
constexpr uint64_t kStack = 0x7ffd0000;
constexpr uint64_t kSymfile = 0x5500000000;
constexpr uint64_t kDesc = 0x5600000000;
constexpr uint64_t kEntry = 0x5600001000;

// JIT code in one anonymous rwx mapping, a stack; no files.
class CodeSpaceTarget : public proc::Target {
 public:
  explicit CodeSpaceTarget(arch::RegisterSet regs) : regs_(regs) {
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

TEST(GdbJitWalkTest, SymfileCfiWalksJitFrames) {
  // f at .text+0 and g at .text+0x20, each `push; ...; call` with CFA =
  // rsp+16 after its first byte. No frame pointer anywhere.
  SymfileWriter w;
  const size_t text = w.Section(".text", SHT_PROGBITS, SHF_ALLOC | SHF_EXECINSTR, kText,
                                std::vector<uint8_t>(0x40, 0x90));
  const size_t eh = w.Section(".eh_frame", SHT_X86_64_UNWIND, SHF_ALLOC, kEh,
                              EhFrame({{0, 0x20}, {0, 0x20}}, /*pcrel8=*/true));
  const size_t tsym = w.Symbol("", 0, 0, STT_SECTION, text, STB_LOCAL);
  w.Symbol("f", 0, 0x20, STT_FUNC, text);
  w.Symbol("g", 0x20, 0x20, STT_FUNC, text);
  w.Rela(eh, EhFramePcBeginOffset(0, true), R_X86_64_PC64, tsym, 0);
  w.Rela(eh, EhFramePcBeginOffset(1, true), R_X86_64_PC64, tsym, 0x20);
  const std::vector<uint8_t> obj = w.Build();

  const uint64_t f = kText, g = kText + 0x20;
  const uint64_t sp = kStack + 0x100;
  arch::RegisterSet regs(arch::Arch::kX86_64);
  regs.set_pc(f + 5);
  regs.set_sp(sp);
  CodeSpaceTarget base(regs);
  auto put = [&](uint64_t at, uint64_t v) { base.mem().PutLe(at, v, 8); };
  put(sp, 0);            // f's pushed register
  put(sp + 8, g + 7);    // return into g
  put(sp + 16, 0);       // g's pushed register
  put(sp + 24, 0x1234);  // return into g's caller, outside everything
  // The descriptor, one entry, the object.
  base.mem().PutLe(kDesc, 1, 4);  // version
  base.mem().PutLe(kDesc + 4, 1, 4);  // JIT_REGISTER_FN
  put(kDesc + 8, kEntry);
  put(kDesc + 16, kEntry);
  put(kEntry, 0);
  put(kEntry + 8, 0);
  put(kEntry + 16, kSymfile);
  put(kEntry + 24, obj.size());
  base.mem().Put(kSymfile, obj);

  absl::StatusOr<proc::jit::GdbJitList> list = proc::jit::ReadGdbJitList(base.mem(), kDesc, 8);
  ASSERT_TRUE(list.ok()) << list.status();
  std::vector<std::string> warnings;
  std::vector<proc::jit::JitRegion> regions =
      proc::jit::GdbJitRegions(base.mem(), *list, {}, &warnings);
  EXPECT_TRUE(warnings.empty());
  ASSERT_EQ(regions.size(), 2u);
  std::unique_ptr<proc::Target> jit = proc::jit::WithJitCode(base, regions);
  ModuleCache cache;
  ProcessStacks with = UnwindTarget(*jit, cache, {});
  ASSERT_EQ(with.threads.size(), 1u);
  const ThreadStack& t = with.threads[0];
  ASSERT_GE(t.frames.size(), 3u) << t.stop_detail;
  EXPECT_EQ(t.frames[0].pc, f + 5);
  EXPECT_EQ(t.frames[1].pc, g + 7);
  EXPECT_EQ(t.frames[1].method, Method::kEhFrame);
  EXPECT_EQ(t.frames[2].pc, 0x1234u);
  EXPECT_EQ(t.frames[2].method, Method::kEhFrame);
  ASSERT_GE(t.frames[0].module, 0);
  const ModuleInfo& fm = with.modules[t.frames[0].module];
  EXPECT_EQ(fm.path, "jit-symfile-0x5500000000");
  EXPECT_EQ(fm.jit_name, "f");
  EXPECT_EQ(with.modules[t.frames[1].module].jit_name, "g");
  EXPECT_EQ(t.frames[0].rel_pc, f + 5) << "load bias 0: the target address";

  // Without the symfile: anonymous memory, no CFI, no frame pointer.
  ProcessStacks without = UnwindTarget(base, cache, {});
  ASSERT_GE(without.threads[0].frames.size(), 1u);
  EXPECT_EQ(without.threads[0].frames[0].module, -1);
  EXPECT_TRUE(without.threads[0].frames.size() < 3 || without.threads[0].frames[1].pc != g + 7);
}

}  // namespace
}  // namespace unwindd::unwinder

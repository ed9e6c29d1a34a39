// The proto <-> domain conversions that are not covered end to end by the
// server tests: every registered arch both ways, by name.
#include "service/common/convert.h"

#include "arch/arch_ops.h"
#include "gtest/gtest.h"

namespace unwindd::service {
namespace {

TEST(ConvertTest, EveryArchRoundTrips) {
  for (const arch::ArchOps* ops : arch::AllArchOps()) {
    const v1::Arch p = ToProto(ops->info.arch);
    EXPECT_NE(p, v1::ARCH_UNSPECIFIED) << ops->info.name;
    absl::StatusOr<arch::Arch> back = FromProto(p);
    ASSERT_TRUE(back.ok()) << back.status();
    EXPECT_EQ(*back, ops->info.arch);
  }
  // The published numbers do not move.
  EXPECT_EQ(ToProto(arch::Arch::kX86_64), v1::ARCH_X86_64);
  EXPECT_EQ(ToProto(arch::Arch::kAArch64), v1::ARCH_AARCH64);
  EXPECT_EQ(ToProto(arch::Arch::kX86), v1::ARCH_X86);
  EXPECT_TRUE(absl::IsInvalidArgument(FromProto(v1::ARCH_UNSPECIFIED).status()));
  EXPECT_TRUE(absl::IsInvalidArgument(FromProto(static_cast<v1::Arch>(99)).status()));
}

// A JIT module's name goes out in Module.jit_name (19) and comes back.
TEST(ConvertTest, JitNameRoundTrips) {
  UnwindResult r;
  unwinder::ModuleInfo m;
  m.path = "/tmp/jitted-42-7.so";
  m.start = 0x1000;
  m.end = 0x2000;
  m.jit_name = "JS:*fib /app/x.js:3:13";
  r.stacks.modules.push_back(m);
  unwinder::ThreadStack t;
  t.tid = 42;
  r.stacks.threads.push_back(t);
  v1::UnwindResponse response;
  ToProto(r, &response);
  ASSERT_EQ(response.modules_size(), 1);
  EXPECT_EQ(response.modules(0).jit_name(), m.jit_name);
  absl::StatusOr<unwinder::ProcessStacks> back = FromProto(response);
  ASSERT_TRUE(back.ok()) << back.status();
  ASSERT_EQ(back->modules.size(), 1u);
  EXPECT_EQ(back->modules[0].jit_name, m.jit_name);
}

}  // namespace
}  // namespace unwindd::service

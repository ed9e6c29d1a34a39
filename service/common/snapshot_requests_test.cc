#include "service/common/snapshot_requests.h"

#include <memory>
#include <vector>

#include "gtest/gtest.h"

namespace unwindd::service {
namespace {

TEST(MappingToProtoTest, CarriesRangeProtectionIdentityAndBuildId) {
  proc::SnapshotMapping sm;
  sm.mapping.start = 0x1000;
  sm.mapping.end = 0x3000;
  sm.mapping.offset = 0x2000;
  sm.mapping.read = true;
  sm.mapping.exec = true;
  sm.mapping.inode = 42;
  sm.mapping.dev_major = 254;
  sm.mapping.dev_minor = 1;
  sm.mapping.path = "/usr/lib/libc.so.6";
  sm.build_id = "abcd";
  v1::Mapping m;
  m.set_image("stale");  // overwritten
  MappingToProto(sm, /*with_image=*/true, &m);
  EXPECT_EQ(m.start(), 0x1000u);
  EXPECT_EQ(m.end(), 0x3000u);
  EXPECT_EQ(m.offset(), 0x2000u);
  EXPECT_TRUE(m.read());
  EXPECT_FALSE(m.write());
  EXPECT_TRUE(m.exec());
  EXPECT_EQ(m.inode(), 42u);
  EXPECT_EQ(m.dev_major(), 254u);
  EXPECT_EQ(m.dev_minor(), 1u);
  EXPECT_EQ(m.path(), "/usr/lib/libc.so.6");
  EXPECT_TRUE(m.path_bytes().empty());
  EXPECT_EQ(m.build_id(), "abcd");
  EXPECT_TRUE(m.image().empty());
}

TEST(MappingToProtoTest, ImageOnlyWhenAsked) {
  proc::SnapshotMapping sm;
  sm.mapping.path = "[vdso]";
  sm.image = std::make_shared<const std::vector<uint8_t>>(std::vector<uint8_t>{1, 2, 3});
  v1::Mapping with, without;
  MappingToProto(sm, true, &with);
  MappingToProto(sm, false, &without);
  EXPECT_EQ(with.image(), std::string("\x01\x02\x03"));
  EXPECT_TRUE(without.image().empty());
}

TEST(MappingToProtoTest, PathThatIsNotUtf8GoesInPathBytes) {
  proc::SnapshotMapping sm;
  sm.mapping.path = "/tmp/\xff.so";
  v1::Mapping m;
  MappingToProto(sm, false, &m);
  EXPECT_EQ(m.path_bytes(), "/tmp/\xff.so");
  EXPECT_EQ(m.path(), "/tmp/\xef\xbf\xbd.so");
}

TEST(RegistersToProtoTest, PerfAndDwarf) {
  v1::PerfRegisters perf;
  const std::vector<uint64_t> values = {7, 8};
  PerfRegistersToProto(0x180, values, &perf);
  EXPECT_EQ(perf.mask(), 0x180u);
  ASSERT_EQ(perf.values_size(), 2);
  EXPECT_EQ(perf.values(1), 8u);

  arch::RegisterSet regs(arch::Arch::kX86_64);
  regs.Set(7, 0x7ffd0000);
  regs.Set(16, 0x401000);
  v1::DwarfRegisters dwarf;
  DwarfRegistersToProto(regs, &dwarf);
  EXPECT_EQ(dwarf.values().size(), 2u);
  EXPECT_EQ(dwarf.values().at(7), 0x7ffd0000u);
  EXPECT_EQ(dwarf.values().at(16), 0x401000u);
}

}  // namespace
}  // namespace unwindd::service

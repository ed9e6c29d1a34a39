#include "service/server/capabilities.h"

#include <linux/capability.h>

#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace unwindd::service {
namespace {

constexpr char kStatus[] =
    "Name:\tunwindd\n"
    "CapInh:\t0000000000080000\n"
    "CapPrm:\t00000100000800c4\n"
    "CapEff:\t00000100000800c4\n"
    "CapBnd:\t000001ffffffffff\n"
    "CapAmb:\t0000000000000000\n"
    "NoNewPrivs:\t1\n";

TEST(CapabilitiesTest, ParsesTheStatusLines) {
  absl::StatusOr<CapabilitySets> c = ParseCapabilities(kStatus);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->inheritable, CapabilityBit(CAP_SYS_PTRACE));
  EXPECT_EQ(c->effective, NeededCapabilityMask());
  EXPECT_EQ(c->permitted, NeededCapabilityMask());
  EXPECT_EQ(c->bounding, 0x1ffffffffffu);
  EXPECT_EQ(c->ambient, 0u);
}

TEST(CapabilitiesTest, RefusesMissingOrBadLines) {
  EXPECT_FALSE(ParseCapabilities("CapInh:\t0\nCapPrm:\t0\n").ok());
  EXPECT_FALSE(ParseCapabilities("CapInh:\tzz\nCapPrm:\t0\nCapEff:\t0\nCapBnd:\t0\n"
                                 "CapAmb:\t0\n")
                   .ok());
  EXPECT_FALSE(ParseCapabilities("CapInh:\t00000000000000000\nCapPrm:\t0\nCapEff:\t0\n"
                                 "CapBnd:\t0\nCapAmb:\t0\n")
                   .ok());
}

TEST(CapabilitiesTest, NamesAsSetprivDoes) {
  EXPECT_EQ(CapabilityNames(0), "none");
  EXPECT_EQ(CapabilityNames(NeededCapabilityMask()),
            "cap_dac_read_search,cap_setgid,cap_setuid,cap_sys_ptrace,"
            "cap_checkpoint_restore");
  EXPECT_EQ(CapabilityNames(CapabilityBit(CAP_CHOWN) | CapabilityBit(50)), "cap_chown,cap_50");
}

TEST(CapabilitiesTest, TheNeededOnesAreExactlyThese) {
  EXPECT_EQ(NeededCapabilityMask(),
            CapabilityBit(CAP_SYS_PTRACE) | CapabilityBit(CAP_SETUID) |
                CapabilityBit(CAP_SETGID) | CapabilityBit(CAP_DAC_READ_SEARCH) |
                CapabilityBit(CAP_CHECKPOINT_RESTORE));
}

TEST(CapabilitiesTest, SaysWhatWillNotWorkOncePerEffect) {
  CapabilitySets c;
  c.effective = CapabilityBit(CAP_SYS_PTRACE);
  std::vector<std::string> lines = DescribePrivileges(990, 991, c);
  ASSERT_EQ(lines.size(), 4u);
  EXPECT_EQ(lines[0], "running as uid 990 gid 991, effective capabilities: cap_sys_ptrace");
  EXPECT_EQ(lines[1].rfind("without cap_dac_read_search: ", 0), 0u) << lines[1];
  EXPECT_EQ(lines[2].rfind("without cap_setgid/cap_setuid: files named in requests", 0), 0u)
      << lines[2];
  EXPECT_EQ(lines[3].rfind("without cap_checkpoint_restore: ", 0), 0u) << lines[3];

  c.effective = NeededCapabilityMask();
  EXPECT_EQ(DescribePrivileges(0, 0, c).size(), 1u);

  c.effective = ~CapabilityMask{0} >> 23;  // root's 41
  lines = DescribePrivileges(0, 0, c);
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_NE(lines[1].find("more capabilities than needed (cap_chown,cap_dac_override,"),
            std::string::npos)
      << lines[1];
}

// The calling thread's own sets, through capget and /proc alike; an
// effective set emptied on this thread only comes back from the permitted.
TEST(CapabilitiesTest, ThreadEffectiveSetGoesAndComesBack) {
  absl::StatusOr<ThreadCapabilities> t = GetThreadCapabilities();
  ASSERT_TRUE(t.ok()) << t.status();
  absl::StatusOr<CapabilitySets> c = ReadCapabilities();
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(t->effective, c->effective);
  EXPECT_EQ(t->permitted, c->permitted);
  ASSERT_TRUE(SetThreadEffectiveCapabilities(0).ok());
  EXPECT_EQ(GetThreadCapabilities()->effective, 0u);
  EXPECT_EQ(GetThreadCapabilities()->permitted, t->permitted);
  ASSERT_TRUE(SetThreadEffectiveCapabilities(t->effective).ok());
  EXPECT_EQ(GetThreadCapabilities()->effective, t->effective);
}

}  // namespace
}  // namespace unwindd::service

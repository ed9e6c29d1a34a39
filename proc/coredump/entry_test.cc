#include "proc/coredump/entry.h"

#include <string>

#include "gtest/gtest.h"
#include "proc/coredump/match.h"

namespace unwindd::proc::coredump {
namespace {

TEST(CoredumpEntryTest, FieldsAndDerivedValues) {
  CoredumpEntry e;
  for (const char* f :
       {"MESSAGE_ID=fc2e22bc6ee647b6b90729ab34a250b1", "COREDUMP_PID=4242",
        "COREDUMP_SIGNAL=11", "COREDUMP_COMM=crasher", "COREDUMP_TRUNCATED=yes",
        "COREDUMP_PROC_MAPS=00400000-00401000 r-xp 00000000 08:01 42 /bin/x\n",
        "_BOOT_ID=0123456789abcdef0123456789abcdef"}) {
    ASSERT_TRUE(e.AddField(f).ok()) << f;
  }
  EXPECT_EQ(e.Number("COREDUMP_PID"), 4242);
  EXPECT_EQ(e.Get("COREDUMP_COMM"), "crasher");
  EXPECT_FALSE(e.Get("COREDUMP_EXE").has_value());
  EXPECT_FALSE(e.Number("COREDUMP_COMM").has_value());
  EXPECT_TRUE(e.is_coredump());
  EXPECT_TRUE(e.truncated());
  absl::StatusOr<std::vector<Mapping>> maps = e.ProcMaps();
  ASSERT_TRUE(maps.ok()) << maps.status();
  ASSERT_EQ(maps->size(), 1u);
  EXPECT_EQ((*maps)[0].path, "/bin/x");
  EXPECT_FALSE(e.has_core_field());
}

TEST(CoredumpEntryTest, TheCoreFieldIsKeptAsideAndFieldValuesAreBytes) {
  CoredumpEntry e;
  const std::string core("COREDUMP=\x7f" "ELF\0\0\n\xff", 16);
  ASSERT_TRUE(e.AddField(core).ok());
  ASSERT_TRUE(e.AddField(std::string("COREDUMP_CMDLINE=a\0b", 20)).ok());
  EXPECT_TRUE(e.has_core_field());
  EXPECT_EQ(e.core_bytes(), core.substr(9));
  EXPECT_EQ(e.Get("COREDUMP_CMDLINE")->size(), 3u);
  EXPECT_TRUE(e.fields().size() == 1u);
}

TEST(CoredumpEntryTest, BadFieldsAreInvalidArgumentAndBoundsHold) {
  CoredumpEntry e;
  EXPECT_TRUE(absl::IsInvalidArgument(e.AddField("no equals sign")));
  EXPECT_TRUE(absl::IsInvalidArgument(e.AddField("lower=case")));
  EXPECT_TRUE(absl::IsInvalidArgument(e.AddField("1DIGIT=x")));
  EXPECT_TRUE(absl::IsInvalidArgument(e.AddField("=x")));
  EXPECT_TRUE(absl::IsInvalidArgument(e.AddField(std::string(65, 'A') + "=x")));
  EXPECT_TRUE(e.AddField(std::string(64, 'A') + "=x").ok());
  EXPECT_TRUE(e.AddField("_TRUSTED=x").ok());
  EXPECT_TRUE(absl::IsResourceExhausted(
      e.AddField("BIG=" + std::string(kMaxFieldBytes + 1, 'x'))));
  // A field again keeps its first value.
  EXPECT_TRUE(e.AddField("_TRUSTED=y").ok());
  EXPECT_EQ(e.Get("_TRUSTED"), "x");
  CoredumpEntry many;
  absl::Status last;
  for (size_t i = 0; i <= kMaxFields; ++i) last = many.AddField("F" + std::to_string(i) + "=1");
  EXPECT_TRUE(absl::IsResourceExhausted(last));
}

TEST(CoredumpEntryTest, BooleansAsSystemdParsesThem) {
  for (const char* t : {"1", "yes", "y", "TRUE", "t", "on"}) EXPECT_EQ(ParseBoolean(t), true) << t;
  for (const char* f : {"0", "no", "n", "false", "F", "off"}) EXPECT_EQ(ParseBoolean(f), false) << f;
  EXPECT_FALSE(ParseBoolean("2").has_value());
  EXPECT_FALSE(ParseBoolean("").has_value());
}

TEST(CoredumpEntryTest, AuxvOfEitherWordSizeUpToAtNull) {
  std::string a64;
  auto put = [](std::string& s, uint64_t v, int w) {
    for (int i = 0; i < w; ++i) s += static_cast<char>(v >> (8 * i));
  };
  put(a64, 9, 8); put(a64, 0x401000, 8);  // AT_ENTRY
  put(a64, 0, 8); put(a64, 0, 8);         // AT_NULL
  put(a64, 3, 8); put(a64, 1, 8);         // after AT_NULL: ignored
  auto v = ParseAuxv(a64, 8);
  ASSERT_EQ(v.size(), 1u);
  EXPECT_EQ(v[0], std::make_pair(uint64_t{9}, uint64_t{0x401000}));
  std::string a32;
  put(a32, 9, 4); put(a32, 0x8048000, 4);
  a32 += "xyz";  // a torn last pair
  v = ParseAuxv(a32, 4);
  ASSERT_EQ(v.size(), 1u);
  EXPECT_EQ(v[0].second, 0x8048000u);
  EXPECT_TRUE(ParseAuxv(a64, 3).empty());
}

TEST(CoredumpMatchTest, CoredumpctlsRule) {
  auto m = ParseCoredumpMatch("4242", "/srv");
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(m->ToString(), "COREDUMP_PID=4242");
  m = ParseCoredumpMatch("crasher", "/srv");
  EXPECT_EQ(m->ToString(), "COREDUMP_COMM=crasher");
  m = ParseCoredumpMatch("/usr/bin/crasher", "/srv");
  EXPECT_EQ(m->ToString(), "COREDUMP_EXE=/usr/bin/crasher");
  m = ParseCoredumpMatch("bin/crasher", "/srv/");
  EXPECT_EQ(m->ToString(), "COREDUMP_EXE=/srv/bin/crasher");
  m = ParseCoredumpMatch("COREDUMP_UID=1000", "/srv");
  EXPECT_EQ(m->ToString(), "COREDUMP_UID=1000");
  // Not a pid: 0, negative, too large, not all digits.
  for (const char* comm : {"0", "-1", "99999999999", "12ab"}) {
    m = ParseCoredumpMatch(comm, "/srv");
    EXPECT_EQ(m->field, "COREDUMP_COMM") << comm;
  }
  EXPECT_TRUE(absl::IsInvalidArgument(ParseCoredumpMatch("", "/").status()));
  EXPECT_TRUE(absl::IsInvalidArgument(ParseCoredumpMatch("bad field=x", "/").status()));
}

}  // namespace
}  // namespace unwindd::proc::coredump

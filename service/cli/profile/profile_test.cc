#include "service/cli/profile/profile.h"

#include <random>

#include <cstdint>
#include <limits>
#include <vector>

#include "absl/status/status.h"
#include "gtest/gtest.h"

namespace unwindd::profile {
namespace {

using Location = Profile::Location;

Module Exe() {
  return {.path = "/bin/demo",
          .build_id = "ABCDEF01",
          .start = 0x1000,
          .limit = 0x2000,
          .file_offset = 0x1000,
          .load_bias = 0};
}

Module Libc() {
  return {.path = "/lib/libc.so.6",
          .build_id = "0123",
          .start = 0x7f0000001000,
          .limit = 0x7f0000100000,
          .file_offset = 0x1000,
          .load_bias = 0x7f0000000000};
}

std::vector<Location> StackLocations(const Profile& p, size_t i) {
  std::vector<Location> out;
  std::vector<uint32_t> stack;
  p.StackLocations(p.samples()[i].node, &stack);
  for (uint32_t l : stack) {
    out.push_back(p.locations()[l]);
  }
  return out;
}

TEST(ProfileTest, ModulesAreDeduplicatedAndValidated) {
  Profile p;
  absl::StatusOr<int> a = p.AddModule(Exe());
  absl::StatusOr<int> b = p.AddModule(Libc());
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(*a, 0);
  EXPECT_EQ(*b, 1);
  Module lower = Exe();
  lower.build_id = "abcdef01";  // the same module, build-id case aside
  EXPECT_EQ(p.AddModule(lower).value_or(-1), 0);
  EXPECT_EQ(p.modules()[0].build_id, "abcdef01");
  Module other = Exe();
  other.start = 0x3000;
  other.limit = 0x4000;
  EXPECT_EQ(p.AddModule(other).value_or(-1), 2);

  Module empty = Exe();
  empty.limit = empty.start;
  EXPECT_EQ(p.AddModule(empty).status().code(),
            absl::StatusCode::kInvalidArgument);
  Module bad_id = Exe();
  bad_id.build_id = "xyz0";
  EXPECT_EQ(p.AddModule(bad_id).status().code(),
            absl::StatusCode::kInvalidArgument);
  bad_id.build_id = "abc";  // odd: not whole bytes
  EXPECT_EQ(p.AddModule(bad_id).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(p.modules().size(), 3u);
}

TEST(ProfileTest, IdenticalStacksMerge) {
  Profile p;
  const int exe = *p.AddModule(Exe());
  const int libc = *p.AddModule(Libc());
  const Frame stack[] = {
      {.address = 0x7f0000012345, .module = libc},
      {.address = 0x1235, .return_address = true, .module = exe},
      {.address = 0x1100, .return_address = true, .module = exe}};
  const ThreadLabels t1{.pid = 10, .tid = 11, .comm = "demo"};
  const ThreadLabels t2{.pid = 10, .tid = 12, .comm = "demo"};
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(p.AddSample(t1, stack, {}, {.count = 1, .weight = 1000}).ok());
  }
  ASSERT_TRUE(p.AddSample(t2, stack, {}, {.count = 2, .weight = 500}).ok());
  // Another leaf: a new stack, sharing the callers' locations.
  const Frame other[] = {stack[1], stack[2]};
  ASSERT_TRUE(p.AddSample(t1, other, {}, {.count = 1, .weight = 7}).ok());

  ASSERT_EQ(p.samples().size(), 3u);
  EXPECT_EQ(p.samples()[0].values.count, 3);
  EXPECT_EQ(p.samples()[0].values.weight, 3000);
  EXPECT_EQ(p.samples()[1].values.count, 2);
  EXPECT_EQ(p.samples()[1].values.weight, 500);
  EXPECT_EQ(p.samples()[2].values.count, 1);
  EXPECT_EQ(p.label_sets().size(), 2u);
  EXPECT_EQ(p.label_sets()[p.samples()[1].label_set], t2);
  EXPECT_EQ(p.locations().size(), 3u);
  EXPECT_EQ(p.totals().count, 6);
  EXPECT_EQ(p.totals().weight, 3507);

  // Leaf first; return addresses recorded at address - 1.
  EXPECT_EQ(StackLocations(p, 0),
            (std::vector<Location>{{0x7f0000012345, libc, false},
                                   {0x1234, exe, false},
                                   {0x10ff, exe, false}}));
  EXPECT_EQ(
      StackLocations(p, 2),
      (std::vector<Location>{{0x1234, exe, false}, {0x10ff, exe, false}}));
}

TEST(ProfileTest, AddToStackAddsToTheStackAddSampleNamed) {
  Profile p;
  const int exe = *p.AddModule(Exe());
  const Frame a[] = {{.address = 0x1000, .module = exe}};
  const Frame b[] = {{.address = 0x1800, .module = exe}};
  const ThreadLabels t{.pid = 1, .tid = 1, .comm = "x"};
  size_t sa = 99, sb = 99, again = 99;
  ASSERT_TRUE(p.AddSample(t, a, {}, {.count = 1, .weight = 10}, &sa).ok());
  ASSERT_TRUE(p.AddSample(t, b, {}, {.count = 1, .weight = 20}, &sb).ok());
  ASSERT_TRUE(p.AddSample(t, a, {}, {.count = 1, .weight = 10}, &again).ok());
  EXPECT_EQ(sa, 0u);
  EXPECT_EQ(sb, 1u);
  EXPECT_EQ(again, sa);
  ASSERT_TRUE(p.AddToStack(sb, {.count = 2, .weight = 40}).ok());
  EXPECT_EQ(p.samples()[1].values.count, 3);
  EXPECT_EQ(p.samples()[1].values.weight, 60);
  EXPECT_EQ(p.totals().count, 5);
  EXPECT_EQ(p.totals().weight, 80);
  // Unknown stacks, negative values and overflow change nothing.
  EXPECT_EQ(p.AddToStack(2, {.count = 1, .weight = 1}).code(), absl::StatusCode::kOutOfRange);
  EXPECT_EQ(p.AddToStack(0, {.count = -1, .weight = 1}).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(p.AddToStack(0, {.count = 1, .weight = std::numeric_limits<int64_t>::max()}).code(),
            absl::StatusCode::kOutOfRange);
  EXPECT_EQ(p.totals().count, 5);
  EXPECT_EQ(p.samples()[0].values.count, 2);
}

TEST(ProfileTest, ReturnAddressAndExactPcShareALocation) {
  Profile p;
  const int exe = *p.AddModule(Exe());
  // A frame after a signal frame has an exact PC: 0x1234 as it is, the same
  // instruction as a return address 0x1235 minus 1.
  const Frame a[] = {{.address = 0x1234, .module = exe}};
  const Frame b[] = {
      {.address = 0x1235, .return_address = true, .module = exe}};
  ASSERT_TRUE(p.AddSample({}, a, {}, {}).ok());
  ASSERT_TRUE(p.AddSample({}, b, {}, {}).ok());
  EXPECT_EQ(p.locations().size(), 1u);
  EXPECT_EQ(p.samples().size(), 1u);
  EXPECT_EQ(p.samples()[0].values.count, 2);
}

TEST(ProfileTest, KernelFramesGoFirstInAnImplicitKernelModule) {
  Profile p;
  const int exe = *p.AddModule(Exe());
  const Frame user[] = {{.address = 0x1500, .module = exe}};
  const Frame kernel[] = {
      {.address = 0xffffffff81000100},
      {.address = 0xffffffff81000201, .return_address = true}};
  ASSERT_TRUE(p.AddSample({}, user, kernel, {}).ok());
  ASSERT_EQ(p.modules().size(), 2u);
  const Module& k = p.modules()[1];
  EXPECT_EQ(k.path, "[kernel.kallsyms]");
  EXPECT_EQ(k.start, 0xffffffff81000100);
  EXPECT_EQ(k.limit, 0xffffffff81000201);
  EXPECT_EQ(StackLocations(p, 0),
            (std::vector<Location>{{0xffffffff81000100, 1, true},
                                   {0xffffffff81000200, 1, true},
                                   {0x1500, exe, false}}));
  // A later sample widens the range instead of adding a module.
  const Frame lower[] = {{.address = 0xffffffff80000000}};
  ASSERT_TRUE(p.AddSample({}, user, lower, {}).ok());
  EXPECT_EQ(p.modules().size(), 2u);
  EXPECT_EQ(p.modules()[1].start, 0xffffffff80000000);
  EXPECT_EQ(p.modules()[1].limit, 0xffffffff81000201);
  // Callers cannot name the implicit module: its range is not theirs.
  const Frame named[] = {{.address = 0xffffffff81000100, .module = 1}};
  EXPECT_EQ(p.AddSample({}, user, named, {}).code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(ProfileTest, MalformedFramesAreRejectedAndChangeNothing) {
  Profile p;
  const int exe = *p.AddModule(Exe());
  const Frame ok[] = {{.address = 0x1500, .module = exe}};
  ASSERT_TRUE(p.AddSample({.pid = 1}, ok, {}, {}).ok());

  const std::vector<std::vector<Frame>> bad = {
      {{.address = 0x2000, .module = exe}},  // at limit: outside
      {{.address = 0xfff, .module = exe}},   // below start
      // A return address at start looks up start - 1: outside.
      {{.address = 0x1000, .return_address = true, .module = exe}},
      {{.address = 0x1500, .module = 7}},  // no such module
      {{.address = 0x1500, .module = -2}},
      {{.address = 0, .return_address = true}},
  };
  for (const std::vector<Frame>& frames : bad) {
    EXPECT_EQ(p.AddSample({.pid = 2}, frames, {}, {}).code(),
              absl::StatusCode::kInvalidArgument)
        << frames[0].address;
  }
  // A return address one past the end is looked up inside: fine.
  const Frame at_limit[] = {
      {.address = 0x2000, .return_address = true, .module = exe}};
  EXPECT_TRUE(p.AddSample({.pid = 1}, at_limit, {}, {}).ok());

  EXPECT_EQ(p.AddSample({}, ok, {}, {.count = -1}).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(p.AddSample({}, ok, {}, {.count = 1, .weight = -5}).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(p.samples().size(), 2u);
  EXPECT_EQ(p.label_sets().size(), 1u);
  EXPECT_EQ(p.locations().size(), 2u);
}

TEST(ProfileTest, OverflowIsOutOfRangeAndChangesNothing) {
  Profile p;
  const Frame f[] = {{.address = 0x10}};
  const int64_t max = std::numeric_limits<int64_t>::max();
  ASSERT_TRUE(p.AddSample({}, f, {}, {.count = max - 1, .weight = max}).ok());
  EXPECT_EQ(p.AddSample({}, f, {}, {.count = 1, .weight = 1}).code(),
            absl::StatusCode::kOutOfRange);
  EXPECT_EQ(p.AddSample({}, f, {}, {.count = 2, .weight = 0}).code(),
            absl::StatusCode::kOutOfRange);
  EXPECT_TRUE(p.AddSample({}, f, {}, {.count = 1, .weight = 0}).ok());
  EXPECT_EQ(p.samples()[0].values.count, max);
  EXPECT_EQ(p.samples()[0].values.weight, max);
}

TEST(ProfileTest, LimitsAreResourceExhausted) {
  ProfileLimits limits;
  limits.max_stacks = 2;
  limits.max_depth = 3;
  limits.max_label_sets = 2;
  limits.max_locations = 5;
  limits.max_modules = 1;
  Profile p({"cpu", "nanoseconds"}, limits);
  ASSERT_TRUE(p.AddModule(Exe()).ok());
  EXPECT_EQ(p.AddModule(Libc()).status().code(),
            absl::StatusCode::kResourceExhausted);

  const Frame deep[] = {
      {.address = 1}, {.address = 2}, {.address = 3}, {.address = 4}};
  EXPECT_EQ(p.AddSample({}, deep, {}, {}).code(),
            absl::StatusCode::kResourceExhausted);
  const Frame a[] = {{.address = 1}, {.address = 2}};
  const Frame b[] = {{.address = 3}};
  const Frame c[] = {{.address = 4}};
  ASSERT_TRUE(p.AddSample({.tid = 1}, a, {}, {}).ok());
  ASSERT_TRUE(p.AddSample({.tid = 2}, b, {}, {}).ok());
  // Two stacks: a third is refused, known ones still count.
  EXPECT_EQ(p.AddSample({.tid = 1}, c, {}, {}).code(),
            absl::StatusCode::kResourceExhausted);
  EXPECT_TRUE(p.AddSample({.tid = 1}, a, {}, {}).ok());
  EXPECT_EQ(p.samples()[0].values.count, 2);
  EXPECT_EQ(p.samples().size(), 2u);
  EXPECT_EQ(p.locations().size(), 3u);
  // The implicit kernel module would be a second module.
  Profile q({"cpu", "nanoseconds"}, limits);
  ASSERT_TRUE(q.AddModule(Exe()).ok());
  const Frame k[] = {{.address = 0xffffffff81000000}};
  EXPECT_EQ(q.AddSample({}, {}, k, {}).code(),
            absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(q.modules().size(), 1u);

  ProfileLimits small;
  small.max_locations = 3;
  small.max_label_sets = 1;
  Profile r({"cpu", "nanoseconds"}, small);
  ASSERT_TRUE(r.AddSample({.tid = 1}, a, {}, {}).ok());
  ASSERT_TRUE(r.AddSample({.tid = 1}, b, {}, {}).ok());
  EXPECT_EQ(r.AddSample({.tid = 1}, c, {}, {}).code(),
            absl::StatusCode::kResourceExhausted);  // a 4th location
  EXPECT_EQ(r.AddSample({.tid = 2}, b, {}, {}).code(),
            absl::StatusCode::kResourceExhausted);  // a 2nd label set
  EXPECT_EQ(r.locations().size(), 3u);
  EXPECT_EQ(r.label_sets().size(), 1u);
}

TEST(ProfileTest, EventsAreBoundedAndNameTheirColumns) {
  ProfileLimits limits;
  limits.max_events = 2;
  Profile p(EventValueType("cpu-clock"), limits);
  EXPECT_TRUE(p.LabelSet({.tid = 1, .event = "cpu-clock"}).ok());
  EXPECT_TRUE(p.LabelSet({.tid = 1, .event = "page-faults"}).ok());
  EXPECT_TRUE(p.LabelSet({.tid = 2, .event = "page-faults"}).ok());  // not a new event
  EXPECT_TRUE(p.LabelSet({.tid = 2}).ok());  // none: the profile's weight
  EXPECT_TRUE(absl::IsResourceExhausted(p.LabelSet({.tid = 1, .event = "faults"}).status()));
  std::vector<size_t> column;
  EXPECT_EQ(p.WeightColumns(&column),
            (std::vector<ValueType>{{"cpu", "nanoseconds"}, {"page-faults", "count"}}));
  EXPECT_EQ(column, (std::vector<size_t>{0, 1, 1, 0}));
  EXPECT_EQ(EventValueType("task-clock"), (ValueType{"cpu", "nanoseconds"}));
  EXPECT_EQ(EventValueType(""), (ValueType{"events", "count"}));
  EXPECT_EQ(Profile().WeightColumns(), (std::vector<ValueType>{{"cpu", "nanoseconds"}}));
}

TEST(ProfileTest, EmptyStackIsASample) {
  Profile p;
  ASSERT_TRUE(p.AddSample({.pid = 3}, {}, {}, {.count = 4}).ok());
  ASSERT_EQ(p.samples().size(), 1u);
  EXPECT_EQ(p.samples()[0].node, Profile::kRoot);
  EXPECT_EQ(p.samples()[0].values.count, 4);
}

// Samples split between two profiles, as the pipeline's workers split them,
// and merged: the profile one Profile fed every sample in order makes,
// down to the order of its tables (modules, locations, stacks, labels), so
// that the output does not depend on which worker had which batch.
TEST(ProfileTest, MergedPartsEqualOneProfileFedInOrder) {
  std::mt19937 rng(7);
  const uint64_t kernel_base = 0xffffffff81000000;
  struct In {
    ThreadLabels labels;
    std::vector<Frame> user, kernel;
    SampleValues values;
  };
  std::vector<In> samples;
  for (int i = 0; i < 400; ++i) {
    In in;
    in.labels = {.pid = 1, .tid = 1 + static_cast<int>(rng() % 3), .comm = rng() % 5 ? "a" : "b"};
    // Shared outer frames, a varying middle, a varying leaf.
    in.user.push_back({0x1100 + (rng() % 7) * 16, false, 0});
    for (int d = static_cast<int>(rng() % 6); d > 0; --d) in.user.push_back({0x1800, true, 0});
    in.user.push_back({0x7f0000007100 + (rng() % 3) * 8, true, 1});
    in.user.push_back({0x1010, true, 0});
    if (rng() % 4 == 0) in.kernel.push_back({kernel_base + (rng() % 5) * 0x100, false, kNoModule});
    in.values = {1, static_cast<int64_t>(10 + rng() % 5)};
    samples.push_back(in);
  }
  auto with_modules = [](Profile& p) {
    EXPECT_EQ(*p.AddModule(Exe()), 0);
    EXPECT_EQ(*p.AddModule(Libc()), 1);
  };
  Profile whole;
  with_modules(whole);
  Profile parts[2];
  for (Profile& p : parts) with_modules(p);
  for (size_t i = 0; i < samples.size(); ++i) {
    const In& in = samples[i];
    ASSERT_TRUE(whole.AddSample(in.labels, in.user, in.kernel, in.values).ok());
    // A part gets runs of samples, as a worker gets batches, and builds
    // their stacks frame by frame, outermost first, as the sinks do.
    Profile& part = parts[(i / 16 + i % 3 / 2) % 2];
    uint32_t node = Profile::kRoot;
    for (auto it = in.user.rbegin(); it != in.user.rend(); ++it) {
      node = *part.Child(node, *it, false);
    }
    for (auto it = in.kernel.rbegin(); it != in.kernel.rend(); ++it) {
      node = *part.Child(node, *it, true);
    }
    ASSERT_TRUE(part.AddToNode(*part.LabelSet(in.labels), node, in.values, nullptr, i).ok());
  }
  Profile merged;
  const Profile* list[] = {&parts[0], &parts[1]};
  ASSERT_TRUE(MergeProfiles(list, merged).ok());
  EXPECT_EQ(merged.modules(), whole.modules());
  ASSERT_EQ(merged.locations().size(), whole.locations().size());
  for (size_t i = 0; i < whole.locations().size(); ++i) {
    EXPECT_EQ(merged.locations()[i], whole.locations()[i]) << i;
  }
  EXPECT_EQ(merged.label_sets(), whole.label_sets());
  ASSERT_EQ(merged.samples().size(), whole.samples().size());
  std::vector<uint32_t> a, b;
  for (size_t i = 0; i < whole.samples().size(); ++i) {
    EXPECT_EQ(merged.samples()[i].label_set, whole.samples()[i].label_set) << i;
    EXPECT_EQ(merged.samples()[i].values.count, whole.samples()[i].values.count) << i;
    EXPECT_EQ(merged.samples()[i].values.weight, whole.samples()[i].values.weight) << i;
    merged.StackLocations(merged.samples()[i].node, &a);
    whole.StackLocations(whole.samples()[i].node, &b);
    EXPECT_EQ(a, b) << i;
  }
  EXPECT_EQ(merged.totals().count, whole.totals().count);
  EXPECT_EQ(merged.totals().weight, whole.totals().weight);

  // A profile one builder made of every sample is what merging it alone
  // makes, table for table and index for index: the sinks write such a
  // profile as it is (ProfileSink::Finish), without merging it.
  Profile alone;
  const Profile* one[] = {&parts[0]};
  ASSERT_TRUE(MergeProfiles(one, alone).ok());
  EXPECT_EQ(alone.modules(), parts[0].modules());
  ASSERT_EQ(alone.locations().size(), parts[0].locations().size());
  for (size_t i = 0; i < alone.locations().size(); ++i) {
    EXPECT_EQ(alone.locations()[i], parts[0].locations()[i]) << i;
  }
  EXPECT_EQ(alone.label_sets(), parts[0].label_sets());
  ASSERT_EQ(alone.nodes().size(), parts[0].nodes().size());
  for (size_t i = 0; i < alone.nodes().size(); ++i) {
    EXPECT_EQ(alone.nodes()[i].parent, parts[0].nodes()[i].parent) << i;
    EXPECT_EQ(alone.nodes()[i].location, parts[0].nodes()[i].location) << i;
  }
  ASSERT_EQ(alone.samples().size(), parts[0].samples().size());
  for (size_t i = 0; i < alone.samples().size(); ++i) {
    EXPECT_EQ(alone.samples()[i].label_set, parts[0].samples()[i].label_set) << i;
    EXPECT_EQ(alone.samples()[i].node, parts[0].samples()[i].node) << i;
    EXPECT_EQ(alone.samples()[i].values.count, parts[0].samples()[i].values.count) << i;
    EXPECT_EQ(alone.samples()[i].values.weight, parts[0].samples()[i].values.weight) << i;
  }
}

}  // namespace
}  // namespace unwindd::profile

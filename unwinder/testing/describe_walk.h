// Everything a walk gives, field by field, on one line: what tests and
// fuzzers print when two walks that must be equal are not, and compare.
//
//   EXPECT_EQ(DescribeWalk(replayed), DescribeWalk(plain));
#ifndef UNWINDD_UNWINDER_TESTING_DESCRIBE_WALK_H_
#define UNWINDD_UNWINDER_TESTING_DESCRIBE_WALK_H_

#include <string>

#include "absl/strings/str_cat.h"
#include "unwinder/method.h"
#include "unwinder/unwinder.h"

namespace unwindd::unwinder::testing {

// "[ pc/sp/method/module/rel_pc/file_offset ... ] stop: detail", in hex.
inline std::string DescribeWalk(const ThreadStack& t) {
  std::string out = "[";
  for (const Frame& f : t.frames) {
    absl::StrAppend(&out, " ", absl::Hex(f.pc), "/", absl::Hex(f.sp), "/", MethodName(f.method),
                    "/", f.module, "/", absl::Hex(f.rel_pc), "/", absl::Hex(f.file_offset));
  }
  absl::StrAppend(&out, " ] ", StopReasonName(t.stop), ": ", t.stop_detail);
  return out;
}

}  // namespace unwindd::unwinder::testing

#endif  // UNWINDD_UNWINDER_TESTING_DESCRIBE_WALK_H_

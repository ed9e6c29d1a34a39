// A systemd-coredump entry's metadata as `unwind coredump` prints it: the
// fields `coredumpctl info` shows, under its labels (text) and snake_case
// keys (JSON), in its order.
//
//   std::vector<CoreSummary::Fact> f = CoredumpFacts(entry);
#ifndef UNWINDD_SERVICE_CLI_COREDUMP_FACTS_H_
#define UNWINDD_SERVICE_CLI_COREDUMP_FACTS_H_

#include <vector>

#include "proc/coredump/entry.h"
#include "service/common/core_summary.h"

namespace unwindd::service {

std::vector<CoreSummary::Fact> CoredumpFacts(const proc::coredump::CoredumpEntry& entry);

}  // namespace unwindd::service

#endif  // UNWINDD_SERVICE_CLI_COREDUMP_FACTS_H_

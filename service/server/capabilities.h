// unwindd's Linux capabilities (capabilities(7)): which ones it needs and
// for what, what it has, and dropping the rest. Run as its own user with
// only these (docs/deployment.md "Running as a service"), or as root, which keeps only
// these too unless --keep-capabilities.
//
//   absl::StatusOr<CapabilitySets> c = ReadCapabilities();
//   for (const std::string& line : DescribePrivileges(getuid(), getgid(), *c)) log(line);
//   absl::Status s = DropUnneededCapabilities();   // while single-threaded
//
// Capability sets are per thread. A worker that acts for a caller
// (auth.h's ScopedFsIdentity) empties its own effective set for that time
// with ThreadEffectiveCapabilities/SetThreadEffectiveCapabilities, so that
// nothing it opens for the caller uses unwindd's rights.
#ifndef UNWINDD_SERVICE_SERVER_CAPABILITIES_H_
#define UNWINDD_SERVICE_SERVER_CAPABILITIES_H_

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"

namespace unwindd::service {

// One bit per capability number (linux/capability.h), as /proc's Cap* lines.
using CapabilityMask = uint64_t;

constexpr CapabilityMask CapabilityBit(int cap) { return CapabilityMask{1} << cap; }

struct NeededCapability {
  int cap;                // CAP_SYS_PTRACE, ...
  const char* name;       // "cap_sys_ptrace", as setpriv and systemd spell it
  const char* needed_for;  // what does not work without it
};

// Every capability unwindd uses, in capability order. Nothing else is used:
// the privilege test runs unwindd with exactly these.
absl::Span<const NeededCapability> NeededCapabilities();
CapabilityMask NeededCapabilityMask();

// The calling thread's sets (/proc/thread-self/status: CapInh, CapPrm,
// CapEff, CapBnd, CapAmb).
struct CapabilitySets {
  CapabilityMask inheritable = 0;
  CapabilityMask permitted = 0;
  CapabilityMask effective = 0;
  CapabilityMask bounding = 0;
  CapabilityMask ambient = 0;
};
absl::StatusOr<CapabilitySets> ReadCapabilities();
// Parses the Cap* lines of a /proc/PID/status text (InvalidArgument if one
// is missing or not hex).
absl::StatusOr<CapabilitySets> ParseCapabilities(absl::string_view status);

// "cap_setgid,cap_setuid,cap_sys_ptrace", "none", or "cap_42" for a number
// without a name here.
std::string CapabilityNames(CapabilityMask mask);

// What unwindd logs at start-up: one line with its uid, gid and effective
// capabilities, then one per needed capability it lacks, saying what will
// not work, and one if it has more than it needs.
std::vector<std::string> DescribePrivileges(uid_t uid, gid_t gid,
                                            const CapabilitySets& caps);

// Keeps only the needed capabilities (those of them it has): drops the
// rest from the bounding, ambient, inheritable, permitted and effective
// sets. Only while the process has one thread (capability sets are per
// thread; FailedPrecondition otherwise). Dropping from the bounding set
// needs CAP_SETPCAP; without it the bounding set is left as it is (no
// capability can come back from it anyway: only exec could add any, and
// unwindd never execs). OK and a no-op when there is nothing to drop.
absl::Status DropUnneededCapabilities();

// The calling thread's effective and permitted sets (capget), and a new
// effective set for this thread only (capset; it must be a subset of the
// permitted set).
struct ThreadCapabilities {
  CapabilityMask effective = 0;
  CapabilityMask permitted = 0;
  CapabilityMask inheritable = 0;
};
absl::StatusOr<ThreadCapabilities> GetThreadCapabilities();
absl::Status SetThreadEffectiveCapabilities(CapabilityMask effective);

}  // namespace unwindd::service

#endif  // UNWINDD_SERVICE_SERVER_CAPABILITIES_H_

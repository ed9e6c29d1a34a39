#include "service/server/capabilities.h"

#include <dirent.h>
#include <linux/capability.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace unwindd::service {
namespace {

// capabilities(7) names, by number (linux/capability.h up to
// CAP_CHECKPOINT_RESTORE, 40, Linux 5.9).
constexpr const char* kNames[] = {
    "cap_chown",           "cap_dac_override",   "cap_dac_read_search",
    "cap_fowner",          "cap_fsetid",         "cap_kill",
    "cap_setgid",          "cap_setuid",         "cap_setpcap",
    "cap_linux_immutable", "cap_net_bind_service", "cap_net_broadcast",
    "cap_net_admin",       "cap_net_raw",        "cap_ipc_lock",
    "cap_ipc_owner",       "cap_sys_module",     "cap_sys_rawio",
    "cap_sys_chroot",      "cap_sys_ptrace",     "cap_sys_pacct",
    "cap_sys_admin",       "cap_sys_boot",       "cap_sys_nice",
    "cap_sys_resource",    "cap_sys_time",       "cap_sys_tty_config",
    "cap_mknod",           "cap_lease",          "cap_audit_write",
    "cap_audit_control",   "cap_setfcap",        "cap_mac_override",
    "cap_mac_admin",       "cap_syslog",         "cap_wake_alarm",
    "cap_block_suspend",   "cap_audit_read",     "cap_perfmon",
    "cap_bpf",             "cap_checkpoint_restore",
};
constexpr int kMaxCap = 63;  // the masks' width

// Found by running unwindd with fewer (service/server/privilege_test.cc and
// docs/deployment.md "Running as a service" say which operation failed without each).
constexpr NeededCapability kNeeded[] = {
    {CAP_DAC_READ_SEARCH, "cap_dac_read_search",
     "module files of other users' processes that unwindd's own user may not "
     "read are not used (frames from the process's memory only), and root "
     "callers' files are opened with unwindd's own rights"},
    {CAP_SETGID, "cap_setgid",
     "files named in requests (cores, snapshot modules, debug files) cannot "
     "be opened as the caller: refused unless the caller is unwindd's own uid"},
    {CAP_SETUID, "cap_setuid",
     "files named in requests (cores, snapshot modules, debug files) cannot "
     "be opened as the caller: refused unless the caller is unwindd's own uid"},
    {CAP_SYS_PTRACE, "cap_sys_ptrace",
     "processes of other uids cannot be unwound (UnwindProcess, snapshots "
     "naming a pid): only unwindd's own uid's"},
    {CAP_CHECKPOINT_RESTORE, "cap_checkpoint_restore",
     "deleted or replaced module files of live processes cannot be opened "
     "through /proc/PID/map_files (frames from the process's memory only)"},
};

absl::StatusOr<std::string> ReadSmallFile(const char* path) {
  std::ifstream in(path);
  if (!in) return absl::ErrnoToStatus(errno, absl::StrCat("open ", path));
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

int CountThreads() {
  DIR* d = opendir("/proc/self/task");
  if (d == nullptr) return -1;
  int n = 0;
  while (dirent* e = readdir(d)) n += e->d_name[0] != '.';
  closedir(d);
  return n;
}

}  // namespace

absl::Span<const NeededCapability> NeededCapabilities() { return kNeeded; }

CapabilityMask NeededCapabilityMask() {
  CapabilityMask m = 0;
  for (const NeededCapability& c : kNeeded) m |= CapabilityBit(c.cap);
  return m;
}

absl::StatusOr<CapabilitySets> ParseCapabilities(absl::string_view status) {
  struct Field {
    absl::string_view key;
    CapabilityMask CapabilitySets::*mask;
    bool seen;
  } fields[] = {{"CapInh:", &CapabilitySets::inheritable, false},
                {"CapPrm:", &CapabilitySets::permitted, false},
                {"CapEff:", &CapabilitySets::effective, false},
                {"CapBnd:", &CapabilitySets::bounding, false},
                {"CapAmb:", &CapabilitySets::ambient, false}};
  CapabilitySets out;
  for (absl::string_view line : absl::StrSplit(status, '\n')) {
    for (Field& f : fields) {
      absl::string_view v = line;
      if (!absl::ConsumePrefix(&v, f.key)) continue;
      v = absl::StripAsciiWhitespace(v);
      uint64_t mask = 0;
      if (v.empty() || v.size() > 16 || !absl::SimpleHexAtoi(v, &mask)) {
        return absl::InvalidArgumentError(
            absl::StrCat("bad ", f.key, " line in /proc status: '", line.substr(0, 64), "'"));
      }
      out.*f.mask = mask;
      f.seen = true;
    }
  }
  for (const Field& f : fields) {
    if (!f.seen) {
      return absl::InvalidArgumentError(absl::StrCat("no ", f.key, " line in /proc status"));
    }
  }
  return out;
}

absl::StatusOr<CapabilitySets> ReadCapabilities() {
  absl::StatusOr<std::string> status = ReadSmallFile("/proc/thread-self/status");
  if (!status.ok()) return status.status();
  return ParseCapabilities(*status);
}

std::string CapabilityNames(CapabilityMask mask) {
  std::vector<std::string> names;
  for (int cap = 0; cap <= kMaxCap; ++cap) {
    if ((mask & CapabilityBit(cap)) == 0) continue;
    names.push_back(cap < static_cast<int>(std::size(kNames)) ? kNames[cap]
                                                              : absl::StrCat("cap_", cap));
  }
  return names.empty() ? "none" : absl::StrJoin(names, ",");
}

std::vector<std::string> DescribePrivileges(uid_t uid, gid_t gid,
                                            const CapabilitySets& caps) {
  std::vector<std::string> lines;
  lines.push_back(absl::StrCat("running as uid ", uid, " gid ", gid,
                               ", effective capabilities: ",
                               CapabilityNames(caps.effective)));
  // One line per effect: cap_setgid and cap_setuid share one, said once.
  for (size_t i = 0; i < std::size(kNeeded); ++i) {
    if ((caps.effective & CapabilityBit(kNeeded[i].cap)) != 0) continue;
    bool said = false;
    std::string names = kNeeded[i].name;
    for (size_t j = 0; j < std::size(kNeeded); ++j) {
      if (j == i || absl::string_view(kNeeded[j].needed_for) != kNeeded[i].needed_for ||
          (caps.effective & CapabilityBit(kNeeded[j].cap)) != 0) {
        continue;
      }
      said |= j < i;
      absl::StrAppend(&names, "/", kNeeded[j].name);
    }
    if (!said) lines.push_back(absl::StrCat("without ", names, ": ", kNeeded[i].needed_for));
  }
  CapabilityMask extra = caps.effective & ~NeededCapabilityMask();
  if (extra != 0) {
    lines.push_back(absl::StrCat("more capabilities than needed (",
                                 CapabilityNames(extra),
                                 "); only --keep-capabilities keeps them"));
  }
  return lines;
}

absl::StatusOr<ThreadCapabilities> GetThreadCapabilities() {
  __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3] = {};
  if (syscall(SYS_capget, &header, data) != 0) {
    return absl::ErrnoToStatus(errno, "capget");
  }
  ThreadCapabilities out;
  out.effective = data[0].effective | (CapabilityMask{data[1].effective} << 32);
  out.permitted = data[0].permitted | (CapabilityMask{data[1].permitted} << 32);
  out.inheritable = data[0].inheritable | (CapabilityMask{data[1].inheritable} << 32);
  return out;
}

namespace {

// capset(2) on this thread only (pid 0 in the header): the raw syscall,
// which the kernel applies to the calling thread alone.
absl::Status SetThreadSets(CapabilityMask effective, CapabilityMask permitted,
                           CapabilityMask inheritable) {
  __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3] = {};
  data[0] = {static_cast<uint32_t>(effective), static_cast<uint32_t>(permitted),
             static_cast<uint32_t>(inheritable)};
  data[1] = {static_cast<uint32_t>(effective >> 32),
             static_cast<uint32_t>(permitted >> 32),
             static_cast<uint32_t>(inheritable >> 32)};
  if (syscall(SYS_capset, &header, data) != 0) {
    return absl::ErrnoToStatus(errno, absl::StrCat("capset effective=",
                                                   CapabilityNames(effective)));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status SetThreadEffectiveCapabilities(CapabilityMask effective) {
  absl::StatusOr<ThreadCapabilities> now = GetThreadCapabilities();
  if (!now.ok()) return now.status();
  return SetThreadSets(effective, now->permitted, now->inheritable);
}

absl::Status DropUnneededCapabilities() {
  absl::StatusOr<CapabilitySets> caps = ReadCapabilities();
  if (!caps.ok()) return caps.status();
  const CapabilityMask keep = NeededCapabilityMask();
  const CapabilityMask all =
      caps->permitted | caps->effective | caps->inheritable | caps->ambient | caps->bounding;
  if ((all & ~keep) == 0) return absl::OkStatus();
  int threads = CountThreads();
  if (threads != 1) {
    return absl::FailedPreconditionError(absl::StrCat(
        "capabilities are per thread; dropping them with ", threads,
        " threads running would leave the others theirs"));
  }
  // The bounding set first: it needs CAP_SETPCAP, dropped below.
  if ((caps->effective & CapabilityBit(CAP_SETPCAP)) != 0) {
    for (int cap = 0; cap <= kMaxCap; ++cap) {
      if ((caps->bounding & ~keep & CapabilityBit(cap)) == 0) continue;
      if (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0) {
        return absl::ErrnoToStatus(errno, absl::StrCat("PR_CAPBSET_DROP ", cap));
      }
    }
  }
  for (int cap = 0; cap <= kMaxCap; ++cap) {
    if ((caps->ambient & ~keep & CapabilityBit(cap)) == 0) continue;
    if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_LOWER, cap, 0, 0) != 0) {
      return absl::ErrnoToStatus(errno, absl::StrCat("PR_CAP_AMBIENT_LOWER ", cap));
    }
  }
  return SetThreadSets(caps->effective & keep, caps->permitted & keep,
                       caps->inheritable & keep);
}

}  // namespace unwindd::service

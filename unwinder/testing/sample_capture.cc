#include "unwinder/testing/sample_capture.h"

#include <fcntl.h>

#include <algorithm>
#include <map>
#include <memory>
#include <string>

#include "memory/scoped_fd.h"
#include "proc/live_target.h"

namespace unwindd::unwinder::testing {

absl::StatusOr<std::vector<proc::Snapshot>> CaptureSamples(pid_t pid,
                                                           size_t stack_bytes) {
  absl::StatusOr<std::unique_ptr<proc::Target>> target = proc::AttachLive(pid, {});
  if (!target.ok()) return target.status();
  proc::Target& t = **target;
  // One open file per mapped file, shared by every sample.
  std::map<std::string, std::shared_ptr<const proc::SnapshotFile>> files;
  std::vector<proc::SnapshotMapping> mappings;
  for (const proc::Mapping& m : t.mappings()) {
    proc::SnapshotMapping sm{m, nullptr, nullptr};
    if (m.path == "[vdso]") {
      auto image = std::make_shared<std::vector<uint8_t>>(m.end - m.start);
      if (t.memory().ReadFully(m.start, absl::MakeSpan(*image)).ok()) sm.image = image;
    } else if (m.IsFileBacked()) {
      auto it = files.find(m.path);
      if (it == files.end()) {
        for (const std::string& c : t.FileCandidates(m)) {
          memory::ScopedFd fd = memory::OpenCloexec(c.c_str(), O_RDONLY);
          if (!fd.valid()) continue;
          absl::StatusOr<std::shared_ptr<const proc::SnapshotFile>> f =
              proc::SnapshotFile::FromFd(std::move(fd));
          if (f.ok()) {
            it = files.emplace(m.path, *f).first;
            break;
          }
        }
      }
      if (it != files.end()) sm.file = it->second;
    }
    mappings.push_back(std::move(sm));
  }
  std::vector<proc::Snapshot> out;
  for (pid_t tid : t.Threads()) {
    absl::StatusOr<arch::RegisterSet> regs = t.InitialRegisters(tid);
    if (!regs.ok()) continue;
    proc::Snapshot s;
    s.arch = t.arch();
    s.pid = pid;
    s.tid = tid;
    s.registers = *regs;
    s.stack_address = regs->sp();
    uint64_t end = s.stack_address + stack_bytes;
    for (const proc::Mapping& m : t.mappings()) {
      if (m.Contains(s.stack_address)) end = std::min(end, m.end);
    }
    s.stack.resize(end - s.stack_address);
    s.stack.resize(t.memory().Read(s.stack_address, absl::MakeSpan(s.stack)));
    s.mappings = mappings;
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace unwindd::unwinder::testing

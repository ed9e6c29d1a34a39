#include "proc/perf/process_maps.h"

#include <utility>

#include "absl/strings/str_format.h"

namespace unwindd::proc::perf {

void ProcessMaps::Apply(const Event& e) {
  switch (e.type) {
    case kRecordMmap:
    case kRecordMmap2:
      Mmap(e.mmap, e.id.time);
      break;
    case kRecordComm:
      Comm(e.comm);
      break;
    case kRecordFork:
      Fork(e.task);
      break;
    case kRecordExit:
      Exit(e.task);
      break;
    default:
      break;
  }
}

const ProcessTable* ProcessMaps::Find(uint32_t pid) const {
  auto it = tables_.find(pid);
  return it == tables_.end() ? nullptr : it->second.get();
}

const std::string& ProcessMaps::ThreadComm(uint32_t tid) const {
  static const std::string kEmpty;
  auto it = thread_comms_.find(tid);
  return it == thread_comms_.end() ? kEmpty : it->second;
}

ProcessTable* ProcessMaps::Get(uint32_t pid) {
  auto it = tables_.find(pid);
  if (it != tables_.end()) return it->second.get();
  if (tables_.size() >= max_processes_) {
    // Forget a process that has exited; keep the running ones.
    for (auto j = tables_.begin(); j != tables_.end(); ++j) {
      if (j->second->exited) {
        tables_.erase(j);
        break;
      }
    }
  }
  if (tables_.size() >= max_processes_) {
    warnings_.Add(absl::StrFormat(
        "more than %d processes: the mappings of pid %d are not tracked",
        max_processes_, pid));
    return nullptr;
  }
  auto t = std::make_unique<ProcessTable>();
  t->pid = pid;
  t->generation = ++generation_;
  ProcessTable* raw = t.get();
  tables_.emplace(pid, std::move(t));
  return raw;
}

void ProcessMaps::Mmap(const MmapEvent& m, uint64_t time) {
  // The kernel's own mappings (pid -1: [kernel.kallsyms], modules) are no
  // process's.
  if (m.pid == 0xffffffffu) return;
  if (m.len == 0 || m.start + m.len < m.start) {
    warnings_.Add(absl::StrFormat(
        "pid %d: mapping at 0x%x of length 0x%x is empty or wraps; ignored",
        m.pid, m.start, m.len));
    return;
  }
  PerfMapping n;
  n.start = m.start;
  n.end = m.start + m.len;
  n.pgoff = m.pgoff;
  n.maj = m.maj;
  n.min = m.min;
  n.ino = m.ino;
  n.ino_generation = m.ino_generation;
  n.prot = m.prot;
  n.flags = m.flags;
  n.filename = std::make_shared<const std::string>(m.filename);
  if (!m.build_id.empty()) n.build_id = HexString(m.build_id.span());
  n.time = time;
  Insert(m.pid, std::move(n));
}

void ProcessMaps::AddCode(uint32_t pid, const Mapping& m, std::shared_ptr<const CodeImage> code,
                          uint64_t time) {
  if (m.end <= m.start) return;
  PerfMapping n;
  n.start = m.start;
  n.end = m.end;
  n.pgoff = m.offset;
  n.prot = kProtRead | kProtExec;
  n.filename = std::make_shared<const std::string>(m.path);
  n.time = time;
  n.code_image = std::move(code);
  Insert(pid, std::move(n));
}

void ProcessMaps::Insert(uint32_t pid, PerfMapping n) {
  ProcessTable* t = Get(pid);
  if (t == nullptr) return;
  const uint64_t start = n.start;
  const uint64_t end = n.end;
  // Unmap what the new mapping covers, keeping the parts of older
  // mappings on either side (mm/mmap.c: a MAP_FIXED mapping replaces the
  // pages it covers; perf's maps__fixup_overlappings does the same).
  auto it = t->mappings.upper_bound(start);
  if (it != t->mappings.begin()) --it;
  while (it != t->mappings.end() && it->second.start < end) {
    PerfMapping old = it->second;
    if (old.end <= start) {
      ++it;
      continue;
    }
    it = t->mappings.erase(it);
    if (old.start < start) {
      PerfMapping left = old;
      left.end = start;
      t->mappings.emplace(left.start, std::move(left));
    }
    if (old.end > end) {
      PerfMapping right = old;
      right.pgoff += end - old.start;
      right.start = end;
      it = t->mappings.emplace(right.start, std::move(right)).first;
      ++it;
    }
  }
  if (t->mappings.size() >= max_mappings_) {
    warnings_.Add(absl::StrFormat(
        "pid %d: more than %d mappings; the one at 0x%x is not tracked", pid,
        max_mappings_, start));
    Changed(*t);
    return;
  }
  t->mappings.emplace(start, std::move(n));
  Changed(*t);
}

void ProcessMaps::Fork(const TaskEvent& f) {
  if (thread_comms_.size() >= kMaxThreads) thread_comms_.clear();
  auto parent_comm = thread_comms_.find(f.ptid);
  std::string name =
      parent_comm == thread_comms_.end() ? std::string() : parent_comm->second;
  thread_comms_[f.tid] = std::move(name);
  if (f.pid == f.ppid) {
    // A new thread: it shares its process's table.
    Get(f.pid);
    return;
  }
  // A new process (fork, or clone without CLONE_VM... which perf reports
  // the same way): a copy of the parent's mappings. A pid seen before
  // has been reused: its old table goes.
  tables_.erase(f.pid);
  ProcessTable* child = Get(f.pid);
  if (child == nullptr) return;
  const ProcessTable* parent = Find(f.ppid);
  if (parent != nullptr) {
    child->mappings = parent->mappings;
    child->comm = parent->comm;
  }
  Changed(*child);
}

void ProcessMaps::Exit(const TaskEvent& x) {
  if (x.pid != x.tid) return;  // one thread of several
  auto it = tables_.find(x.pid);
  if (it != tables_.end()) it->second->exited = true;
}

void ProcessMaps::Comm(const CommEvent& c) {
  if (thread_comms_.size() >= kMaxThreads) thread_comms_.clear();
  thread_comms_[c.tid] = std::string(c.comm);
  ProcessTable* t = Get(c.pid);
  if (t == nullptr) return;
  if (c.pid == c.tid) t->comm = std::string(c.comm);
  if (c.exec) {
    // exec replaced the whole address space; the new mappings follow.
    t->mappings.clear();
    t->exited = false;
    t->comm = std::string(c.comm);
    Changed(*t);
  }
}

}  // namespace unwindd::proc::perf

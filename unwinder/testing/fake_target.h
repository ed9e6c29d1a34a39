// A Target for step-loop tests: threads with registers the test sets, an
// address space of bytes the test puts (memory/testing/map_memory.h), and
// mappings of files the test wrote (elf_builder.h) and of its stacks.
//
//   FakeTarget t(arch::Arch::kX86_64);
//   t.MapFile(0x400000, WriteElf(spec, "a.so"));
//   t.MapStack(0x7ff000, 0x800000);
//   t.memory_map().PutLe(0x7ffff8, return_address, 8);
//   t.AddThread(1, regs);
#ifndef UNWINDD_UNWINDER_TESTING_FAKE_TARGET_H_
#define UNWINDD_UNWINDER_TESTING_FAKE_TARGET_H_

#include <sys/stat.h>
#include <sys/types.h>

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "arch/register_set.h"
#include "memory/testing/map_memory.h"
#include "proc/target.h"

namespace unwindd::unwinder::testing {

class FakeTarget : public proc::Target {
 public:
  explicit FakeTarget(arch::Arch arch) : arch_(arch) {}

  // Maps the file at `path` (its whole size, rounded up to a page) at
  // `start`, file offset 0, r-x: the file's load bias is then `start`.
  void MapFile(uint64_t start, const std::string& path) {
    struct stat st {};
    stat(path.c_str(), &st);
    proc::Mapping m;
    m.start = start;
    m.end = start + ((static_cast<uint64_t>(st.st_size) + 0xfff) & ~uint64_t{0xfff});
    m.read = m.exec = true;
    m.inode = st.st_ino;
    m.path = path;
    Add(m);
  }
  // An anonymous rw- mapping: where the frame-pointer checks look for a
  // thread's stack. Its bytes are only those the test puts.
  void MapStack(uint64_t start, uint64_t end) {
    proc::Mapping m;
    m.start = start;
    m.end = end;
    m.read = m.write = true;
    m.path = "[stack]";
    Add(m);
  }
  // Any other mapping, as /proc/PID/maps would list it.
  void AddMapping(const proc::Mapping& m) { Add(m); }
  void AddThread(pid_t tid, const arch::RegisterSet& regs) {
    threads_.push_back(tid);
    regs_[tid] = regs;
  }
  // What InitialRegisters(tid) answers instead of registers.
  void FailThread(pid_t tid, absl::Status status) {
    threads_.push_back(tid);
    failures_[tid] = std::move(status);
  }
  memory::testing::MapMemory& memory_map() { return memory_; }

  arch::Arch arch() const override { return arch_; }
  pid_t pid() const override { return 1; }
  std::vector<pid_t> Threads() const override { return threads_; }
  absl::StatusOr<arch::RegisterSet> InitialRegisters(pid_t tid) override {
    if (auto f = failures_.find(tid); f != failures_.end()) return f->second;
    auto it = regs_.find(tid);
    if (it == regs_.end()) return absl::NotFoundError("no such thread");
    return it->second;
  }
  memory::Memory& memory() override { return memory_; }
  const std::vector<proc::Mapping>& mappings() const override { return mappings_; }
  std::vector<std::string> FileCandidates(const proc::Mapping& m) const override {
    if (!m.IsFileBacked()) return {};
    return {m.path};
  }

 private:
  void Add(const proc::Mapping& m) {
    mappings_.push_back(m);
    std::sort(mappings_.begin(), mappings_.end(),
              [](const proc::Mapping& a, const proc::Mapping& b) { return a.start < b.start; });
  }

  arch::Arch arch_;
  std::vector<pid_t> threads_;
  std::map<pid_t, arch::RegisterSet> regs_;
  std::map<pid_t, absl::Status> failures_;
  memory::testing::MapMemory memory_;
  std::vector<proc::Mapping> mappings_;
};

}  // namespace unwindd::unwinder::testing

#endif  // UNWINDD_UNWINDER_TESTING_FAKE_TARGET_H_

#include "proc/snapshot_target.h"

#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace unwindd::proc {
namespace {

// Reads of one source never cross the end of its region, so that ReadFully
// (which loops over partial reads) moves on to whatever covers the next
// byte: a word straddling the top of the stack copy and a file mapping
// reads half from each.
class SnapshotMemory final : public memory::Memory {
 public:
  SnapshotMemory(const Snapshot& s, std::unique_ptr<memory::Memory> process)
      : snapshot_(s), process_(std::move(process)) {}

  size_t Read(uint64_t addr, absl::Span<uint8_t> dst) override {
    if (dst.empty()) return 0;
    // 1. The stack copy.
    const uint64_t stack_end = snapshot_.stack_address + snapshot_.stack.size();
    if (addr >= snapshot_.stack_address && addr < stack_end) {
      size_t n = std::min<uint64_t>(dst.size(), stack_end - addr);
      std::memcpy(dst.data(), &snapshot_.stack[addr - snapshot_.stack_address],
                  n);
      return n;
    }
    // Nothing else may hide bytes of the stack copy that follow addr.
    if (addr < snapshot_.stack_address &&
        snapshot_.stack_address - addr < dst.size()) {
      dst = dst.first(snapshot_.stack_address - addr);
    }
    const SnapshotMapping* m = Find(addr);
    if (m != nullptr) dst = dst.first(std::min<uint64_t>(dst.size(), m->mapping.end - addr));
    // 2. An image of the mapping.
    if (m != nullptr && m->image != nullptr) {
      uint64_t off = addr - m->mapping.start;
      if (off < m->image->size()) {
        size_t n = std::min<uint64_t>(dst.size(), m->image->size() - off);
        std::memcpy(dst.data(), m->image->data() + off, n);
        return n;
      }
    }
    // 3. Read-only mappings from their file.
    if (m != nullptr && m->file != nullptr && !m->mapping.write) {
      size_t n = ReadFile(*m, addr, dst);
      if (n > 0) return n;
    }
    // 4. The live process.
    if (process_ != nullptr) {
      size_t n = process_->Read(addr, dst);
      if (n > 0) return n;
    }
    // 5. Writable mappings from their file.
    if (m != nullptr && m->file != nullptr && m->mapping.write) {
      return ReadFile(*m, addr, dst);
    }
    return 0;
  }

  HeldBytes HeldBytesAt(uint64_t addr) override {
    if (addr < snapshot_.stack_address ||
        addr - snapshot_.stack_address >= snapshot_.stack.size()) {
      return {};
    }
    return {snapshot_.stack_address, absl::MakeConstSpan(snapshot_.stack)};
  }

 private:
  const SnapshotMapping* Find(uint64_t addr) const {
    // Sorted by start and non-overlapping (checked by CreateSnapshotTarget).
    auto it = std::upper_bound(
        snapshot_.mappings.begin(), snapshot_.mappings.end(), addr,
        [](uint64_t a, const SnapshotMapping& m) { return a < m.mapping.start; });
    if (it == snapshot_.mappings.begin()) return nullptr;
    --it;
    return it->mapping.Contains(addr) ? &*it : nullptr;
  }

  static size_t ReadFile(const SnapshotMapping& m, uint64_t addr,
                         absl::Span<uint8_t> dst) {
    uint64_t rel = addr - m.mapping.start;
    uint64_t off = m.mapping.offset + rel;
    if (off < m.mapping.offset) return 0;  // wrapped
    // Past the end of the file the kernel would SIGBUS; so do we, softly.
    return m.file->Read(off, dst);
  }

  const Snapshot& snapshot_;
  std::unique_ptr<memory::Memory> process_;
};

class SnapshotTarget final : public Target {
 public:
  SnapshotTarget(Snapshot s, std::unique_ptr<memory::Memory> process)
      : snapshot_(std::move(s)), memory_(snapshot_, std::move(process)) {
    for (const SnapshotMapping& m : snapshot_.mappings) {
      mappings_.push_back(m.mapping);
    }
  }

  arch::Arch arch() const override { return snapshot_.arch; }
  pid_t pid() const override { return snapshot_.pid; }
  std::vector<pid_t> Threads() const override { return {snapshot_.tid}; }
  absl::StatusOr<arch::RegisterSet> InitialRegisters(pid_t tid) override {
    if (tid != snapshot_.tid) {
      return absl::NotFoundError(
          absl::StrFormat("thread %d is not in the snapshot", tid));
    }
    return snapshot_.registers;
  }
  memory::Memory& memory() override { return memory_; }
  const std::vector<Mapping>& mappings() const override { return mappings_; }
  std::vector<std::string> FileCandidates(const Mapping& m) const override {
    const SnapshotMapping* sm = Find(m);
    if (sm == nullptr || sm->file == nullptr) return {};
    return {sm->file->proc_path()};
  }
  std::string RecordedBuildId(const Mapping& m) const override {
    const SnapshotMapping* sm = Find(m);
    return sm == nullptr ? "" : sm->build_id;
  }

 private:
  const SnapshotMapping* Find(const Mapping& m) const {
    auto it = std::lower_bound(
        snapshot_.mappings.begin(), snapshot_.mappings.end(), m.start,
        [](const SnapshotMapping& a, uint64_t s) { return a.mapping.start < s; });
    return it != snapshot_.mappings.end() && it->mapping.start == m.start ? &*it : nullptr;
  }

  const Snapshot snapshot_;
  SnapshotMemory memory_;
  std::vector<Mapping> mappings_;
};

}  // namespace

absl::StatusOr<std::shared_ptr<const SnapshotFile>> SnapshotFile::FromFd(
    memory::ScopedFd fd) {
  struct stat st;
  if (fstat(fd.get(), &st) != 0) {
    return absl::ErrnoToStatus(errno, "fstat of a snapshot file");
  }
  if (!S_ISREG(st.st_mode)) {
    return absl::FailedPreconditionError("not a regular file");
  }
  return std::shared_ptr<const SnapshotFile>(
      new SnapshotFile(std::move(fd), st.st_size, st.st_dev, st.st_ino));
}

std::string SnapshotFile::proc_path() const {
  return absl::StrCat("/proc/self/fd/", fd_.get());
}

size_t SnapshotFile::Read(uint64_t offset, absl::Span<uint8_t> dst) const {
  if (offset >= size_) return 0;
  size_t want = std::min<uint64_t>(dst.size(), size_ - offset);
  ssize_t n;
  do {
    n = pread(fd_.get(), dst.data(), want, static_cast<off_t>(offset));
  } while (n < 0 && errno == EINTR);
  return n > 0 ? static_cast<size_t>(n) : 0;
}

absl::StatusOr<std::unique_ptr<Target>> CreateSnapshotTarget(
    Snapshot snapshot, std::unique_ptr<memory::Memory> process_memory) {
  const arch::ArchInfo& info = arch::GetArchInfo(snapshot.arch);
  if (snapshot.registers.arch() != snapshot.arch) {
    return absl::InvalidArgumentError(
        "the registers are not of the snapshot's architecture");
  }
  if (!snapshot.registers.Valid(info.pc) || !snapshot.registers.Valid(info.sp)) {
    return absl::InvalidArgumentError(
        "the registers must include the program counter and stack pointer");
  }
  if (snapshot.stack_address + snapshot.stack.size() < snapshot.stack_address) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "the stack copy at 0x%x wraps around the address space",
        snapshot.stack_address));
  }
  std::sort(snapshot.mappings.begin(), snapshot.mappings.end(),
            [](const SnapshotMapping& a, const SnapshotMapping& b) {
              return a.mapping.start < b.mapping.start;
            });
  for (size_t i = 0; i < snapshot.mappings.size(); ++i) {
    Mapping& m = snapshot.mappings[i].mapping;
    if (m.start >= m.end) {
      return absl::InvalidArgumentError(
          absl::StrFormat("empty mapping at 0x%x", m.start));
    }
    if (i > 0 && snapshot.mappings[i - 1].mapping.end > m.start) {
      return absl::InvalidArgumentError(
          absl::StrFormat("mappings overlap at 0x%x", m.start));
    }
    // The address space groups a file's mappings and checks a candidate
    // file by inode: both come from the file we really opened, never from
    // the request.
    const SnapshotFile* f = snapshot.mappings[i].file.get();
    m.inode = f != nullptr ? f->inode() : 0;
    m.dev_major = f != nullptr ? major(f->dev()) : 0;
    m.dev_minor = f != nullptr ? minor(f->dev()) : 0;
    m.deleted = false;
    if (f != nullptr && m.path.empty()) m.path = f->proc_path();
  }
  return std::unique_ptr<Target>(
      new SnapshotTarget(std::move(snapshot), std::move(process_memory)));
}

}  // namespace unwindd::proc

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
  explicit SnapshotMemory(const std::vector<SnapshotMapping>& mappings)
      : mappings_(mappings) {}

  void SetSample(uint64_t stack_address, absl::Span<const uint8_t> stack,
                 absl::Span<const uint8_t> tail, memory::Memory* process,
                 uint64_t unloaded_end) {
    stack_address_ = stack_address;
    stack_ = stack;
    tail_ = tail;
    process_ = process;
    unloaded_end_ = unloaded_end;
    missed_ = false;
  }
  bool missed() const { return missed_; }

  size_t Read(uint64_t addr, absl::Span<uint8_t> dst) override {
    if (dst.empty()) return 0;
    // 1. The stack copy: its first piece, then its tail.
    const uint64_t head_end = stack_address_ + stack_.size();
    const uint64_t stack_end = head_end + tail_.size();
    if (addr >= stack_address_ && addr < head_end) {
      size_t n = std::min<uint64_t>(dst.size(), head_end - addr);
      std::memcpy(dst.data(), &stack_[addr - stack_address_], n);
      return n;
    }
    if (addr >= head_end && addr < stack_end) {
      size_t n = std::min<uint64_t>(dst.size(), stack_end - addr);
      std::memcpy(dst.data(), &tail_[addr - head_end], n);
      return n;
    }
    // The rest of the sample's stack, not loaded (SnapshotSample::stack_end).
    if (addr >= stack_end && addr < unloaded_end_) {
      missed_ = true;
      return 0;
    }
    // Nothing else may hide bytes of the stack copy that follow addr.
    if (stack_end > stack_address_ && addr < stack_address_ &&
        stack_address_ - addr < dst.size()) {
      dst = dst.first(stack_address_ - addr);
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

  // Valid until the next sample (an unwind never spans two).
  HeldBytes HeldBytesAt(uint64_t addr) override {
    if (addr < stack_address_) return {};
    const uint64_t off = addr - stack_address_;
    if (off < stack_.size()) return {stack_address_, stack_};
    if (off - stack_.size() < tail_.size()) {
      return {stack_address_ + stack_.size(), tail_};
    }
    return {};
  }

 private:
  const SnapshotMapping* Find(uint64_t addr) const {
    // Sorted by start and non-overlapping (checked by SnapshotTarget::Create).
    auto it = std::upper_bound(
        mappings_.begin(), mappings_.end(), addr,
        [](uint64_t a, const SnapshotMapping& m) { return a < m.mapping.start; });
    if (it == mappings_.begin()) return nullptr;
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

  const std::vector<SnapshotMapping>& mappings_;
  uint64_t stack_address_ = 0;
  absl::Span<const uint8_t> stack_;
  absl::Span<const uint8_t> tail_;
  memory::Memory* process_ = nullptr;
  uint64_t unloaded_end_ = 0;
  bool missed_ = false;
};

class SnapshotTargetImpl final : public SnapshotTarget {
 public:
  // `mappings` sorted, checked and with dev/inode from their files.
  SnapshotTargetImpl(arch::Arch arch, pid_t pid, std::vector<SnapshotMapping> mappings)
      : arch_(arch), pid_(pid), snapshot_mappings_(std::move(mappings)),
        memory_(snapshot_mappings_) {
    mappings_.reserve(snapshot_mappings_.size());
    for (const SnapshotMapping& m : snapshot_mappings_) {
      mappings_.push_back(m.mapping);
    }
  }

  absl::Status SetSample(const SnapshotSample& sample) override {
    ClearSample();
    const arch::ArchInfo& info = arch::GetArchInfo(arch_);
    if (sample.registers.arch() != arch_) {
      return absl::InvalidArgumentError(
          "the registers are not of the snapshot's architecture");
    }
    if (!sample.registers.Valid(info.pc) || !sample.registers.Valid(info.sp)) {
      return absl::InvalidArgumentError(
          "the registers must include the program counter and stack pointer");
    }
    const uint64_t size = sample.stack.size() + sample.stack_tail.size();
    if (sample.stack_address + size < sample.stack_address) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "the stack copy at 0x%x wraps around the address space",
          sample.stack_address));
    }
    has_sample_ = true;
    tid_ = sample.tid;
    registers_ = sample.registers;  // of arch_, checked above
    memory_.SetSample(sample.stack_address, sample.stack, sample.stack_tail, sample.process,
                      sample.stack_end);
    return absl::OkStatus();
  }

  void ClearSample() override {
    has_sample_ = false;
    tid_ = 0;
    registers_.Clear();  // still of arch_: only SetSample assigns it
    memory_.SetSample(0, {}, {}, nullptr, 0);
  }
  bool stack_missed() const override { return memory_.missed(); }

  arch::Arch arch() const override { return arch_; }
  pid_t pid() const override { return pid_; }
  std::vector<pid_t> Threads() const override {
    if (!has_sample_) return {};
    return {tid_};
  }
  absl::StatusOr<arch::RegisterSet> InitialRegisters(pid_t tid) override {
    if (!has_sample_ || tid != tid_) {
      return absl::NotFoundError(
          absl::StrFormat("thread %d is not in the snapshot", tid));
    }
    return registers_;
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
  std::shared_ptr<const CodeImage> CodeImageFor(const Mapping& m) const override {
    const SnapshotMapping* sm = Find(m);
    return sm == nullptr ? nullptr : sm->code_image;
  }

 private:
  const SnapshotMapping* Find(const Mapping& m) const {
    auto it = std::lower_bound(
        snapshot_mappings_.begin(), snapshot_mappings_.end(), m.start,
        [](const SnapshotMapping& a, uint64_t s) { return a.mapping.start < s; });
    return it != snapshot_mappings_.end() && it->mapping.start == m.start ? &*it
                                                                            : nullptr;
  }

  const arch::Arch arch_;
  const pid_t pid_;
  const std::vector<SnapshotMapping> snapshot_mappings_;
  SnapshotMemory memory_;
  std::vector<Mapping> mappings_;
  bool has_sample_ = false;
  pid_t tid_ = 0;
  arch::RegisterSet registers_{arch_};
};

// CreateSnapshotTarget's: one sample, owning its stack copy and process
// memory.
class OwningSnapshotTarget final : public ForwardingTarget {
 public:
  OwningSnapshotTarget(std::unique_ptr<SnapshotTarget> inner,
                       std::vector<uint8_t> stack,
                       std::unique_ptr<memory::Memory> process)
      : ForwardingTarget(*inner),
        inner_(std::move(inner)),
        stack_(std::move(stack)),
        process_(std::move(process)) {}

  absl::Status Init(pid_t tid, const arch::RegisterSet& regs, uint64_t stack_address) {
    return inner_->SetSample(
        {tid, regs, stack_address, absl::MakeConstSpan(stack_), process_.get()});
  }

 private:
  std::unique_ptr<SnapshotTarget> inner_;
  const std::vector<uint8_t> stack_;
  std::unique_ptr<memory::Memory> process_;
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

absl::StatusOr<std::unique_ptr<SnapshotTarget>> SnapshotTarget::Create(
    arch::Arch arch, pid_t pid, std::vector<SnapshotMapping> mappings) {
  std::sort(mappings.begin(), mappings.end(),
            [](const SnapshotMapping& a, const SnapshotMapping& b) {
              return a.mapping.start < b.mapping.start;
            });
  for (size_t i = 0; i < mappings.size(); ++i) {
    Mapping& m = mappings[i].mapping;
    if (m.start >= m.end) {
      return absl::InvalidArgumentError(
          absl::StrFormat("empty mapping at 0x%x", m.start));
    }
    if (i > 0 && mappings[i - 1].mapping.end > m.start) {
      return absl::InvalidArgumentError(
          absl::StrFormat("mappings overlap at 0x%x", m.start));
    }
    // The address space groups a file's mappings and checks a candidate
    // file by inode: both come from the file we really opened, never from
    // the request.
    const SnapshotFile* f = mappings[i].file.get();
    m.inode = f != nullptr ? f->inode() : 0;
    m.dev_major = f != nullptr ? major(f->dev()) : 0;
    m.dev_minor = f != nullptr ? minor(f->dev()) : 0;
    m.deleted = false;
    if (f != nullptr && m.path.empty()) m.path = f->proc_path();
  }
  return std::unique_ptr<SnapshotTarget>(
      new SnapshotTargetImpl(arch, pid, std::move(mappings)));
}

absl::StatusOr<std::unique_ptr<Target>> CreateSnapshotTarget(
    Snapshot snapshot, std::unique_ptr<memory::Memory> process_memory) {
  absl::StatusOr<std::unique_ptr<SnapshotTarget>> inner = SnapshotTarget::Create(
      snapshot.arch, snapshot.pid, std::move(snapshot.mappings));
  if (!inner.ok()) return inner.status();
  auto target = std::make_unique<OwningSnapshotTarget>(
      *std::move(inner), std::move(snapshot.stack), std::move(process_memory));
  absl::Status s = target->Init(snapshot.tid, snapshot.registers, snapshot.stack_address);
  if (!s.ok()) return s;
  return std::unique_ptr<Target>(std::move(target));
}

}  // namespace unwindd::proc

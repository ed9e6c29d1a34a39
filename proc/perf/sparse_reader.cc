#include "proc/perf/sparse_reader.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

#include "absl/strings/str_format.h"
#include "proc/perf/bytes.h"
#include "proc/perf/chunks.h"
#include "proc/perf/header.h"

namespace unwindd::proc::perf {
namespace {

// A file's data section read with pread into recycled chunks, record by
// record, skipping the stack copies of samples. Records stay where they
// were read, in a chunk that queued records hold (RecordOwner), as
// ChunkReader's do.
class SparseReader final : public PerfDataReader {
 public:
  // Twice the largest record (its size is 16 bits), so that a record that
  // does not fit at a chunk's end moves to the next one whole. Chunks that
  // samples point into are held until those are unwound: about as many
  // as the pipeline's window (kBatchHeldBytes a batch) are kept for reuse.
  static constexpr size_t kChunkBytes = size_t{256} << 10;
  static constexpr size_t kMaxFreeChunks = 32;
  // How much a pread reads at least: after a sample's copy come its last
  // fields and the next record's first ones (its header, callchain and
  // registers), so a read of about one prefix gets the next record's
  // fields without reading into its copy.
  static constexpr size_t kMinRead = 512;
  static constexpr size_t kMaxRead = size_t{64} << 10;
  // The fields before a copy are parsed from at most this many bytes.
  static constexpr size_t kMaxPrefix = size_t{32} << 10;
  // How much longer than the last sample's fields a probe reads (a deeper
  // kernel callchain).
  static constexpr size_t kProbeSlack = 256;
  // The mapping's pages (RSS) are given back in steps of kReleaseStep, up
  // to kReleaseLag bytes behind the reader: farther back than the samples
  // the time-order queue and the pipeline hold, as a rule.
  static constexpr uint64_t kReleaseStep = uint64_t{2} << 20;
  static constexpr uint64_t kReleaseLag = uint64_t{4} << 20;

  SparseReader(Limits limits, memory::ScopedFd fd, uint64_t size)
      : PerfDataReader(limits), fd_(std::move(fd)), size_(size),
        pool_(kChunkBytes, kMaxFreeChunks) {}

  absl::Status Init(absl::string_view name) {
    PreadFileBytes bytes(fd_.get(), size_);
    uint64_t pos = 0, end = 0;
    absl::Status s = InitFromFile(bytes, pos, end);
    off_ = read_at_ = released_ = pos;
    data_end_ = end;
    if (!s.ok()) return s;
    // Stack copies left in the file are read in place where the file can
    // be mapped (guarded against truncation: memory/file_mapping.h), and
    // with pread where it cannot.
    absl::StatusOr<std::unique_ptr<memory::FileMapping>> m =
        memory::FileMapping::MapOnly(fd_.get(), size_, name);
    if (m.ok()) mapping_ = *std::move(m);
    return s;
  }

 protected:
  absl::Status NextRecord(absl::Span<const uint8_t>& record, uint64_t& offset,
                          bool& truncated) override {
    record = {};
    truncated = false;
    offset = off_;
    stack_offset_ = 0;
    absl::StatusOr<bool> got = Ensure(kRecordHeaderSize);
    if (!got.ok()) return got.status();
    if (!*got) {
      truncated = available() > 0;  // a partial header
      return absl::OkStatus();
    }
    const uint32_t type = Load32(data());
    const uint16_t size = Load16(data() + 6);
    if (size < kRecordHeaderSize) {
      return absl::DataLossError(absl::StrFormat(
          "record at 0x%x says it is %d bytes (at least %d): the records after "
          "it cannot be found",
          off_, size, kRecordHeaderSize));
    }
    if (type == kRecordSample && size >= kRecordHeaderSize + kMinLeftBytes) {
      absl::StatusOr<bool> left = LeaveStack(size, record, truncated);
      if (!left.ok()) return left.status();
      if (*left) return absl::OkStatus();
    }
    if (type == kRecordSample) {
      // Samples come whole: their copies are small. Read on in large
      // reads, as cat does, rather than one read per record.
      read_size_ = kChunkBytes;
    }
    got = Ensure(size);
    if (!got.ok()) return got.status();
    if (!*got) {
      truncated = true;
      return absl::OkStatus();
    }
    record = absl::MakeConstSpan(data(), size);
    Consume(size);
    off_ += size;
    return absl::OkStatus();
  }

  // Lets the pages of copies read in place well behind the reader go (a
  // sample unwound later than that reads them from the file again).
  void ReleaseBehind() {
    if (mapping_ == nullptr || off_ < released_ + kReleaseLag + kReleaseStep) return;
    const uint64_t to = off_ - kReleaseLag;
    mapping_->Release(released_, to - released_);
    released_ = to;
  }

  absl::Status SkipPayload(uint64_t n) override {
    const uint64_t at = off_;
    const uint64_t have = std::min<uint64_t>(n, available());
    Consume(have);
    off_ += have;
    if (n > have) {
      // Nothing of the rest is read: go past it.
      if (n - have > data_end_ - read_at_) {
        return absl::DataLossError(absl::StrFormat(
            "a payload at 0x%x runs past the end of the data (%d bytes missing)", at,
            n - have - (data_end_ - read_at_)));
      }
      read_at_ += n - have;
      off_ += n - have;
    }
    return absl::OkStatus();
  }

  absl::Span<const uint8_t> RecordAt(uint64_t, uint32_t) override { return {}; }
  bool MustCopy() const override { return true; }
  const std::shared_ptr<const void>* RecordOwner() override {
    // Past the budget, records are copied instead, as ChunkReader's are.
    if (pool_.in_use_bytes() > limits_.max_held_bytes) return nullptr;
    if (owner_.get() != chunk_.get()) {
      owner_ = std::shared_ptr<const void>(chunk_, chunk_.get());
    }
    return &owner_;
  }
  uint64_t LastStackFileOffset() const override { return stack_offset_; }

 public:
  int stack_file() const override { return fd_.get(); }
  const memory::FileMapping* stack_mapping() const override { return mapping_.get(); }

 private:
  const uint8_t* data() const { return chunk_.get() + begin_; }
  uint8_t* mutable_data() { return chunk_.get() + begin_; }
  size_t available() const { return end_ - begin_; }
  void Consume(size_t n) { begin_ += n; }

  // A sample of `size` bytes at data(): reads its fields without its
  // stack copy into `record` when the copy is large enough to leave in the
  // file, and says true (with `truncated` set if the data ends inside the
  // record); false, with nothing consumed, when the copy is small, or the
  // fields before it cannot be parsed (the whole record is read then, and
  // ParseSample says what is wrong with it).
  absl::StatusOr<bool> LeaveStack(uint16_t size, absl::Span<const uint8_t>& record,
                                  bool& truncated) {
    uint64_t at = 0, n = 0;
    bool found = false;
    // A first read of about the last sample's fields; a longer one if this
    // sample's are longer (a deep kernel callchain).
    for (size_t probe : {probe_, kMaxPrefix}) {
      probe = std::min<size_t>(probe, size);
      absl::StatusOr<bool> got = Ensure(probe);
      if (!got.ok()) return got.status();
      if (!*got) return false;
      const absl::Span<const uint8_t> prefix(data(), probe);
      const int attr_index = attrs_.ForRecord(kRecordSample, prefix);
      if (attr_index < 0) return false;
      found = LocateStackUser(prefix, attrs_.at(attr_index), &at, &n);
      if (found || probe == size) break;
    }
    if (!found || n < kMinLeftBytes || at > size || size - at < n + 8) {  // dyn_size follows
      return false;
    }
    // What was read past the copy's first byte is the copy (or beyond it):
    // read on from the end of the copy.
    end_ = std::min(end_, begin_ + static_cast<size_t>(at));
    read_at_ = off_ + at + n;
    const size_t fields = size - n;
    absl::StatusOr<bool> got = Ensure(fields);
    if (!got.ok()) return got.status();
    if (!*got) {
      truncated = true;  // the data ends inside the record
      return true;
    }
    // The record without its copy says how big it is now.
    const uint16_t compact = static_cast<uint16_t>(fields);
    std::memcpy(mutable_data() + 6, &compact, 2);
    record = absl::MakeConstSpan(data(), fields);
    stack_offset_ = off_ + at;
    Consume(fields);
    off_ += size;
    ReleaseBehind();
    // The next sample's fields are probably as long as this one's: probe
    // that much and a little more, and read this record's last fields and
    // that much at once.
    probe_ = std::min<size_t>(at + kProbeSlack, kMaxPrefix);
    read_size_ = std::clamp<size_t>((size - at - n) + probe_, kMinRead, kMaxRead);
    return true;
  }

  // Makes `n` (at most kChunkBytes / 2) bytes available at data(); false at
  // the end of the data before that (what there is stays available). Reads
  // at least read_size_ bytes where the chunk has room: up to its end when
  // samples come whole.
  absl::StatusOr<bool> Ensure(size_t n) {
    if (available() >= n) return true;
    // A new chunk when this one cannot hold `n` bytes from data(), or (a
    // copy being left) not the read that gets past it.
    const size_t room = read_size_ >= kChunkBytes ? n : std::max(n, read_size_);
    if (chunk_ == nullptr || kChunkBytes - begin_ < room) {
      std::shared_ptr<uint8_t> next = pool_.Take();
      if (next == nullptr) return absl::ResourceExhaustedError("no memory for the input");
      if (chunk_ != nullptr) std::memcpy(next.get(), data(), available());
      end_ = available();
      begin_ = 0;
      chunk_ = std::move(next);
    }
    while (available() < n) {
      if (read_at_ >= data_end_) return false;
      const size_t want = std::min<uint64_t>(
          {std::max(n - available(), read_size_), kChunkBytes - end_, data_end_ - read_at_});
      const ssize_t r = pread(fd_.get(), chunk_.get() + end_, want, static_cast<off_t>(read_at_));
      if (r < 0 && errno == EINTR) continue;
      if (r < 0) {
        return absl::ErrnoToStatus(errno, absl::StrFormat("reading at 0x%x", read_at_));
      }
      if (r == 0) {
        return absl::DataLossError(absl::StrFormat(
            "cannot read the record at 0x%x: the file is shorter now than its header says",
            off_));
      }
      end_ += static_cast<size_t>(r);
      read_at_ += static_cast<uint64_t>(r);
    }
    return true;
  }

  memory::ScopedFd fd_;
  const uint64_t size_;
  std::unique_ptr<memory::FileMapping> mapping_;  // null: copies are pread
  uint64_t released_ = 0;  // the mapping's pages before this are released
  ChunkPool pool_;
  std::shared_ptr<uint8_t> chunk_;
  std::shared_ptr<const void> owner_;  // RecordOwner's answer
  size_t begin_ = 0;  // unconsumed bytes are chunk_[begin_, end_)
  size_t end_ = 0;
  uint64_t off_ = 0;        // file offset of data(): the next record
  uint64_t read_at_ = 0;    // file offset of chunk_[end_]: the next pread
  uint64_t data_end_ = 0;   // the end of the data section
  size_t probe_ = 4096;      // bytes a sample's fields are first parsed from
  size_t read_size_ = 4096;  // bytes a pread reads at least
  uint64_t stack_offset_ = 0;  // LastStackFileOffset
};

}  // namespace

absl::StatusOr<std::unique_ptr<PerfDataReader>> OpenSparseFile(memory::ScopedFd fd,
                                                               uint64_t size,
                                                               Limits limits,
                                                               absl::string_view name) {
  auto r = std::make_unique<SparseReader>(limits, std::move(fd), size);
  absl::Status s = r->Init(name);
  if (!s.ok()) return s;
  return std::unique_ptr<PerfDataReader>(std::move(r));
}

}  // namespace unwindd::proc::perf

#include "proc/perf/perf_data.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <limits>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/strip.h"
#include "memory/file_mapping.h"
#include "proc/perf/chunks.h"
#include "proc/perf/sparse_reader.h"

namespace unwindd::proc::perf {
namespace {

absl::Status BadSize(uint64_t offset, uint64_t size) {
  return absl::DataLossError(absl::StrFormat(
      "record at 0x%x says it is %d bytes (at least %d): the records after "
      "it cannot be found",
      offset, size, kRecordHeaderSize));
}

// A whole file (either format) whose bytes are in our address space: a
// mapping, or a caller's buffer. Records are spans of it, valid for as
// long as the reader lives.
class FileReader final : public PerfDataReader {
 public:
  // In memory: `base`, a caller's buffer.
  FileReader(Limits limits, const uint8_t* base, size_t size)
      : PerfDataReader(limits), base_(base), size_(size) {}
  // A whole file, mapped.
  FileReader(Limits limits, std::unique_ptr<memory::FileMapping> mapping)
      : FileReader(limits, mapping->bytes().data(), mapping->bytes().size()) {
    mapping_ = std::move(mapping);
  }

  // Init, and DataLoss if the mapped file shrank while its headers were read.
  absl::Status Init() {
    SpanFileBytes bytes(absl::MakeConstSpan(base_, size_));
    absl::Status s = InitFromFile(bytes, pos_, end_);
    if (mapping_ != nullptr && mapping_->changed()) return mapping_->Check();
    return s;
  }

 protected:
  absl::Status NextRecord(absl::Span<const uint8_t>& record, uint64_t& offset,
                          bool& truncated) override {
    record = {};
    truncated = false;
    offset = pos_;
    if (pos_ >= end_) return absl::OkStatus();
    if (end_ - pos_ < kRecordHeaderSize) {
      truncated = true;
      return absl::OkStatus();
    }
    const uint16_t size = Load16(base_ + pos_ + 6);
    if (size < kRecordHeaderSize) return BadSize(pos_, size);
    if (size > end_ - pos_) {
      truncated = true;
      return absl::OkStatus();
    }
    record = absl::MakeConstSpan(base_ + pos_, size);
    pos_ += size;
    return absl::OkStatus();
  }

  absl::Status SkipPayload(uint64_t n) override {
    if (n > end_ - pos_) {
      return absl::DataLossError(absl::StrFormat(
          "a %d-byte payload at 0x%x runs past the end of the data at 0x%x", n,
          pos_, end_));
    }
    pos_ += n;
    return absl::OkStatus();
  }

  absl::Span<const uint8_t> RecordAt(uint64_t offset, uint32_t size) override {
    return absl::MakeConstSpan(base_ + offset, size);
  }
  bool MustCopy() const override { return false; }

  absl::Status CheckRecord(absl::Span<const uint8_t> record) override {
    if (mapping_ == nullptr) return absl::OkStatus();
    if (record.empty()) return mapping_->Check();
    // A read of the record's last byte: a file is contiguous, so if that
    // byte is still in the file every byte before it is, and if it is not,
    // the read faults now and the handler flags the mapping (reading every
    // page of the record instead proved nothing more and cost a cache miss
    // per page on the reader thread). A record that ends before the first
    // page that read as zeros is still good (a partial result, as with
    // pread).
    const volatile uint8_t* p = record.data();
    (void)p[record.size() - 1];
    const uint64_t end = static_cast<uint64_t>(record.data() - base_) + record.size();
    if (end <= mapping_->intact_bytes()) return absl::OkStatus();
    return mapping_->Check();
  }

 private:
  const uint8_t* base_;
  size_t size_;
  std::unique_ptr<memory::FileMapping> mapping_;  // null: not a mapped file
  uint64_t pos_ = 0;
  uint64_t end_ = 0;
};

// Records read through ChunkedInput: a file with pread (from its data
// section's offset to its end), read ahead on a thread of its own, or a
// pipe-mode stream with read(), front to back. A record's bytes stay where
// they were read, in a chunk it holds (RecordOwner), so nothing is copied
// to queue or keep it.
class ChunkReader final : public PerfDataReader {
 public:
  static constexpr size_t kChunkBytes = size_t{2} << 20;
  // The largest record (its size is 16 bits) fits in front of a chunk
  // read ahead, and a small file's chunk has room for more.
  static constexpr size_t kHeadroom = size_t{64} << 10;
  static constexpr size_t kMinChunkBytes = size_t{128} << 10;
  static constexpr size_t kMaxFreeChunks = 16;

  // A regular file read with pread, ahead of the records being decoded
  // (on a thread of its own, unless `read_ahead` is false); a small one
  // through chunks no larger than it (plus the headroom), and none larger
  // than `max_chunk`.
  ChunkReader(Limits limits, memory::ScopedFd fd, uint64_t size, bool read_ahead = true,
              size_t max_chunk = kChunkBytes)
      : PerfDataReader(limits),
        fd_(std::move(fd)),
        size_(size),
        input_([this](uint8_t* dst, size_t n) { return ReadFile(dst, n); },
               {.chunk_bytes = static_cast<size_t>(
                    std::clamp<uint64_t>(((size + 4095) & ~uint64_t{4095}) + kHeadroom,
                                         kMinChunkBytes, std::max(max_chunk, kMinChunkBytes))),
                .max_free_chunks = kMaxFreeChunks,
                .read_ahead_headroom = read_ahead ? kHeadroom : 0}) {}
  // A stream read with read(), on the caller (a read may wait for ever for
  // a writer, and nothing must wait for it at the end).
  ChunkReader(Limits limits, memory::ScopedFd fd)
      : PerfDataReader(limits),
        fd_(std::move(fd)),
        stream_(true),
        input_([fd = fd_.get()](uint8_t* dst, size_t n) { return ::read(fd, dst, n); },
               {.chunk_bytes = kChunkBytes, .max_free_chunks = kMaxFreeChunks}) {}

  absl::Status InitFile() {
    PreadFileBytes bytes(fd_.get(), size_);
    uint64_t end = 0;
    absl::Status s = InitFromFile(bytes, file_pos_, end);
    file_end_ = end;
    offset_ = file_pos_;
    return s;
  }

  // A file that is all records, with no header: a data.N file of a
  // directory recording (DirectoryReader).
  void InitRaw() {
    file_pos_ = 0;
    file_end_ = size_;
    offset_ = 0;
  }

  absl::Status InitStream() {
    absl::StatusOr<bool> got = input_.Ensure(kPipeHeaderSize);
    if (!got.ok()) return got.status();
    absl::Span<const uint8_t> h(input_.data(), input_.available());
    if (h.size() >= kPipeHeaderSize && Load64(h.data()) == kMagic &&
        Load64(h.data() + 8) != kPipeHeaderSize) {
      return absl::InvalidArgumentError(
          "this is a perf.data file in file format (its header points back "
          "and forth in the file): open it as a file, not as a stream");
    }
    absl::Status s = ParsePipeHeader(h);
    if (!s.ok()) return s;
    input_.Consume(kPipeHeaderSize);
    offset_ = kPipeHeaderSize;
    pipe_mode_ = true;
    return absl::OkStatus();
  }

 protected:
  absl::Status NextRecord(absl::Span<const uint8_t>& record, uint64_t& offset,
                          bool& truncated) override {
    record = {};
    truncated = false;
    offset = offset_;
    absl::StatusOr<bool> got = input_.Ensure(kRecordHeaderSize);
    if (!got.ok()) return Failed(got.status());
    if (!*got) {
      truncated = input_.available() > 0;  // a partial header
      return absl::OkStatus();
    }
    const uint16_t size = Load16(input_.data() + 6);
    if (size < kRecordHeaderSize) return BadSize(offset_, size);
    got = input_.Ensure(size);
    if (!got.ok()) return Failed(got.status());
    if (!*got) {
      truncated = true;
      return absl::OkStatus();
    }
    record = absl::MakeConstSpan(input_.data(), size);
    input_.Consume(size);
    offset_ += size;
    return absl::OkStatus();
  }

  absl::Status SkipPayload(uint64_t n) override {
    const uint64_t at = offset_;
    while (n > 0) {
      const uint64_t skipped = input_.Skip(n);  // what was read already
      offset_ += skipped;
      n -= skipped;
      if (n == 0) break;
      if (!stream_) {
        // Nothing of the rest is read yet, nor being read: go past it.
        if (n > file_end_ - file_pos_) break;
        file_pos_ += n;
        offset_ += n;
        return absl::OkStatus();
      }
      absl::StatusOr<bool> got = input_.Ensure(1);
      if (!got.ok()) return Failed(got.status());
      if (!*got) break;
    }
    if (n == 0) return absl::OkStatus();
    return absl::DataLossError(absl::StrFormat(
        "a payload at 0x%x runs past the end of the data (%d bytes missing)", at, n));
  }

  absl::Span<const uint8_t> RecordAt(uint64_t, uint32_t) override { return {}; }
  bool MustCopy() const override { return true; }
  friend class DirectoryReader;  // reads several through their NextRecord
  const std::shared_ptr<const void>* RecordOwner() override {
    // Past the budget, records are copied instead (under the queue's own
    // byte bound), and the chunks held are let go as they are delivered.
    if (input_.in_use_bytes() > limits_.max_held_bytes) return nullptr;
    // A new reference only when the chunk changes (one per 2 MiB, not one
    // per record). owner_ holding the old chunk keeps the pool from
    // handing its address out again, so equal addresses are one chunk.
    if (owner_.get() != input_.chunk().get()) {
      owner_ = std::shared_ptr<const void>(input_.chunk(), input_.chunk().get());
    }
    return &owner_;
  }

 private:
  // The file from file_pos_ to the end of the data section.
  ssize_t ReadFile(uint8_t* dst, size_t n) {
    n = static_cast<size_t>(std::min<uint64_t>(n, file_end_ - file_pos_));
    if (n == 0) return 0;
    const ssize_t r = pread(fd_.get(), dst, n, static_cast<off_t>(file_pos_));
    if (r == 0 && file_pos_ < file_end_) {
      // The header said the data goes on; the file is shorter now.
      shrank_ = true;
      errno = EIO;
      return -1;
    }
    if (r > 0) file_pos_ += static_cast<uint64_t>(r);
    return r;
  }

  absl::Status Failed(const absl::Status& s) {
    if (shrank_) {
      return absl::DataLossError(absl::StrFormat(
          "cannot read the record at 0x%x: the file is shorter now than "
          "its header says",
          offset_));
    }
    return absl::Status(s.code(), absl::StrFormat("reading at 0x%x: %s", offset_,
                                                  s.message()));
  }

  memory::ScopedFd fd_;
  uint64_t size_ = 0;
  bool stream_ = false;
  uint64_t file_pos_ = 0;  // the next byte pread reads
  uint64_t file_end_ = 0;  // the end of the data section
  uint64_t offset_ = 0;    // file/stream offset of input_.data()
  bool shrank_ = false;    // pread found the end before file_end_
  ChunkedInput input_;
  std::shared_ptr<const void> owner_;  // RecordOwner's answer
};

// perf record --threads: a directory whose `data` is a perf.data file (the
// header, attrs and features, and the records perf record's main thread
// wrote) and whose data.0, data.1, ... hold what each of its threads wrote,
// records and nothing else. Read as perf reads one
// (__perf_session__process_dir_events): `data` first, then 10 MiB of each
// data.N in turn, every record through the one time-order queue.
class DirectoryReader final : public PerfDataReader {
 public:
  static constexpr uint64_t kSliceBytes = uint64_t{10} << 20;
  // data.N files read at most; each holds a chunk while it is read.
  static constexpr size_t kMaxParts = 1024;
  static constexpr size_t kPartChunkBytes = size_t{256} << 10;

  DirectoryReader(Limits limits, std::unique_ptr<ChunkReader> main,
                  std::vector<std::unique_ptr<ChunkReader>> parts)
      : PerfDataReader(limits) {
    readers_.push_back(std::move(main));
    for (auto& p : parts) readers_.push_back(std::move(p));
    done_.assign(readers_.size(), false);
    const ChunkReader& m = *readers_[0];
    file_header_ = m.file_header();
    attrs_ = m.attrs();
    info_ = m.info();
    warnings_ = m.warnings();
  }

 protected:
  absl::Status NextRecord(absl::Span<const uint8_t>& record, uint64_t& offset,
                          bool& truncated) override {
    while (true) {
      if ((switch_ || done_[current_]) && !NextFile()) {
        record = {};
        truncated = false;
        return absl::OkStatus();  // every file read
      }
      ChunkReader& r = *readers_[current_];
      absl::Status s = r.NextRecord(record, offset, truncated);
      if (!s.ok() || truncated) return s;
      if (!record.empty()) {
        last_ = current_;
        slice_ += record.size();
        if (current_ > 0 && slice_ >= kSliceBytes) switch_ = true;
        return absl::OkStatus();
      }
      done_[current_] = true;
    }
  }
  absl::Status SkipPayload(uint64_t n) override { return readers_[last_]->SkipPayload(n); }
  absl::Span<const uint8_t> RecordAt(uint64_t, uint32_t) override { return {}; }
  bool MustCopy() const override { return true; }
  const std::shared_ptr<const void>* RecordOwner() override {
    return readers_[last_]->RecordOwner();
  }
  size_t LastSource() const override { return last_; }

 private:
  // Moves on to the next data.N file not read to its end (they are
  // readers_[1..N], in turn); false when none is left.
  bool NextFile() {
    switch_ = false;
    slice_ = 0;
    const size_t parts = readers_.size() - 1;
    for (size_t k = 0; k < parts; ++k) {
      current_ = current_ % parts + 1;
      if (!done_[current_]) return true;
    }
    return false;
  }

  std::vector<std::unique_ptr<ChunkReader>> readers_;  // `data`, then data.N
  std::vector<bool> done_;
  size_t current_ = 0;  // the file being read
  size_t last_ = 0;     // the file of the last record
  uint64_t slice_ = 0;  // bytes of records read from it in this turn
  bool switch_ = false;
};

}  // namespace

absl::StatusOr<std::unique_ptr<PerfDataReader>> PerfDataReader::OpenFile(
    const std::string& path, Limits limits, FileAccess access) {
  memory::ScopedFd fd = memory::OpenCloexec(path.c_str(), O_RDONLY);
  if (!fd.valid()) return absl::ErrnoToStatus(errno, absl::StrCat("open ", path));
  struct stat st;
  if (fstat(fd.get(), &st) != 0) return absl::ErrnoToStatus(errno, absl::StrCat("fstat ", path));
  if (S_ISDIR(st.st_mode)) return OpenDirectory(path, limits);
  if (!S_ISREG(st.st_mode)) {
    // A FIFO or a character device: read it as a stream.
    return OpenStream(std::move(fd), limits);
  }
  if (st.st_size == 0) {
    return absl::DataLossError(absl::StrCat(path, ": empty file, not perf.data"));
  }
  absl::Status s;
  std::unique_ptr<PerfDataReader> r;
  if (access == FileAccess::kSparse) {
    absl::StatusOr<std::unique_ptr<PerfDataReader>> sparse =
        OpenSparseFile(std::move(fd), static_cast<uint64_t>(st.st_size), limits);
    if (!sparse.ok()) {
      return absl::Status(sparse.status().code(),
                          absl::StrCat(path, ": ", sparse.status().message()));
    }
    return sparse;
  }
  if (access == FileAccess::kMap) {
    absl::StatusOr<std::unique_ptr<memory::FileMapping>> map =
        memory::FileMapping::Map(fd.get(), static_cast<uint64_t>(st.st_size), path);
    if (!map.ok()) return map.status();
    auto f = std::unique_ptr<FileReader>(new FileReader(limits, *std::move(map)));
    s = f->Init();
    r = std::move(f);
  } else {
    auto c = std::unique_ptr<ChunkReader>(
        new ChunkReader(limits, std::move(fd), static_cast<uint64_t>(st.st_size)));
    s = c->InitFile();
    r = std::move(c);
  }
  if (!s.ok()) return absl::Status(s.code(), absl::StrCat(path, ": ", s.message()));
  return r;
}

absl::StatusOr<std::unique_ptr<PerfDataReader>> PerfDataReader::OpenDirectory(
    const std::string& path, Limits limits) {
  // data.N, by N.
  std::vector<std::pair<uint64_t, std::string>> names;
  {
    std::unique_ptr<DIR, int (*)(DIR*)> dir(opendir(path.c_str()), closedir);
    if (dir == nullptr) return absl::ErrnoToStatus(errno, absl::StrCat("open ", path));
    while (const dirent* e = readdir(dir.get())) {
      absl::string_view name = e->d_name;
      uint64_t n = 0;
      if (!absl::ConsumePrefix(&name, "data.") || !absl::SimpleAtoi(name, &n)) continue;
      if (names.size() >= DirectoryReader::kMaxParts) {
        return absl::ResourceExhaustedError(absl::StrFormat(
            "%s: more than %d data.N files", path, DirectoryReader::kMaxParts));
      }
      names.push_back({n, e->d_name});
    }
  }
  std::sort(names.begin(), names.end());
  auto open = [&path](const std::string& name)
      -> absl::StatusOr<std::pair<memory::ScopedFd, uint64_t>> {
    const std::string file = absl::StrCat(path, "/", name);
    memory::ScopedFd fd = memory::OpenCloexec(file.c_str(), O_RDONLY);
    if (!fd.valid()) return absl::ErrnoToStatus(errno, absl::StrCat("open ", file));
    struct stat st;
    if (fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode)) {
      return absl::DataLossError(absl::StrCat(file, ": not a regular file"));
    }
    return std::make_pair(std::move(fd), static_cast<uint64_t>(st.st_size));
  };
  absl::StatusOr<std::pair<memory::ScopedFd, uint64_t>> data = open("data");
  if (!data.ok()) {
    return absl::Status(data.status().code(),
                        absl::StrCat(data.status().message(),
                                     " (a directory recording, perf record --threads, has one)"));
  }
  auto main = std::make_unique<ChunkReader>(limits, std::move(data->first), data->second);
  if (absl::Status s = main->InitFile(); !s.ok()) {
    return absl::Status(s.code(), absl::StrCat(path, "/data: ", s.message()));
  }
  if (main->pipe_mode()) {
    return absl::DataLossError(absl::StrCat(path, "/data: a pipe-mode recording"));
  }
  std::vector<std::unique_ptr<ChunkReader>> parts;
  for (const auto& [n, name] : names) {
    absl::StatusOr<std::pair<memory::ScopedFd, uint64_t>> f = open(name);
    if (!f.ok()) return f.status();
    // Read on the caller, in small chunks: one file of many at a time.
    parts.push_back(std::make_unique<ChunkReader>(limits, std::move(f->first), f->second,
                                                  /*read_ahead=*/false,
                                                  DirectoryReader::kPartChunkBytes));
    parts.back()->InitRaw();
  }
  return std::unique_ptr<PerfDataReader>(
      new DirectoryReader(limits, std::move(main), std::move(parts)));
}

absl::StatusOr<std::unique_ptr<PerfDataReader>> PerfDataReader::OpenStream(
    memory::ScopedFd fd, Limits limits) {
  auto r = std::unique_ptr<ChunkReader>(new ChunkReader(limits, std::move(fd)));
  absl::Status s = r->InitStream();
  if (!s.ok()) return s;
  return std::unique_ptr<PerfDataReader>(std::move(r));
}

absl::StatusOr<std::unique_ptr<PerfDataReader>> PerfDataReader::OpenBuffer(
    absl::Span<const uint8_t> bytes, Limits limits) {
  auto r = std::unique_ptr<FileReader>(
      new FileReader(limits, bytes.data(), bytes.size()));
  absl::Status s = r->Init();
  if (!s.ok()) return s;
  return std::unique_ptr<PerfDataReader>(std::move(r));
}

absl::Status PerfDataReader::InitFromFile(FileBytes& bytes, uint64_t& pos,
                                          uint64_t& end) {
  const uint64_t size = bytes.size();
  absl::StatusOr<absl::Span<const uint8_t>> first =
      bytes.Get(0, std::min<uint64_t>(size, kFileHeaderSize));
  if (!first.ok()) return first.status();
  absl::StatusOr<FileHeader> h = ParseFileHeader(*first);
  if (!h.ok() && absl::IsFailedPrecondition(h.status())) {
    // A pipe recording saved to a file (perf reads these too).
    absl::Status s = ParsePipeHeader(*first);
    if (!s.ok()) return s;
    pipe_mode_ = true;
    pos = kPipeHeaderSize;
    end = size;
    return absl::OkStatus();
  }
  if (!h.ok()) return h.status();
  file_header_ = *h;
  absl::Status s = ParseAttrSection(bytes, file_header_, attrs_);
  if (!s.ok()) return s;
  if (attrs_.empty()) {
    return absl::DataLossError("perf.data has no event attributes");
  }
  const FileSection& d = file_header_.data;
  if (d.offset > size || d.offset < kFileHeaderSize) {
    return absl::DataLossError(absl::StrFormat(
        "data section at 0x%x is outside the %d-byte file", d.offset, size));
  }
  pos = d.offset;
  if (d.size == 0 && size > d.offset) {
    // perf writes the final header when it ends; killed before that, the
    // data size is still 0 and there are no feature sections.
    Warn(0, "the header's data size is 0 (perf record did not finish?): "
            "reading records up to the end of the file, without features");
    end = size;
    return absl::OkStatus();
  }
  if (d.size > size - d.offset) {
    Warn(0, absl::StrFormat("the data section [0x%x, +0x%x) runs past the "
                            "end of the %d-byte file (truncated?)",
                            d.offset, d.size, size));
    end = size;
    return absl::OkStatus();
  }
  end = d.offset + d.size;
  ParseFeatureSections(bytes, file_header_, info_, attrs_, warnings_);
  return absl::OkStatus();
}

void PerfDataReader::Warn(uint64_t offset, absl::string_view what) {
  warnings_.Add(offset == 0 ? std::string(what)
                            : absl::StrFormat("0x%x: %s", offset, what));
}

uint64_t PerfDataReader::TimeOf(uint32_t type, absl::Span<const uint8_t> record,
                                int attr_index) const {
  if (attrs_.empty()) return 0;
  if (type == kRecordSample) {
    if (attr_index < 0) return 0;
    const uint64_t t = attrs_.at(attr_index).sample_type;
    if (!(t & kSampleTime)) return 0;
    const uint64_t pos = kRecordHeaderSize + 8 * (((t & kSampleIdentifier) != 0) +
                                                  ((t & kSampleIp) != 0) +
                                                  ((t & kSampleTid) != 0));
    return record.size() >= pos + 8 ? Load64(record.data() + pos) : 0;
  }
  const EventAttr& a = attrs_.at(attr_index < 0 ? 0 : attr_index);
  if (!a.sample_id_all() || !(a.sample_type & kSampleTime)) return 0;
  const uint64_t trailer = SampleIdSize(a.sample_type);
  if (record.size() < kRecordHeaderSize + trailer) return 0;
  const uint64_t pos =
      record.size() - trailer + ((a.sample_type & kSampleTid) ? 8 : 0);
  return Load64(record.data() + pos);
}

absl::Status PerfDataReader::Read(EventHandler& handler) {
  if (read_called_) {
    return absl::FailedPreconditionError("PerfDataReader::Read called twice");
  }
  read_called_ = true;
  OrderedQueue queue(limits_.max_queued_events, limits_.max_queued_bytes);
  OrderedQueue::Deliver deliver = [&](OrderedQueue::Entry& e) {
    return DeliverQueued(e, handler);
  };
  absl::Status status;
  for (;;) {
    absl::Span<const uint8_t> rec;
    uint64_t offset;
    bool truncated;
    status = NextRecord(rec, offset, truncated);
    if (!status.ok()) {
      // Zeros of a file truncated under its mapping make bad framing: say so.
      if (absl::Status c = CheckRecord({}); !c.ok()) status = c;
      break;
    }
    if (truncated) {
      Warn(offset, "the data ends inside this record (truncated file?); "
                   "the records before it are used");
      break;
    }
    if (rec.empty()) break;
    bool stop = false;
    status = ProcessRecord(rec, offset, RecordOwner(), LastStackFileOffset(), queue, deliver,
                           handler, stop);
    if (!status.ok() || stop) break;
  }
  for (const std::unique_ptr<RecordDecompressor>& d : decompressors_) {
    if (d == nullptr || d->pending() == 0 || !status.ok()) continue;
    Warn(0, absl::StrFormat("the compressed records end inside a record (%d bytes of it); "
                            "the records before it are used",
                            d->pending()));
  }
  // After bad input, what came before it is still delivered (a partial
  // result), and the error returned; after the handler's own error,
  // nothing more.
  if (!handler_failed_) {
    absl::Status flushed = queue.FlushAll(deliver);
    if (status.ok()) status = flushed;
  }
  stats_.out_of_order = queue.out_of_order();
  stats_.early_flushes = queue.early_flushes();
  stats_.max_queued = queue.max_queued();
  if (stats_.out_of_order > 0) {
    Warn(0, absl::StrFormat("%d records arrived after later ones had been "
                            "delivered (delivered late, as perf does)",
                            stats_.out_of_order));
  }
  return status;
}

absl::Status PerfDataReader::ProcessRecord(absl::Span<const uint8_t> rec, uint64_t offset,
                                           const std::shared_ptr<const void>* owner,
                                           uint64_t stack_file_offset, OrderedQueue& queue,
                                           const OrderedQueue::Deliver& deliver,
                                           EventHandler& handler, bool& stop) {
  if (stats_.records >= limits_.max_records) {
    Warn(offset, absl::StrFormat("more than %d records; the rest is not read",
                                 limits_.max_records));
    stop = true;
    return absl::OkStatus();
  }
  ++stats_.records;
  const uint32_t type = Load32(rec.data());
  if (type == kRecordCompressed || type == kRecordCompressed2) {
    return HandleCompressed(rec, offset, queue, deliver, handler, stop);
  }
  if (type >= kRecordUserTypeStart) return HandleUserRecord(rec, offset, queue, handler);
  const int attr_index = attrs_.ForRecord(type, rec);
  const uint64_t time = TimeOf(type, rec, attr_index);
  if (time == 0 || time == ~uint64_t{0}) {
    // perf delivers records without a timestamp at once (-ETIME).
    return Deliver(rec, offset, attr_index, owner, stack_file_offset, handler);
  }
  OrderedQueue::Entry e;
  e.time = time;
  e.offset = offset;
  e.size = static_cast<uint32_t>(rec.size());
  e.attr_index = attr_index;
  e.stack_file_offset = stack_file_offset;
  if (owner != nullptr) {
    e.data = rec.data();
    e.owner = *owner;
  } else if (MustCopy()) {
    e.copy.assign(rec.begin(), rec.end());
  }
  return queue.Push(std::move(e), deliver);
}

absl::Status PerfDataReader::HandleCompressed(absl::Span<const uint8_t> rec, uint64_t offset,
                                              OrderedQueue& queue,
                                              const OrderedQueue::Deliver& deliver,
                                              EventHandler& handler, bool& stop) {
  if (in_compressed_) {
    return absl::DataLossError(absl::StrFormat(
        "a compressed record inside the compressed record at 0x%x", offset));
  }
  // PERF_RECORD_COMPRESSED: header, data; PERF_RECORD_COMPRESSED2:
  // header, u64 data_size, data (then padding).
  absl::Span<const uint8_t> payload = rec.subspan(kRecordHeaderSize);
  if (Load32(rec.data()) == kRecordCompressed2) {
    if (payload.size() < 8 || Load64(payload.data()) > payload.size() - 8) {
      return absl::DataLossError(absl::StrFormat(
          "COMPRESSED2 at 0x%x: its data_size runs past its %d bytes", offset, rec.size()));
    }
    payload = payload.subspan(8, Load64(payload.data()));
  }
  // Each input file is a stream of its own (perf record --threads -z).
  const size_t source = LastSource();
  if (source >= decompressors_.size()) decompressors_.resize(source + 1);
  std::unique_ptr<RecordDecompressor>& decompressor = decompressors_[source];
  if (decompressor == nullptr) decompressor = std::make_unique<RecordDecompressor>();
  absl::StatusOr<std::shared_ptr<const Decompressed>> out = decompressor->Next(payload);
  if (!out.ok()) {
    return absl::Status(out.status().code(),
                        absl::StrFormat("compressed record at 0x%x: %s (perf record -z)",
                                        offset, out.status().message()));
  }
  // Its records are handled as if read from the file at its offset; they
  // point into the decompressed bytes, which the queued ones hold.
  const std::shared_ptr<const void> owner = *out;
  const absl::Span<const uint8_t> bytes = (*out)->bytes();
  size_t pos = 0;
  in_compressed_ = true;
  absl::Status status;
  while (bytes.size() - pos >= kRecordHeaderSize && status.ok() && !stop) {
    const uint16_t size = Load16(bytes.data() + pos + 6);
    if (size < kRecordHeaderSize) {
      status = absl::DataLossError(absl::StrFormat(
          "a record in the compressed record at 0x%x says it is %d bytes (at least %d)",
          offset, size, kRecordHeaderSize));
      break;
    }
    if (size > bytes.size() - pos) break;  // goes on in the next compressed record
    status = ProcessRecord(bytes.subspan(pos, size), offset, &owner, 0, queue, deliver, handler,
                           stop);
    pos += size;
  }
  in_compressed_ = false;
  decompressor->KeepRest(bytes.subspan(pos));
  return status;
}

absl::Status PerfDataReader::HandleUserRecord(absl::Span<const uint8_t> rec,
                                              uint64_t offset, OrderedQueue& queue,
                                              EventHandler& handler) {
  const uint32_t type = Load32(rec.data());
  switch (type) {
    case kRecordFinishedRound: {
      ++stats_.rounds;
      OrderedQueue::Deliver deliver = [&](OrderedQueue::Entry& e) {
        return DeliverQueued(e, handler);
      };
      return queue.FlushRound(deliver);
    }
    case kRecordHeaderAttr: {
      // struct perf_record_header_attr: header, attr (attr.size bytes),
      // then the event's ids to the end of the record.
      if (rec.size() < kRecordHeaderSize + kAttrSizeVer0) {
        return absl::DataLossError(absl::StrFormat(
            "HEADER_ATTR at 0x%x: %d bytes cannot hold an attr", offset, rec.size()));
      }
      uint32_t size = Load32(rec.data() + kRecordHeaderSize + kAttrOffSize);
      if (size == 0) size = kAttrSizeVer0;
      if (size < kAttrSizeVer0 || size > rec.size() - kRecordHeaderSize) {
        return absl::DataLossError(absl::StrFormat(
            "HEADER_ATTR at 0x%x: attr of %d bytes in a %d-byte record", offset,
            size, rec.size()));
      }
      EventAttr attr;
      absl::Status s = ParseEventAttr(rec.subspan(kRecordHeaderSize, size), attr);
      if (!s.ok()) return s;
      for (size_t p = kRecordHeaderSize + size; p + 8 <= rec.size(); p += 8) {
        attr.ids.push_back(Load64(rec.data() + p));
      }
      s = attrs_.Add(std::move(attr));
      if (!s.ok()) {
        return absl::DataLossError(absl::StrFormat("HEADER_ATTR at 0x%x: %s",
                                                   offset, s.message()));
      }
      break;
    }
    case kRecordHeaderTracingData: {
      // struct perf_record_header_tracing_data { header; u32 size; u32 pad; }
      // and `size` bytes of tracing data after the record.
      if (rec.size() < kRecordHeaderSize + 4) {
        return absl::DataLossError(absl::StrFormat(
            "HEADER_TRACING_DATA at 0x%x is %d bytes", offset, rec.size()));
      }
      uint64_t size = Load32(rec.data() + kRecordHeaderSize);
      size = (size + 7) & ~uint64_t{7};
      if (size > limits_.max_payload_bytes) {
        return absl::DataLossError(absl::StrFormat(
            "HEADER_TRACING_DATA at 0x%x: %d bytes of tracing data (at most %d)",
            offset, size, limits_.max_payload_bytes));
      }
      return SkipPayload(size);
    }
    case kRecordAuxtrace: {
      // struct perf_record_auxtrace { header; u64 size; ... }: `size`
      // bytes of trace data follow the record.
      if (rec.size() < kRecordHeaderSize + 8) {
        return absl::DataLossError(absl::StrFormat(
            "AUXTRACE at 0x%x is %d bytes", offset, rec.size()));
      }
      uint64_t size = Load64(rec.data() + kRecordHeaderSize);
      if (size > limits_.max_payload_bytes) {
        return absl::DataLossError(absl::StrFormat(
            "AUXTRACE at 0x%x: %d bytes of trace (at most %d)", offset, size,
            limits_.max_payload_bytes));
      }
      return SkipPayload(size);
    }
    case kRecordHeaderBuildId: {
      BuildIdEntry e;
      absl::Status s = ParseBuildIdEvent(rec, e);
      if (!s.ok()) {
        Warn(offset, absl::StrCat("HEADER_BUILD_ID: ", s.message(), "; skipped"));
      } else if (info_.build_ids.size() < kMaxBuildIds) {
        info_.build_ids.push_back(std::move(e));
      } else if (!warned_build_ids_) {
        warned_build_ids_ = true;
        Warn(offset, absl::StrFormat("more than %d build-ids; the rest are ignored",
                                     kMaxBuildIds));
      }
      break;
    }
    case kRecordIdIndex: {
      // struct perf_record_id_index { header; u64 nr; entries[nr] of
      // { u64 id, idx, cpu, tid } } (newer perf appends more after them).
      if (rec.size() < kRecordHeaderSize + 8) break;
      const uint64_t nr = Load64(rec.data() + kRecordHeaderSize);
      if (nr > (rec.size() - 16) / 32) {
        Warn(offset, absl::StrFormat("ID_INDEX of %d entries does not fit in "
                                     "%d bytes; skipped", nr, rec.size()));
        break;
      }
      for (uint64_t i = 0; i < nr; ++i) {
        const uint8_t* entry = rec.data() + 16 + 32 * i;
        const uint64_t id = Load64(entry);
        const uint64_t idx = Load64(entry + 8);
        if (attrs_.IndexOfId(id) < 0 && idx < attrs_.size()) {
          absl::Status s = attrs_.AddId(idx, id);
          if (!s.ok()) {
            Warn(offset, absl::StrCat("ID_INDEX: ", s.message()));
            break;
          }
        }
      }
      break;
    }
    case kRecordEventUpdate: {
      // struct perf_record_event_update { header; u64 type; u64 id; ... }.
      if (rec.size() < kRecordHeaderSize + 16) break;
      if (Load64(rec.data() + 8) != kEventUpdateName) break;
      const int index = attrs_.IndexOfId(Load64(rec.data() + 16));
      if (index < 0) break;
      absl::Span<const uint8_t> name = rec.subspan(24);
      size_t n = 0;
      while (n < name.size() && name[n] != 0) ++n;
      attrs_.mutable_at(index).name.assign(reinterpret_cast<const char*>(name.data()), n);
      break;
    }
    case kRecordHeaderFeature: {
      // struct perf_record_header_feature { header; u64 feat_id; data }.
      if (rec.size() < kRecordHeaderSize + 8) break;
      const uint64_t feat = Load64(rec.data() + 8);
      if (feat >= kFeatureBits) break;
      absl::Status s = ParseFeature(static_cast<int>(feat), rec.subspan(16), info_, attrs_);
      if (!s.ok()) {
        Warn(offset, absl::StrFormat("HEADER_FEATURE %d: %s; skipped", feat,
                                     s.message()));
      }
      break;
    }
    default:
      // HEADER_EVENT_TYPE, TIME_CONV, THREAD_MAP, CPU_MAP, STAT*,
      // FINISHED_INIT, AUXTRACE_INFO/ERROR and later types: nothing to
      // unwind with; their size is in their header.
      break;
  }
  if (type == kRecordHeaderAttr && !warned_id_positions_ && !attrs_.IdPositionsAgree()) {
    warned_id_positions_ = true;
    Warn(offset, "the events disagree on where a record's id is (perf: "
                 "\"non matching sample_type\"); records are matched with the "
                 "first event's layout");
  }
  return absl::OkStatus();
}

absl::Status DecodeEvent(absl::Span<const uint8_t> rec, const AttrSet& attrs,
                         int attr_index, Event& e, uint64_t stack_file_offset) {
  e.type = Load32(rec.data());
  e.misc = Load16(rec.data() + 4);
  e.record = rec;
  e.attr_index = attr_index;
  if (e.type == kRecordSample) {
    if (attr_index < 0) {
      return absl::NotFoundError("sample of an event id no attr names");
    }
    const EventAttr& attr = attrs.at(attr_index);
    absl::Status s = ParseSample(rec, attr, e.sample, stack_file_offset);
    if (!s.ok()) return absl::DataLossError(absl::StrCat("PERF_RECORD_SAMPLE: ", s.message()));
    const uint64_t t = attr.sample_type;
    e.id.pid = e.sample.pid;
    e.id.tid = e.sample.tid;
    e.id.has_tid = t & kSampleTid;
    e.id.time = e.sample.time;
    e.id.has_time = t & kSampleTime;
    e.id.id = e.sample.id;
    e.id.has_id = t & (kSampleId | kSampleIdentifier);
    e.id.stream_id = e.sample.stream_id;
    e.id.cpu = e.sample.cpu;
    e.id.has_cpu = t & kSampleCpu;
    return absl::OkStatus();
  }
  const EventAttr* attr = attrs.empty() ? nullptr : &attrs.at(attr_index < 0 ? 0 : attr_index);
  uint64_t trailer = 0;
  if (attr != nullptr && attr->sample_id_all()) {
    trailer = SampleIdSize(attr->sample_type);
    absl::Status s = ParseSampleIdTrailer(rec, attr->sample_type, e.id);
    if (!s.ok()) {
      return absl::DataLossError(absl::StrFormat("record type %d: %s", e.type, s.message()));
    }
  }
  switch (e.type) {
    case kRecordMmap:
      return ParseMmap(rec, trailer, e.mmap);
    case kRecordMmap2:
      return ParseMmap2(rec, trailer, e.mmap);
    case kRecordComm:
      return ParseComm(rec, trailer, e.comm);
    case kRecordFork:
    case kRecordExit:
      return ParseTask(rec, trailer, e.task);
    case kRecordLost:
      return ParseLost(rec, trailer, e.lost);
    case kRecordThrottle:
    case kRecordUnthrottle:
      return ParseThrottle(rec, trailer, e.throttle);
    default:
      return absl::OkStatus();  // delivered undecoded; a handler may look at `record`
  }
}

absl::Status PerfDataReader::DeliverQueued(OrderedQueue::Entry& e,
                                           EventHandler& handler) {
  if (e.owner != nullptr) {
    return Deliver(absl::MakeConstSpan(e.data, e.size), e.offset, e.attr_index,
                   &e.owner, e.stack_file_offset, handler);
  }
  absl::Span<const uint8_t> rec =
      e.copy.empty() ? RecordAt(e.offset, e.size) : absl::MakeConstSpan(e.copy);
  return Deliver(rec, e.offset, e.attr_index, nullptr, e.stack_file_offset, handler);
}

absl::Status PerfDataReader::Deliver(absl::Span<const uint8_t> rec, uint64_t offset,
                                     int attr_index,
                                     const std::shared_ptr<const void>* keep,
                                     uint64_t stack_file_offset,
                                     EventHandler& handler) {
  if (absl::Status c = CheckRecord(rec); !c.ok()) return c;
  Event e;
  e.offset = offset;
  e.keep = keep;
  absl::Status decoded = DecodeEvent(rec, attrs_, attr_index, e, stack_file_offset);
  if (!decoded.ok()) {
    ++stats_.skipped;
    Warn(offset, absl::StrCat(decoded.message(), "; skipped"));
    return absl::OkStatus();
  }
  if (e.type == kRecordSample) ++stats_.samples;
  if (e.type == kRecordLost) stats_.lost += e.lost.lost;
  ++stats_.events;
  absl::Status s = handler.OnEvent(e);
  if (!s.ok()) handler_failed_ = true;
  return s;
}

}  // namespace unwindd::proc::perf

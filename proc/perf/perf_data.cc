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
// (__perf_session__process_dir_events): 10 MiB of each file in turn,
// `data` first, then the data.N in the order the directory lists them,
// every record through the one time-order queue. Records of equal time
// come out in the order they were read, so this order is perf's too.
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
        if (slice_ >= kSliceBytes) switch_ = true;
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
  // Moves on to the next file not read to its end, in turn; false when
  // none is left.
  bool NextFile() {
    switch_ = false;
    slice_ = 0;
    for (size_t k = 0; k < readers_.size(); ++k) {
      current_ = (current_ + 1) % readers_.size();
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
        OpenSparseFile(std::move(fd), static_cast<uint64_t>(st.st_size), limits, path);
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
  // data.N, in the directory's order: perf_data__open_dir takes readdir's
  // and does not sort.
  std::vector<std::string> names;
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
      names.push_back(e->d_name);
    }
  }
  auto open = [&path](const std::string& name)
      -> absl::StatusOr<std::pair<memory::ScopedFd, uint64_t>> {
    const std::string file = absl::StrCat(path, "/", name);
    // A FIFO in the directory is refused below, not waited on.
    memory::ScopedFd fd = memory::OpenNamedFile(file.c_str());
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
  for (const std::string& name : names) {
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

}  // namespace unwindd::proc::perf

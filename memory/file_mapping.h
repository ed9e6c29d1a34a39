// A read-only view of a whole file through mmap, for files that someone else
// may truncate or rewrite while we read them (a target's ELF files, a
// perf.data still being written). Reading a mapped page past the file's new
// end raises SIGBUS (mmap(2)); a process-wide handler, installed once by the
// first Map(), turns such a fault inside a registered mapping into an
// anonymous zero page and marks the mapping changed, so parsing goes on over
// zeros and the caller learns afterwards that the bytes cannot be trusted:
//
//   absl::StatusOr<std::unique_ptr<FileMapping>> m = FileMapping::Map(fd, size, path);
//   Parse((*m)->bytes());                      // may see zeros past a new EOF
//   if (absl::Status s = (*m)->Check(); !s.ok()) return s;  // DataLoss
//
// The mapping is private and writable (copy on write: libelf may update a
// header it decompresses in place); nothing is ever written back to the file.
// A fault outside every registered mapping goes to the handler that was
// installed before ours (or kills the process as SIGBUS would have).
//
// Why not read the whole file: cold module loading reads a few KiB of a file
// of many MiB (.eh_frame_hdr is searched in place); a copy would cost more
// than the whole lookup (issue #16).
#ifndef UNWINDD_MEMORY_FILE_MAPPING_H_
#define UNWINDD_MEMORY_FILE_MAPPING_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"

namespace unwindd::memory {

class FileMapping {
 public:
  // Maps bytes [0, size) of `fd` (not taken over: it may be closed after).
  // When the handler's table of mappings is full, the bytes are read into
  // the heap instead (pread: the same view, without the fault to guard).
  // UnavailableError if neither works. `name` is for messages.
  static absl::StatusOr<std::unique_ptr<FileMapping>> Map(int fd, uint64_t size,
                                                          absl::string_view name);
  // As Map, but read-only (mutable_data() must not be written), and
  // UnavailableError instead of a copy in the heap: for a file too large to
  // read whole (a perf.data whose stack copies are read in place).
  static absl::StatusOr<std::unique_ptr<FileMapping>> MapOnly(int fd, uint64_t size,
                                                              absl::string_view name);

  ~FileMapping();
  FileMapping(const FileMapping&) = delete;
  FileMapping& operator=(const FileMapping&) = delete;

  absl::Span<const uint8_t> bytes() const { return {data_, size_}; }
  // Writable (private) pointer for libraries that want one (elf_memory).
  uint8_t* mutable_data() { return data_; }

  // Whether a read of the mapping found the file shorter than when it was
  // mapped (the pages read as zeros), or MarkChanged() was called. A relaxed
  // atomic load: cheap enough for every lookup.
  bool changed() const;
  // The bytes [0, intact_bytes()) never read as zeros: all of them unless
  // changed(); 0 after MarkChanged().
  uint64_t intact_bytes() const;
  // Marks the bytes untrustworthy (the file is known to have been rewritten).
  void MarkChanged();
  // OK, or DataLossError("NAME changed while it was read").
  absl::Status Check() const;
  // Gives back the memory of the whole pages in [offset, offset + n) (a
  // mapping's pages count in the process's resident set): they are read
  // from the file again if touched. Nothing for a copy in the heap.
  void Release(uint64_t offset, uint64_t n);

  // For tests: how many mappings the handler knows of now.
  static size_t RegisteredForTest();

 private:
  FileMapping() = default;
  static absl::StatusOr<std::unique_ptr<FileMapping>> MapOrCopy(int fd, uint64_t size,
                                                                absl::string_view name,
                                                                bool copy);

  std::string name_;
  uint8_t* data_ = nullptr;
  size_t size_ = 0;
  size_t map_length_ = 0;   // bytes mmap'ed (0: heap copy or empty file)
  int slot_ = -1;           // index in the handler's table, -1 if none
  std::vector<uint8_t> heap_;  // the fallback copy
  std::atomic<bool> marked_{false};  // MarkChanged() was called
};

}  // namespace unwindd::memory

#endif  // UNWINDD_MEMORY_FILE_MAPPING_H_

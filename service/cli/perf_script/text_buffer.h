// An output buffer for the text formats' hot loops: it grows like a
// string, but what it hands out is written by the caller, not zero-filled
// first (std::string::resize would fill every byte before the formatter
// overwrites it: 5% of `unwind perf --format=perf-script`), and it grows
// with realloc (a large buffer is moved by remapping its pages, not by
// copying them). Its storage is kept across clear(), so a recycled buffer
// allocates nothing.
//
//   TextBuffer out;
//   char* p = out.Extend(16);   // exactly 16 bytes, to be written now
//   out.Append(" [unknown] ");
//   write(fd, out.view().data(), out.view().size());
//   out.clear();
#ifndef UNWINDD_SERVICE_CLI_PERF_SCRIPT_TEXT_BUFFER_H_
#define UNWINDD_SERVICE_CLI_PERF_SCRIPT_TEXT_BUFFER_H_

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <new>
#include <utility>

#include "absl/strings/string_view.h"

namespace unwindd::cli {

class TextBuffer {
 public:
  TextBuffer() = default;
  TextBuffer(TextBuffer&& other) noexcept
      : bytes_(std::exchange(other.bytes_, nullptr)),
        size_(std::exchange(other.size_, 0)),
        capacity_(std::exchange(other.capacity_, 0)) {}
  TextBuffer& operator=(TextBuffer&& other) noexcept {
    if (this != &other) {
      std::free(bytes_);
      bytes_ = std::exchange(other.bytes_, nullptr);
      size_ = std::exchange(other.size_, 0);
      capacity_ = std::exchange(other.capacity_, 0);
    }
    return *this;
  }
  TextBuffer(const TextBuffer&) = delete;
  TextBuffer& operator=(const TextBuffer&) = delete;
  ~TextBuffer() { std::free(bytes_); }

  // `n` more bytes at the end, for the caller to write all of them.
  char* Extend(size_t n) {
    if (n > capacity_ - size_) Grow(n);
    char* p = bytes_ + size_;
    size_ += n;
    return p;
  }
  void Append(absl::string_view s) {
    if (!s.empty()) std::memcpy(Extend(s.size()), s.data(), s.size());
  }
  void push_back(char c) { *Extend(1) = c; }
  // Gives back the last `n` bytes of an Extend that wrote fewer.
  void Shrink(size_t n) { size_ -= std::min(n, size_); }

  absl::string_view view() const { return absl::string_view(bytes_, size_); }
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  void clear() { size_ = 0; }  // keeps the storage

 private:
  // Room for `n` more bytes: at least double the storage.
  void Grow(size_t n) {
    const size_t capacity = std::max<size_t>({capacity_ * 2, size_ + n, 256});
    void* p = std::realloc(bytes_, capacity);
    if (p == nullptr) throw std::bad_alloc();
    bytes_ = static_cast<char*>(p);
    capacity_ = capacity;
  }

  char* bytes_ = nullptr;  // [0, size_) is the text; [size_, capacity_) storage
  size_t size_ = 0;
  size_t capacity_ = 0;
};

}  // namespace unwindd::cli

#endif  // UNWINDD_SERVICE_CLI_PERF_SCRIPT_TEXT_BUFFER_H_

// An output buffer for the text formats' hot loops: it grows like a
// string, but what it hands out is written by the caller, not zero-filled
// first (std::string::resize would fill every byte before the formatter
// overwrites it: 5% of `unwind perf --format=perf-script`). Its storage is
// kept across clear(), so a recycled buffer allocates nothing.
//
//   TextBuffer out;
//   char* p = out.Extend(16);   // exactly 16 bytes, to be written now
//   out.Append(" [unknown] ");
//   write(fd, out.view().data(), out.view().size());
//   out.clear();
#ifndef UNWINDD_SERVICE_CLI_PERF_SCRIPT_TEXT_BUFFER_H_
#define UNWINDD_SERVICE_CLI_PERF_SCRIPT_TEXT_BUFFER_H_

#include <algorithm>
#include <cstring>
#include <string>

#include "absl/strings/string_view.h"

namespace unwindd::cli {

class TextBuffer {
 public:
  // `n` more bytes at the end, for the caller to write all of them.
  char* Extend(size_t n) {
    if (n > bytes_.size() - size_) {
      // Zero-filled once, when the storage grows; never again after.
      bytes_.resize(std::max(bytes_.size() * 2, size_ + n));
    }
    char* p = bytes_.data() + size_;
    size_ += n;
    return p;
  }
  void Append(absl::string_view s) {
    if (!s.empty()) std::memcpy(Extend(s.size()), s.data(), s.size());
  }
  void push_back(char c) { *Extend(1) = c; }

  absl::string_view view() const { return absl::string_view(bytes_.data(), size_); }
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  void clear() { size_ = 0; }  // keeps the storage

 private:
  std::string bytes_;  // [0, size_) is the text; the rest, storage
  size_t size_ = 0;
};

}  // namespace unwindd::cli

#endif  // UNWINDD_SERVICE_CLI_PERF_SCRIPT_TEXT_BUFFER_H_

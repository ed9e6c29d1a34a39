// Warnings a reader collects while it goes on past a problem (a record it
// skipped, a feature section it could not parse), bounded: the first
// kMaxKept are kept word for word, the rest only counted.
//
//   Warnings w;
//   w.Add(absl::StrFormat("0x%x: record of unknown type %d skipped", off, t));
#ifndef UNWINDD_PROC_PERF_WARNINGS_H_
#define UNWINDD_PROC_PERF_WARNINGS_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace unwindd::proc::perf {

class Warnings {
 public:
  static constexpr size_t kMaxKept = 100;

  void Add(std::string message) {
    ++count_;
    if (kept_.size() < kMaxKept) kept_.push_back(std::move(message));
  }
  const std::vector<std::string>& kept() const { return kept_; }
  uint64_t count() const { return count_; }  // kept and dropped

 private:
  std::vector<std::string> kept_;
  uint64_t count_ = 0;
};

}  // namespace unwindd::proc::perf

#endif  // UNWINDD_PROC_PERF_WARNINGS_H_

// UnwindCore's two halves: receiving a streamed core into an anonymous
// in-memory file (bounded per core and across all uploads in flight), and
// unwinding a core file on a worker.
//
//   absl::StatusOr<memory::ScopedFd> core = ReceiveCore(reader, size, budget);
//   absl::StatusOr<UnwindResult> r = UnwindCoreFile(caller, request, env);
#ifndef UNWINDD_SERVICE_SERVER_CORE_FILES_H_
#define UNWINDD_SERVICE_SERVER_CORE_FILES_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "memory/scoped_fd.h"
#include "service/common/convert.h"
#include "service/server/auth.h"
#include "service/server/unwind.h"

namespace unwindd::service {

// Reserves bytes of a shared budget for as long as it lives.
class ByteReservation {
 public:
  // ResourceExhausted if `bytes` more would take `in_flight` past `limit`.
  static absl::StatusOr<ByteReservation> Take(std::atomic<uint64_t>& in_flight,
                                              uint64_t bytes, uint64_t limit);
  ByteReservation(ByteReservation&& o) noexcept
      : in_flight_(o.in_flight_), bytes_(std::exchange(o.bytes_, 0)) {}
  ByteReservation(const ByteReservation&) = delete;
  ~ByteReservation() {
    if (bytes_ != 0) in_flight_->fetch_sub(bytes_);
  }

 private:
  ByteReservation(std::atomic<uint64_t>* f, uint64_t b) : in_flight_(f), bytes_(b) {}
  std::atomic<uint64_t>* in_flight_;
  uint64_t bytes_;
};

// Reads chunks with `next_chunk` (false at the end of the stream) into a
// memfd until `size` bytes arrived. InvalidArgument if the stream carries
// more or fewer bytes than announced.
absl::StatusOr<memory::ScopedFd> ReceiveCore(
    const std::function<bool(std::string*)>& next_chunk, uint64_t size);

struct CoreRequest {
  std::string server_path;   // set: open this path as the caller
  memory::ScopedFd streamed;  // otherwise: the received core
  std::string sysroot;
  std::vector<std::pair<std::string, std::string>> path_map;
  std::string exe;
  std::vector<pid_t> tids;
  unwinder::UnwindOptions options;
  locate::LocateOptions locate;  // options.locate points here
  uint64_t max_decompressed_bytes = uint64_t{16} << 30;
};

// Opens the core (decompressing .zst/.xz/.lz4) and everything it names with
// the caller's filesystem identity, and unwinds every thread (or `tids`).
absl::StatusOr<UnwindResult> UnwindCoreFile(const Caller& caller,
                                            CoreRequest& request,
                                            const UnwindEnv& env);

}  // namespace unwindd::service

#endif  // UNWINDD_SERVICE_SERVER_CORE_FILES_H_

#include "service/server/core_files.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <memory>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "memory/decompress.h"
#include "proc/core_modules.h"
#include "proc/core_target.h"
#include "proc/minidump/minidump_target.h"
#include "service/common/core_summary.h"
#include "service/common/crash_signature.h"
#include "service/common/packages.h"

namespace unwindd::service {

absl::StatusOr<ByteReservation> ByteReservation::Take(
    std::atomic<uint64_t>& in_flight, uint64_t bytes, uint64_t limit) {
  uint64_t cur = in_flight.load();
  do {
    if (bytes > limit || cur > limit - bytes) {
      return absl::ResourceExhaustedError(absl::StrFormat(
          "receiving a %d-byte core would take the server past its limit of "
          "%d bytes of cores in flight; retry later",
          bytes, limit));
    }
  } while (!in_flight.compare_exchange_weak(cur, cur + bytes));
  return ByteReservation(&in_flight, bytes);
}

absl::StatusOr<memory::ScopedFd> ReceiveCore(
    const std::function<bool(std::string*)>& next_chunk, uint64_t size) {
  memory::ScopedFd fd(memfd_create("unwindd-core", MFD_CLOEXEC));
  if (!fd.valid()) return absl::ErrnoToStatus(errno, "memfd_create");
  uint64_t got = 0;
  std::string chunk;
  while (next_chunk(&chunk)) {
    if (chunk.size() > size - got) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "the core stream carries more than the announced %d bytes", size));
    }
    size_t done = 0;
    while (done < chunk.size()) {
      ssize_t n = write(fd.get(), chunk.data() + done, chunk.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return absl::ErrnoToStatus(errno, "writing the received core");
      done += n;
    }
    got += chunk.size();
  }
  if (got != size) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "the core stream ended after %d of the announced %d bytes", got, size));
  }
  return fd;
}

absl::StatusOr<UnwindResult> UnwindCoreFile(const Caller& caller,
                                            CoreRequest& request,
                                            const UnwindEnv& env) {
  // Everything the core names (the core itself, its executable and
  // libraries, a sysroot) is opened as the caller: the kernel decides what
  // the caller may read, here as it would for `unwind core` run by them.
  ScopedFsIdentity as(caller);
  if (!as.status().ok()) {
    // An unwindd without CAP_SETUID and CAP_SETGID (a container replica
    // running as its own user) cannot act as a TCP caller. A streamed core
    // that names no file of this machine is still unwound, from its own
    // memory and what debuginfod serves: with a sysroot under which
    // nothing can exist, no file here is opened for the caller.
    const bool names_no_file = caller.transport == Caller::Transport::kTcp &&
                               request.server_path.empty() && request.exe.empty() &&
                               request.sysroot.empty() && request.path_map.empty();
    if (!names_no_file) return as.status();
    request.sysroot = "/dev/null";
  }
  memory::ScopedFd core = std::move(request.streamed);
  if (!request.server_path.empty()) {
    core = memory::OpenCloexec(request.server_path.c_str(), O_RDONLY | O_NONBLOCK);
    if (!core.valid()) {
      return absl::ErrnoToStatus(
          errno, absl::StrCat("open ", request.server_path, " as ", caller.Describe()));
    }
  }
  proc::FileLookup lookup;
  lookup.exe = request.exe;
  lookup.sysroot = request.sysroot;
  for (const auto& [from, to] : request.path_map) {
    lookup.path_map.push_back(proc::PathMapping{from, to});
  }
  const std::string path = absl::StrCat("/proc/self/fd/", core.get());
  // A minidump instead of a core: told by its signature ("MDMP"), as the
  // CLI's `unwind minidump` would open it (a compressed one is opened as
  // a core, whose reader says what it is not).
  uint8_t head[4] = {};
  const bool minidump =
      pread(core.get(), head, sizeof(head), 0) == sizeof(head) &&
      proc::LooksLikeMinidump(head);
  UnwindResult result;
  std::unique_ptr<proc::Target> target;
  if (minidump) {
    proc::MinidumpOptions options;
    options.lookup = lookup;
    options.tids = request.tids;
    options.decompress.max_output_bytes = request.max_decompressed_bytes;
    absl::StatusOr<std::unique_ptr<proc::MinidumpTarget>> md =
        proc::OpenMinidump(path, options);
    if (!md.ok()) return md.status();
    result = UnwindAndDescribe(**md, env, request.options);
    result.core = SummarizeMinidump((*md)->report(), request.server_path);
    target = *std::move(md);
  } else {
    proc::CoreOptions options;
    options.lookup = lookup;
    options.tids = request.tids;
    options.decompress.max_output_bytes = request.max_decompressed_bytes;
    absl::StatusOr<std::unique_ptr<proc::CoreTarget>> c = proc::OpenCore(path, options);
    if (!c.ok()) return c.status();
    result = UnwindAndDescribe(**c, env, request.options);
    result.core = SummarizeCore((*c)->report(), request.server_path);
    target = *std::move(c);
  }
  // Files the core's own lookup missed may have been found while unwinding
  // (build-id directories, debuginfod).
  NoteFilesFoundWhileUnwinding(result.stacks, *result.core);
  result.signature = ComputeSignature(result.stacks);
  // Read as the caller, like everything else here (so not from the shared
  // cache).
  result.packages = FindModulePackages(result.stacks, target.get(), nullptr);
  return result;
}

}  // namespace unwindd::service

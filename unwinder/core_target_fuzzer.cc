// libFuzzer target: proc::CoreTarget on arbitrary core bytes — compression
// detection and decompression, ELF and program headers, every note
// (NT_PRSTATUS, NT_SIGINFO, NT_PRPSINFO, NT_AUXV, NT_FILE, NT_ARM_PAC_MASK),
// module discovery (NT_FILE, r_debug/link_map, ELF headers in memory,
// images rebuilt from the core) — then the whole walk of every thread.
//
// The input is written to a memfd and opened as /proc/self/fd/N. Files the
// core names are looked up only under an empty --sysroot, so no file of
// this machine takes part and every run is the same.
#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "memory/scoped_fd.h"
#include "proc/core_target.h"
#include "unwinder/module_cache.h"
#include "unwinder/unwinder.h"

namespace unwindd::proc {
namespace {

std::string* sysroot = nullptr;

void Run(const uint8_t* data, size_t size) {
  memory::ScopedFd fd(memfd_create("fuzzed-core", MFD_CLOEXEC));
  if (fd.get() < 0) std::abort();  // the harness, not the input, is broken
  for (size_t done = 0; done < size;) {
    const ssize_t n = write(fd.get(), data + done, size - done);
    if (n <= 0) std::abort();
    done += static_cast<size_t>(n);
  }
  CoreOptions options;
  options.lookup.sysroot = *sysroot;
  // A decompression bomb stops here rather than at the default limit.
  options.decompress.max_output_bytes = uint64_t{64} << 20;
  absl::StatusOr<std::unique_ptr<CoreTarget>> core =
      OpenCore(absl::StrCat("/proc/self/fd/", fd.get()), options);
  if (!core.ok()) return;
  CoreTarget& target = **core;
  for (pid_t tid : target.Threads()) {
    target.InitialRegisters(tid).IgnoreError();
    target.ThreadSignal(tid);
  }
  for (const Mapping& m : target.mappings()) {
    target.FileCandidates(m);
    target.RecordedBuildId(m);
  }
  unwinder::ModuleCache cache;
  unwinder::UnwindOptions options_unwind;
  options_unwind.max_frames = 64;
  unwinder::UnwindTarget(target, cache, options_unwind);
}

}  // namespace
}  // namespace unwindd::proc

extern "C" int LLVMFuzzerInitialize(int* argc, char*** argv) {
  const char* tmp = std::getenv("TEST_TMPDIR");
  std::string dir = std::string(tmp != nullptr ? tmp : "/tmp") +
                    "/core_target_fuzzer_sysroot.XXXXXX";
  if (mkdtemp(dir.data()) == nullptr) {
    std::perror("mkdtemp");
    std::abort();
  }
  unwindd::proc::sysroot = new std::string(dir);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  unwindd::proc::Run(data, size);
  return 0;
}

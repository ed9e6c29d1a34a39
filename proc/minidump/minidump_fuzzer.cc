// libFuzzer target: proc::MinidumpTarget on arbitrary bytes — the header
// and directory, every stream the reader parses (thread, module, memory
// and memory64 lists, exception, system info, misc info, Breakpad's Linux
// streams and DSO debug), the thread contexts of every architecture, the
// mappings from the maps stream or the module list — then the writer turns
// what was read back into a minidump, which must read again.
//
// The input is written to a memfd and opened as /proc/self/fd/N. Files
// the minidump names are looked up only under an empty --sysroot, so no
// file of this machine takes part and every run is the same.
#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "memory/scoped_fd.h"
#include "proc/minidump/minidump_target.h"
#include "proc/minidump/writer.h"

namespace unwindd::proc {
namespace {

std::string* sysroot = nullptr;

memory::ScopedFd MemfdWith(const uint8_t* data, size_t size) {
  memory::ScopedFd fd(memfd_create("fuzzed-minidump", MFD_CLOEXEC));
  if (fd.get() < 0) std::abort();  // the harness, not the input, is broken
  for (size_t done = 0; done < size;) {
    const ssize_t n = write(fd.get(), data + done, size - done);
    if (n <= 0) std::abort();
    done += static_cast<size_t>(n);
  }
  return fd;
}

void Exercise(MinidumpTarget& target) {
  for (pid_t tid : target.Threads()) {
    absl::StatusOr<arch::RegisterSet> regs = target.InitialRegisters(tid);
    target.ThreadSignal(tid);
    if (regs.ok()) {
      uint8_t buf[64];
      target.memory().Read(regs->sp(), absl::MakeSpan(buf));
    }
  }
  for (const Mapping& m : target.mappings()) {
    target.FileCandidates(m);
    target.RecordedBuildId(m);
  }
}

void Run(const uint8_t* data, size_t size) {
  memory::ScopedFd fd = MemfdWith(data, size);
  MinidumpOptions options;
  options.lookup.sysroot = *sysroot;
  options.decompress.max_output_bytes = uint64_t{64} << 20;
  absl::StatusOr<std::unique_ptr<MinidumpTarget>> md =
      OpenMinidump(absl::StrCat("/proc/self/fd/", fd.get()), options);
  if (!md.ok()) return;
  Exercise(**md);
  // What we read, written again: our own writer must produce a minidump
  // that reads, whatever it was given.
  minidump::MinidumpWriteResult result;
  absl::StatusOr<std::vector<uint8_t>> again = minidump::BuildMinidump(
      **md, minidump::ProcessInfo(), {.max_stack_bytes = 4096}, &result);
  if (!again.ok()) return;
  memory::ScopedFd fd2 = MemfdWith(again->data(), again->size());
  absl::StatusOr<std::unique_ptr<MinidumpTarget>> reread =
      OpenMinidump(absl::StrCat("/proc/self/fd/", fd2.get()), options);
  if (!reread.ok()) {
    std::fprintf(stderr, "our own minidump does not read: %s\n",
                 std::string(reread.status().message()).c_str());
    std::abort();
  }
  Exercise(**reread);
}

}  // namespace
}  // namespace unwindd::proc

extern "C" int LLVMFuzzerInitialize(int* argc, char*** argv) {
  const char* tmp = std::getenv("TEST_TMPDIR");
  std::string dir = std::string(tmp != nullptr ? tmp : "/tmp") +
                    "/minidump_fuzzer_sysroot.XXXXXX";
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

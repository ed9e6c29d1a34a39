// Where a systemd-coredump entry's core is, and how to open it: the file
// COREDUMP_FILENAME names (under /var/lib/systemd/coredump/, usually
// zstd-compressed, which OpenCore decompresses by its magic), or the
// entry's own COREDUMP field (systemd-coredump's Storage=journal),
// written to an unlinked temporary file. A truncated core
// (COREDUMP_TRUNCATED) also gets the entry's COREDUMP_PROC_MAPS and
// COREDUMP_PROC_AUXV, for when it lost its NT_FILE note.
//
//   absl::StatusOr<CoreSource> c = ResolveCore(entry, {});
//   OpenCore(c->path, c->options);
#ifndef UNWINDD_PROC_COREDUMP_CORE_SOURCE_H_
#define UNWINDD_PROC_COREDUMP_CORE_SOURCE_H_

#include <memory>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "memory/scoped_fd.h"
#include "proc/core_target.h"
#include "proc/coredump/entry.h"

namespace unwindd::proc::coredump {

struct CoreSource {
  std::string path;     // to open (a real path, or /proc/self/fd/N)
  std::string storage;  // coredumpctl's "Storage:" ("PATH (present)", "journal")
  CoreOptions options;  // proc_maps and auxv when the core is truncated
  std::shared_ptr<memory::ScopedFd> temp;  // keeps a journal core's file open
};

// coredumpctl's storage state of the entry's core: "present", "missing",
// "inaccessible", "truncated" (present but cut short), "journal", "none".
std::string StorageState(const CoredumpEntry& entry);

// NotFound when the entry has no core (Storage=none, or the file is gone:
// systemd-coredump's MaxUse= or tmpfiles cleaned it), with the storage in
// the message. `word_size` is for the auxv (8 on 64-bit targets).
absl::StatusOr<CoreSource> ResolveCore(const CoredumpEntry& entry, int word_size);

}  // namespace unwindd::proc::coredump

#endif  // UNWINDD_PROC_COREDUMP_CORE_SOURCE_H_

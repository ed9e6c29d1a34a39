#include "proc/coredump/core_source.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace unwindd::proc::coredump {

std::string StorageState(const CoredumpEntry& entry) {
  std::string state;
  if (std::optional<std::string> f = entry.Get("COREDUMP_FILENAME")) {
    struct stat st;
    if (stat(f->c_str(), &st) != 0) {
      state = errno == EACCES || errno == EPERM ? "inaccessible" : "missing";
    } else if (access(f->c_str(), R_OK) != 0) {
      state = "inaccessible";
    } else {
      state = S_ISREG(st.st_mode) ? "present" : "error";
    }
  } else if (entry.has_core_field()) {
    state = "journal";
  } else {
    return "none";
  }
  // coredumpctl: a present (or journal) core that was cut short.
  if ((state == "present" || state == "journal") && entry.truncated()) return "truncated";
  return state;
}

absl::StatusOr<CoreSource> ResolveCore(const CoredumpEntry& entry, int word_size) {
  CoreSource out;
  const std::string state = StorageState(entry);
  std::optional<std::string> file = entry.Get("COREDUMP_FILENAME");
  if (file) {
    out.storage = absl::StrCat(*file, " (", state, ")");
    if (state != "present" && state != "truncated") {
      return absl::NotFoundError(absl::StrCat(
          "the entry's core ", *file, " is ", state,
          state == "missing" ? " (systemd-coredump's MaxUse= or tmpfiles removed it)"
                             : ""));
    }
    out.path = *file;
  } else if (entry.has_core_field()) {
    out.storage = "journal";
    // An unlinked file with the journal's copy of the core.
    int fd = memfd_create("unwind-coredump", MFD_CLOEXEC);
    if (fd < 0) return absl::ErrnoToStatus(errno, "memfd_create");
    out.temp = std::make_shared<memory::ScopedFd>(fd);
    const std::string& b = entry.core_bytes();
    size_t done = 0;
    while (done < b.size()) {
      const ssize_t n = write(fd, b.data() + done, b.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return absl::ErrnoToStatus(errno, "writing the journal's core");
      done += static_cast<size_t>(n);
    }
    out.path = absl::StrCat("/proc/self/fd/", fd);
  } else {
    return absl::NotFoundError(
        "the entry has no core (Storage: none; systemd-coredump's Storage=none "
        "or a core over ProcessSizeMax=)");
  }
  if (entry.truncated()) {
    absl::StatusOr<std::vector<Mapping>> maps = entry.ProcMaps();
    if (maps.ok()) out.options.proc_maps = *std::move(maps);
    out.options.auxv = entry.ProcAuxv(word_size);
  }
  return out;
}

}  // namespace unwindd::proc::coredump

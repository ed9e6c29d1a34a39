#include "proc/testing/snapshot_files.h"

#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include <utility>

#include "gtest/gtest.h"
#include "memory/factories.h"
#include "proc/maps.h"

namespace unwindd::proc::testing {

std::shared_ptr<const SnapshotFile> OpenSnapshotFile(const std::string& path) {
  memory::ScopedFd fd = memory::OpenCloexec(path.c_str(), O_RDONLY);
  EXPECT_TRUE(fd.valid()) << path;
  absl::StatusOr<std::shared_ptr<const SnapshotFile>> f =
      SnapshotFile::FromFd(std::move(fd));
  EXPECT_TRUE(f.ok()) << f.status();
  return f.ok() ? *f : nullptr;
}

std::vector<SnapshotMapping> OwnMappings(bool with_files) {
  std::vector<SnapshotMapping> out;
  absl::StatusOr<std::vector<Mapping>> maps = ReadMaps(getpid());
  EXPECT_TRUE(maps.ok()) << maps.status();
  if (!maps.ok()) return out;
  for (const Mapping& m : *maps) {
    SnapshotMapping sm{m, nullptr, nullptr, ""};
    if (with_files && m.IsFileBacked() && !m.deleted) sm.file = OpenSnapshotFile(m.path);
    out.push_back(std::move(sm));
  }
  return out;
}

std::shared_ptr<const SnapshotFile> TempSnapshotFile(const std::vector<uint8_t>& bytes) {
  char name[] = "/tmp/snapshot_files.XXXXXX";
  int fd = mkstemp(name);
  EXPECT_GE(fd, 0);
  unlink(name);
  EXPECT_EQ(write(fd, bytes.data(), bytes.size()),
            static_cast<ssize_t>(bytes.size()));
  absl::StatusOr<std::shared_ptr<const SnapshotFile>> f =
      SnapshotFile::FromFd(memory::ScopedFd(fd));
  EXPECT_TRUE(f.ok()) << f.status();
  return f.ok() ? *f : nullptr;
}

}  // namespace unwindd::proc::testing

// Test helpers for snapshots of this very process: its mappings with their
// files opened (what the server builds from a sample's mapping table), and
// temporary files as snapshot files.
//
//   std::vector<SnapshotMapping> m = testing::OwnMappings(/*with_files=*/true);
#ifndef UNWINDD_PROC_TESTING_SNAPSHOT_FILES_H_
#define UNWINDD_PROC_TESTING_SNAPSHOT_FILES_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "proc/snapshot_target.h"

namespace unwindd::proc::testing {

// `path` opened as a SnapshotFile; null (and a test failure) if it cannot be.
std::shared_ptr<const SnapshotFile> OpenSnapshotFile(const std::string& path);

// This process's mappings; with `with_files`, each file-backed one with its
// file opened.
std::vector<SnapshotMapping> OwnMappings(bool with_files);

// An unlinked temporary file holding `bytes`, opened.
std::shared_ptr<const SnapshotFile> TempSnapshotFile(const std::vector<uint8_t>& bytes);

}  // namespace unwindd::proc::testing

#endif  // UNWINDD_PROC_TESTING_SNAPSHOT_FILES_H_

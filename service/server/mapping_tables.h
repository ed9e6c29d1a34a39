// Mapping tables of a snapshot stream: a process's mappings as a client
// sends them (proto MappingTable, or a sample's own `mappings`), checked
// against the server's limits and kept under the id the client chose, so
// that samples name their table instead of carrying it.
//
//   MappingTables tables(limits);                    // one per stream
//   tables.Define(request.mapping_table());          // kept, or refused
//   absl::StatusOr<std::shared_ptr<TableState>> t = tables.Find(7);
//   tables.Release(7);
//
// A table is parsed here into plain values (ParseTable), with nothing
// opened: the session resolves its files on first use and keeps the result
// in the table's TableState, shared by every sample that names it. A table
// that breaks a rule or a limit is refused: its id then answers Find with
// the refusal (so every sample naming it gets the same error) until it is
// defined again or released.
//
// Limits per stream (SnapshotLimits): tables, bytes of tables (paths,
// build-ids, images), mappings per table, path_map entries, image bytes.
// Not thread-safe (one per stream).
#ifndef UNWINDD_SERVICE_SERVER_MAPPING_TABLES_H_
#define UNWINDD_SERVICE_SERVER_MAPPING_TABLES_H_

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "google/protobuf/repeated_ptr_field.h"
#include "arch/arch.h"
#include "proc/maps.h"
#include "proc/snapshot_target.h"
#include "proto/unwinder.pb.h"
#include "unwinder/address_space.h"
#include "unwinder/locate/locator.h"

namespace unwindd::service {

struct TableLimits {
  int max_tables = 1024;                   // per stream
  uint64_t max_table_bytes = 64ull << 20;  // per stream, all tables
  int max_mappings = 1 << 16;              // per table (and per sample)
  int max_path_maps = 64;
  uint64_t max_image_bytes = 1 << 20;      // per mapping image
  // The server's receive limit bounds one table anyway; this bounds what a
  // stream keeps.
};

// One mapping as the client described it. `mapping` holds start, end,
// offset, protection and the path as sent (before path_map and sysroot);
// its inode and device fields are not the client's (see `inode`...).
struct TableMapping {
  proc::Mapping mapping;
  std::string build_id;  // lowercase hex, or ""
  // The client's record of the file's identity (0: not given).
  uint64_t inode = 0;
  uint32_t dev_major = 0;
  uint32_t dev_minor = 0;
  uint64_t ino_generation = 0;
  // The mapping's bytes from `start` on, when the client sent them.
  std::shared_ptr<const std::vector<uint8_t>> image;
};

// A checked table: what the session needs to resolve it.
struct TableDef {
  std::vector<TableMapping> mappings;  // sorted by start, non-overlapping
  std::string sysroot;
  std::vector<std::pair<std::string, std::string>> path_map;
  uint64_t bytes = 0;  // what it counts against max_table_bytes
};

// The checks every table passes, sent as a MappingTable or as a sample's
// own mappings: InvalidArgument for an empty or overlapping mapping, a
// path longer than PATH_MAX, a build-id that is not lowercase hex of at
// most 128 digits, an image larger than its mapping, too many path_map
// entries or too long a sysroot; ResourceExhausted past max_mappings or
// max_image_bytes.
absl::StatusOr<std::shared_ptr<TableDef>> ParseTable(
    const google::protobuf::RepeatedPtrField<v1::Mapping>& mappings,
    const std::string& sysroot,
    const google::protobuf::RepeatedPtrField<v1::PathMapping>& path_map,
    const TableLimits& limits);

// True if `def` is what these wire fields would parse to (so a sample that
// resends its table, the old way, reuses what the last one resolved).
bool SameTable(const TableDef& def,
               const google::protobuf::RepeatedPtrField<v1::Mapping>& mappings,
               const std::string& sysroot,
               const google::protobuf::RepeatedPtrField<v1::PathMapping>& path_map);

// A table and what the session made of it (snapshots.cc fills everything
// but `def`, on the first sample that needs it). Shared by every sample
// naming the table; released with it, or when another replaces it, once
// no sample uses it any more.
struct TableState {
  explicit TableState(std::shared_ptr<const TableDef> d) : def(std::move(d)) {}

  std::shared_ptr<const TableDef> def;
  bool resolved = false;
  // Resolving failed (e.g. a [vdso] image that is not the build-id's):
  // every sample naming the table gets this.
  absl::Status status;
  // def->mappings with their files and images, in the same order.
  std::vector<proc::SnapshotMapping> mappings;
  // Per mapping: the path its file was opened at, "" when it is the
  // mapping's own path (or there is no file).
  std::vector<std::string> opened_paths;
  // The address space over `mappings` for `arch`: built when a sample
  // needs it, dropped when the session keeps too many. `space` is built
  // over `counted`, which wraps `target`.
  arch::Arch arch = arch::Arch::kX86_64;
  // The debug_dirs and debuginfod of the samples `space` was built for
  // (samples naming the table with others get a space of their own), and
  // the locate options `space` looks for files and debug information with.
  std::vector<std::string> debug_dirs;
  bool debuginfod = false;
  locate::LocateOptions locate;
  std::unique_ptr<proc::SnapshotTarget> target;
  std::unique_ptr<proc::Target> counted;
  std::unique_ptr<unwinder::AddressSpace> space;
  // Per module of `space`: the index in `mappings` of its first mapping
  // (-1: not looked up yet).
  std::vector<int> module_rows;
  // Per module of `space`: its Module message for answers
  // (response_encoder.h's EncodeModule), built the first time a frame
  // names it, instead of encoding (and checking the UTF-8 of) the same
  // paths for every sample. A module's fields are set when it is opened,
  // except separate debug information, which a later walk may load (once):
  // then the bytes are built again.
  struct ModuleAnswer {
    std::string bytes;
    bool built = false;
    bool with_debug_info = false;
  };
  std::vector<ModuleAnswer> module_answers;
  uint64_t last_use = 0;
};

class MappingTables {
 public:
  explicit MappingTables(TableLimits limits) : limits_(limits) {}

  // Keeps `t` under t.id(), replacing what that id had. InvalidArgument for
  // id 0 (nothing is kept). A table that fails ParseTable or a stream
  // limit is refused: Find(id) then returns the refusal, which this also
  // returns.
  absl::Status Define(const v1::MappingTable& t);
  // The table with `id`: InvalidArgument if none was sent on this stream
  // (or it was released), or the status it was refused with.
  absl::StatusOr<std::shared_ptr<TableState>> Find(uint64_t id) const;
  // Forgets `id` (unknown ids are ignored).
  void Release(uint64_t id);

  size_t size() const { return tables_.size(); }
  uint64_t bytes() const { return bytes_; }

 private:
  // Refusals remembered at most (beyond, the oldest are forgotten and
  // their ids become unknown).
  static constexpr size_t kMaxRefused = 1024;

  const TableLimits limits_;
  absl::flat_hash_map<uint64_t, std::shared_ptr<TableState>> tables_;
  absl::flat_hash_map<uint64_t, absl::Status> refused_;
  uint64_t bytes_ = 0;
};

}  // namespace unwindd::service

#endif  // UNWINDD_SERVICE_SERVER_MAPPING_TABLES_H_

#include "service/server/mapping_tables.h"

#include <limits.h>

#include <algorithm>
#include <utility>

#include "absl/strings/str_format.h"

namespace unwindd::service {
namespace {

// NT_GNU_BUILD_ID is usually 20 bytes (SHA-1); allow up to 64 bytes of hex.
constexpr size_t kMaxBuildIdHex = 128;

bool IsLowerHex(absl::string_view s) {
  return std::all_of(s.begin(), s.end(), [](char c) {
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
  });
}

// A mapping's path: path_bytes when the client sent one (a path that is
// not UTF-8), else path.
absl::string_view MappingPath(const v1::Mapping& m) {
  return m.path_bytes().empty() ? absl::string_view(m.path()) : absl::string_view(m.path_bytes());
}

absl::Status CheckMapping(const v1::Mapping& m, const TableLimits& limits) {
  if (m.start() >= m.end()) {
    return absl::InvalidArgumentError(
        absl::StrFormat("mapping [0x%x, 0x%x) is empty", m.start(), m.end()));
  }
  if (MappingPath(m).size() > PATH_MAX || m.build_id().size() > kMaxBuildIdHex ||
      !IsLowerHex(m.build_id())) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "mapping at 0x%x: path longer than PATH_MAX or build_id not "
        "lowercase hex of at most %d digits",
        m.start(), kMaxBuildIdHex));
  }
  if (m.image().size() > m.end() - m.start()) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "mapping at 0x%x: an image of %d bytes is larger than the mapping",
        m.start(), m.image().size()));
  }
  if (m.image().size() > limits.max_image_bytes) {
    return absl::ResourceExhaustedError(absl::StrFormat(
        "mapping at 0x%x: an image of %d bytes is over the server's limit of %d",
        m.start(), m.image().size(), limits.max_image_bytes));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::shared_ptr<TableDef>> ParseTable(
    const google::protobuf::RepeatedPtrField<v1::Mapping>& mappings,
    const std::string& sysroot,
    const google::protobuf::RepeatedPtrField<v1::PathMapping>& path_map,
    const TableLimits& limits) {
  if (mappings.size() > limits.max_mappings) {
    return absl::ResourceExhaustedError(
        absl::StrFormat("%d mappings is over the server's limit of %d",
                        mappings.size(), limits.max_mappings));
  }
  if (path_map.size() > limits.max_path_maps) {
    return absl::InvalidArgumentError(
        absl::StrFormat("more than %d path_map entries", limits.max_path_maps));
  }
  if (sysroot.size() > PATH_MAX) {
    return absl::InvalidArgumentError("sysroot is longer than PATH_MAX");
  }
  auto def = std::make_shared<TableDef>();
  uint64_t bytes = sizeof(TableDef) + sysroot.size();
  def->sysroot = sysroot;
  for (const v1::PathMapping& pm : path_map) {
    if (pm.from().size() > PATH_MAX || pm.to().size() > PATH_MAX) {
      return absl::InvalidArgumentError("a path_map entry is longer than PATH_MAX");
    }
    def->path_map.emplace_back(pm.from(), pm.to());
    bytes += pm.from().size() + pm.to().size() + 2 * sizeof(std::string);
  }
  def->mappings.reserve(mappings.size());
  std::vector<std::pair<uint64_t, uint64_t>> ranges;
  ranges.reserve(mappings.size());
  for (const v1::Mapping& m : mappings) {
    absl::Status s = CheckMapping(m, limits);
    if (!s.ok()) return s;
    TableMapping& tm = def->mappings.emplace_back();
    tm.mapping.start = m.start();
    tm.mapping.end = m.end();
    tm.mapping.offset = m.offset();
    tm.mapping.read = m.read();
    tm.mapping.write = m.write();
    tm.mapping.exec = m.exec();
    tm.mapping.path = std::string(MappingPath(m));
    tm.build_id = m.build_id();
    tm.inode = m.inode();
    tm.dev_major = m.dev_major();
    tm.dev_minor = m.dev_minor();
    tm.ino_generation = m.ino_generation();
    if (!m.image().empty()) {
      tm.image = std::make_shared<const std::vector<uint8_t>>(m.image().begin(),
                                                              m.image().end());
    }
    bytes += sizeof(TableMapping) + MappingPath(m).size() + m.build_id().size() +
             m.image().size();
    ranges.emplace_back(m.start(), m.end());
  }
  std::sort(ranges.begin(), ranges.end());
  for (size_t i = 1; i < ranges.size(); ++i) {
    if (ranges[i - 1].second > ranges[i].first) {
      return absl::InvalidArgumentError(
          absl::StrFormat("mappings overlap at 0x%x", ranges[i].first));
    }
  }
  def->bytes = bytes;
  return def;
}

bool SameTable(const TableDef& def,
               const google::protobuf::RepeatedPtrField<v1::Mapping>& mappings,
               const std::string& sysroot,
               const google::protobuf::RepeatedPtrField<v1::PathMapping>& path_map) {
  if (mappings.size() != static_cast<int>(def.mappings.size()) ||
      path_map.size() != static_cast<int>(def.path_map.size()) ||
      sysroot != def.sysroot) {
    return false;
  }
  for (int i = 0; i < path_map.size(); ++i) {
    if (path_map[i].from() != def.path_map[i].first ||
        path_map[i].to() != def.path_map[i].second) {
      return false;
    }
  }
  for (int i = 0; i < mappings.size(); ++i) {
    const v1::Mapping& m = mappings[i];
    const TableMapping& k = def.mappings[i];
    if (m.start() != k.mapping.start || m.end() != k.mapping.end ||
        m.offset() != k.mapping.offset || m.read() != k.mapping.read ||
        m.write() != k.mapping.write || m.exec() != k.mapping.exec ||
        m.inode() != k.inode || m.dev_major() != k.dev_major ||
        m.dev_minor() != k.dev_minor || m.ino_generation() != k.ino_generation ||
        MappingPath(m) != k.mapping.path || m.build_id() != k.build_id) {
      return false;
    }
    const size_t image = k.image == nullptr ? 0 : k.image->size();
    if (m.image().size() != image ||
        (image > 0 && !std::equal(k.image->begin(), k.image->end(),
                                  reinterpret_cast<const uint8_t*>(m.image().data())))) {
      return false;
    }
  }
  return true;
}

absl::Status MappingTables::Define(const v1::MappingTable& t) {
  if (t.id() == 0) {
    return absl::InvalidArgumentError("a MappingTable needs an id other than 0");
  }
  Release(t.id());  // replaced, whatever comes of the new one
  absl::StatusOr<std::shared_ptr<TableDef>> def =
      ParseTable(t.mappings(), t.sysroot(), t.path_map(), limits_);
  absl::Status refusal;
  if (!def.ok()) {
    refusal = def.status();
  } else if (static_cast<int>(tables_.size()) >= limits_.max_tables) {
    refusal = absl::ResourceExhaustedError(absl::StrFormat(
        "the stream already has %d mapping tables, the server's limit; release "
        "some (release_mapping_table_ids) or open another stream",
        tables_.size()));
  } else if ((*def)->bytes > limits_.max_table_bytes - bytes_) {
    refusal = absl::ResourceExhaustedError(absl::StrFormat(
        "a mapping table of %d bytes would put the stream over the server's "
        "limit of %d bytes of tables; release some (release_mapping_table_ids)",
        (*def)->bytes, limits_.max_table_bytes));
  }
  if (!refusal.ok()) {
    if (refused_.size() >= kMaxRefused) refused_.clear();
    refusal = absl::Status(refusal.code(), absl::StrFormat("mapping table %d was refused: %s",
                                                           t.id(), refusal.message()));
    refused_[t.id()] = refusal;
    return refusal;
  }
  bytes_ += (*def)->bytes;
  tables_[t.id()] = std::make_shared<TableState>(*std::move(def));
  return absl::OkStatus();
}

absl::StatusOr<std::shared_ptr<TableState>> MappingTables::Find(uint64_t id) const {
  auto it = tables_.find(id);
  if (it != tables_.end()) return it->second;
  auto r = refused_.find(id);
  if (r != refused_.end()) return r->second;
  return absl::InvalidArgumentError(absl::StrFormat(
      "mapping table %d was not sent on this stream (or was released)", id));
}

void MappingTables::Release(uint64_t id) {
  auto it = tables_.find(id);
  if (it != tables_.end()) {
    bytes_ -= it->second->def->bytes;
    tables_.erase(it);
  }
  refused_.erase(id);
}

}  // namespace unwindd::service

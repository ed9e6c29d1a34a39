#include "service/cli/profile/pprof.h"

#include <algorithm>
#include <optional>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/functional/function_ref.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "service/cli/profile/gzip.h"
#include "service/cli/profile/proto_writer.h"

namespace unwindd::profile {
namespace {

namespace f = pprof_field;

// Profile.string_table: every string once, "" at index 0 (profile.proto:
// "string_table[0] must always be \"\"").
class StringTable {
 public:
  StringTable() { Index(""); }

  int64_t Index(absl::string_view s) {
    auto [it, inserted] = index_.try_emplace(s, strings_.size());
    if (inserted) strings_.emplace_back(s);
    return it->second;
  }
  const std::vector<std::string>& strings() const { return strings_; }

 private:
  std::vector<std::string> strings_;
  absl::flat_hash_map<std::string, int64_t> index_;
};

void WriteValueType(uint32_t field, absl::string_view type,
                    absl::string_view unit, StringTable& strings,
                    ProtoWriter& out) {
  const int64_t type_index = strings.Index(type);
  const int64_t unit_index = strings.Index(unit);
  ProtoWriter vt;
  vt.Int64IfNonZero(f::kValueTypeType, type_index);
  vt.Int64IfNonZero(f::kValueTypeUnit, unit_index);
  out.Message(field, vt);
}

void WriteLabel(int64_t key, const int64_t* num, int64_t str,
                ProtoWriter& out) {
  ProtoWriter label;
  label.Int64IfNonZero(f::kLabelKey, key);
  if (num != nullptr) {
    label.Int64IfNonZero(f::kLabelNum, *num);
  } else {
    label.Int64IfNonZero(f::kLabelStr, str);
  }
  out.Message(f::kSampleLabel, label);
}

// pprof's own guess at the main binary (google/pprof profile.go,
// massageMappings: not a library by libRx `([.]so$|[.]so[._][0-9]+)`, not
// "[vdso]"-like), used for the mapping it takes as the program: the
// first (`File:` in its report). Nor JIT code (a runtime's name for it, or
// perf's /tmp/perf-PID.map).
bool MayBeMainBinary(const Module& m) {
  absl::string_view file = m.path;
  if (file.empty() || file[0] == '[' || !m.function.empty()) return false;
  if (absl::StartsWith(file, "/tmp/perf-") || absl::StartsWith(file, "//anon")) return false;
  file = file.substr(file.rfind('/') + 1);
  for (size_t at = file.find(".so"); at != absl::string_view::npos;
       at = file.find(".so", at + 1)) {
    const size_t after = at + 3;
    if (after == file.size()) return false;
    if ((file[after] == '.' || file[after] == '_') && after + 1 < file.size() &&
        absl::ascii_isdigit(file[after + 1])) {
      return false;
    }
  }
  return true;
}

// The encoding goes out in pieces of about this size (a Profile's fields
// are a sequence of records, cut between any two): a large profile's
// samples are most of it, and are compressed as they are written instead
// of being held whole first.
constexpr size_t kPieceBytes = size_t{64} << 10;

// EncodePprof, its bytes handed to `out` in order.
void Encode(const Profile& profile, const PprofOptions& options,
            absl::FunctionRef<void(absl::string_view)> out) {
  StringTable strings;
  ProtoWriter body;  // the fields in field order, handed out in pieces
  ProtoWriter msg;

  // sample_type: by convention (profile.proto) the count comes first,
  // then a weight per event (one, unless the recording had several).
  std::vector<size_t> column_of_label_set;
  const std::vector<ValueType> columns = profile.WeightColumns(&column_of_label_set);
  const ValueType& weight = columns[0];
  WriteValueType(f::kSampleType, "samples", "count", strings, body);
  for (const ValueType& c : columns) WriteValueType(f::kSampleType, c.type, c.unit, strings, body);
  std::vector<int64_t> values(1 + columns.size(), 0);  // one sample's

  // Mapping ids: 1.. over the modules some location uses, in module order,
  // except that the program comes first: pprof takes the first mapping
  // for the main binary (its `File:`), and the first module used is
  // often ld.so or libc.
  std::vector<uint64_t> mapping_id(profile.modules().size(), 0);
  for (const Profile::Location& loc : profile.locations()) {
    if (loc.module != kNoModule) mapping_id[loc.module] = 1;
  }
  // The samples, and, from the same walk up each stack, in how many
  // samples each module is (for the program's mapping, below).
  std::vector<int64_t> in_samples(profile.modules().size(), 0);
  // Per module, the last sample (numbered from 1) that counted it.
  std::vector<size_t> counted_in(profile.modules().size(), 0);
  // Per label set, its Sample.label fields, encoded when a sample first
  // uses it. Strings are interned then, key before value, so that the
  // table holds only what the profile refers to, in a fixed order.
  std::vector<std::optional<std::string>> label_fields(profile.label_sets().size());
  // The label keys' indexes, each looked up when first used.
  int64_t pid_key = -1, tid_key = -1, comm_key = -1;
  auto key = [&strings](int64_t& k, absl::string_view name) {
    if (k < 0) k = strings.Index(name);
    return k;
  };
  const std::vector<Profile::Node>& nodes = profile.nodes();
  const std::vector<Profile::Location>& locations = profile.locations();
  std::vector<char> location_ids(64 * kMaxVarintBytes);  // one sample's, packed
  size_t number = 0;
  for (const Profile::StackSample& s : profile.samples()) {
    ++number;
    char* ids_end = location_ids.data();
    // Location ids are 1 + the index in locations(); the stack is its
    // node's path to the root, leaf first (Profile::StackLocations).
    for (uint32_t node = s.node; node != Profile::kRoot && node < nodes.size();
         node = nodes[node].parent) {
      if (location_ids.data() + location_ids.size() - ids_end < kMaxVarintBytes) {
        const size_t used = ids_end - location_ids.data();
        location_ids.resize(2 * location_ids.size());
        ids_end = location_ids.data() + used;
      }
      const uint32_t l = nodes[node].location;
      ids_end = PutVarint(ids_end, uint64_t{l} + 1);
      const int module = locations[l].module;
      if (module == kNoModule || counted_in[module] == number) continue;
      counted_in[module] = number;
      in_samples[module] += s.values.count;
    }
    std::optional<std::string>& labels_encoded = label_fields[s.label_set];
    if (!labels_encoded) {
      const ThreadLabels& labels = profile.label_sets()[s.label_set];
      ProtoWriter fields;
      if (labels.pid) WriteLabel(key(pid_key, "pid"), &*labels.pid, 0, fields);
      if (labels.tid) WriteLabel(key(tid_key, "tid"), &*labels.tid, 0, fields);
      if (!labels.comm.empty()) {
        const int64_t k = key(comm_key, "comm");
        WriteLabel(k, nullptr, strings.Index(labels.comm), fields);
      }
      labels_encoded = fields.Release();
    }
    msg.Clear();
    if (ids_end != location_ids.data()) {
      msg.Bytes(f::kSampleLocationId,
                absl::string_view(location_ids.data(), ids_end - location_ids.data()));
    }
    const size_t column = 1 + column_of_label_set[s.label_set];
    values[0] = s.values.count;
    values[column] = s.values.weight;
    msg.PackedInt64s(f::kSampleValue, values);
    values[column] = 0;
    msg.Raw(*labels_encoded);
    body.Message(f::kSample, msg);
    if (body.data().size() >= kPieceBytes) {
      out(body.data());
      body.Clear();
    }
  }

  std::vector<size_t> mapping_order;
  for (size_t i = 0; i < mapping_id.size(); ++i) {
    if (mapping_id[i] != 0) mapping_order.push_back(i);
  }
  {
    // The program: of the modules that may be one, the one in most
    // samples (`perf record -- timeout 5 ./prog` maps two programs).
    size_t main = mapping_order.size();
    for (size_t k = 0; k < mapping_order.size(); ++k) {
      if (!MayBeMainBinary(profile.modules()[mapping_order[k]])) continue;
      if (main == mapping_order.size() ||
          in_samples[mapping_order[k]] > in_samples[mapping_order[main]]) {
        main = k;
      }
    }
    if (main != mapping_order.size()) {
      std::rotate(mapping_order.begin(), mapping_order.begin() + main,
                  mapping_order.begin() + main + 1);
    }
  }
  for (size_t k = 0; k < mapping_order.size(); ++k) mapping_id[mapping_order[k]] = k + 1;

  // Functions: one per distinct name a location has (JIT code), ids 1..
  // in the order of the locations.
  std::vector<uint64_t> location_function(profile.locations().size(), 0);
  std::vector<absl::string_view> function_names;
  std::vector<bool> mapping_named(profile.modules().size(), false);
  {
    absl::flat_hash_map<absl::string_view, uint64_t> function_id;
    for (uint32_t l = 0; l < profile.locations().size(); ++l) {
      const absl::string_view name = profile.LocationFunction(l);
      if (name.empty()) continue;
      auto [it, added] = function_id.try_emplace(name, function_names.size() + 1);
      if (added) function_names.push_back(name);
      location_function[l] = it->second;
      const int module = profile.locations()[l].module;
      if (module != kNoModule) mapping_named[module] = true;
    }
  }

  std::vector<std::string> comments = options.comments;
  for (const size_t i : mapping_order) {
    const Module& m = profile.modules()[i];
    msg.Clear();
    msg.VarintIfNonZero(f::kMappingId, mapping_id[i]);
    msg.VarintIfNonZero(f::kMappingMemoryStart, m.start);
    msg.VarintIfNonZero(f::kMappingMemoryLimit, m.limit);
    msg.VarintIfNonZero(f::kMappingFileOffset, m.file_offset);
    const int64_t filename = strings.Index(m.path);
    msg.Int64IfNonZero(f::kMappingFilename, filename);
    msg.Int64IfNonZero(f::kMappingBuildId, strings.Index(m.build_id));
    // has_functions, has_filenames, has_line_numbers, has_inline_frames:
    // all false (left out), so that pprof symbolizes this mapping; except
    // has_functions for JIT code we named (pprof has no file to read).
    if (mapping_named[i]) msg.VarintIfNonZero(f::kMappingHasFunctions, 1);
    body.Message(f::kMapping, msg);
    if (!m.file_found && !m.path.empty() && m.path[0] != '[') {
      comments.push_back(absl::StrCat("file not found: ", m.path,
                                      m.build_id.empty() ? "" : " build-id ",
                                      m.build_id));
    }
  }

  for (size_t i = 0; i < profile.locations().size(); ++i) {
    const Profile::Location& loc = profile.locations()[i];
    msg.Clear();
    msg.VarintIfNonZero(f::kLocationId, i + 1);
    if (loc.module != kNoModule) {
      msg.VarintIfNonZero(f::kLocationMappingId, mapping_id[loc.module]);
    }
    msg.VarintIfNonZero(f::kLocationAddress, loc.address);
    if (location_function[i] != 0) {
      ProtoWriter line;
      line.VarintIfNonZero(f::kLineFunctionId, location_function[i]);
      msg.Message(f::kLocationLine, line);
    }
    body.Message(f::kLocation, msg);
  }

  for (size_t i = 0; i < function_names.size(); ++i) {
    msg.Clear();
    msg.VarintIfNonZero(f::kFunctionId, i + 1);
    const int64_t name = strings.Index(function_names[i]);
    msg.Int64IfNonZero(f::kFunctionName, name);
    msg.Int64IfNonZero(f::kFunctionSystemName, name);
    body.Message(f::kFunction, msg);
  }

  // Everything below refers to strings: intern them before the table goes
  // out.
  const int64_t weight_type = strings.Index(weight.type);
  std::vector<int64_t> comment_ids;
  for (const std::string& c : comments) comment_ids.push_back(strings.Index(c));
  const int64_t weight_unit = strings.Index(weight.unit);
  ProtoWriter period_type;
  period_type.Int64IfNonZero(f::kValueTypeType, weight_type);
  period_type.Int64IfNonZero(f::kValueTypeUnit, weight_unit);

  for (const std::string& s : strings.strings()) body.Bytes(f::kStringTable, s);
  body.Int64IfNonZero(f::kTimeNanos, options.time_nanos);
  body.Int64IfNonZero(f::kDurationNanos, options.duration_nanos);
  body.Message(f::kPeriodType, period_type);
  body.Int64IfNonZero(f::kPeriod, options.period);
  body.PackedInt64s(f::kComment, comment_ids);
  body.Int64IfNonZero(f::kDefaultSampleType, weight_type);
  out(body.data());
}

}  // namespace

std::string EncodePprof(const Profile& profile, const PprofOptions& options) {
  std::string bytes;
  Encode(profile, options,
         [&bytes](absl::string_view piece) { bytes.append(piece.data(), piece.size()); });
  return bytes;
}

absl::StatusOr<std::string> WritePprof(const Profile& profile,
                                       const PprofOptions& options) {
  GzipWriter gz;
  Encode(profile, options, [&gz](absl::string_view piece) { gz.Write(piece); });
  return std::move(gz).Finish();
}

}  // namespace unwindd::profile

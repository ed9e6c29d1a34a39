// MergeProfiles (profile.h): profiles aggregated side by side, by the
// threads of a pipeline, made into the one profile a single thread would
// have made of the same samples.
#include <algorithm>
#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_format.h"
#include "service/cli/profile/profile.h"

namespace unwindd::profile {
namespace {

// One part's tables translated into the merged profile's, as they are
// first needed.
class PartMap {
 public:
  PartMap(const Profile& part, Profile& out)
      : part_(part), out_(out), nodes_(part.nodes().size(), -1),
        modules_(part.modules().size(), kUnmapped), labels_(part.label_sets().size(), -1) {
    nodes_[Profile::kRoot] = Profile::kRoot;
  }

  // `out`'s node for the part's `node`: the untranslated nodes on its path
  // are made outermost first, as a single builder would have made them.
  absl::StatusOr<uint32_t> Node(uint32_t node) {
    pending_.clear();
    while (nodes_[node] < 0) {
      pending_.push_back(node);
      node = part_.nodes()[node].parent;
    }
    uint32_t parent = static_cast<uint32_t>(nodes_[node]);
    for (auto it = pending_.rbegin(); it != pending_.rend(); ++it) {
      const Profile::Location& loc = part_.locations()[part_.nodes()[*it].location];
      absl::StatusOr<int> module = Module(loc);
      if (!module.ok()) return module.status();
      // The location's address is a lookup address already.
      absl::StatusOr<uint32_t> child = out_.Child(parent, {loc.address, false, *module}, loc.kernel);
      if (!child.ok()) return child.status();
      nodes_[*it] = *child;
      parent = *child;
    }
    return parent;
  }

  absl::StatusOr<uint32_t> LabelSet(uint32_t label_set) {
    if (labels_[label_set] < 0) {
      absl::StatusOr<uint32_t> id = out_.LabelSet(part_.label_sets()[label_set]);
      if (!id.ok()) return id.status();
      labels_[label_set] = *id;
    }
    return static_cast<uint32_t>(labels_[label_set]);
  }

 private:
  static constexpr int kUnmapped = -2;

  absl::StatusOr<int> Module(const Profile::Location& loc) {
    // The part's implicit kernel module becomes `out`'s, grown by Child.
    if (loc.module == kNoModule || loc.module == part_.kernel_module()) return kNoModule;
    int& m = modules_[loc.module];
    if (m == kUnmapped) {
      absl::StatusOr<int> added = out_.AddModule(part_.modules()[loc.module]);
      if (!added.ok()) return added.status();
      m = *added;
    }
    return m;
  }

  const Profile& part_;
  Profile& out_;
  std::vector<int64_t> nodes_;
  std::vector<int> modules_;
  std::vector<int64_t> labels_;
  std::vector<uint32_t> pending_;
};

}  // namespace

absl::Status MergeProfiles(absl::Span<const Profile* const> parts, Profile& out) {
  struct Ref {
    uint64_t first;
    size_t part;
    size_t sample;
  };
  std::vector<Ref> refs;
  std::vector<PartMap> maps;
  maps.reserve(parts.size());
  for (size_t p = 0; p < parts.size(); ++p) {
    maps.emplace_back(*parts[p], out);
    for (size_t i = 0; i < parts[p]->samples().size(); ++i) {
      refs.push_back({parts[p]->samples()[i].first, p, i});
    }
  }
  std::sort(refs.begin(), refs.end(), [](const Ref& a, const Ref& b) {
    return a.first != b.first ? a.first < b.first : a.part < b.part;
  });
  for (const Ref& r : refs) {
    const Profile::StackSample& s = parts[r.part]->samples()[r.sample];
    absl::StatusOr<uint32_t> node = maps[r.part].Node(s.node);
    if (!node.ok()) return node.status();
    absl::StatusOr<uint32_t> labels = maps[r.part].LabelSet(s.label_set);
    if (!labels.ok()) return labels.status();
    if (absl::Status st = out.AddToNode(*labels, *node, s.values, nullptr, s.first); !st.ok()) {
      return st;
    }
  }
  return absl::OkStatus();
}

}  // namespace unwindd::profile

#include "service/cli/profile/folded.h"

#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/string_view.h"

namespace unwindd::profile {
namespace {

// ';' separates frames and ' ' the count; neither may occur in a name
// (stackcollapse-perf.pl turns spaces in comm into '_' too), nor may line
// breaks or other control characters.
std::string Sanitize(absl::string_view name) {
  if (name.empty()) return "[unknown]";
  std::string out(name);
  for (char& c : out) {
    const auto u = static_cast<unsigned char>(c);
    if (c == ';' || c == ' ' || u < 0x20 || u == 0x7f) c = '_';
  }
  return out;
}

absl::string_view BaseName(absl::string_view path) {
  const size_t slash = path.rfind('/');
  return slash == absl::string_view::npos ? path : path.substr(slash + 1);
}

std::string RootFrame(const ThreadLabels& t, FoldedRoot root) {
  std::string out = Sanitize(t.comm);
  if (root == FoldedRoot::kCommPid || root == FoldedRoot::kCommPidTid) {
    if (t.pid) absl::StrAppend(&out, "-", *t.pid);
  }
  if (root == FoldedRoot::kCommPidTid && t.tid) {
    absl::StrAppend(&out, "/", *t.tid);
  }
  return out;
}

// The text of each location, computed once (many stacks share locations).
std::vector<std::string> LocationNames(const Profile& profile) {
  std::vector<std::string> names;
  names.reserve(profile.locations().size());
  for (uint32_t i = 0; i < profile.locations().size(); ++i) {
    const Profile::Location& loc = profile.locations()[i];
    if (const absl::string_view function = profile.LocationFunction(i); !function.empty()) {
      // JIT code: the runtime's name for it.
      names.push_back(Sanitize(function));
    } else if (loc.kernel) {
      names.push_back(absl::StrFormat("0x%x_[k]", loc.address));
    } else if (loc.module == kNoModule) {
      names.push_back(absl::StrFormat("0x%x", loc.address));
    } else {
      const Module& m = profile.modules()[loc.module];
      const std::string base = Sanitize(BaseName(m.path));
      // Profile checked start <= address < limit, so neither wraps below.
      if (m.load_bias) {
        names.push_back(
            absl::StrFormat("%s+0x%x", base, loc.address - *m.load_bias));
      } else {
        names.push_back(absl::StrFormat("%s@0x%x", base,
                                        loc.address - m.start + m.file_offset));
      }
    }
  }
  return names;
}

}  // namespace

std::string WriteFolded(const Profile& profile, const FoldedOptions& options) {
  const std::vector<std::string> names = LocationNames(profile);
  absl::flat_hash_map<std::string, int64_t> lines;
  std::string line;
  std::vector<uint32_t> locs;
  for (const Profile::StackSample& s : profile.samples()) {
    line.clear();
    if (options.root != FoldedRoot::kNone) {
      line = RootFrame(profile.label_sets()[s.label_set], options.root);
    }
    // Leaf first; folded stacks go outermost first.
    profile.StackLocations(s.node, &locs);
    for (auto it = locs.rbegin(); it != locs.rend(); ++it) {
      if (!line.empty()) line.push_back(';');
      line.append(names[*it]);
    }
    if (line.empty()) line = "[empty]";  // a sample without frames
    // Sums stay within Profile::totals(), which fit in int64.
    lines[line] += options.use_weight ? s.values.weight : s.values.count;
  }
  std::vector<std::pair<std::string, int64_t>> sorted(lines.begin(),
                                                      lines.end());
  std::sort(sorted.begin(), sorted.end());
  std::string out;
  for (const auto& [stack, value] : sorted) {
    absl::StrAppend(&out, stack, " ", value, "\n");
  }
  return out;
}

}  // namespace unwindd::profile

#include "proc/core_paths.h"

#include <algorithm>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"

namespace unwindd::proc {
namespace {

// Where the dynamic linker finds libraries on the distributions we run on
// (Debian multiarch first, then the traditional directories).
constexpr absl::string_view kLibraryDirs[] = {"/lib/x86_64-linux-gnu",
                                              "/usr/lib/x86_64-linux-gnu",
                                              "/lib/aarch64-linux-gnu",
                                              "/usr/lib/aarch64-linux-gnu",
                                              "/lib/i386-linux-gnu",
                                              "/usr/lib/i386-linux-gnu",
                                              "/lib64",
                                              "/usr/lib64",
                                              "/lib",
                                              "/usr/lib"};

// /lib/x <-> /usr/lib/x (also lib64, bin, sbin); "" for other paths.
std::string UsrMergeAlternate(absl::string_view path) {
  for (absl::string_view top : {"/lib/", "/lib64/", "/bin/", "/sbin/"}) {
    if (absl::StartsWith(path, top)) return absl::StrCat("/usr", path);
    if (absl::StartsWith(path, absl::StrCat("/usr", top))) {
      return std::string(path.substr(4));
    }
  }
  return "";
}

std::string StripTrailingSlashes(absl::string_view p) {
  while (p.size() > 1 && p.back() == '/') p.remove_suffix(1);
  return std::string(p);
}

}  // namespace

absl::StatusOr<PathMapping> ParsePathMapping(absl::string_view spec) {
  size_t eq = spec.find('=');
  if (eq == absl::string_view::npos || eq == 0 || eq + 1 == spec.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("path map '", spec, "' is not OLD=NEW"));
  }
  return PathMapping{StripTrailingSlashes(spec.substr(0, eq)),
                     StripTrailingSlashes(spec.substr(eq + 1))};
}

std::vector<std::string> CandidatePaths(const FileLookup& lookup,
                                        absl::string_view recorded,
                                        bool is_main_executable) {
  std::vector<std::string> out;
  std::string root = StripTrailingSlashes(lookup.sysroot);
  if (root == "/") root.clear();
  if (is_main_executable && !lookup.exe.empty()) out.push_back(lookup.exe);
  if (recorded.empty()) return out;
  if (!absl::StartsWith(recorded, "/")) {
    // A bare soname: search the library directories (only this way could a
    // module found by its DT_SONAME alone be opened at all).
    for (absl::string_view dir : kLibraryDirs) {
      out.push_back(absl::StrCat(root, dir, "/", recorded));
    }
    return out;
  }
  for (const PathMapping& m : lookup.path_map) {
    absl::string_view rest = recorded;
    if (!absl::ConsumePrefix(&rest, m.from)) continue;
    // Whole path components only: /opt/app must not map /opt/application.
    if (!rest.empty() && rest[0] != '/' && m.from != "/") continue;
    if (m.from == "/") {
      out.push_back(absl::StrCat(m.to, "/", rest));
    } else {
      out.push_back(absl::StrCat(m.to, rest));
    }
  }
  if (lookup.sysroot.empty()) {
    out.push_back(std::string(recorded));
    return out;
  }
  auto add = [&out](std::string p) {
    if (std::find(out.begin(), out.end(), p) == out.end()) out.push_back(p);
  };
  add(absl::StrCat(root, recorded));
  // A sysroot copied from a merged-/usr system may hold /usr/lib/x.so where
  // the dynamic linker recorded /lib/x.so (link_map names), or the reverse.
  if (std::string alt = UsrMergeAlternate(recorded); !alt.empty()) {
    add(absl::StrCat(root, alt));
  }
  // Then by name in the library directories, as gdb's solib-search-path:
  // /lib64/ld-linux-x86-64.so.2 is /usr/lib/x86_64-linux-gnu/... on Debian.
  absl::string_view base = recorded.substr(recorded.rfind('/') + 1);
  if (absl::StrContains(base, ".so")) {
    for (absl::string_view dir : kLibraryDirs) {
      add(absl::StrCat(root, dir, "/", base));
    }
  }
  return out;
}

const std::vector<std::string>& LibraryDirs() {
  static const std::vector<std::string>* dirs = [] {
    auto* v = new std::vector<std::string>;
    for (absl::string_view d : kLibraryDirs) v->emplace_back(d);
    return v;
  }();
  return *dirs;
}

}  // namespace unwindd::proc

#include "unwinder/locate/locator.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "unwinder/locate/crc32.h"
#include "unwinder/locate/xz.h"

namespace unwindd::locate {
namespace {

// How many attempts Summary() spells out.
constexpr size_t kMaxSummarized = 12;

absl::Status StatError(const std::string& path, int err) {
  std::string msg = absl::StrFormat("%s: %s", path, strerror(err));
  if (err == ENOENT || err == ENOTDIR || err == ELOOP) return absl::NotFoundError(msg);
  if (err == EACCES || err == EPERM) return absl::PermissionDeniedError(msg);
  return absl::UnavailableError(msg);
}

std::string Dirname(absl::string_view path) {
  size_t slash = path.rfind('/');
  if (slash == absl::string_view::npos) return ".";
  if (slash == 0) return "/";
  return std::string(path.substr(0, slash));
}

bool IsProcPath(absl::string_view path) {
  return absl::StartsWith(path, "/proc/");
}

std::string StripTrailingSlashes(absl::string_view p) {
  while (p.size() > 1 && p.back() == '/') p.remove_suffix(1);
  return std::string(p);
}

absl::StatusOr<std::string> ReadBuildIdWithElfFile(const std::string& path) {
  absl::StatusOr<ElfFile> f = ElfFile::Open(path);
  if (!f.ok()) return f.status();
  absl::StatusOr<ElfFacts> facts = f->Facts();
  if (!facts.ok()) return facts.status();
  return facts->build_id;
}

// DIR/.build-id/xx/rest + suffix; "" if the build-id is too short to split.
std::string BuildIdPath(absl::string_view dir, absl::string_view build_id,
                        absl::string_view suffix) {
  if (build_id.size() < 4 || !IsBuildIdHex(build_id)) return "";
  return absl::StrCat(dir, "/.build-id/", build_id.substr(0, 2), "/",
                      build_id.substr(2), suffix);
}

void RunAsSelf(const LocateOptions& options, const std::function<void()>& fn) {
  if (options.as_self) {
    options.as_self(fn);
  } else {
    fn();
  }
}

void RunAsCaller(const LocateOptions& options, const std::function<void()>& fn) {
  if (options.as_caller) {
    options.as_caller(fn);
  } else {
    fn();
  }
}

class Recorder {
 public:
  explicit Recorder(LocateResult& r) : r_(r), start_(absl::Now()) {}
  ~Recorder() { r_.took = absl::Now() - start_; }

  void Add(Origin origin, std::string path, absl::Status status, absl::Time t0) {
    r_.attempts.push_back({origin, std::move(path), std::move(status), absl::Now() - t0});
  }

 private:
  LocateResult& r_;
  absl::Time start_;
};

}  // namespace

absl::string_view OriginName(Origin origin) {
  switch (origin) {
    case Origin::kRecordedPath:
      return "recorded_path";
    case Origin::kExe:
      return "exe";
    case Origin::kPathMap:
      return "path_map";
    case Origin::kSysroot:
      return "sysroot";
    case Origin::kMapFiles:
      return "map_files";
    case Origin::kProcRoot:
      return "proc_root";
    case Origin::kBuildIdDir:
      return "build_id_dir";
    case Origin::kDebugLinkBeside:
      return "debuglink";
    case Origin::kDebugLinkDotDebug:
      return "debuglink_dot_debug";
    case Origin::kDebugLinkDebugDir:
      return "debuglink_debug_dir";
    case Origin::kMiniDebugInfo:
      return "minidebuginfo";
    case Origin::kDebuginfod:
      return "debuginfod";
  }
  return "unknown";
}

absl::string_view KindName(Kind kind) {
  switch (kind) {
    case Kind::kMainFile:
      return "main";
    case Kind::kDebugFile:
      return "debug";
    case Kind::kMiniDebugInfo:
      return "minidebuginfo";
  }
  return "unknown";
}

std::vector<Candidate> ClassifyCandidates(const std::vector<std::string>& paths,
                                          absl::string_view recorded_path,
                                          absl::string_view sysroot,
                                          absl::string_view exe) {
  std::string root = StripTrailingSlashes(sysroot);
  if (root == "/") root.clear();
  std::vector<Candidate> out;
  for (const std::string& p : paths) {
    Origin o = Origin::kPathMap;
    if (IsProcPath(p) && absl::StrContains(p, "/map_files/")) {
      o = Origin::kMapFiles;
    } else if (IsProcPath(p) && absl::StrContains(p, "/root/")) {
      o = Origin::kProcRoot;
    } else if (!exe.empty() && p == exe) {
      o = Origin::kExe;
    } else if (p == recorded_path) {
      o = Origin::kRecordedPath;
    } else if (!root.empty() && absl::StartsWith(p, absl::StrCat(root, "/"))) {
      o = Origin::kSysroot;
    }
    out.push_back({p, o});
  }
  return out;
}

std::string LocateResult::Summary() const {
  if (found.has_value()) {
    const Located& f = *found;
    return absl::StrFormat(
        "%s file %s (%s%s)", KindName(f.kind),
        f.path.empty() ? std::string("in memory") : f.path, OriginName(f.origin),
        f.fetched ? (f.downloaded ? ", downloaded" : ", from the debuginfod cache")
                  : "");
  }
  std::vector<std::string> parts;
  for (size_t i = 0; i < attempts.size() && i < kMaxSummarized; ++i) {
    const Attempt& a = attempts[i];
    parts.push_back(absl::StrFormat("%s %s: %s", OriginName(a.origin), a.path,
                                    a.status.message()));
  }
  if (attempts.size() > kMaxSummarized) {
    parts.push_back(absl::StrFormat("%d more", attempts.size() - kMaxSummarized));
  }
  return absl::StrCat("not found (tried ",
                      parts.empty() ? std::string("nothing") : absl::StrJoin(parts, "; "),
                      ")");
}

bool LocateResult::permission_denied() const {
  for (const Attempt& a : attempts) {
    if (absl::IsPermissionDenied(a.status)) return true;
  }
  return false;
}

const Attempt* LocateResult::mismatch() const {
  for (const Attempt& a : attempts) {
    if (absl::IsFailedPrecondition(a.status) &&
        absl::StartsWith(a.status.message(), "build-id mismatch")) {
      return &a;
    }
  }
  return nullptr;
}

std::vector<std::string> EffectiveDebugDirs(const LocateOptions& options) {
  std::string root = StripTrailingSlashes(options.sysroot);
  if (root == "/") root.clear();
  std::vector<std::string> out;
  auto add = [&out](std::string d) {
    for (const std::string& e : out) {
      if (e == d) return;
    }
    out.push_back(std::move(d));
  };
  for (const std::string& d : options.debug_dirs) {
    std::string dir = StripTrailingSlashes(d);
    if (dir.empty()) continue;
    if (!root.empty() && dir[0] == '/' && !absl::StartsWith(dir, root + "/")) {
      add(root + dir);
    }
    add(dir);
  }
  return out;
}

LocateResult LocateMainFile(const MainFileQuery& query,
                            const LocateOptions& options) {
  LocateResult r;
  Recorder rec(r);
  const auto& read_id =
      options.read_build_id ? options.read_build_id : ReadBuildIdWithElfFile;

  // A file found at `path` from `origin`, if it is the one the target ran.
  // `exact`: its build-id must be present and equal (build-id lookups).
  auto try_path = [&](const std::string& path, Origin origin, bool exact) -> bool {
    absl::Time t0 = absl::Now();
    struct stat st;
    if (stat(path.c_str(), &st) != 0) {
      rec.Add(origin, path, StatError(path, errno), t0);
      return false;
    }
    // The path may now name another file (a library upgraded under a
    // running process): only the mapped inode will do.
    if (query.inode != 0 && st.st_ino != query.inode) {
      rec.Add(origin, path,
              absl::FailedPreconditionError(absl::StrFormat(
                  "%s is inode %u, not the mapped inode %u", path, st.st_ino,
                  query.inode)),
              t0);
      return false;
    }
    absl::StatusOr<std::string> id = read_id(path);
    if (!id.ok()) {
      rec.Add(origin, path, id.status(), t0);
      return false;
    }
    const bool known = !query.build_id.empty();
    if (known && (exact ? *id != query.build_id
                        : !id->empty() && *id != query.build_id)) {
      rec.Add(origin, path,
              absl::FailedPreconditionError(absl::StrFormat(
                  "build-id mismatch: %s has build-id %s but %s was %s", path,
                  id->empty() ? "(none)" : *id, query.recorded_path,
                  query.build_id)),
              t0);
      return false;
    }
    rec.Add(origin, path, absl::OkStatus(), t0);
    r.found = Located{Kind::kMainFile, origin, path, nullptr, *id, false, false};
    return true;
  };

  for (const Candidate& c : query.candidates) {
    if (try_path(c.path, c.origin, false)) return r;
  }
  if (query.build_id.empty()) return r;
  bool found = false;
  RunAsCaller(options, [&] {
    for (const std::string& dir : EffectiveDebugDirs(options)) {
      std::string p = BuildIdPath(dir, query.build_id, "");
      if (!p.empty() && try_path(p, Origin::kBuildIdDir, true)) {
        found = true;
        return;
      }
    }
  });
  if (found) return r;
  if (options.debuginfod != nullptr && IsBuildIdHex(query.build_id)) {
    absl::Time t0 = absl::Now();
    std::string what = absl::StrCat("debuginfod executable ", query.build_id);
    if (r.permission_denied()) {
      rec.Add(Origin::kDebuginfod, what,
              absl::PermissionDeniedError(absl::StrCat(
                  "not fetched: a local copy exists that may not be read (",
                  query.recorded_path, ")")),
              t0);
      return r;
    }
    absl::StatusOr<Fetched> f = absl::UnknownError("not run");
    RunAsSelf(options, [&] {
      f = options.debuginfod->Fetch(FetchKind::kExecutable, query.build_id);
    });
    if (!f.ok()) {
      rec.Add(Origin::kDebuginfod, what, f.status(), t0);
      return r;
    }
    rec.Add(Origin::kDebuginfod, f->path, absl::OkStatus(), t0);
    r.found = Located{Kind::kMainFile, Origin::kDebuginfod, f->path, nullptr,
                      f->build_id, true, f->downloaded};
  }
  return r;
}

absl::StatusOr<DebugFileQuery> DebugFileQueryFor(const ElfFile& main,
                                                 absl::string_view recorded_path,
                                                 Want want, bool fetch) {
  absl::StatusOr<ElfFacts> facts = main.Facts();
  if (!facts.ok()) return facts.status();
  DebugFileQuery q;
  q.main_path = main.name();
  q.recorded_path = std::string(recorded_path);
  q.build_id = facts->build_id;
  q.machine = facts->machine;
  q.elf_class = facts->elf_class;
  q.debuglink = facts->debuglink;
  q.gnu_debugdata = main.RawSectionBytes(".gnu_debugdata");
  q.want = want;
  q.fetch = fetch;
  return q;
}

LocateResult LocateDebugFile(const DebugFileQuery& query,
                             const LocateOptions& options) {
  LocateResult r;
  Recorder rec(r);
  struct stat main_st {};
  const bool have_main_st =
      !query.main_path.empty() && stat(query.main_path.c_str(), &main_st) == 0;

  // What is wrong with `f` as debug information for the main file, if
  // anything. `crc`: the debuglink's, to check.
  auto verify = [&](const ElfFile& f, Origin origin,
                    std::optional<uint32_t> crc) -> absl::Status {
    absl::StatusOr<ElfFacts> facts = f.Facts();
    if (!facts.ok()) return facts.status();
    if (facts->machine != query.machine || facts->elf_class != query.elf_class) {
      return absl::FailedPreconditionError(absl::StrFormat(
          "%s is for machine %d class %d, the file for %d class %d", f.name(),
          facts->machine, facts->elf_class, query.machine, query.elf_class));
    }
    const bool by_build_id =
        origin == Origin::kBuildIdDir || origin == Origin::kDebuginfod;
    if ((by_build_id && facts->build_id != query.build_id) ||
        (!facts->build_id.empty() && !query.build_id.empty() &&
         facts->build_id != query.build_id)) {
      return absl::FailedPreconditionError(absl::StrFormat(
          "build-id mismatch: %s has build-id %s, the file %s", f.name(),
          facts->build_id.empty() ? "(none)" : facts->build_id,
          query.build_id.empty() ? "(none)" : query.build_id));
    }
    if (query.want == Want::kCfi && !facts->has_debug_frame && !facts->has_eh_frame) {
      return absl::NotFoundError(absl::StrFormat(
          "%s has no .debug_frame or .eh_frame contents", f.name()));
    }
    if (crc.has_value() && f.fd() >= 0) {
      absl::StatusOr<uint32_t> got = FileCrc32(f.fd(), options.max_crc_bytes);
      if (!got.ok()) {
        return absl::Status(got.status().code(),
                            absl::StrCat(f.name(), ": CRC: ", got.status().message()));
      }
      if (*got != *crc) {
        return absl::FailedPreconditionError(absl::StrFormat(
            "%s has CRC-32 %08x, the .gnu_debuglink says %08x", f.name(), *got,
            *crc));
      }
    }
    return absl::OkStatus();
  };

  auto try_file = [&](const std::string& path, Origin origin,
                      std::optional<uint32_t> crc) -> bool {
    absl::Time t0 = absl::Now();
    absl::StatusOr<ElfFile> f = ElfFile::Open(path);
    if (!f.ok()) {
      rec.Add(origin, path, f.status(), t0);
      return false;
    }
    struct stat st;
    if (have_main_st && fstat(f->fd(), &st) == 0 && st.st_dev == main_st.st_dev &&
        st.st_ino == main_st.st_ino) {
      rec.Add(origin, path,
              absl::FailedPreconditionError(
                  absl::StrCat(path, " is the main file itself")),
              t0);
      return false;
    }
    absl::Status s = verify(*f, origin, crc);
    rec.Add(origin, path, s, t0);
    if (!s.ok()) return false;
    absl::StatusOr<ElfFacts> facts = f->Facts();
    r.found = Located{Kind::kDebugFile, origin, path, nullptr,
                      facts.ok() ? facts->build_id : "", false, false,
                      std::make_shared<ElfFile>(*std::move(f))};
    return true;
  };

  const std::vector<std::string> dirs = EffectiveDebugDirs(options);
  // 1-3, the local ones, opened as the caller (LocateOptions::as_caller).
  auto local_debug_locators = [&]() -> bool {
    // 1. By build-id.
    if (!query.build_id.empty()) {
      for (const std::string& dir : dirs) {
        std::string p = BuildIdPath(dir, query.build_id, ".debug");
        if (!p.empty() && try_file(p, Origin::kBuildIdDir, std::nullopt)) return true;
      }
    }
    // 2. By .gnu_debuglink. The file's directory is where the main file
    // really is, unless that is a /proc/PID/map_files name.
    if (query.debuglink.has_value()) {
      const std::string& name = query.debuglink->name;
      const uint32_t crc = query.debuglink->crc;
      const bool main_is_proc = IsProcPath(query.main_path);
      std::string file_dir = Dirname(main_is_proc ? query.recorded_path : query.main_path);
      if (try_file(absl::StrCat(file_dir, "/", name), Origin::kDebugLinkBeside, crc) ||
          try_file(absl::StrCat(file_dir, "/.debug/", name), Origin::kDebugLinkDotDebug,
                   crc)) {
        return true;
      }
      // Under each debug directory, the main file's absolute directory: the
      // recorded one (the layout a distribution installs) and, if it differs,
      // where the file was found.
      std::vector<std::string> abs_dirs;
      std::string recorded_dir = Dirname(query.recorded_path);
      if (absl::StartsWith(recorded_dir, "/")) abs_dirs.push_back(recorded_dir);
      if (absl::StartsWith(file_dir, "/") && !main_is_proc && file_dir != recorded_dir) {
        abs_dirs.push_back(file_dir);
      }
      for (const std::string& dir : dirs) {
        for (const std::string& sub : abs_dirs) {
          std::string p = absl::StrCat(dir, sub == "/" ? "" : sub, "/", name);
          if (try_file(p, Origin::kDebugLinkDebugDir, crc)) return true;
        }
      }
    }
    // 3. MiniDebugInfo.
    if (!query.gnu_debugdata.empty()) {
      absl::Time t0 = absl::Now();
      const std::string what = absl::StrCat(query.main_path, "[.gnu_debugdata]");
      absl::StatusOr<std::vector<uint8_t>> image =
          DecompressXz(query.gnu_debugdata, options.max_minidebuginfo_bytes);
      if (!image.ok()) {
        rec.Add(Origin::kMiniDebugInfo, what, image.status(), t0);
      } else {
        auto shared = std::make_shared<const std::vector<uint8_t>>(*std::move(image));
        absl::StatusOr<ElfFile> f = ElfFile::FromImage(shared, what);
        absl::Status s = f.ok() ? verify(*f, Origin::kMiniDebugInfo, std::nullopt)
                                : f.status();
        rec.Add(Origin::kMiniDebugInfo, what, s, t0);
        if (s.ok()) {
          absl::StatusOr<ElfFacts> facts = f->Facts();
          r.found = Located{Kind::kMiniDebugInfo, Origin::kMiniDebugInfo, "", shared,
                            facts.ok() ? facts->build_id : "", false, false,
                            std::make_shared<ElfFile>(*std::move(f))};
          return true;
        }
      }
    }
    return false;
  };
  bool found_locally = false;
  RunAsCaller(options, [&] { found_locally = local_debug_locators(); });
  if (found_locally) return r;
  // 4. debuginfod.
  if (query.fetch && options.debuginfod != nullptr && IsBuildIdHex(query.build_id)) {
    absl::Time t0 = absl::Now();
    absl::StatusOr<Fetched> fetched = absl::UnknownError("not run");
    absl::StatusOr<ElfFile> f = absl::UnknownError("not run");
    RunAsSelf(options, [&] {
      fetched = options.debuginfod->Fetch(FetchKind::kDebuginfo, query.build_id);
      if (fetched.ok()) f = ElfFile::Open(fetched->path);
    });
    if (!fetched.ok()) {
      rec.Add(Origin::kDebuginfod, absl::StrCat("debuginfod debuginfo ", query.build_id),
              fetched.status(), t0);
      return r;
    }
    absl::Status s = f.ok() ? verify(*f, Origin::kDebuginfod, std::nullopt) : f.status();
    rec.Add(Origin::kDebuginfod, fetched->path, s, t0);
    if (s.ok()) {
      r.found = Located{Kind::kDebugFile, Origin::kDebuginfod, fetched->path, nullptr,
                        fetched->build_id, true, fetched->downloaded,
                        std::make_shared<ElfFile>(*std::move(f))};
    }
  }
  return r;
}

}  // namespace unwindd::locate

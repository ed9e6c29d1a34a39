#include "unwinder/locate/debuginfod.h"

#ifndef UNWINDD_NO_DEBUGINFOD
#include <dlfcn.h>
#include <elfutils/debuginfod.h>
#include <limits.h>
#else
// The aarch64 cross build has no libdebuginfod (third_party/system); its
// environment variable names, from elfutils' debuginfod.h.
#define DEBUGINFOD_URLS_ENV_VAR "DEBUGINFOD_URLS"
#define DEBUGINFOD_CACHE_PATH_ENV_VAR "DEBUGINFOD_CACHE_PATH"
#endif
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/strip.h"
#include "absl/synchronization/mutex.h"
#include "unwinder/locate/elf_file.h"

namespace unwindd::locate {
namespace {

#ifndef UNWINDD_NO_DEBUGINFOD
// libdebuginfod is dlopen()ed the first time a server is configured, not
// linked: it brings libcurl and some thirty libraries behind it, which a
// run that fetches nothing (nearly every `unwind pid`) would load and
// relocate at start-up for nothing. elfutils' own libdw does the same
// (libdwfl/debuginfod-client.c). The header gives the functions' types.
constexpr char kSoname[] = "libdebuginfod.so.1";

struct Api {
  decltype(&debuginfod_begin) begin = nullptr;
  decltype(&debuginfod_end) end = nullptr;
  decltype(&debuginfod_find_executable) find_executable = nullptr;
  decltype(&debuginfod_find_debuginfo) find_debuginfo = nullptr;
  decltype(&debuginfod_set_progressfn) set_progressfn = nullptr;
  decltype(&debuginfod_set_user_data) set_user_data = nullptr;
  decltype(&debuginfod_get_user_data) get_user_data = nullptr;
  decltype(&debuginfod_get_url) get_url = nullptr;
  decltype(&debuginfod_add_http_header) add_http_header = nullptr;
  // Before elfutils 0.189 (Debian 12 has 0.188), every request closes a
  // descriptor twice: GuardConfigFiles() below.
  bool closes_twice = true;
};

// The version in the name of the file the library was loaded from
// (libdebuginfod.so.1 -> libdebuginfod-0.188.so): before 0.189, or not
// known, it closes twice.
bool ClosesTwice(void* symbol) {
  Dl_info info;
  if (dladdr(symbol, &info) == 0 || info.dli_fname == nullptr) return true;
  char real[PATH_MAX];
  if (realpath(info.dli_fname, real) == nullptr) return true;
  absl::string_view name(real);
  name = name.substr(name.rfind('/') + 1);
  int major = 0, minor = 0;
  if (!absl::ConsumePrefix(&name, "libdebuginfod-") ||
      std::sscanf(std::string(name).c_str(), "%d.%d.so", &major, &minor) != 2) {
    return true;
  }
  return major == 0 && minor < 189;
}

template <typename F>
bool Resolve(void* handle, const char* name, F* out) {
  *out = reinterpret_cast<F>(dlsym(handle, name));
  return *out != nullptr;
}

absl::StatusOr<Api> LoadApi() {
  // Never closed: the client may be used until the process exits.
  void* h = dlopen(kSoname, RTLD_NOW | RTLD_LOCAL);
  if (h == nullptr) {
    const char* why = dlerror();
    return absl::FailedPreconditionError(
        absl::StrCat("debuginfod: cannot load ", kSoname, ": ",
                     why != nullptr ? why : "unknown error"));
  }
  Api api;
  const bool ok = Resolve(h, "debuginfod_begin", &api.begin) &&
                  Resolve(h, "debuginfod_end", &api.end) &&
                  Resolve(h, "debuginfod_find_executable", &api.find_executable) &&
                  Resolve(h, "debuginfod_find_debuginfo", &api.find_debuginfo) &&
                  Resolve(h, "debuginfod_set_progressfn", &api.set_progressfn) &&
                  Resolve(h, "debuginfod_set_user_data", &api.set_user_data) &&
                  Resolve(h, "debuginfod_get_user_data", &api.get_user_data) &&
                  Resolve(h, "debuginfod_get_url", &api.get_url) &&
                  Resolve(h, "debuginfod_add_http_header", &api.add_http_header);
  if (!ok) {
    return absl::FailedPreconditionError(
        absl::StrCat("debuginfod: ", kSoname, " lacks a function this client uses"));
  }
  api.closes_twice = ClosesTwice(reinterpret_cast<void*>(api.begin));
  return api;
}

// elfutils PR29696, fixed in 0.189: each request reads the cache's two
// config files (cache_clean_interval_s, max_unused_age_s) by open(),
// fdopen() and fscanf(), then fclose()s the stream and close()s its
// descriptor again. By then another thread may have been given that
// number, and its file is closed under it: in unwindd under load a
// streamed core then read EBADF or another file's bytes ("not an ELF core
// file", "zstd data is corrupt"), which `strace -f -k -e close -e
// status=failed` traced to this function. The library closes once when
// the file it opens is empty (it writes its default and returns it), so
// each config file is made a symbolic link to /dev/null, which always
// reads as empty and takes any write: every request then uses the
// library's defaults (clean the cache once a day of what has not been
// used for a week). Cheap when in place (two lstat); redone if the links
// were replaced.
void GuardConfigFiles(const std::string& cache_dir) {
  static absl::Mutex mu(absl::kConstInit);
  for (const char* name : {"cache_clean_interval_s", "max_unused_age_s"}) {
    const std::string path = absl::StrCat(cache_dir, "/", name);
    char target[16] = {};
    struct stat st;
    if (lstat(path.c_str(), &st) == 0 && S_ISLNK(st.st_mode) &&
        readlink(path.c_str(), target, sizeof(target) - 1) == 9 &&
        absl::string_view(target) == "/dev/null") {
      continue;
    }
    absl::MutexLock l(&mu);
    // The directory as the library makes it (one level; its parents, such
    // as ~/.cache, must exist for the library too).
    mkdir(cache_dir.c_str(), 0700);
    const std::string tmp = absl::StrCat(path, ".unwindd-", getpid());
    unlink(tmp.c_str());
    if (symlink("/dev/null", tmp.c_str()) == 0 && rename(tmp.c_str(), path.c_str()) != 0) {
      unlink(tmp.c_str());
    }
  }
}

// Loaded once per process, on first use (C++ guarantees the static is
// initialised once even when threads race here); thread-safe afterwards.
const absl::StatusOr<Api>& GetApi() {
  static const absl::StatusOr<Api>* const api = new absl::StatusOr<Api>(LoadApi());
  return *api;
}

enum class Cancel { kNone, kTimeout, kTooLarge };

// What one request's progress callback checks (debuginfod_set_user_data).
struct Progress {
  absl::Time deadline;
  uint64_t max_bytes = 0;
  Cancel cancel = Cancel::kNone;
  long largest_seen = 0;
};

// libdebuginfod calls this while it waits or downloads: `a` is the bytes
// received once it has picked a server (a loop count before), `b` the
// announced size (0 while unknown). Non-zero cancels the request.
int OnProgress(debuginfod_client* c, long a, long b) {
  auto* p = static_cast<Progress*>(GetApi()->get_user_data(c));
  if (p == nullptr) return 0;
  if (absl::Now() > p->deadline) {
    p->cancel = Cancel::kTimeout;
    return 1;
  }
  long largest = a > b ? a : b;
  if (largest > p->largest_seen) p->largest_seen = largest;
  if (largest > 0 && static_cast<uint64_t>(largest) > p->max_bytes) {
    p->cancel = Cancel::kTooLarge;
    return 1;
  }
  return 0;
}

struct ClientDeleter {
  void operator()(debuginfod_client* c) const { GetApi()->end(c); }
};

#endif  // UNWINDD_NO_DEBUGINFOD

std::string Home() {
  const char* h = getenv("HOME");
  return h != nullptr ? h : "/";
}

// Removes `path` if it is the empty "not found" marker libdebuginfod
// 0.188 leaves after any failed request, cancelled ones included, and
// which would answer ENOENT for the next 10 minutes (cache_miss_s): a
// server that was too slow once has not said it lacks the file.
[[maybe_unused]] void RemoveNegativeCacheEntry(const std::string& path) {
  struct stat st;
  if (lstat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && st.st_size == 0) {
    unlink(path.c_str());
  }
}

[[maybe_unused]] void RemoveFromCache(const std::string& path) {
  unlink(path.c_str());
  std::string dir = path.substr(0, path.rfind('/'));
  if (!dir.empty()) rmdir(dir.c_str());  // only if now empty
}

}  // namespace

absl::string_view FetchKindName(FetchKind kind) {
  return kind == FetchKind::kExecutable ? "executable" : "debuginfo";
}

std::string Debuginfod::CacheDir() {
  const char* env = getenv(DEBUGINFOD_CACHE_PATH_ENV_VAR);
  if (env != nullptr && env[0] != '\0') return env;
  std::string legacy = absl::StrCat(Home(), "/.debuginfod_client_cache");
  struct stat st;
  if (stat(legacy.c_str(), &st) == 0) return legacy;
  const char* xdg = getenv("XDG_CACHE_HOME");
  if (xdg != nullptr && xdg[0] != '\0') return absl::StrCat(xdg, "/debuginfod_client");
  return absl::StrCat(Home(), "/.cache/debuginfod_client");
}

absl::StatusOr<std::unique_ptr<Debuginfod>> Debuginfod::Create(
    DebuginfodOptions options) {
  if (options.timeout <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError("debuginfod timeout must be positive");
  }
  if (options.max_bytes == 0) {
    return absl::InvalidArgumentError("debuginfod size limit must be positive");
  }
  std::string urls(absl::StripAsciiWhitespace(options.urls));
  if (!urls.empty()) {
    const char* current = getenv(DEBUGINFOD_URLS_ENV_VAR);
    if (current == nullptr || urls != current) {
      if (setenv(DEBUGINFOD_URLS_ENV_VAR, urls.c_str(), 1) != 0) {
        return absl::InternalError(
            absl::StrCat("setenv DEBUGINFOD_URLS: ", strerror(errno)));
      }
    }
  } else {
    const char* env = getenv(DEBUGINFOD_URLS_ENV_VAR);
    if (env != nullptr) urls = std::string(absl::StripAsciiWhitespace(env));
  }
  if (urls.empty()) return std::unique_ptr<Debuginfod>();
#ifdef UNWINDD_NO_DEBUGINFOD
  return absl::UnimplementedError(
      "this build has no debuginfod client (libdebuginfod is not linked)");
#else
  if (!GetApi().ok()) return GetApi().status();
  return std::unique_ptr<Debuginfod>(new Debuginfod(std::move(options), urls));
#endif
}

#ifdef UNWINDD_NO_DEBUGINFOD
absl::StatusOr<Fetched> Debuginfod::Fetch(FetchKind, absl::string_view) const {
  return absl::UnimplementedError("this build has no debuginfod client");
}
#else
absl::StatusOr<Fetched> Debuginfod::Fetch(FetchKind kind,
                                          absl::string_view build_id) const {
  if (!IsBuildIdHex(build_id)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "'", absl::CHexEscape(build_id), "' is not a build-id"));
  }
  if (!GetApi().ok()) return GetApi().status();
  const Api& api = *GetApi();
  if (api.closes_twice) GuardConfigFiles(CacheDir());
  const absl::Time start = absl::Now();
  std::unique_ptr<debuginfod_client, ClientDeleter> client(api.begin());
  if (client == nullptr) {
    return absl::ResourceExhaustedError("debuginfod_begin failed");
  }
  Progress progress{start + options_.timeout, options_.max_bytes};
  api.set_user_data(client.get(), &progress);
  api.set_progressfn(client.get(), &OnProgress);
  // The header list is reset after each request, so it goes on each one.
  std::string size_header =
      absl::StrCat("X-DEBUGINFOD-MAXSIZE: ", options_.max_bytes);
  api.add_http_header(client.get(), size_header.c_str());

  const std::string id(build_id);
  char* path = nullptr;
  const auto* id_bytes = reinterpret_cast<const unsigned char*>(id.c_str());
  // build_id_len 0: `id` is a NUL-terminated hex string.
  int fd = kind == FetchKind::kExecutable
               ? api.find_executable(client.get(), id_bytes, 0, &path)
               : api.find_debuginfo(client.get(), id_bytes, 0, &path);
  const absl::Duration took = absl::Now() - start;
  std::string fetched_path = path != nullptr ? path : "";
  free(path);
  const char* url = api.get_url(client.get());
  Fetched out{fetched_path, id, url != nullptr, url != nullptr ? url : "", took};
  const std::string what = absl::StrFormat("debuginfod %s %s", FetchKindName(kind), id);

  if (fd < 0) {
    const int err = -fd;
    if (progress.cancel != Cancel::kNone) {
      RemoveNegativeCacheEntry(
          absl::StrCat(CacheDir(), "/", id, "/", FetchKindName(kind)));
    }
    if (progress.cancel == Cancel::kTimeout || err == ETIME) {
      return absl::DeadlineExceededError(absl::StrFormat(
          "%s: no answer from %s within %s", what, urls_,
          absl::FormatDuration(options_.timeout)));
    }
    if (progress.cancel == Cancel::kTooLarge || err == EFBIG) {
      return absl::ResourceExhaustedError(absl::StrFormat(
          "%s: larger than the limit of %u bytes%s", what, options_.max_bytes,
          progress.largest_seen > 0
              ? absl::StrFormat(" (%d announced or received)", progress.largest_seen)
              : ""));
    }
    switch (err) {
      case ENOENT:
        return absl::NotFoundError(absl::StrFormat("%s: not on %s", what, urls_));
      case ECONNREFUSED:
      case EHOSTUNREACH:
      case ENETUNREACH:
      case ECONNRESET:
        return absl::UnavailableError(
            absl::StrFormat("%s: %s: %s", what, urls_, strerror(err)));
      case ENOSYS:
        return absl::FailedPreconditionError(
            absl::StrFormat("%s: no server configured", what));
      case EINVAL:
        return absl::InvalidArgumentError(
            absl::StrFormat("%s: %s", what, strerror(err)));
      default:
        return absl::UnknownError(absl::StrFormat("%s: %s", what, strerror(err)));
    }
  }
  close(fd);

  absl::StatusOr<ElfFile> elf = ElfFile::Open(fetched_path);
  absl::StatusOr<ElfFacts> facts =
      elf.ok() ? elf->Facts() : absl::StatusOr<ElfFacts>(elf.status());
  if (!facts.ok() || facts->build_id != id) {
    RemoveFromCache(fetched_path);
    return absl::DataLossError(absl::StrFormat(
        "%s: the server%s sent %s, removed from the cache", what,
        out.url.empty() ? "" : absl::StrCat(" (", out.url, ")"),
        !facts.ok() ? absl::StrCat("a file that is not ELF: ", facts.status().message())
        : facts->build_id.empty()
            ? std::string("a file without a build-id")
            : absl::StrCat("a file with build-id ", facts->build_id)));
  }
  return out;
}

#endif  // UNWINDD_NO_DEBUGINFOD

}  // namespace unwindd::locate

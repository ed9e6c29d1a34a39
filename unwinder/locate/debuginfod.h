// Fetching ELF files by build-id from debuginfod servers, through elfutils'
// own client library (libdebuginfod) and its own cache
// ($DEBUGINFOD_CACHE_PATH, else ~/.cache/debuginfod_client/<build-id>/
// executable|debuginfo; see debuginfod-client-config(7)).
//
//   absl::StatusOr<std::unique_ptr<Debuginfod>> d =
//       Debuginfod::Create({.urls = "http://127.0.0.1:8002"});
//   if (d.ok() && *d != nullptr) {
//     absl::StatusOr<Fetched> f = (*d)->Fetch(FetchKind::kExecutable, build_id);
//   }
//
// Off unless configured: Create() returns nullptr when neither `urls` nor
// $DEBUGINFOD_URLS names a server.
//
// Bounds, per request, enforced by us through the client's progress
// callback, which libdebuginfod calls at least once a second while it
// waits (0.188: curl_multi_wait of 1 s) and which may cancel: `timeout`
// (a server that accepts and never answers, or trickles) and `max_bytes`
// (the announced Content-Length or the bytes received so far; the limit is
// also sent as X-DEBUGINFOD-MAXSIZE, which a debuginfod server answers
// with 406 instead of sending a larger file). elfutils 0.188 has these
// bounds only as environment variables (DEBUGINFOD_MAXTIME,
// DEBUGINFOD_MAXSIZE), which a multi-threaded server cannot set per
// request.
//
// Every file fetched is opened and its NT_GNU_BUILD_ID compared with the
// one asked for: a server that answers with another build's file gets a
// DataLoss error naming both, and the wrong file is removed from the cache
// so that it does not answer for that build-id again.
//
// Privacy: a request tells the servers the build-id (which says which
// build of which program runs here). Callers only ask for build-ids their
// own target named (see locator.h for the whole rule).
//
// Thread-safe: each Fetch uses its own debuginfod_client.
#ifndef UNWINDD_UNWINDER_LOCATE_DEBUGINFOD_H_
#define UNWINDD_UNWINDER_LOCATE_DEBUGINFOD_H_

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace unwindd::locate {

enum class FetchKind { kExecutable, kDebuginfo };
absl::string_view FetchKindName(FetchKind kind);  // "executable", "debuginfo"

struct DebuginfodOptions {
  // Space-separated server URLs. Empty: $DEBUGINFOD_URLS as it is when
  // Create() runs.
  std::string urls;
  absl::Duration timeout = absl::Seconds(30);
  uint64_t max_bytes = uint64_t{1} << 30;
};

struct Fetched {
  std::string path;  // in libdebuginfod's cache
  std::string build_id;
  // Downloaded by this request (false: libdebuginfod's cache had it).
  bool downloaded = false;
  std::string url;  // where it came from when downloaded
  absl::Duration took;
};

class Debuginfod {
 public:
  // nullptr when no server is configured. libdebuginfod 0.188 reads the
  // server list only from $DEBUGINFOD_URLS, so a non-empty `urls` is
  // written there (setenv): call Create() before starting threads that
  // might read the environment. InvalidArgument for a malformed option.
  static absl::StatusOr<std::unique_ptr<Debuginfod>> Create(
      DebuginfodOptions options);

  const std::string& urls() const { return urls_; }
  const DebuginfodOptions& options() const { return options_; }

  // The file of `kind` for `build_id` (lowercase hex), from the cache or
  // the servers. NotFound: no server has it; DeadlineExceeded: no answer
  // within the timeout; ResourceExhausted: larger than max_bytes;
  // Unavailable: no server could be reached; DataLoss: the file has
  // another build-id; InvalidArgument: `build_id` is not build-id hex.
  absl::StatusOr<Fetched> Fetch(FetchKind kind, absl::string_view build_id) const;

  // libdebuginfod's cache directory, by the client's own rules (0.188):
  // $DEBUGINFOD_CACHE_PATH, else ~/.debuginfod_client_cache if it exists,
  // else $XDG_CACHE_HOME/debuginfod_client, else ~/.cache/debuginfod_client.
  static std::string CacheDir();

 private:
  explicit Debuginfod(DebuginfodOptions options, std::string urls)
      : options_(std::move(options)), urls_(std::move(urls)) {}

  const DebuginfodOptions options_;
  const std::string urls_;
};

}  // namespace unwindd::locate

#endif  // UNWINDD_UNWINDER_LOCATE_DEBUGINFOD_H_

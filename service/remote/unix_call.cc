#include "service/remote/unix_call.h"

#include <fcntl.h>
#include <nghttp2/nghttp2.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "memory/scoped_fd.h"

namespace unwindd::service {
namespace {

// The HTTP/2 windows this client opens (stream and connection), so that an
// answer of a few MiB arrives without a WINDOW_UPDATE round trip; libnghttp2
// opens them again as it consumes data.
constexpr int32_t kWindow = 16 << 20;
// The longest grpc-message kept (a server's error is a line or two).
constexpr size_t kMaxMessage = 4096;
// gRPC's length-prefixed message: a flag byte (1: compressed) and a 4-byte
// big-endian length.
constexpr size_t kPrefix = 5;

// What one call has seen: the answer's headers, trailers and body.
struct Call {
  int32_t stream_id = -1;
  int http_status = 0;
  bool grpc_status_seen = false;
  bool grpc_status_valid = false;
  int grpc_status = 0;
  std::string grpc_message;
  std::string content_type;
  std::string body;
  size_t max_body = 0;
  bool too_large = false;
  bool closed = false;
  uint32_t close_error = 0;
  std::string request;  // prefix + message
  size_t request_sent = 0;
};

absl::string_view View(const uint8_t* p, size_t n) {
  return absl::string_view(reinterpret_cast<const char*>(p), n);
}

int OnHeader(nghttp2_session*, const nghttp2_frame* frame, const uint8_t* name, size_t namelen,
             const uint8_t* value, size_t valuelen, uint8_t, void* user) {
  Call& c = *static_cast<Call*>(user);
  if (frame->hd.type != NGHTTP2_HEADERS || frame->hd.stream_id != c.stream_id) return 0;
  const absl::string_view n = View(name, namelen);
  const absl::string_view v = View(value, valuelen);
  if (n == ":status") {
    if (!absl::SimpleAtoi(v, &c.http_status)) c.http_status = -1;
  } else if (n == "grpc-status") {
    c.grpc_status_seen = true;
    c.grpc_status_valid = absl::SimpleAtoi(v, &c.grpc_status) && c.grpc_status >= 0 &&
                          c.grpc_status <= static_cast<int>(absl::StatusCode::kUnauthenticated);
  } else if (n == "grpc-message") {
    c.grpc_message = PercentDecode(v.substr(0, kMaxMessage));
  } else if (n == "content-type") {
    c.content_type = std::string(v.substr(0, 256));
  }
  return 0;
}

int OnData(nghttp2_session*, uint8_t, int32_t stream_id, const uint8_t* data, size_t len,
           void* user) {
  Call& c = *static_cast<Call*>(user);
  if (stream_id != c.stream_id) return 0;
  if (len > c.max_body - c.body.size()) {
    c.too_large = true;
    return NGHTTP2_ERR_CALLBACK_FAILURE;
  }
  c.body.append(reinterpret_cast<const char*>(data), len);
  return 0;
}

int OnStreamClose(nghttp2_session*, int32_t stream_id, uint32_t error_code, void* user) {
  Call& c = *static_cast<Call*>(user);
  if (stream_id == c.stream_id) {
    c.closed = true;
    c.close_error = error_code;
  }
  return 0;
}

ssize_t ReadRequest(nghttp2_session*, int32_t, uint8_t* buf, size_t length, uint32_t* flags,
                    nghttp2_data_source*, void* user) {
  Call& c = *static_cast<Call*>(user);
  const size_t n = std::min(length, c.request.size() - c.request_sent);
  std::memcpy(buf, c.request.data() + c.request_sent, n);
  c.request_sent += n;
  if (c.request_sent == c.request.size()) *flags |= NGHTTP2_DATA_FLAG_EOF;
  return static_cast<ssize_t>(n);
}

struct SessionDeleter {
  void operator()(nghttp2_session* s) const { nghttp2_session_del(s); }
};
struct CallbacksDeleter {
  void operator()(nghttp2_session_callbacks* c) const { nghttp2_session_callbacks_del(c); }
};

absl::Status Unavailable(absl::string_view what, int err) {
  return absl::UnavailableError(absl::StrCat(what, ": ", strerror(err)));
}

// gRPC's status for an HTTP/2 RST_STREAM code (PROTOCOL-HTTP2.md).
absl::Status StatusOfReset(uint32_t code) {
  const std::string what = absl::StrCat("the server reset the call (HTTP/2 error ",
                                        nghttp2_http2_strerror(code), ")");
  switch (code) {
    case NGHTTP2_REFUSED_STREAM:
      return absl::UnavailableError(what);
    case NGHTTP2_CANCEL:
      return absl::CancelledError(what);
    case NGHTTP2_ENHANCE_YOUR_CALM:
      return absl::ResourceExhaustedError(what);
    case NGHTTP2_INADEQUATE_SECURITY:
      return absl::PermissionDeniedError(what);
    default:
      return absl::InternalError(what);
  }
}

// The answer the call's headers, trailers and body make.
absl::StatusOr<std::string> Answer(Call& c, size_t max_answer_bytes) {
  if (c.http_status == 0 && c.close_error != NGHTTP2_NO_ERROR) {
    return StatusOfReset(c.close_error);
  }
  if (c.http_status != 200) {
    return absl::Status(StatusOfHttp(c.http_status),
                        absl::StrCat("the server answered HTTP status ", c.http_status));
  }
  if (!absl::StartsWith(c.content_type, "application/grpc")) {
    return absl::InternalError(
        absl::StrCat("the answer is not gRPC (content-type \"", c.content_type, "\")"));
  }
  if (!c.grpc_status_seen) {
    if (c.close_error != NGHTTP2_NO_ERROR) return StatusOfReset(c.close_error);
    return absl::InternalError("the answer has no grpc-status");
  }
  if (!c.grpc_status_valid) return absl::InternalError("the answer's grpc-status is not a code");
  if (c.grpc_status != 0) {
    return absl::Status(static_cast<absl::StatusCode>(c.grpc_status), c.grpc_message);
  }
  if (c.body.size() < kPrefix) {
    return absl::InternalError("the answer holds no message");
  }
  const auto* p = reinterpret_cast<const unsigned char*>(c.body.data());
  if (p[0] != 0) return absl::InternalError("the answer's message is compressed, unasked");
  const uint64_t length = (uint64_t{p[1]} << 24) | (uint64_t{p[2]} << 16) |
                          (uint64_t{p[3]} << 8) | uint64_t{p[4]};
  if (length > max_answer_bytes) {
    return absl::ResourceExhaustedError(
        absl::StrCat("the answer's message is larger than ", max_answer_bytes, " bytes"));
  }
  if (c.body.size() != kPrefix + length) {
    return absl::InternalError(absl::StrCat("the answer's message says ", length,
                                            " bytes, and it came with ",
                                            c.body.size() - kPrefix));
  }
  return c.body.substr(kPrefix);
}

// grpc-timeout: at most 8 digits, in milliseconds or, when longer,
// seconds.
std::string TimeoutHeader(absl::Duration timeout) {
  const int64_t ms = std::max<int64_t>(1, absl::ToInt64Milliseconds(timeout));
  if (ms <= 99999999) return absl::StrCat(ms, "m");
  return absl::StrCat(std::min<int64_t>(ms / 1000, 99999999), "S");
}

absl::StatusOr<std::string> OneAttempt(const std::string& socket_path, absl::string_view method,
                                       absl::string_view request,
                                       const UnixCallOptions& options, absl::Time deadline) {
  sockaddr_un addr = {};
  addr.sun_family = AF_UNIX;
  if (socket_path.empty() || socket_path.size() >= sizeof(addr.sun_path)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "a Unix socket path of 1 to ", sizeof(addr.sun_path) - 1, " bytes, not ", socket_path));
  }
  std::memcpy(addr.sun_path, socket_path.data(), socket_path.size());
  memory::ScopedFd fd(socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!fd.valid()) return Unavailable("socket", errno);
  if (connect(fd.get(), reinterpret_cast<const sockaddr*>(&addr), sizeof(addr)) != 0) {
    return Unavailable(socket_path, errno);
  }
  return UnaryCallOnSocket(fd.get(), method, request, options, deadline);
}

}  // namespace

absl::StatusOr<std::string> UnaryCallOnSocket(int fd, absl::string_view method,
                                              absl::string_view request,
                                              const UnixCallOptions& options,
                                              absl::Time deadline) {
  if (fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK) != 0) {
    return Unavailable("fcntl", errno);
  }
  Call c;
  c.max_body = kPrefix + options.max_answer_bytes;
  if (request.size() > UINT32_MAX) return absl::InvalidArgumentError("a request over 4 GiB");
  const uint32_t n = static_cast<uint32_t>(request.size());
  c.request = std::string{'\0', static_cast<char>(n >> 24), static_cast<char>(n >> 16),
                          static_cast<char>(n >> 8), static_cast<char>(n)};
  c.request.append(request.data(), request.size());

  nghttp2_session_callbacks* raw_callbacks = nullptr;
  if (nghttp2_session_callbacks_new(&raw_callbacks) != 0) {
    return absl::ResourceExhaustedError("out of memory");
  }
  std::unique_ptr<nghttp2_session_callbacks, CallbacksDeleter> callbacks(raw_callbacks);
  nghttp2_session_callbacks_set_on_header_callback(callbacks.get(), OnHeader);
  nghttp2_session_callbacks_set_on_data_chunk_recv_callback(callbacks.get(), OnData);
  nghttp2_session_callbacks_set_on_stream_close_callback(callbacks.get(), OnStreamClose);
  nghttp2_session* raw_session = nullptr;
  if (nghttp2_session_client_new(&raw_session, callbacks.get(), &c) != 0) {
    return absl::ResourceExhaustedError("out of memory");
  }
  std::unique_ptr<nghttp2_session, SessionDeleter> session(raw_session);

  const nghttp2_settings_entry settings[] = {
      {NGHTTP2_SETTINGS_ENABLE_PUSH, 0},
      {NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, static_cast<uint32_t>(kWindow)},
  };
  if (nghttp2_submit_settings(session.get(), NGHTTP2_FLAG_NONE, settings, 2) != 0 ||
      nghttp2_session_set_local_window_size(session.get(), NGHTTP2_FLAG_NONE, 0, kWindow) !=
          0) {
    return absl::InternalError("cannot set up the HTTP/2 session");
  }
  const std::string timeout =
      TimeoutHeader(std::max(deadline - absl::Now(), absl::Milliseconds(1)));
  const std::pair<absl::string_view, absl::string_view> headers[] = {
      {":method", "POST"},
      {":scheme", "http"},
      {":path", method},
      {":authority", "localhost"},
      {"content-type", "application/grpc"},
      {"te", "trailers"},
      {"grpc-timeout", timeout},
      {"user-agent", options.user_agent},
  };
  std::vector<nghttp2_nv> nva;
  for (const auto& [name, value] : headers) {
    nva.push_back({reinterpret_cast<uint8_t*>(const_cast<char*>(name.data())),
                   reinterpret_cast<uint8_t*>(const_cast<char*>(value.data())), name.size(),
                   value.size(), NGHTTP2_NV_FLAG_NONE});
  }
  nghttp2_data_provider body = {};
  body.read_callback = ReadRequest;
  c.stream_id = nghttp2_submit_request(session.get(), nullptr, nva.data(), nva.size(), &body,
                                       nullptr);
  if (c.stream_id < 0) {
    return absl::InternalError(
        absl::StrCat("cannot send the request: ", nghttp2_strerror(c.stream_id)));
  }

  // Send what the session has, read what the server sends, until the
  // call's stream is closed.
  std::string pending;  // bytes the session gave that the socket has not taken
  size_t pending_sent = 0;
  // Not zeroed: recv writes what it returns, and only the pages it writes
  // become resident (a zeroed 64 KiB was 16 page faults and 73,000
  // instructions of memset for a few KiB of answer).
  constexpr size_t kIn = 64 << 10;
  const std::unique_ptr<uint8_t[]> in(new uint8_t[kIn]);
  bool eof = false;
  while (!c.closed && !eof) {
    // Everything the session has to send, in one send() where the socket
    // takes it (the preface, SETTINGS, the request's HEADERS and DATA are
    // one write).
    if (pending_sent == pending.size()) {
      pending.clear();
      pending_sent = 0;
      for (;;) {
        const uint8_t* data = nullptr;
        const ssize_t got = nghttp2_session_mem_send(session.get(), &data);
        if (got < 0) {
          return absl::InternalError(absl::StrCat("HTTP/2: ", nghttp2_strerror(got)));
        }
        if (got == 0) break;
        pending.append(reinterpret_cast<const char*>(data), got);
      }
    }
    while (pending_sent < pending.size()) {
      const ssize_t w = send(fd, pending.data() + pending_sent,
                             pending.size() - pending_sent, MSG_NOSIGNAL);
      if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
      if (w < 0 && errno == EINTR) continue;
      if (w < 0) return Unavailable("send", errno);
      pending_sent += w;
    }
    const absl::Duration left = deadline - absl::Now();
    if (left <= absl::ZeroDuration()) {
      return absl::DeadlineExceededError("no answer before the deadline");
    }
    pollfd p = {fd, static_cast<short>(POLLIN | (pending_sent < pending.size() ? POLLOUT : 0)),
                0};
    const int ready = poll(&p, 1, static_cast<int>(std::min<int64_t>(
                                      absl::ToInt64Milliseconds(absl::Ceil(
                                          left, absl::Milliseconds(1))),
                                      INT32_MAX)));
    if (ready < 0 && errno == EINTR) continue;
    if (ready < 0) return Unavailable("poll", errno);
    if (ready == 0) continue;  // the deadline, seen above
    if ((p.revents & (POLLIN | POLLHUP | POLLERR)) == 0) continue;
    const ssize_t r = recv(fd, in.get(), kIn, 0);
    if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) continue;
    if (r < 0) return Unavailable("recv", errno);
    if (r == 0) {
      eof = true;
      break;
    }
    const ssize_t used = nghttp2_session_mem_recv(session.get(), in.get(), r);
    if (c.too_large) {
      return absl::ResourceExhaustedError(absl::StrCat(
          "the answer is larger than ", options.max_answer_bytes, " bytes"));
    }
    if (used < 0) return absl::InternalError(absl::StrCat("HTTP/2: ", nghttp2_strerror(used)));
  }
  if (!c.closed) return absl::UnavailableError("the server closed the connection before its answer");
  return Answer(c, options.max_answer_bytes);
}

absl::StatusCode StatusOfHttp(int http_status) {
  switch (http_status) {
    case 400:
      return absl::StatusCode::kInternal;
    case 401:
      return absl::StatusCode::kUnauthenticated;
    case 403:
      return absl::StatusCode::kPermissionDenied;
    case 404:
      return absl::StatusCode::kUnimplemented;
    case 429:
    case 502:
    case 503:
    case 504:
      return absl::StatusCode::kUnavailable;
    default:
      return absl::StatusCode::kUnknown;
  }
}

std::string PercentDecode(absl::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%' && i + 2 < s.size() && absl::ascii_isxdigit(s[i + 1]) &&
        absl::ascii_isxdigit(s[i + 2])) {
      auto digit = [](char ch) {
        return absl::ascii_isdigit(ch) ? ch - '0' : absl::ascii_tolower(ch) - 'a' + 10;
      };
      out.push_back(static_cast<char>(digit(s[i + 1]) * 16 + digit(s[i + 2])));
      i += 2;
    } else {
      out.push_back(s[i]);
    }
  }
  return out;
}

absl::StatusOr<std::string> UnixUnaryCall(const std::string& socket_path,
                                          absl::string_view method, absl::string_view request,
                                          const UnixCallOptions& options) {
  // As unwind_remote's channel (call_policy.h): a call that fails with
  // UNAVAILABLE (no server yet, or one that is draining) made again,
  // within the call's time.
  const absl::Time deadline = absl::Now() + options.timeout;
  absl::Duration backoff = call_policy::kInitialBackoff;
  absl::StatusOr<std::string> answer;
  for (int attempt = 1;; ++attempt) {
    answer = OneAttempt(socket_path, method, request, options, deadline);
    if (answer.ok() || !absl::IsUnavailable(answer.status()) ||
        attempt == call_policy::kAttempts ||
        absl::Now() + backoff >= deadline) {
      return answer;
    }
    absl::SleepFor(backoff);
    backoff = std::min(backoff * call_policy::kBackoffMultiplier, call_policy::kMaxBackoff);
  }
}

}  // namespace unwindd::service

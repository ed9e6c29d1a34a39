// UnixUnaryCall against a fake HTTP/2 server (libnghttp2's server side on
// the other end of a socket) that answers as each test tells it: a
// message, a gRPC error, HTTP errors, resets, answers that are not gRPC,
// too large, compressed or cut short, no answer at all. The real unwindd
// is the other end in //service/server:unwindd_test and
// unwind_remote_cli_test.
#include "service/remote/unix_call.h"

#include <nghttp2/nghttp2.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "gtest/gtest.h"
#include "service/common/unwinder_messages.h"

namespace unwindd::service {
namespace {

using Headers = std::vector<std::pair<std::string, std::string>>;

// What the fake server does once the request has arrived.
struct Reply {
  Headers headers = {{":status", "200"}, {"content-type", "application/grpc"}};
  std::string body;      // DATA; none if empty and no trailers
  Headers trailers;      // after the body; none: the body (or headers) end the stream
  bool answer = true;    // false: never answer
  bool close = false;    // close the connection instead of answering
  uint32_t reset = 0;    // RST_STREAM with this code instead of answering
};

std::string Message(absl::string_view bytes, char flag = 0) {
  const uint32_t n = bytes.size();
  std::string out{flag, static_cast<char>(n >> 24), static_cast<char>(n >> 16),
                  static_cast<char>(n >> 8), static_cast<char>(n)};
  out.append(bytes.data(), bytes.size());
  return out;
}

std::vector<nghttp2_nv> Nva(const Headers& h) {
  std::vector<nghttp2_nv> out;
  for (const auto& [n, v] : h) {
    out.push_back({reinterpret_cast<uint8_t*>(const_cast<char*>(n.data())),
                   reinterpret_cast<uint8_t*>(const_cast<char*>(v.data())), n.size(), v.size(),
                   NGHTTP2_NV_FLAG_NONE});
  }
  return out;
}

// One connection served on `fd` (closed at the end), in the calling thread.
class FakeServer {
 public:
  explicit FakeServer(Reply reply) : reply_(std::move(reply)) {}

  void Serve(int fd) {
    nghttp2_session_callbacks* cb;
    nghttp2_session_callbacks_new(&cb);
    nghttp2_session_callbacks_set_on_header_callback(cb, OnHeader);
    nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cb, OnData);
    nghttp2_session_callbacks_set_on_frame_recv_callback(cb, OnFrame);
    nghttp2_session* s;
    nghttp2_session_server_new(&s, cb, this);
    nghttp2_session_callbacks_del(cb);
    nghttp2_submit_settings(s, NGHTTP2_FLAG_NONE, nullptr, 0);
    char buf[65536];
    while (!close_) {
      const uint8_t* data;
      for (ssize_t n; (n = nghttp2_session_mem_send(s, &data)) > 0;) {
        for (ssize_t at = 0; at < n;) {
          const ssize_t w = send(fd, data + at, n - at, MSG_NOSIGNAL);
          if (w <= 0) break;
          at += w;
        }
      }
      pollfd p = {fd, POLLIN, 0};
      if (poll(&p, 1, 10000) <= 0) break;
      const ssize_t r = read(fd, buf, sizeof(buf));
      if (r <= 0) break;
      if (nghttp2_session_mem_recv(s, reinterpret_cast<uint8_t*>(buf), r) < 0) break;
    }
    nghttp2_session_del(s);
    close(fd);
  }

  std::string path, timeout, request;

 private:
  static int OnHeader(nghttp2_session*, const nghttp2_frame*, const uint8_t* name, size_t nl,
                      const uint8_t* value, size_t vl, uint8_t, void* user) {
    auto* self = static_cast<FakeServer*>(user);
    const std::string n(reinterpret_cast<const char*>(name), nl);
    const std::string v(reinterpret_cast<const char*>(value), vl);
    if (n == ":path") self->path = v;
    if (n == "grpc-timeout") self->timeout = v;
    return 0;
  }
  static int OnData(nghttp2_session*, uint8_t, int32_t, const uint8_t* data, size_t len,
                    void* user) {
    static_cast<FakeServer*>(user)->request.append(reinterpret_cast<const char*>(data), len);
    return 0;
  }
  static ssize_t ReadBody(nghttp2_session* s, int32_t stream, uint8_t* buf, size_t length,
                          uint32_t* flags, nghttp2_data_source*, void* user) {
    auto* self = static_cast<FakeServer*>(user);
    const size_t n = std::min(length, self->reply_.body.size() - self->sent_);
    std::memcpy(buf, self->reply_.body.data() + self->sent_, n);
    self->sent_ += n;
    if (self->sent_ == self->reply_.body.size()) {
      *flags |= NGHTTP2_DATA_FLAG_EOF;
      if (!self->reply_.trailers.empty()) {
        *flags |= NGHTTP2_DATA_FLAG_NO_END_STREAM;
        std::vector<nghttp2_nv> t = Nva(self->reply_.trailers);
        nghttp2_submit_trailer(s, stream, t.data(), t.size());
      }
    }
    return n;
  }
  static int OnFrame(nghttp2_session* s, const nghttp2_frame* frame, void* user) {
    auto* self = static_cast<FakeServer*>(user);
    if ((frame->hd.type != NGHTTP2_DATA && frame->hd.type != NGHTTP2_HEADERS) ||
        (frame->hd.flags & NGHTTP2_FLAG_END_STREAM) == 0) {
      return 0;
    }
    const Reply& r = self->reply_;
    if (r.close) {
      self->close_ = true;
    } else if (r.reset != 0) {
      nghttp2_submit_rst_stream(s, NGHTTP2_FLAG_NONE, frame->hd.stream_id, r.reset);
    } else if (r.answer) {
      std::vector<nghttp2_nv> h = Nva(r.headers);
      nghttp2_data_provider dp = {};
      dp.read_callback = ReadBody;
      const bool data = !r.body.empty() || !r.trailers.empty();
      nghttp2_submit_response(s, frame->hd.stream_id, h.data(), h.size(),
                              data ? &dp : nullptr);
    }
    return 0;
  }

  Reply reply_;
  size_t sent_ = 0;
  bool close_ = false;
};

// The call on one end of a socket pair, `server` on the other.
absl::StatusOr<std::string> CallServer(FakeServer& server, UnixCallOptions options = {},
                                       absl::Duration timeout = absl::Seconds(20)) {
  int fds[2];
  EXPECT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds), 0);
  std::thread t([&] { server.Serve(fds[1]); });
  absl::StatusOr<std::string> out = UnaryCallOnSocket(
      fds[0], "/unwindd.v1.Unwinder/UnwindProcess", "request", options, absl::Now() + timeout);
  close(fds[0]);
  t.join();
  return out;
}

absl::StatusOr<std::string> Call(Reply reply, UnixCallOptions options = {},
                                 absl::Duration timeout = absl::Seconds(20)) {
  FakeServer server(std::move(reply));
  return CallServer(server, options, timeout);
}

TEST(UnixCallTest, AnswerAfterRequest) {
  Reply r;
  r.body = Message("the answer");
  r.trailers = {{"grpc-status", "0"}};
  FakeServer seen(r);
  absl::StatusOr<std::string> out = CallServer(seen);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(*out, "the answer");
  EXPECT_EQ(seen.path, "/unwindd.v1.Unwinder/UnwindProcess");
  EXPECT_EQ(seen.request, Message("request"));
  ASSERT_FALSE(seen.timeout.empty());
  EXPECT_EQ(seen.timeout.back(), 'm') << seen.timeout;
}

TEST(UnixCallTest, EmptyAnswerIsAMessage) {
  Reply r;
  r.body = Message("");
  r.trailers = {{"grpc-status", "0"}};
  absl::StatusOr<std::string> out = Call(r);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(*out, "");
}

TEST(UnixCallTest, ServersErrorWithItsMessage) {
  Reply r;  // trailers-only, as gRPC answers an error
  r.headers.push_back({"grpc-status", "5"});
  r.headers.push_back({"grpc-message", "no process 1%3A gone %E2%9C%93 100%"});
  absl::StatusOr<std::string> out = Call(r);
  EXPECT_EQ(out.status(), absl::NotFoundError("no process 1: gone \xE2\x9C\x93 100%"));
}

TEST(UnixCallTest, WhatIsNotAnAnswer) {
  struct Case {
    const char* name;
    Reply reply;
    absl::StatusCode code;
  };
  std::vector<Case> cases;
  {
    Reply r;
    r.headers = {{":status", "404"}};
    cases.push_back({"HTTP 404", r, absl::StatusCode::kUnimplemented});
    r.headers = {{":status", "503"}};
    cases.push_back({"HTTP 503", r, absl::StatusCode::kUnavailable});
  }
  {
    Reply r;
    r.headers = {{":status", "200"}, {"content-type", "text/html"}};
    r.body = Message("x");
    r.trailers = {{"grpc-status", "0"}};
    cases.push_back({"not gRPC", r, absl::StatusCode::kInternal});
  }
  {
    Reply r;
    r.body = Message("x");  // the stream ends with the data
    cases.push_back({"no grpc-status", r, absl::StatusCode::kInternal});
  }
  {
    Reply r;
    r.headers.push_back({"grpc-status", "99"});
    cases.push_back({"grpc-status 99", r, absl::StatusCode::kInternal});
    r.headers.back().second = "-1";
    cases.push_back({"grpc-status -1", r, absl::StatusCode::kInternal});
  }
  {
    Reply r;
    r.body = Message("x", 1);
    r.trailers = {{"grpc-status", "0"}};
    cases.push_back({"compressed", r, absl::StatusCode::kInternal});
    r.body = Message("0123456789").substr(0, 9);
    cases.push_back({"cut short", r, absl::StatusCode::kInternal});
    r.body = Message("a") + Message("b");
    cases.push_back({"two messages", r, absl::StatusCode::kInternal});
    r.body = "\0\0";
    cases.push_back({"half a prefix", r, absl::StatusCode::kInternal});
    r.body = "";
    cases.push_back({"no message", r, absl::StatusCode::kInternal});
  }
  {
    Reply r;
    r.reset = NGHTTP2_REFUSED_STREAM;
    cases.push_back({"refused", r, absl::StatusCode::kUnavailable});
    r.reset = NGHTTP2_INTERNAL_ERROR;
    cases.push_back({"reset", r, absl::StatusCode::kInternal});
  }
  {
    Reply r;
    r.close = true;
    cases.push_back({"closed", r, absl::StatusCode::kUnavailable});
  }
  for (const Case& c : cases) {
    absl::StatusOr<std::string> out = Call(c.reply);
    EXPECT_EQ(out.status().code(), c.code) << c.name << ": " << out.status();
  }
}

TEST(UnixCallTest, AnswerOverTheLimit) {
  UnixCallOptions small;
  small.max_answer_bytes = 100;
  Reply r;
  r.body = Message(std::string(100, 'x'));
  r.trailers = {{"grpc-status", "0"}};
  EXPECT_TRUE(Call(r, small).ok());
  r.body = Message(std::string(101, 'x'));
  EXPECT_EQ(Call(r, small).status().code(), absl::StatusCode::kResourceExhausted);
  // Over the limit by what the prefix says, before the bytes come.
  r.body = Message(std::string(101, 'x')).substr(0, 50);
  EXPECT_EQ(Call(r, small).status().code(), absl::StatusCode::kResourceExhausted);
  // An answer of several windows' worth arrives whole.
  r.body = Message(std::string(40 << 20, 'y'));
  absl::StatusOr<std::string> big = Call(r);
  ASSERT_TRUE(big.ok()) << big.status();
  EXPECT_EQ(big->size(), size_t{40} << 20);
}

TEST(UnixCallTest, NoAnswerBeforeTheDeadline) {
  Reply r;
  r.answer = false;
  EXPECT_EQ(Call(r, {}, absl::Milliseconds(200)).status().code(),
            absl::StatusCode::kDeadlineExceeded);
}

TEST(UnixCallTest, NoServerOnThePath) {
  UnixCallOptions o;
  o.timeout = absl::Milliseconds(500);
  absl::StatusOr<std::string> out =
      UnixUnaryCall("/nonexistent/unwindd.sock", "/a/b", "", o);
  EXPECT_EQ(out.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_NE(out.status().message().find("/nonexistent/unwindd.sock: No such file"),
            absl::string_view::npos)
      << out.status();
  EXPECT_EQ(UnixUnaryCall(std::string(200, 'p'), "/a/b", "", o).status().code(),
            absl::StatusCode::kInvalidArgument);
}

// UNAVAILABLE (a server draining) is tried again on a new connection, as
// unwind_remote's channel retries it.
TEST(UnixCallTest, UnavailableIsRetried) {
  char dir[] = "/tmp/unix_call_test.XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  const std::string path = absl::StrCat(dir, "/s");
  const int listener = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un addr = {};
  addr.sun_family = AF_UNIX;
  std::strcpy(addr.sun_path, path.c_str());
  ASSERT_EQ(bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  ASSERT_EQ(listen(listener, 4), 0);
  std::thread t([listener] {
    Reply draining;
    draining.headers.push_back({"grpc-status", "14"});
    draining.headers.push_back({"grpc-message", "draining"});
    FakeServer(draining).Serve(accept(listener, nullptr, nullptr));
    Reply ok;
    ok.body = Message("second");
    ok.trailers = {{"grpc-status", "0"}};
    FakeServer(ok).Serve(accept(listener, nullptr, nullptr));
  });
  absl::StatusOr<std::string> out = UnixUnaryCall(path, "/a/b", "", {});
  t.join();
  close(listener);
  unlink(path.c_str());
  rmdir(dir);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(*out, "second");
}

// The fuzzer's seeds are what a real unwindd sent (strace of
// `unwind --server=unix:... pid`): replayed, they are the answers they
// were.
TEST(UnixCallTest, RealAnswersReplayed) {
  const std::string dir = "service/remote/testdata/fuzz/unix_call_fuzzer/";
  auto replay = [&](const std::string& name) {
    std::ifstream in(dir + name, std::ios::binary);
    const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    EXPECT_FALSE(bytes.empty()) << name;
    int fds[2];
    EXPECT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds), 0);
    EXPECT_EQ(write(fds[1], bytes.data(), bytes.size()), static_cast<ssize_t>(bytes.size()));
    shutdown(fds[1], SHUT_WR);
    absl::StatusOr<std::string> out =
        UnaryCallOnSocket(fds[0], "/unwindd.v1.Unwinder/UnwindProcess", "request", {},
                          absl::Now() + absl::Seconds(20));
    close(fds[0]);
    close(fds[1]);
    return out;
  };
  absl::StatusOr<std::string> stacks = replay("threads_c");
  ASSERT_TRUE(stacks.ok()) << stacks.status();
  v1::UnwindResponse response;
  ASSERT_TRUE(response.ParseFromString(*stacks));
  EXPECT_EQ(response.threads_size(), 5);
  EXPECT_GE(response.modules_size(), 2);  // the program and libc
  EXPECT_EQ(replay("no_such_process").status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(replay("unwindd_itself").status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(UnixCallTest, PercentDecodeAndHttpStatus) {
  EXPECT_EQ(PercentDecode("a%20b%3a%3A"), "a b::");
  EXPECT_EQ(PercentDecode("100%"), "100%");
  EXPECT_EQ(PercentDecode("%2"), "%2");
  EXPECT_EQ(PercentDecode("%zz%41"), "%zzA");
  EXPECT_EQ(PercentDecode("%00"), std::string(1, '\0'));
  EXPECT_EQ(StatusOfHttp(400), absl::StatusCode::kInternal);
  EXPECT_EQ(StatusOfHttp(401), absl::StatusCode::kUnauthenticated);
  EXPECT_EQ(StatusOfHttp(403), absl::StatusCode::kPermissionDenied);
  EXPECT_EQ(StatusOfHttp(404), absl::StatusCode::kUnimplemented);
  EXPECT_EQ(StatusOfHttp(429), absl::StatusCode::kUnavailable);
  EXPECT_EQ(StatusOfHttp(500), absl::StatusCode::kUnknown);
}

}  // namespace
}  // namespace unwindd::service

// unwind_remote: what `unwind --server=ADDRESS ...` runs (remote_exec.h),
// except `pid` through a Unix socket, which unwind asks itself
// (socket_client.h).
// Same command line and the same output as the in-process CLI (the same
// FormatJson/FormatText over the same ProcessStacks), but the unwinding is
// done by a running unwindd. ADDRESS is unix:PATH or tcp:HOST:PORT, as
// unwindd's --listen takes them, or dns:///NAME:PORT (every address NAME
// resolves to: replicas, calls spread round-robin and retried on
// UNAVAILABLE; channel.h), or ipv4:ADDR:PORT,ADDR:PORT,... A tcp: server with TLS (unwindd
// --tls-cert ...) needs --tls-ca=PEM (the CA that signed its certificate)
// and, to be let in, --tls-cert=PEM --tls-key=PEM (this client's):
//
//   unwind --server=tcp:host:7070 --tls-ca=ca.pem --tls-cert=me.pem
//       --tls-key=me.key pid 1234          (one command line)
//
// It also runs `health` (the gRPC health service) and `stats` (GetStats),
// which only a server can answer.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cerrno>
#include <chrono>
#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/string_view.h"
#include "absl/strings/strip.h"
#include "absl/synchronization/mutex.h"
#include "grpcpp/grpcpp.h"
#include "proto/grpc/health/v1/health.grpc.pb.h"
#include "proto/unwinder.grpc.pb.h"
#include "service/cli/args.h"
#include "service/cli/demo.h"
#include "service/cli/usage.h"
#include "service/common/convert.h"
#include "service/common/grpc_status.h"
#include "service/common/json.h"
#include "service/common/version.h"
#include "service/remote/call_policy.h"
#include "service/remote/channel.h"
#include "service/remote/render.h"

namespace {

namespace v1 = unwindd::v1;
using unwindd::service::Command;

using unwindd::service::Absolute;
using unwindd::service::Fail;
using unwindd::service::Unreachable;

// --tls-ca, --tls-cert, --tls-key (PEM file paths).
struct TlsFlags {
  std::string ca, cert, key;
  bool any() const { return !ca.empty() || !cert.empty() || !key.empty(); }
};

absl::StatusOr<std::string> ReadPemFile(const std::string& path, absl::string_view flag) {
  std::ifstream in(path, std::ios::binary);
  std::string out;
  if (in) {
    // A certificate chain is a few KiB; 1 MiB is plenty.
    out.resize(1 << 20);
    in.read(out.data(), out.size());
    out.resize(in.gcount());
  }
  if (!in.eof() || out.empty() || !absl::StrContains(out, "-----BEGIN ")) {
    return absl::InvalidArgumentError(
        absl::StrCat(flag, ": cannot read a PEM file of at most 1 MiB at ", path));
  }
  return out;
}

// Plain for unix: and for tcp: without --tls-*; TLS (gRPC's SSL
// credentials) otherwise. The server's name is checked against `target`'s
// host, as gRPC does.
absl::StatusOr<std::shared_ptr<grpc::ChannelCredentials>> Credentials(
    const std::string& target, const TlsFlags& tls) {
  if (!tls.any()) return grpc::InsecureChannelCredentials();
  if (absl::StartsWith(target, "unix:")) {
    return absl::InvalidArgumentError("--tls-* are for tcp: servers");
  }
  if (tls.ca.empty() || tls.cert.empty() != tls.key.empty()) {
    return absl::InvalidArgumentError(
        "TLS needs --tls-ca, and --tls-cert with --tls-key to present a certificate");
  }
  grpc::SslCredentialsOptions o;
  absl::StatusOr<std::string> ca = ReadPemFile(tls.ca, "--tls-ca");
  if (!ca.ok()) return ca.status();
  o.pem_root_certs = *std::move(ca);
  if (!tls.cert.empty()) {
    absl::StatusOr<std::string> cert = ReadPemFile(tls.cert, "--tls-cert");
    if (!cert.ok()) return cert.status();
    absl::StatusOr<std::string> key = ReadPemFile(tls.key, "--tls-key");
    if (!key.ok()) return key.status();
    o.pem_cert_chain = *std::move(cert);
    o.pem_private_key = *std::move(key);
  }
  return grpc::SslCredentials(o);
}

absl::StatusOr<v1::UnwindResponse> UnwindPid(v1::Unwinder::Stub& stub,
                                             const Command& cmd, pid_t pid) {
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() +
                       absl::ToChronoSeconds(unwindd::service::call_policy::kUnwindDeadline));
  v1::UnwindResponse response;
  grpc::Status s =
      stub.UnwindProcess(&context, unwindd::service::ProcessRequest(cmd, pid), &response);
  if (!s.ok()) return unwindd::service::FromGrpcStatus(s);
  return response;
}

// Over the Unix socket the server is on this machine: it opens the core by
// path (with the caller's file permissions). Over TCP the core is streamed;
// --exe, --sysroot and --path-map then name paths on the server.
absl::StatusOr<v1::UnwindResponse> UnwindCore(v1::Unwinder::Stub& stub,
                                              const Command& cmd, bool local) {
  v1::UnwindCoreRequest first;
  v1::CoreOptions* o = first.mutable_options();
  o->set_exe(local ? Absolute(cmd.exe) : cmd.exe);
  o->set_sysroot(local ? Absolute(cmd.sysroot) : cmd.sysroot);
  for (const unwindd::proc::PathMapping& pm : cmd.path_maps) {
    v1::PathMapping* p = o->add_path_map();
    p->set_from(pm.from);
    p->set_to(local ? Absolute(pm.to) : pm.to);
  }
  for (pid_t t : cmd.tids) o->add_tids(t);
  o->set_max_frames(cmd.max_frames);
  if (cmd.sources_given) unwindd::service::SourcesToProto(cmd.sources, o->mutable_sources());
  for (const std::string& d : cmd.debug_dirs) o->add_debug_dirs(local ? Absolute(d) : d);
  o->set_debuginfod(!cmd.debuginfod_urls.empty());
  // Opened here first either way, so that a core this caller cannot open
  // is the error `unwind core` gives, word for word.
  int fd = open(cmd.core.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  struct stat st;
  if (fd < 0 || fstat(fd, &st) != 0) {
    const int err = errno;
    if (fd >= 0) close(fd);
    return absl::ErrnoToStatus(err, absl::StrCat("cannot open ", cmd.core));
  }
  if (local) {
    close(fd);
    fd = -1;
    o->set_server_path(Absolute(cmd.core));
  } else {
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);  // streamed: read it all
    o->set_streamed_size(st.st_size);
  }
  grpc::ClientContext context;
  v1::UnwindResponse response;
  std::unique_ptr<grpc::ClientWriter<v1::UnwindCoreRequest>> writer =
      stub.UnwindCore(&context, &response);
  bool ok = writer->Write(first);
  if (fd >= 0) {
    std::string buf(1 << 20, '\0');
    v1::UnwindCoreRequest chunk;
    for (ssize_t n; ok && (n = read(fd, buf.data(), buf.size())) > 0;) {
      chunk.set_chunk(buf.data(), n);
      ok = writer->Write(chunk);
    }
    close(fd);
  }
  writer->WritesDone();
  grpc::Status s = writer->Finish();
  if (!s.ok()) return unwindd::service::FromGrpcStatus(s);
  return response;
}

// `unwind --server=... health`: the standard gRPC health service's answer
// for the Unwinder service.
int Health(const std::shared_ptr<grpc::Channel>& channel, const std::string& target) {
  namespace health = grpc::health::v1;
  std::unique_ptr<health::Health::Stub> stub = health::Health::NewStub(channel);
  health::HealthCheckRequest request;
  request.set_service("unwindd.v1.Unwinder");
  health::HealthCheckResponse response;
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  const absl::Status s = unwindd::service::FromGrpcStatus(stub->Check(&context, request, &response));
  if (!s.ok()) {
    return absl::IsUnavailable(s) || absl::IsDeadlineExceeded(s) ? Unreachable(target, s)
                                                                : Fail(s.message());
  }
  std::printf("%s\n",
              health::HealthCheckResponse::ServingStatus_Name(response.status()).c_str());
  if (std::fflush(stdout) != 0) return 1;
  return response.status() == health::HealthCheckResponse::SERVING ? 0 : 1;
}

// `unwind --server=... stats`: GetStats, every counter (text: `name value`
// a line, a map's entries as `name.KEY value`; or one JSON object).
int Stats(v1::Unwinder::Stub& stub, const std::string& target, const Command& cmd) {
  v1::Stats stats;
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  const absl::Status s =
      unwindd::service::FromGrpcStatus(stub.GetStats(&context, v1::GetStatsRequest(), &stats));
  if (!s.ok()) {
    return absl::IsUnavailable(s) || absl::IsDeadlineExceeded(s) ? Unreachable(target, s)
                                                                : Fail(s.message());
  }
  const bool json = cmd.format == unwindd::service::Format::kJson;
  std::string out = json ? "{" : "";
  const google::protobuf::Descriptor* d = stats.GetDescriptor();
  const google::protobuf::Reflection* r = stats.GetReflection();
  for (int i = 0; i < d->field_count(); ++i) {
    const google::protobuf::FieldDescriptor* f = d->field(i);
    if (json && i > 0) out += ", ";
    if (f->is_map()) {
      // map<string, uint64>: sorted by key.
      std::map<std::string, uint64_t> sorted;
      for (int j = 0; j < r->FieldSize(stats, f); ++j) {
        const google::protobuf::Message& e = r->GetRepeatedMessage(stats, f, j);
        const google::protobuf::FieldDescriptor* k = e.GetDescriptor()->map_key();
        const google::protobuf::FieldDescriptor* v = e.GetDescriptor()->map_value();
        if (k->cpp_type() != google::protobuf::FieldDescriptor::CPPTYPE_STRING ||
            v->cpp_type() != google::protobuf::FieldDescriptor::CPPTYPE_UINT64) {
          break;  // a kind of map this client does not know yet
        }
        sorted[e.GetReflection()->GetString(e, k)] = e.GetReflection()->GetUInt64(e, v);
      }
      if (json) {
        absl::StrAppend(&out, "\"", f->name(), "\": {");
        bool first = true;
        for (const auto& [k, v] : sorted) {
          absl::StrAppend(&out, first ? "" : ", ", unwindd::service::JsonString(k), ": ", v);
          first = false;
        }
        out += "}";
      } else {
        for (const auto& [k, v] : sorted) absl::StrAppend(&out, f->name(), ".", k, " ", v, "\n");
      }
      continue;
    }
    std::string value;
    if (f->cpp_type() == google::protobuf::FieldDescriptor::CPPTYPE_UINT64) {
      value = absl::StrCat(r->GetUInt64(stats, f));
    } else if (f->cpp_type() == google::protobuf::FieldDescriptor::CPPTYPE_DOUBLE) {
      value = absl::StrFormat("%.3f", r->GetDouble(stats, f));
    } else {
      continue;  // a kind of counter this client does not know yet
    }
    if (json) {
      absl::StrAppend(&out, "\"", f->name(), "\": ", value);
    } else {
      absl::StrAppend(&out, f->name(), " ", value, "\n");
    }
  }
  if (json) out += "}\n";
  std::fwrite(out.data(), 1, out.size(), stdout);
  return std::fflush(stdout) == 0 ? 0 : 1;
}

int Run(const std::string& target, const TlsFlags& tls, const Command& cmd) {
  // What unwindd does not do: refused before anything starts.
  switch (cmd.kind) {
    case Command::Kind::kPid:
    case Command::Kind::kDemo:
    case Command::Kind::kCore:
    case Command::Kind::kMinidump:
    case Command::Kind::kHealth:
    case Command::Kind::kStats:
      break;
    default:
      return Fail(absl::StrCat("unwind ", unwindd::service::CommandName(cmd.kind),
                               " is not supported with --server (run it without)"));
  }
  if (cmd.core_backtrace) {
    return Fail("--format=core-backtrace is not supported with --server (run it without)");
  }
  if (!cmd.minidump_out.empty()) {
    return Fail("--minidump is not supported with --server (run it without)");
  }
  if (cmd.stop_timeout_given) {
    return Fail("--stop-timeout is not supported with --server (unwindd applies its own "
                "--stop-timeout; run it without)");
  }
  absl::StatusOr<std::shared_ptr<grpc::ChannelCredentials>> credentials =
      Credentials(target, tls);
  if (!credentials.ok()) return Fail(credentials.status().message());
  // round_robin over every address the target names, UNAVAILABLE retried
  // on another (channel.h).
  std::shared_ptr<grpc::Channel> channel = grpc::CreateCustomChannel(
      target, *credentials, unwindd::service::RemoteChannelArguments());
  if (cmd.kind == Command::Kind::kHealth) return Health(channel, target);
  std::unique_ptr<v1::Unwinder::Stub> stub = v1::Unwinder::NewStub(channel);
  if (cmd.kind == Command::Kind::kStats) return Stats(*stub, target, cmd);
  std::unique_ptr<unwindd::service::DemoProcess> demo;
  pid_t pid = cmd.pid;
  if (cmd.kind == Command::Kind::kDemo) {
    absl::StatusOr<std::unique_ptr<unwindd::service::DemoProcess>> d =
        unwindd::service::DemoProcess::Start();
    if (!d.ok()) return Fail(d.status().message());
    demo = *std::move(d);
    pid = demo->pid();
  }
  absl::StatusOr<v1::UnwindResponse> response;
  if (cmd.kind == Command::Kind::kCore || cmd.kind == Command::Kind::kMinidump) {
    // UnwindCore takes minidumps too.
    response = UnwindCore(*stub, cmd, absl::StartsWith(target, "unix:"));
  } else {
    response = UnwindPid(*stub, cmd, pid);
  }
  if (!response.ok()) return unwindd::service::FailCall(target, response.status(), cmd);
  return unwindd::service::PrintResponse(cmd, *response);
}

}  // namespace

int main(int argc, char** argv) {
  // As in unwindd and unwind: Debian's Abseil keeps a lock-order graph on
  // every absl::Mutex lock (gRPC's too), a debugging aid that cost this
  // one-call client a few percent of its run.
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  const std::vector<absl::string_view> raw(argv + 1, argv + argc);
  // One line: the error and where the command's usage is, as `unwind` says it.
  auto usage_error = [&raw](absl::string_view msg) {
    Fail(absl::StrCat(msg, " ", unwindd::service::SeeHelp(raw)));
    return 2;
  };
  absl::StatusOr<std::vector<std::string>> normalized = unwindd::service::NormalizeArgs(raw);
  if (!normalized.ok()) return usage_error(normalized.status().message());
  std::vector<absl::string_view> args;
  std::string server;
  TlsFlags tls;
  for (const std::string& arg : *normalized) {
    absl::string_view a = arg;
    if (absl::ConsumePrefix(&a, "--server=")) {
      server = std::string(a);
    } else if (absl::ConsumePrefix(&a, "--tls-ca=")) {
      tls.ca = std::string(a);
    } else if (absl::ConsumePrefix(&a, "--tls-cert=")) {
      tls.cert = std::string(a);
    } else if (absl::ConsumePrefix(&a, "--tls-key=")) {
      tls.key = std::string(a);
    } else {
      args.push_back(a);
    }
  }
  absl::StatusOr<Command> cmd = unwindd::service::ParseCommandLine(args);
  if (!cmd.ok()) return usage_error(cmd.status().message());
  if (cmd->kind == Command::Kind::kHelp) {
    const unwindd::service::CommandUsage* u =
        unwindd::service::FindCommandUsage(cmd->help_topic);
    std::fputs(u != nullptr ? std::string(u->text).c_str() : unwindd::service::kUsage, stdout);
    return std::fflush(stdout) == 0 ? 0 : 1;
  }
  if (cmd->kind == Command::Kind::kVersion) {
    std::printf("%s\n", unwindd::service::VersionLine("unwind").c_str());
    return std::fflush(stdout) == 0 ? 0 : 1;
  }
  absl::StatusOr<std::string> target = unwindd::service::RemoteTarget(server);
  if (!target.ok()) return usage_error(target.status().message());
  return Run(*target, tls, *cmd);
}

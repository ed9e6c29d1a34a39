// unwind_remote: what `unwind --server=ADDRESS ...` runs (remote_exec.h).
// Same command line and the same output as the in-process CLI (the same
// FormatJson/FormatText over the same ProcessStacks), but the unwinding is
// done by a running unwindd. ADDRESS is unix:PATH or tcp:HOST:PORT, as
// unwindd's --listen takes them, or dns:///NAME:PORT (every address NAME
// resolves to: replicas, calls spread round-robin and retried on
// UNAVAILABLE; channel.h), or ipv4:ADDR:PORT,ADDR:PORT,... A tcp: server with TLS (unwindd
// --tls-cert ...) needs --tls-ca=PEM (the CA that signed its certificate)
// and, to be let in, --tls-cert=PEM --tls-key=PEM (this client's):
//
//   unwind --server=tcp:host:7070 --tls-ca=ca.pem --tls-cert=me.pem \
//       --tls-key=me.key pid 1234
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "service/cli/binaries.h"
#include "absl/strings/strip.h"
#include "grpcpp/grpcpp.h"
#include "proto/unwinder.grpc.pb.h"
#include "service/cli/args.h"
#include "service/cli/demo.h"
#include "service/cli/output.h"
#include "service/common/convert.h"
#include "service/remote/channel.h"

namespace {

namespace v1 = unwindd::v1;
using unwindd::service::Command;

int Fail(absl::string_view msg) {
  std::fprintf(stderr, "unwind: %.*s\n", static_cast<int>(msg.size()), msg.data());
  return 1;
}

std::string Absolute(const std::string& path);

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
  v1::UnwindProcessRequest request;
  request.set_pid(pid);
  for (pid_t t : cmd.tids) request.add_tids(t);
  request.set_max_frames(cmd.max_frames);
  if (cmd.sources_given) {
    unwindd::service::SourcesToProto(cmd.sources, request.mutable_sources());
  }
  for (const std::string& d : cmd.debug_dirs) request.add_debug_dirs(Absolute(d));
  // --debuginfod asks the server to use its own servers (its --debuginfod).
  request.set_debuginfod(!cmd.debuginfod_urls.empty());
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(60));
  v1::UnwindResponse response;
  grpc::Status s = stub.UnwindProcess(&context, request, &response);
  if (!s.ok()) return unwindd::service::FromGrpcStatus(s);
  return response;
}

// Paths the server opens are resolved against its own working directory,
// so relative ones are made absolute here.
std::string Absolute(const std::string& path) {
  if (path.empty() || path[0] == '/') return path;
  char cwd[4096];
  if (getcwd(cwd, sizeof(cwd)) == nullptr) return path;
  return absl::StrCat(cwd, "/", path);
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
  int fd = -1;
  struct stat st;
  if (local) {
    o->set_server_path(Absolute(cmd.core));
  } else {
    fd = open(cmd.core.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0 || fstat(fd, &st) != 0) {
      if (fd >= 0) close(fd);
      return absl::NotFoundError(absl::StrCat("cannot open ", cmd.core));
    }
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

int Run(const std::string& target, const TlsFlags& tls, const Command& cmd) {
  absl::StatusOr<std::shared_ptr<grpc::ChannelCredentials>> credentials =
      Credentials(target, tls);
  if (!credentials.ok()) return Fail(credentials.status().message());
  // round_robin over every address the target names, UNAVAILABLE retried
  // on another (channel.h).
  std::shared_ptr<grpc::Channel> channel = grpc::CreateCustomChannel(
      target, *credentials, unwindd::service::RemoteChannelArguments());
  std::unique_ptr<v1::Unwinder::Stub> stub = v1::Unwinder::NewStub(channel);
  std::unique_ptr<unwindd::service::DemoProcess> demo;
  pid_t pid = cmd.pid;
  if (cmd.kind == Command::Kind::kDemo) {
    absl::StatusOr<std::unique_ptr<unwindd::service::DemoProcess>> d =
        unwindd::service::DemoProcess::Start();
    if (!d.ok()) return Fail(d.status().message());
    demo = *std::move(d);
    pid = demo->pid();
  }
  if (cmd.core_backtrace || !cmd.minidump_out.empty()) {
    return Fail("--format=core-backtrace and --minidump are not supported with --server");
  }
  absl::StatusOr<v1::UnwindResponse> response;
  switch (cmd.kind) {
    case Command::Kind::kPid:
    case Command::Kind::kDemo:
      response = UnwindPid(*stub, cmd, pid);
      break;
    case Command::Kind::kCore:
    case Command::Kind::kMinidump:  // UnwindCore takes minidumps too
      response = UnwindCore(*stub, cmd, absl::StartsWith(target, "unix:"));
      break;
    default:
      return Fail("this command is not supported with --server");
  }
  if (!response.ok()) {
    if (absl::IsUnavailable(response.status())) {
      return Fail(absl::StrCat("cannot reach unwindd at ", target, ": ",
                               response.status().message()));
    }
    return Fail(response.status().message());
  }
  absl::StatusOr<unwindd::unwinder::ProcessStacks> stacks =
      unwindd::service::FromProto(*response);
  if (!stacks.ok()) return Fail(stacks.status().message());
  // As `unwind core` does: the core's report in the output, and every
  // problem with it on stderr too.
  std::optional<unwindd::service::CoreSummary> core;
  std::optional<unwindd::service::CrashSignature> signature;
  const unwindd::service::ModulePackages packages =
      unwindd::service::PackagesFromProto(*response);
  if (cmd.kind == Command::Kind::kCore || cmd.kind == Command::Kind::kMinidump) {
    signature = unwindd::service::FromProto(response->signature());
    core = unwindd::service::FromProto(response->core(), cmd.core);
    for (const std::string& w : core->warnings) {
      std::fprintf(stderr, "unwind: warning: %s\n", w.c_str());
    }
  }
  const unwindd::service::CoreSummary* summary = core ? &*core : nullptr;
  // --symbols: here, from the files the server used, where this client may
  // read them (the server stays symbol-free); never through debuginfod.
  unwindd::service::FrameSymbols symbols;
  if (cmd.symbols) {
    Command local = cmd;
    local.no_debuginfod = true;
    local.debuginfod_urls.clear();
    absl::StatusOr<std::unique_ptr<unwindd::service::Binaries>> b =
        unwindd::service::Binaries::FromCommand(local);
    if (!b.ok()) return Fail(b.status().message());
    symbols = (*b)->Symbolize(*stacks);
  }
  const unwindd::service::FrameSymbols* sym = cmd.symbols ? &symbols : nullptr;
  const unwindd::service::OutputExtras extras{
      .core = summary, .symbols = sym, .signature = signature ? &*signature : nullptr,
      .packages = &packages};
  std::string out = cmd.format == unwindd::service::Format::kJson
                        ? unwindd::service::FormatJson(*stacks, extras)
                        : unwindd::service::FormatText(*stacks, extras);
  std::fwrite(out.data(), 1, out.size(), stdout);
  return std::fflush(stdout) == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<absl::string_view> args;
  std::string server;
  TlsFlags tls;
  for (int i = 1; i < argc; ++i) {
    absl::string_view a = argv[i];
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
  absl::StatusOr<std::string> target = unwindd::service::RemoteTarget(server);
  absl::StatusOr<Command> cmd = unwindd::service::ParseCommandLine(args);
  if (!target.ok() || !cmd.ok()) {
    Fail(!target.ok() ? target.status().message() : cmd.status().message());
    std::fputs(unwindd::service::kUsage, stderr);
    return 2;
  }
  if (cmd->kind == Command::Kind::kHelp) {
    std::fputs(unwindd::service::kUsage, stdout);
    return 0;
  }
  return Run(*target, tls, *cmd);
}

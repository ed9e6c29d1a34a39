// A minimal unwindd client in a process of its own: the authorization tests
// copy it to /tmp and run it as another user (setpriv), the load benchmark
// kills it in the middle of a stream. One RPC, then one line on stdout,
// "<CODE> frames=<N>", where CODE is the gRPC status (or, for snapshots, the
// sample's error) by name, e.g. "PERMISSION_DENIED frames=0".
//
//   test_client unix:/tmp/x/unwindd.sock process PID
//   test_client unix:/tmp/x/unwindd.sock snapshot PID   (pid only, no mappings)
//   test_client unix:/tmp/x/unwindd.sock core PATH      (a path on the server)
//   test_client unix:/tmp/x/unwindd.sock stream PID     (samples until killed;
//                                                        "streaming" once going)
#include <cstdio>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "absl/status/status.h"
#include "grpcpp/grpcpp.h"
#include "proto/unwinder.grpc.pb.h"

namespace {

namespace v1 = unwindd::v1;

int Print(int code, int frames) {
  std::printf("%s frames=%d\n",
              absl::StatusCodeToString(static_cast<absl::StatusCode>(code)).c_str(),
              frames);
  return 0;
}

int CountFrames(const v1::UnwindResponse& r) {
  int n = 0;
  for (const v1::ThreadStack& t : r.threads()) n += t.frames_size();
  return n;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: test_client ADDRESS process|snapshot|core|stream ARG\n");
    return 2;
  }
  auto stub = v1::Unwinder::NewStub(
      grpc::CreateChannel(argv[1], grpc::InsecureChannelCredentials()));
  std::string what = argv[2];
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
  if (what == "process") {
    v1::UnwindProcessRequest r;
    r.set_pid(std::atoi(argv[3]));
    v1::UnwindResponse resp;
    grpc::Status s = stub->UnwindProcess(&context, r, &resp);
    return Print(s.error_code(), CountFrames(resp));
  }
  if (what == "snapshot") {
    auto stream = stub->UnwindSnapshots(&context);
    v1::SnapshotRequest r;
    r.set_pid(std::atoi(argv[3]));
    r.set_arch(v1::ARCH_X86_64);
    (*r.mutable_dwarf_registers()->mutable_values())[7] = 0x1000;   // rsp
    (*r.mutable_dwarf_registers()->mutable_values())[16] = 0x2000;  // rip
    v1::SnapshotResponse resp;
    if (!stream->Write(r) || !stream->Read(&resp)) {
      stream->WritesDone();
      return Print(stream->Finish().error_code(), 0);
    }
    stream->WritesDone();
    stream->Finish();
    return Print(resp.has_error() ? resp.error().code() : 0, resp.stack().frames_size());
  }
  if (what == "stream") {
    grpc::ClientContext forever;
    auto stream = stub->UnwindSnapshots(&forever);
    v1::SnapshotRequest r;
    r.set_pid(std::atoi(argv[3]));
    r.set_arch(v1::ARCH_X86_64);
    (*r.mutable_dwarf_registers()->mutable_values())[7] = 0x1000;
    (*r.mutable_dwarf_registers()->mutable_values())[16] = 0x2000;
    for (uint64_t i = 0;; ++i) {
      r.set_sample_id(i);
      if (!stream->Write(r)) break;
      // Every other sample is left unread, so the server has a response in
      // flight when we are killed.
      v1::SnapshotResponse resp;
      if (i % 2 == 1 && !stream->Read(&resp)) break;
      if (i == 10) {
        std::printf("streaming\n");
        std::fflush(stdout);
      }
    }
    return Print(stream->Finish().error_code(), 0);
  }
  if (what == "core") {
    auto writer = [&](v1::UnwindResponse* resp) {
      auto w = stub->UnwindCore(&context, resp);
      v1::UnwindCoreRequest r;
      r.mutable_options()->set_server_path(argv[3]);
      w->Write(r);
      w->WritesDone();
      return w->Finish();
    };
    v1::UnwindResponse resp;
    grpc::Status s = writer(&resp);
    return Print(s.error_code(), CountFrames(resp));
  }
  std::fprintf(stderr, "test_client: unknown request '%s'\n", what.c_str());
  return 2;
}

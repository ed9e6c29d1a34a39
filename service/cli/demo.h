// The bundled demo process for `unwind demo`: testdata/demo, started with its
// stdout on a pipe, and considered ready once it has printed "ready" and all
// its threads sleep in the kernel. Killed and reaped when the handle goes.
//
//   absl::StatusOr<std::unique_ptr<DemoProcess>> demo = DemoProcess::Start();
//   Unwind((*demo)->pid());
#ifndef UNWINDD_SERVICE_CLI_DEMO_H_
#define UNWINDD_SERVICE_CLI_DEMO_H_

#include <sys/types.h>

#include <memory>
#include <string>

#include "absl/status/statusor.h"

namespace unwindd::service {

class DemoProcess {
 public:
  static absl::StatusOr<std::unique_ptr<DemoProcess>> Start();
  ~DemoProcess();

  pid_t pid() const { return pid_; }

 private:
  explicit DemoProcess(pid_t pid) : pid_(pid) {}
  pid_t pid_;
};

// Where the demo binary is: next to this program in Bazel's runfiles tree,
// or in bazel-bin/testdata.
absl::StatusOr<std::string> FindDemoBinary();

}  // namespace unwindd::service

#endif  // UNWINDD_SERVICE_CLI_DEMO_H_

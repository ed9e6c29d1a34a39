// What `unwind`'s --debug-dir, --debuginfod and --symbols become: the
// locate options the unwinder uses to find files and debug information
// elsewhere (unwinder/locate), and the symbolizer for --symbols.
//
//   absl::StatusOr<std::unique_ptr<Binaries>> b = Binaries::FromCommand(cmd);
//   options.locate = &(*b)->locate_options();
//   ... UnwindTarget ...
//   FrameSymbols symbols = (*b)->Symbolize(stacks);
#ifndef UNWINDD_SERVICE_CLI_BINARIES_H_
#define UNWINDD_SERVICE_CLI_BINARIES_H_

#include <memory>

#include "absl/status/statusor.h"
#include "service/cli/args.h"
#include "service/cli/output.h"
#include "service/cli/symbols/symbolizer.h"
#include "unwinder/locate/debuginfod.h"
#include "unwinder/locate/locator.h"
#include "unwinder/unwinder.h"

namespace unwindd::service {

class Binaries {
 public:
  // debuginfod: --debuginfod's servers, else $DEBUGINFOD_URLS (as eu-stack
  // and gdb), none with --no-debuginfod. Call before starting threads (see
  // locate::Debuginfod::Create).
  static absl::StatusOr<std::unique_ptr<Binaries>> FromCommand(const Command& cmd);

  const locate::LocateOptions& locate_options() const { return options_; }
  bool debuginfod() const { return debuginfod_ != nullptr; }

  // The symbol of every frame ("" where none): frame 0 and the frame after
  // a signal frame are instruction pointers, the others return addresses.
  FrameSymbols Symbolize(const unwinder::ProcessStacks& stacks);

 private:
  Binaries() = default;
  std::unique_ptr<locate::Debuginfod> debuginfod_;
  locate::LocateOptions options_;
  std::unique_ptr<cli::Symbolizer> symbolizer_;
};

}  // namespace unwindd::service

#endif  // UNWINDD_SERVICE_CLI_BINARIES_H_

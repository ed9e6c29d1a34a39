// What the unwinder unwinds: threads with initial registers, one address
// space, and its mappings. Live processes, core files and snapshots all look
// the same through it (elfutils' Dwfl_Thread_Callbacks play this role).
//
//   absl::StatusOr<std::unique_ptr<Target>> t = AttachLive(pid, {});
//   for (pid_t tid : (*t)->Threads()) {
//     absl::StatusOr<arch::RegisterSet> regs = (*t)->InitialRegisters(tid);
//   }
#ifndef UNWINDD_PROC_TARGET_H_
#define UNWINDD_PROC_TARGET_H_

#include <sys/types.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "arch/arch.h"
#include "arch/pac_mask.h"
#include "arch/register_set.h"
#include "memory/memory.h"
#include "proc/maps.h"
#include "proc/signal_info.h"

namespace unwindd::proc {

// Generated code as a module: an ELF image laid out so that the mapping it
// describes maps its code (proc/jit/genelf.h), and the runtime's name for
// the code.
struct CodeImage {
  std::shared_ptr<const std::vector<uint8_t>> elf;
  std::string name;
};

class Target {
 public:
  virtual ~Target() = default;

  virtual arch::Arch arch() const = 0;
  // 0 when there is no process (snapshots without a pid).
  virtual pid_t pid() const = 0;
  // Threads to unwind, in a stable order (the main thread first).
  virtual std::vector<pid_t> Threads() const = 0;
  // Registers of the thread's innermost frame. NotFound if the thread has
  // gone (exited since it was listed): reported as stop "thread_gone".
  virtual absl::StatusOr<arch::RegisterSet> InitialRegisters(pid_t tid) = 0;
  // The whole address space (target addresses).
  virtual memory::Memory& memory() = 0;
  virtual const std::vector<Mapping>& mappings() const = 0;
  // Paths to try, in order, to open the ELF file behind a file-backed
  // mapping (e.g. the path itself, /proc/PID/map_files/START-END,
  // /proc/PID/root/PATH). Empty for anonymous and special mappings.
  virtual std::vector<std::string> FileCandidates(const Mapping& m) const = 0;
  // aarch64 pointer-authentication masks (NT_ARM_PAC_MASK from ptrace or the
  // core), if the target reported them; arch/pac.h falls back to the
  // address-space size otherwise.
  virtual std::optional<arch::PacMask> pac_mask() const { return std::nullopt; }
  // The signal the thread was handling when the target was captured (a
  // core's NT_PRSTATUS pr_cursig and NT_SIGINFO); nullopt if none or unknown.
  virtual std::optional<SignalInfo> ThreadSignal(pid_t tid) const {
    return std::nullopt;
  }
  // Why the thread's registers are not those of a thread held still, for
  // the walk's stop_detail ("" for a normal one): a live thread that did
  // not stop in time (LiveTarget's stop_timeout), walked from the pc and
  // sp the kernel shows for it.
  virtual std::string ThreadNote(pid_t tid) const { return ""; }
  // The GNU build-id (lowercase hex) the target itself records for the ELF
  // file mapped by `m` (a core's dumped ELF headers); "" when unknown. The
  // unwinder does not use a file whose build-id differs (module_mismatch).
  virtual std::string RecordedBuildId(const Mapping& m) const { return ""; }
  // What describes the code mapped by `m` where no file does: generated
  // code a runtime announced (a jitdump's, the GDB JIT interface's). The
  // unwinder opens its ELF image as the mapping's module. Null for other
  // mappings.
  virtual std::shared_ptr<const CodeImage> CodeImageFor(const Mapping& m) const {
    return nullptr;
  }
};

// A Target that answers everything by asking `inner`: the base of targets
// that change one thing about another (the memory reads they count, the
// PAC mask a test reports). `inner` must outlive it.
class ForwardingTarget : public Target {
 public:
  explicit ForwardingTarget(Target& inner) : inner_(inner) {}

  arch::Arch arch() const override { return inner_.arch(); }
  pid_t pid() const override { return inner_.pid(); }
  std::vector<pid_t> Threads() const override { return inner_.Threads(); }
  absl::StatusOr<arch::RegisterSet> InitialRegisters(pid_t tid) override {
    return inner_.InitialRegisters(tid);
  }
  memory::Memory& memory() override { return inner_.memory(); }
  const std::vector<Mapping>& mappings() const override { return inner_.mappings(); }
  std::vector<std::string> FileCandidates(const Mapping& m) const override {
    return inner_.FileCandidates(m);
  }
  std::optional<arch::PacMask> pac_mask() const override { return inner_.pac_mask(); }
  std::optional<SignalInfo> ThreadSignal(pid_t tid) const override {
    return inner_.ThreadSignal(tid);
  }
  std::string ThreadNote(pid_t tid) const override { return inner_.ThreadNote(tid); }
  std::string RecordedBuildId(const Mapping& m) const override {
    return inner_.RecordedBuildId(m);
  }
  std::shared_ptr<const CodeImage> CodeImageFor(const Mapping& m) const override {
    return inner_.CodeImageFor(m);
  }

 private:
  Target& inner_;
};

}  // namespace unwindd::proc

#endif  // UNWINDD_PROC_TARGET_H_

#include "service/server/unwind.h"

#include <utility>

#include "proc/jit/jit_code.h"
#include "proc/live_target.h"

namespace unwindd::service {
namespace {

class CountingMemory final : public memory::Memory {
 public:
  CountingMemory(memory::Memory& inner, std::atomic<uint64_t>* counter)
      : inner_(inner), counter_(counter) {}
  size_t Read(uint64_t addr, absl::Span<uint8_t> dst) override {
    size_t n = inner_.Read(addr, dst);
    if (counter_ != nullptr) counter_->fetch_add(n, std::memory_order_relaxed);
    return n;
  }
  // A snapshot's stack copy is not read from the process: not counted.
  HeldBytes HeldBytesAt(uint64_t addr) override { return inner_.HeldBytesAt(addr); }

 private:
  memory::Memory& inner_;
  std::atomic<uint64_t>* counter_;
};

class CountingTarget final : public proc::ForwardingTarget {
 public:
  CountingTarget(proc::Target& inner, std::atomic<uint64_t>* counter)
      : ForwardingTarget(inner), memory_(inner.memory(), counter) {}
  memory::Memory& memory() override { return memory_; }

 private:
  CountingMemory memory_;
};

}  // namespace

std::unique_ptr<proc::Target> CountReads(proc::Target& target,
                                         std::atomic<uint64_t>* counter) {
  return std::make_unique<CountingTarget>(target, counter);
}

UnwindResult UnwindAndDescribe(proc::Target& target, const UnwindEnv& env,
                               const unwinder::UnwindOptions& options) {
  std::unique_ptr<proc::Target> counted = CountReads(target, env.bytes_read);
  // Code a JIT runtime announced in a jitdump the target maps, read within
  // the request's bound; a dump that cannot be used leaves its code to the
  // frame-pointer rule, as before.
  std::vector<proc::jit::JitRegion> regions =
      proc::jit::FindJitCode(target, nullptr, kMaxJitDumpBytesPerRequest);
  if (regions.empty()) {
    return Describe(unwinder::UnwindTarget(*counted, *env.cache, options), target);
  }
  std::unique_ptr<proc::Target> jit = proc::jit::WithJitCode(*counted, std::move(regions));
  return Describe(unwinder::UnwindTarget(*jit, *env.cache, options), *jit);
}

UnwindResult Describe(unwinder::ProcessStacks stacks, const proc::Target& target) {
  UnwindResult r;
  r.stacks = std::move(stacks);
  r.module_offsets.reserve(r.stacks.modules.size());
  // A module's start is the start of its first mapping.
  for (const unwinder::ModuleInfo& m : r.stacks.modules) {
    uint64_t offset = 0;
    for (const proc::Mapping& mapping : target.mappings()) {
      if (mapping.start == m.start) {
        offset = mapping.offset;
        break;
      }
    }
    r.module_offsets.push_back(offset);
  }
  return r;
}

absl::StatusOr<UnwindResult> UnwindLiveProcess(const Caller& caller,
                                               const LiveRequest& request,
                                               const UnwindEnv& env) {
  absl::Status allowed = CheckProcessAccess(caller, request.pid);
  if (!allowed.ok()) return allowed;
  absl::StatusOr<std::unique_ptr<proc::Target>> target =
      proc::AttachLive(request.pid, request.tids, {request.stop_timeout});
  if (!target.ok()) return target.status();
  // The authoritative check: the process cannot change identity while it
  // is stopped, and its pid cannot be reused while we trace it.
  allowed = CheckProcessAccess(caller, request.pid);
  if (!allowed.ok()) return allowed;  // detaches on the way out
  return UnwindAndDescribe(**target, env, request.options);
}

}  // namespace unwindd::service

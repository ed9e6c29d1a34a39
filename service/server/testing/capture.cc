#include "service/server/testing/capture.h"

#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "proc/live_target.h"
#include "proc/maps.h"
#include "unwinder/module.h"

namespace unwindd::service::testing {
namespace {

// perf_event_x86_regs order: AX BX CX DX SI DI BP SP IP, then R8-R15 at 16.
constexpr int kPerfToDwarf[] = {0, 3, 2, 1, 4, 5, 6, 7, 16};

}  // namespace

absl::StatusOr<std::vector<v1::SnapshotRequest>> CaptureSamples(
    pid_t pid, const CaptureOptions& options) {
  std::vector<v1::SnapshotRequest> out;
  absl::StatusOr<std::unique_ptr<proc::Target>> target = proc::AttachLive(pid, {});
  if (!target.ok()) return target.status();
  std::vector<v1::Mapping> mappings;
  for (const proc::Mapping& m : (*target)->mappings()) {
    v1::Mapping pm;
    pm.set_start(m.start);
    pm.set_end(m.end);
    pm.set_offset(m.offset);
    pm.set_path(m.path);
    pm.set_read(m.read);
    pm.set_write(m.write);
    pm.set_exec(m.exec);
    if (options.identities) {
      pm.set_inode(m.inode);
      pm.set_dev_major(m.dev_major);
      pm.set_dev_minor(m.dev_minor);
    }
    if (options.mappings == CaptureOptions::Mappings::kWithBuildIds &&
        m.IsFileBacked()) {
      absl::StatusOr<std::shared_ptr<unwinder::Module>> mod =
          unwinder::Module::OpenFile(m.path);
      if (mod.ok()) pm.set_build_id((*mod)->build_id());
    }
    mappings.push_back(std::move(pm));
  }
  uint64_t index = 0;
  for (pid_t tid : (*target)->Threads()) {
    absl::StatusOr<arch::RegisterSet> regs = (*target)->InitialRegisters(tid);
    if (!regs.ok()) return regs.status();
    v1::SnapshotRequest r;
    r.set_sample_id(index++);
    if (options.with_pid) r.set_pid(pid);
    r.set_tid(tid);
    r.set_arch(v1::ARCH_X86_64);
    if (options.perf_registers) {
      uint64_t mask = 0;
      for (int bit = 0; bit < 9; ++bit) mask |= uint64_t{1} << bit;
      for (int bit = 16; bit < 24; ++bit) mask |= uint64_t{1} << bit;
      r.mutable_perf_registers()->set_mask(mask);
      for (int bit = 0; bit < 24; ++bit) {
        if (!((mask >> bit) & 1)) continue;
        int dwarf = bit < 9 ? kPerfToDwarf[bit] : 8 + (bit - 16);
        r.mutable_perf_registers()->add_values(regs->Get(dwarf));
      }
    } else {
      for (int reg = 0; reg < 17; ++reg) {
        if (regs->Valid(reg)) (*r.mutable_dwarf_registers()->mutable_values())[reg] = regs->Get(reg);
      }
    }
    // Like perf: from SP up, as much as the stack mapping holds (capped).
    uint64_t sp = regs->sp(), size = 0;
    for (const proc::Mapping& m : (*target)->mappings()) {
      if (m.Contains(sp)) size = std::min<uint64_t>(m.end - sp, options.max_stack);
    }
    std::string stack(size, '\0');
    absl::Status s = (*target)->memory().ReadFully(
        sp, absl::MakeSpan(reinterpret_cast<uint8_t*>(stack.data()), stack.size()));
    if (!s.ok()) return s;
    r.set_stack_address(sp);
    r.set_stack(std::move(stack));
    if (options.mappings != CaptureOptions::Mappings::kNone) {
      for (const v1::Mapping& m : mappings) *r.add_mappings() = m;
    }
    out.push_back(std::move(r));
  }
  return out;
}

}  // namespace unwindd::service::testing

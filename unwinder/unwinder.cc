#include "unwinder/unwinder.h"

#include <algorithm>
#include <memory>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "arch/frame_pointer.h"
#include "arch/pac.h"
#include "arch/signal_frame.h"
#include "memory/stack_window.h"
#include "unwinder/cfi/apply.h"
#include "unwinder/cfi/compact_row.h"
#include "unwinder/fp/frame_pointer.h"

namespace unwindd::unwinder {
namespace {

// Frames reserved up front: most stacks fit, deeper ones grow the vector.
constexpr int kFramesReserved = 64;

// One step's outcome: the caller's registers and how they were found, or
// the reason there is no caller.
struct Step {
  bool ok = false;
  arch::RegisterSet caller;
  Method method = Method::kEhFrame;
  bool signal_frame = false;  // the caller's pc is an instruction pointer
  StopReason stop = StopReason::kEndOfStack;
  std::string detail;
};

Step Stop(StopReason reason, std::string detail) {
  Step s;
  s.stop = reason;
  s.detail = std::move(detail);
  return s;
}

Step Stop(const absl::Status& s) {
  return Stop(StopForStatus(StopPhase::kStep, s), s.ToString());
}

// The kernel's sigreturn trampoline of the target's arch, recognised by its
// code bytes, and the interrupted registers read from the signal frame. Tried
// before CFI, as gdb's tramp-frame sniffers are: the trampoline may have no
// CFI (qemu-user's, musl's), or CFI that skips the interrupted PC (the
// aarch64 vDSO's restores only the frame record x29/x30).
// `code` is where the instruction bytes are read: the module's image when
// the PC is in one (no syscall per frame), else target memory.
// `sp_exact` is false when the frame was reached through a frame record
// that gives only a lower bound of its sp (aarch64, arch/frame_pointer.h):
// the signal frame is at the exact sp, so the walk stops there rather than
// read registers from the wrong place.
Step SignalTrampolineStep(memory::Memory& code, memory::Memory& memory,
                          const arch::RegisterSet& regs, arch::FrameAddress at,
                          bool sp_exact) {
  if (!arch::IsSigreturnTrampoline(regs.arch(), code, at)) {
    return Stop(StopReason::kNoUnwindInfo, "");
  }
  if (!sp_exact) {
    Step s = Stop(StopReason::kNoUnwindInfo,
                  "signal frame reached through a frame record, which gives "
                  "no exact stack pointer on this arch");
    s.ok = false;
    s.signal_frame = true;  // recognised: no other source may try
    return s;
  }
  absl::StatusOr<arch::RegisterSet> caller =
      arch::RestoreFromSigframe(code, memory, regs, at);
  if (!caller.ok()) return Stop(caller.status());
  Step s;
  s.ok = true;
  s.caller = *caller;
  s.method = Method::kSignal;
  s.signal_frame = true;
  return s;
}

// A module's file image seen at its target addresses, for reading code.
class ModuleCodeMemory final : public memory::Memory {
 public:
  explicit ModuleCodeMemory(const MappedModule& mm) : mm_(mm) {}
  size_t Read(uint64_t addr, absl::Span<uint8_t> dst) override {
    absl::Span<const uint8_t> bytes = mm_.module->ImageBytesAt(addr - mm_.load_bias);
    size_t n = std::min(bytes.size(), dst.size());
    std::copy_n(bytes.begin(), n, dst.begin());
    return n;
  }

 private:
  const MappedModule& mm_;
};

// What a step needs besides the frame itself.
struct StepContext {
  const SourcePolicy& policy;
  arch::FrameAddress at;  // the frame's address (target address space)
  const std::vector<proc::Mapping>& mappings;
  // Where a step whose row is compact is remembered (step_cache.h).
  StepCache& cache;
  uint16_t policy_code;
  int module_index;
  // False after a frame-record step that gives only a lower bound of sp.
  bool sp_exact;
  // The frame's SP when its PC is where the thread was (frame 0, or after
  // a signal frame), else 0: save slots below it were popped already
  // (cfi/rules.h, ReadCalleeSaved).
  uint64_t restored_below;
};

Step ApplyStep(const Row& row, Method method, memory::Memory& memory,
               const arch::RegisterSet& regs, uint64_t load_bias,
               uint64_t restored_below) {
  absl::StatusOr<ApplyResult> applied =
      ApplyRow(row, regs, memory, load_bias, restored_below);
  if (!applied.ok()) return Stop(applied.status());
  if (applied->ra_undefined) return Stop(StopReason::kEndOfStack, "");
  Step s;
  s.ok = true;
  s.caller = applied->caller;
  s.signal_frame = row.signal_frame;
  s.method = s.signal_frame ? Method::kSignal : method;
  return s;
}

// The frame-pointer chain, once the frame record passed its checks (aligned,
// in the stack that holds sp, above sp). A zero frame pointer ends the chain;
// a frame pointer that fails the checks is no unwind information at all.
Step FramePointerStep(memory::Memory& memory, const arch::RegisterSet& regs,
                      const StepContext& ctx) {
  fp::FrameRecordCheck check =
      fp::CheckFrameRecord(regs, fp::StackBoundsFor(ctx.mappings, regs.sp()));
  switch (check.verdict) {
    case fp::FrameRecordCheck::Verdict::kRecord:
      break;
    case fp::FrameRecordCheck::Verdict::kEndOfChain:
      return Stop(StopReason::kEndOfStack, "frame pointer is 0: end of chain");
    case fp::FrameRecordCheck::Verdict::kNoRecord:
      return Stop(StopReason::kNoUnwindInfo, std::move(check.why));
  }
  return ApplyStep(fp::FramePointerRow(regs.arch()), Method::kFramePointer,
                   memory, regs, 0, 0);
}

// Not inlined into the step loop: the loop's warm path (a cached compact
// row) then keeps its state in registers instead of spilling it around
// this general path's code.
[[gnu::noinline]] Step StepOnce(MappedModule* mm, memory::Memory& memory,
                                const arch::RegisterSet& regs, const StepContext& ctx) {
  if (mm != nullptr && mm->module != nullptr) {
    ModuleCodeMemory code(*mm);
    Step s = SignalTrampolineStep(code, memory, regs, ctx.at, ctx.sp_exact);
    if (s.ok || s.signal_frame) return s;
  } else if (Step s = SignalTrampolineStep(memory, memory, regs, ctx.at, ctx.sp_exact);
             s.ok || s.signal_frame) {
    return s;
  }
  if (mm == nullptr || mm->module == nullptr) {
    // Code no file describes (JIT code, anonymous executable memory) or a
    // file that could not be opened: only the frame-pointer chain can help.
    if (ctx.policy.Contains(Source::kFramePointer)) {
      return FramePointerStep(memory, regs, ctx);
    }
    if (mm == nullptr) {
      return Stop(StopReason::kNoUnwindInfo,
                  absl::StrFormat("no module maps 0x%x", ctx.at.LookupAddress()));
    }
    return Stop(StopReason::kNoUnwindInfo, mm->open_status.ToString());
  }
  const arch::FrameAddress file_at = ctx.at.Rebased(mm->load_bias);
  // A Go stack switch: the frames above it are on another stack. Go's
  // traceback stops there unless it is where the thread is.
  const absl::string_view go_switch = mm->module->GoStackSwitchAt(file_at.LookupAddress());
  if (!go_switch.empty() && ctx.restored_below == 0) {
    return Stop(StopReason::kEndOfStack,
                absl::StrFormat("Go stack switch (%s): the frames above it are on another stack",
                                go_switch));
  }
  SourcePolicy policy = ctx.policy;
  Step s = Stop(StopReason::kNoUnwindInfo, "");
  for (int attempt = 0; attempt < SourcePolicy::kMaxSources; ++attempt) {
    absl::StatusOr<std::shared_ptr<const ModuleRow>> row =
        mm->module->FindSharedRow(file_at, policy);
    if (!row.ok()) {
      return attempt == 0 ? Stop(row.status()) : s;
    }
    if ((*row)->method != Method::kFramePointer) {
      // Not a trampoline (checked above, on code that cannot change) and
      // the first source's row: the next time this PC comes up, the cache
      // answers.
      if (attempt == 0 && go_switch.empty()) {
        if (std::optional<CompactRow> c = CompactRow::From((*row)->row, regs.info())) {
          ctx.cache.Put(RowKey(ctx.at, ctx.policy_code), ctx.module_index,
                        (*row)->method, *c);
        }
      }
      return ApplyStep((*row)->row, (*row)->method, memory, regs, mm->load_bias,
                       ctx.restored_below);
    }
    s = FramePointerStep(memory, regs, ctx);
    if (s.ok || s.stop == StopReason::kEndOfStack) return s;
    // The chain is broken at this frame: the sources after the one that
    // offered it (fp itself, or sframe for SFRAME_F_FRAME_POINTER) may know.
    policy = policy.After((*row)->source);
    if (policy.sources().empty()) return s;
  }
  return s;
}

// Says, when an unwind ends, how far up its stack it read.
class StackHighReporter {
 public:
  StackHighReporter(const memory::StackWindow& stack, uint64_t* out)
      : stack_(stack), out_(out) {}
  ~StackHighReporter() { *out_ = stack_.highest_read(); }

 private:
  const memory::StackWindow& stack_;
  uint64_t* out_;
};

// Remembers, when an unwind ends, how far up its stack it read.
class StackHintKeeper {
 public:
  StackHintKeeper(AddressSpace& space, const memory::StackWindow& stack,
                  uint64_t stack_lo)
      : space_(space), stack_(stack), stack_lo_(stack_lo) {}
  ~StackHintKeeper() {
    if (uint64_t top = stack_.highest_read(); top != 0) {
      space_.set_stack_top_hint(stack_lo_, top);
    }
  }

 private:
  AddressSpace& space_;
  const memory::StackWindow& stack_;
  const uint64_t stack_lo_;
};

// A thread's first stack window, read together with the other threads'
// (UnwindTarget); null bytes: none, the walk reads its own.
struct PrefetchedStack {
  std::unique_ptr<uint8_t[]> bytes;
  uint64_t capacity = 0;
  uint64_t filled = 0;
};

void UnwindWithStack(AddressSpace& space, memory::Memory& memory,
                     const arch::RegisterSet& initial, const UnwindOptions& options,
                     PrefetchedStack* prefetched, ThreadStack* result);

}  // namespace

ThreadStack UnwindRegisters(AddressSpace& space, memory::Memory& memory,
                            const arch::RegisterSet& initial,
                            const UnwindOptions& options) {
  ThreadStack out;
  UnwindRegistersInto(space, memory, initial, options, &out);
  return out;
}

void UnwindRegistersInto(AddressSpace& space, memory::Memory& memory,
                         const arch::RegisterSet& initial, const UnwindOptions& options,
                         ThreadStack* result) {
  UnwindWithStack(space, memory, initial, options, nullptr, result);
}

namespace {

// The rest of a walk that has reached frame `at` of `last` (same PC and
// SP, `regs` its registers, already in `out`): `last`'s frames from there,
// if what it needs of `regs` holds and every word it depends on reads the
// same through `read_word` (walk_replay.h). False, with nothing changed
// (not even the stack's highest read), otherwise.
template <typename ReadWord>
bool ReplayRest(const WalkReplay::Record& last, int at, const arch::RegisterSet& regs,
                memory::StackWindow& stack, ReadWord& read_word, ThreadStack& out) {
  const WalkReplay::Check* checks = last.checks.data();
  const Frame* frames = last.frames.data();
  if (checks[at].need_reg >= 0 && (!regs.Valid(checks[at].need_reg) ||
                                   regs.GetUnchecked(checks[at].need_reg) !=
                                       last.extras[at].need_value)) {
    return false;
  }
  const uint64_t mark = stack.high_mark();
  bool same = true;
  uint64_t v = 0;
  for (int i = at; i > 0 && same; --i) {
    const Frame& caller = frames[i - 1];
    same = read_word(caller.sp + checks[i].ra_offset, &v) && v == caller.pc &&
           (!checks[i].slot || (read_word(caller.sp + checks[i].slot_offset, &v) &&
                                v == last.extras[i].slot_value));
  }
  if (same && last.end == WalkReplay::End::kZeroPc) {
    same = read_word(last.end_cfa + checks[0].ra_offset, &v) && v == 0;
  }
  if (!same) {
    stack.reset_high_mark(mark);
    return false;
  }
  // Appended one by one (the record is root first): resize would first
  // zero what this overwrites.
  out.frames.reserve(out.frames.size() + at);
  for (int i = at - 1; i >= 0; --i) out.frames.push_back(frames[i]);
  out.stop = last.stop;
  out.stop_detail = last.stop_detail;
  return true;
}

void UnwindWithStack(AddressSpace& space, memory::Memory& memory,
                     const arch::RegisterSet& initial, const UnwindOptions& options,
                     PrefetchedStack* prefetched, ThreadStack* result) {
  ThreadStack& out = *result;
  out.frames.clear();
  out.stop = StopReason::kEndOfStack;
  out.stop_detail.clear();
  out.signal.reset();
  const int max_frames = std::clamp(options.max_frames, 1, kMaxMaxFrames);
  out.frames.reserve(std::min(max_frames, kFramesReserved));
  const arch::ArchInfo& info = initial.info();
  // The thread's stack, read in bulk (or used in place: a snapshot's copy).
  memory::StackWindow stack(memory, initial.sp());
  out.stack_high = 0;
  const StackHighReporter report_high(stack, &out.stack_high);
  std::optional<StackHintKeeper> keep_hint;
  if (!stack.holds_copy()) {
    const fp::StackBounds bounds = fp::StackBoundsFor(space.mappings(), initial.sp());
    if (bounds.known) {
      if (prefetched != nullptr && prefetched->bytes != nullptr) {
        stack.Adopt(bounds.lo, bounds.hi, std::move(prefetched->bytes),
                    prefetched->capacity, prefetched->filled);
      }
      stack.ReadAhead(bounds.lo, bounds.hi, space.stack_top_hint(bounds.lo));
      keep_hint.emplace(space, stack, bounds.lo);
    }
  }
  auto read_word = [&stack, size = info.address_size](uint64_t addr, uint64_t* v) {
    return stack.ReadWordFast(addr, size, v);
  };
  StepCache& cache = space.step_cache();
  const uint16_t policy_code = options.sources.Code();

  // Kept in locals: the loop's stores to `regs` would otherwise make the
  // compiler reload them from their objects on every frame.
  const CompactRow::ArchFacts facts(info);
  const int pc_reg = info.pc;
  const int sp_reg = info.sp;
  const uint64_t code_address_mask = space.code_address_mask();
  const arch::FramePointerRule& fp_rule = arch::GetFramePointerRule(initial.arch());
  const std::atomic<bool>* const cancel = options.cancel;
  arch::RegisterSet regs = initial;
  // Frame 0 is where the thread is, not a return address.
  bool instruction_pointer = true;
  Method method = Method::kInitial;
  // The thread's record (walk_replay.h): `last` is read until this walk
  // ends, and then, however it ends, the walk records itself or reports
  // how the record served it.
  WalkReplay* replay = options.thread_key != 0 && code_address_mask == 0
                           ? &space.walk_replay()
                           : nullptr;
  const WalkReplay::Mode mode =
      replay != nullptr ? replay->Begin(options.thread_key, sp_reg) : WalkReplay::Mode::kNone;
  if (mode == WalkReplay::Mode::kNone) replay = nullptr;
  // Only a recording walk tells `replay` its frames and steps.
  WalkReplay* const recording = mode == WalkReplay::Mode::kRecord ? replay : nullptr;
  const WalkReplay::Record* last = nullptr;
  int cursor = -1;  // last->frames index: the innermost not below this frame's SP
  int replay_tries = 0;
  struct Recorder {
    WalkReplay* replay;
    bool recording;
    uint64_t key;
    const ThreadStack& out;
    int junction = -1;   // the index in `last` the walk took its rest from
    size_t stepped = 0;  // the frames walked before it
    WalkReplay::End end = WalkReplay::End::kNone;  // how a fast step found no caller
    uint64_t end_cfa = 0;
    ~Recorder() {
      if (replay == nullptr) return;
      if (recording) {
        replay->Commit(key, out.frames.data(), junction, out.stop, out.stop_detail, end,
                       end_cfa);
      } else {
        replay->Reused(junction, stepped);
      }
    }
  } recorder{replay, recording != nullptr, options.thread_key, out};
  if (replay != nullptr) {
    last = replay->last();
    if (last != nullptr) cursor = static_cast<int>(last->frames.size()) - 1;
  }
  while (true) {
    // Every step leaves a valid PC (or stops); SP may be unknown.
    const uint64_t pc = regs.Get(pc_reg);
    const uint64_t sp = regs.Get(sp_reg);
    const arch::FrameAddress at = instruction_pointer
                                      ? arch::FrameAddress::InstructionPointer(pc)
                                      : arch::FrameAddress::ReturnAddress(pc);
    const RowKey key(at, policy_code);
    const StepCache::Entry* hit = cache.Find(key);
    MappedModule* mm;
    int module_index;
    if (hit != nullptr) {
      module_index = hit->module;
      mm = &space.module(module_index);
    } else {
      mm = space.Find(at.LookupAddress());
      module_index = space.IndexOf(mm);
    }
    const uint64_t rel_pc = mm != nullptr && mm->bias_known ? pc - mm->load_bias : 0;
    out.frames.push_back(Frame{pc, sp, method, module_index, rel_pc});
    if (recording != nullptr) recording->AddFrame(instruction_pointer);

    if (cancel != nullptr && cancel->load(std::memory_order_relaxed)) {
      out.stop = StopReason::kCancelled;
      return;
    }
    if (static_cast<int>(out.frames.size()) >= max_frames) {
      out.stop = StopReason::kMaxFrames;
      return;
    }
    // A frame of the thread's last walk, at the same PC and SP: the rest may
    // be that walk's rest.
    if (last != nullptr && !instruction_pointer && replay_tries < 2 && regs.Valid(sp_reg)) {
      while (cursor >= 0 && last->frames[cursor].sp < sp) --cursor;
      if (cursor >= 0) {
        const Frame& f = last->frames[cursor];
        if (f.sp == sp && f.pc == pc && last->checks[cursor].replayable &&
            out.frames.size() + cursor < static_cast<size_t>(max_frames)) {
          ++replay_tries;
          const size_t stepped = out.frames.size() - 1;
          if (ReplayRest(*last, cursor, regs, stack, read_word, out)) {
            recorder.junction = cursor;
            recorder.stepped = stepped;
            return;
          }
        }
      }
    }
    bool signal_frame = false;
    // Frame 0, and a frame a signal interrupted, may be in an epilogue that
    // popped registers whose slots the row still names (cfi/rules.h).
    const uint64_t restored_below = instruction_pointer ? sp : 0;
    // The warm path: the cached compact row, applied in place. If it cannot
    // be applied (a read fails), the general path below says why.
    CompactRow::Result fast = CompactRow::Result::kFailed;
    bool row_step = false;  // a compact row's step (recorded)
    if (hit != nullptr) {
      // Recorded: the row's CFA register's value before the step.
      const int cfa_reg = hit->row.cfa_reg();
      const uint64_t cfa_value =
          recording != nullptr && regs.Valid(cfa_reg) ? regs.GetUnchecked(cfa_reg) : 0;
      fast = hit->row.ApplyInPlace(regs, facts, restored_below, read_word);
      if (recording != nullptr && fast != CompactRow::Result::kFailed) {
        recording->EndStep(hit->row, cfa_value);
        row_step = true;
      }
    }
    if (fast == CompactRow::Result::kCaller) {
      method = hit->method;
    } else if (fast == CompactRow::Result::kOutermost) {
      out.stop = StopReason::kEndOfStack;
      recorder.end = WalkReplay::End::kUndefined;
      return;
    } else {
      Step step = StepOnce(mm, stack, regs,
                           StepContext{options.sources, at, space.mappings(), cache,
                                       policy_code, module_index,
                                       method != Method::kFramePointer ||
                                           fp_rule.caller_sp_exact,
                                       restored_below});
      // A first lookup of this PC that put a compact row in the step cache
      // was that row's step (the cache gives the same step next time): it
      // is recorded as one, so that a walk whose outermost frame was looked
      // up for the first time can still be replayed from.
      const StepCache::Entry* put =
          recording != nullptr && hit == nullptr ? cache.Find(key) : nullptr;
      const bool row_end = put != nullptr && !step.ok &&
                           step.stop == StopReason::kEndOfStack && put->row.ra_undefined();
      if (put != nullptr && (step.ok || row_end)) {
        const int cfa_reg = put->row.cfa_reg();
        recording->EndStep(put->row, regs.Valid(cfa_reg) ? regs.GetUnchecked(cfa_reg) : 0);
        row_step = true;
      }
      if (!step.ok) {
        out.stop = step.stop;
        out.stop_detail = std::move(step.detail);
        if (row_end) recorder.end = WalkReplay::End::kUndefined;
        return;
      }
      regs = step.caller;
      signal_frame = step.signal_frame;
      method = step.method;
    }
    if (!regs.Valid(pc_reg)) {
      out.stop = StopReason::kEndOfStack;
      return;
    }
    // aarch64: a return address saved after paciasp carries a PAC (Row::
    // ra_signed); strip every recovered PC, as gdb does, so no signed
    // address reaches the output or the next lookup.
    if (code_address_mask != 0) {
      regs.set_pc(arch::StripCodeAddress(regs.arch(), regs.GetUnchecked(pc_reg),
                                         code_address_mask));
    }
    const uint64_t caller_pc = regs.GetUnchecked(pc_reg);
    const uint64_t caller_sp = regs.Get(sp_reg);
    if (caller_pc == 0) {
      // A zero return address ends the chain (what glibc's thread start
      // routines leave behind, and where eu-stack and gdb stop too).
      out.stop = StopReason::kEndOfStack;
      if (row_step) {
        recorder.end = WalkReplay::End::kZeroPc;
        recorder.end_cfa = caller_sp;
      }
      return;
    }
    // Each step must make progress up the stack. Signal frames may move to
    // another stack (sigaltstack), so only a repeat of the same frame counts
    // against them.
    const bool same_frame = caller_pc == pc && caller_sp == sp;
    const bool went_down = !signal_frame && caller_sp < sp;
    if (same_frame || went_down) {
      out.stop = StopReason::kLoop;
      out.stop_detail =
          absl::StrFormat("caller sp 0x%x after sp 0x%x", caller_sp, sp);
      return;
    }
    // After a signal frame the caller's pc is the interrupted one.
    instruction_pointer = signal_frame;
  }
}

}  // namespace

uint64_t FileOffsetOf(const MappedModule& m, uint64_t pc) {
  for (uint64_t addr : {pc, pc - 1}) {
    for (const proc::Mapping& mapping : m.mappings) {
      if (mapping.Contains(addr)) return pc - mapping.start + mapping.offset;
    }
  }
  return 0;
}

ModuleInfo DescribeModule(const MappedModule& mm) {
  ModuleInfo info{mm.path, mm.module ? mm.module->build_id() : mm.recorded_build_id,
                  mm.start, mm.end, mm.load_bias};
  info.bias_known = mm.bias_known;
  info.jit_name = mm.code_name;
  // A snapshot's files are opened by whoever checked them and named through
  // /proc/self/fd (proc/snapshot_target.h): the mapping's own file, so
  // there is nothing other than `path` to report.
  if (mm.file != mm.path && !absl::StartsWith(mm.file, "/proc/self/fd/")) info.file = mm.file;
  if (!mm.open_status.ok()) info.error = std::string(mm.open_status.message());
  info.mismatch = mm.mismatch;
  info.from_memory = mm.from_memory;
  info.file_origin = mm.file_origin;
  info.fetched = mm.fetched;
  if (mm.module != nullptr) {
    if (std::optional<DebugInfo> d = mm.module->debug_info()) {
      info.debug_file = d->path;
      info.debug_kind = d->kind;
      info.debug_origin = d->origin;
      info.debug_fetched = d->fetched;
    }
  }
  return info;
}

ProcessStacks UnwindTarget(proc::Target& target, ModuleCache& cache,
                           const UnwindOptions& options) {
  AddressSpace space(target, cache, options.locate);
  return UnwindTarget(target, space, options);
}

ProcessStacks UnwindTarget(proc::Target& target, AddressSpace& space,
                           const UnwindOptions& options) {
  ProcessStacks out;
  out.pid = target.pid();
  out.arch = target.arch();
  // Module indexes in the output are dense over the modules frames use.
  absl::flat_hash_map<int, int> remap;
  // Every thread's registers first, then the first window of every stack
  // in one read (one process_vm_readv for a live process), then the walks.
  const std::vector<pid_t> tids = target.Threads();
  std::vector<absl::StatusOr<arch::RegisterSet>> all_regs;
  all_regs.reserve(tids.size());
  for (pid_t tid : tids) all_regs.push_back(target.InitialRegisters(tid));
  std::vector<PrefetchedStack> prefetched(tids.size());
  {
    std::vector<memory::Memory::ReadRequest> reads;
    std::vector<size_t> reader;  // thread index of each read
    for (size_t i = 0; i < tids.size(); ++i) {
      if (!all_regs[i].ok()) continue;
      const uint64_t sp = all_regs[i]->sp();
      // A snapshot's memory holds its stack already: nothing to read.
      if (!target.memory().HeldBytesAt(sp).bytes.empty()) continue;
      const fp::StackBounds bounds = fp::StackBoundsFor(space.mappings(), sp);
      if (!bounds.known) continue;
      const uint64_t end = memory::StackWindow::FirstReadEnd(
          sp, bounds.lo, bounds.hi, space.stack_top_hint(bounds.lo));
      if (end <= sp) continue;
      PrefetchedStack& p = prefetched[i];
      p.capacity = end - sp;
      // Not value-initialized: only the bytes read are used.
      p.bytes.reset(new uint8_t[p.capacity]);
      reads.push_back({sp, absl::MakeSpan(p.bytes.get(), p.capacity), 0});
      reader.push_back(i);
    }
    if (!reads.empty()) target.memory().ReadMany(absl::MakeSpan(reads));
    for (size_t r = 0; r < reads.size(); ++r) prefetched[reader[r]].filled = reads[r].done;
  }
  for (size_t i = 0; i < tids.size(); ++i) {
    const pid_t tid = tids[i];
    ThreadStack stack;
    const absl::StatusOr<arch::RegisterSet>& regs = all_regs[i];
    if (!regs.ok()) {
      stack.tid = tid;
      stack.stop = StopForStatus(StopPhase::kRegisters, regs.status());
      stack.stop_detail = regs.status().ToString();
    } else {
      UnwindWithStack(space, target.memory(), *regs, options, &prefetched[i], &stack);
      stack.tid = tid;
    }
    stack.signal = target.ThreadSignal(tid);
    if (std::string note = target.ThreadNote(tid); !note.empty()) {
      stack.stop_detail =
          stack.stop_detail.empty() ? note : absl::StrCat(note, "; ", stack.stop_detail);
    }
    for (Frame& f : stack.frames) {
      if (f.module < 0) continue;
      f.file_offset = FileOffsetOf(space.modules()[f.module], f.pc);
      auto [it, inserted] = remap.try_emplace(f.module, out.modules.size());
      if (inserted) out.modules.push_back(DescribeModule(space.modules()[f.module]));
      f.module = it->second;
    }
    out.threads.push_back(std::move(stack));
  }
  return out;
}

}  // namespace unwindd::unwinder

// The modules of one target: its file-backed mappings grouped per file, plus
// the vDSO, each opened lazily (through the shared ModuleCache) the first
// time a PC falls in it.
//
//   AddressSpace as(target, cache);
//   const MappedModule* mm = as.Find(pc);   // target address
//   if (mm && mm->module) row = mm->module->FindRow(pc - mm->load_bias);
//
// It also keeps what the step loop learns as it goes (the per-PC step
// cache, where each stack's last unwind stopped reading), so it serves one
// unwind at a time: not thread-safe. Modules are shared through the
// ModuleCache, which is.
#ifndef UNWINDD_UNWINDER_ADDRESS_SPACE_H_
#define UNWINDD_UNWINDER_ADDRESS_SPACE_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "proc/target.h"
#include "unwinder/locate/locator.h"
#include "unwinder/module.h"
#include "unwinder/module_cache.h"
#include "unwinder/step_cache.h"
#include "unwinder/walk_replay.h"

namespace unwindd::unwinder {

struct MappedModule {
  std::string path;  // as the target maps it; "[vdso]" for the vDSO
  uint64_t start = 0;  // lowest mapped address (target)
  uint64_t end = 0;    // highest mapped address, exclusive (target)
  std::vector<proc::Mapping> mappings;
  // Filled on first use:
  bool opened = false;
  std::shared_ptr<Module> module;  // null if it could not be opened
  absl::Status open_status;
  uint64_t load_bias = 0;  // target address = file address + load_bias
  // load_bias is known: from `module`, or (no module) from the ELF header
  // the target's memory holds.
  bool bias_known = false;
  // The file `module` was opened from, when it was a file.
  std::string file;
  // The build-id the target records for this module (a core's dumped
  // headers), "" if none; when a file was found but had another build-id,
  // `mismatch` is set and the file is not used.
  std::string recorded_build_id;
  bool mismatch = false;
  // `module` was rebuilt from the target's memory, no file being usable.
  bool from_memory = false;
  // Where `file` was found (locate::OriginName: "recorded_path",
  // "map_files", "sysroot", "build_id_dir", "debuginfod", ...), and whether
  // it came from debuginfod (downloaded now, or its cache).
  std::string file_origin;
  bool fetched = false;
  bool downloaded = false;
  // Time spent finding the file (all locators tried).
  absl::Duration locate_time;
  // Generated code (Target::CodeImageFor): the runtime's name for it.
  std::string code_name;
};

class AddressSpace {
 public:
  // `locate` (not owned, must outlive this and the modules it opens):
  // where else to look for module files and their separate debug
  // information (build-id directories, .gnu_debuglink, MiniDebugInfo,
  // debuginfod; unwinder/locate). Null: only the paths the target names,
  // and no debug information.
  AddressSpace(proc::Target& target, ModuleCache& cache,
               const locate::LocateOptions* locate = nullptr);

  // The module whose mappings contain `pc`, opened; nullptr if `pc` is in no
  // file-backed mapping nor the vDSO.
  MappedModule* Find(uint64_t pc);
  // Index of `m` in modules() (stable for this AddressSpace's lifetime).
  int IndexOf(const MappedModule* m) const {
    return m == nullptr ? -1 : static_cast<int>(m - modules_.data());
  }
  const std::vector<MappedModule>& modules() const { return modules_; }
  MappedModule& module(int index) { return modules_[index]; }
  // The step loop's per-PC memo for this address space (step_cache.h).
  StepCache& step_cache() { return step_cache_; }
  // Each thread's recorded walk (UnwindOptions::thread_key; walk_replay.h).
  WalkReplay& walk_replay() { return walk_replay_; }
  // One past the highest stack byte the last unwind of the stack mapped at
  // `stack_lo` read (0 if none): where the next unwind's first bulk read of
  // that stack should end (memory::StackWindow::ReadAhead).
  uint64_t stack_top_hint(uint64_t stack_lo) const {
    auto it = stack_top_hints_.find(stack_lo);
    return it == stack_top_hints_.end() ? 0 : it->second;
  }
  void set_stack_top_hint(uint64_t stack_lo, uint64_t top) {
    if (stack_top_hints_.size() >= kMaxStackHints) stack_top_hints_.clear();
    stack_top_hints_[stack_lo] = top;
  }
  // Every mapping of the target (stack bounds for frame-pointer unwinding).
  const std::vector<proc::Mapping>& mappings() const {
    return target_.mappings();
  }
  // The non-address bits of the target's code addresses (aarch64 PAC; 0 on
  // x86), for arch::StripCodeAddress.
  uint64_t code_address_mask() const { return code_address_mask_; }

 private:
  void Open(MappedModule& m);
  absl::StatusOr<std::shared_ptr<Module>> OpenFile(MappedModule& mm);
  // No usable file: the image rebuilt from memory, or at least the bias.
  void OpenFromMemory(MappedModule& mm, uint64_t header_start);

  proc::Target& target_;
  ModuleCache& cache_;
  const locate::LocateOptions* locate_;
  static constexpr size_t kMaxStackHints = 4096;

  std::vector<MappedModule> modules_;  // sorted by start
  StepCache step_cache_;
  WalkReplay walk_replay_;
  absl::flat_hash_map<uint64_t, uint64_t> stack_top_hints_;
  uint64_t code_address_mask_ = 0;
};

}  // namespace unwindd::unwinder

#endif  // UNWINDD_UNWINDER_ADDRESS_SPACE_H_

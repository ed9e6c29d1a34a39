#include "service/cli/binaries.h"

#include <cstdlib>
#include <optional>
#include <string>
#include <utility>

#include "absl/strings/str_format.h"
#include "absl/time/time.h"
#include "proc/jit/genelf.h"
#include "proc/jit/perf_map.h"
#include "unwinder/method.h"

namespace unwindd::service {

absl::StatusOr<std::unique_ptr<Binaries>> Binaries::FromCommand(const Command& cmd) {
  std::unique_ptr<Binaries> b(new Binaries());
  if (!cmd.debug_dirs.empty()) b->options_.debug_dirs = cmd.debug_dirs;
  b->options_.sysroot = cmd.sysroot;
  if (!cmd.no_debuginfod) {
    locate::DebuginfodOptions d;
    d.urls = cmd.debuginfod_urls;
    d.timeout = absl::Seconds(cmd.debuginfod_timeout_s);
    d.max_bytes = cmd.debuginfod_max_bytes;
    absl::StatusOr<std::unique_ptr<locate::Debuginfod>> client =
        locate::Debuginfod::Create(std::move(d));
    if (!client.ok()) return client.status();
    b->debuginfod_ = *std::move(client);
  }
  b->options_.debuginfod = b->debuginfod_.get();
  return b;
}

FrameSymbols Binaries::Symbolize(const unwinder::ProcessStacks& stacks) {
  if (symbolizer_ == nullptr) {
    cli::Symbolizer::Options o;
    o.locate = options_;
    symbolizer_ = std::make_unique<cli::Symbolizer>(std::move(o));
  }
  FrameSymbols out(stacks.threads.size());
  // Code in no file: the names a runtime wrote to /tmp/perf-PID.map (the
  // process's own /tmp, else the sysroot's), read on first need.
  std::optional<absl::StatusOr<proc::jit::PerfMap>> perf_map;
  auto perf_map_name = [&](uint64_t pc) -> std::string {
    if (stacks.pid <= 0) return "";
    if (!perf_map.has_value()) {
      perf_map = proc::jit::PerfMap::Load(proc::jit::LivePerfMapPath(stacks.pid),
                                          proc::jit::kMaxPerfMapBytes);
      if (!perf_map->ok()) {
        perf_map = proc::jit::PerfMap::Load(
            options_.sysroot + proc::jit::PerfMapPath(stacks.pid), proc::jit::kMaxPerfMapBytes);
      }
    }
    if (!perf_map->ok()) return "";
    const proc::jit::PerfMapEntry* e = (**perf_map).Find(pc);
    return e == nullptr ? "" : absl::StrFormat("%s+0x%x", e->name, pc - e->start);
  };
  for (size_t t = 0; t < stacks.threads.size(); ++t) {
    const std::vector<unwinder::Frame>& frames = stacks.threads[t].frames;
    out[t].resize(frames.size());
    for (size_t i = 0; i < frames.size(); ++i) {
      const unwinder::Frame& f = frames[i];
      const bool return_address = i > 0 && f.method != unwinder::Method::kSignal;
      if (f.module < 0 || static_cast<size_t>(f.module) >= stacks.modules.size()) {
        if (f.pc != 0) out[t][i] = perf_map_name(return_address ? f.pc - 1 : f.pc);
        continue;
      }
      const unwinder::ModuleInfo& m = stacks.modules[f.module];
      // JIT code a runtime announced: its name for the code, and the
      // offset in it (genelf.h places the code at kJitTextOffset).
      if (!m.jit_name.empty()) {
        if (f.rel_pc >= proc::jit::kJitTextOffset) {
          out[t][i] = absl::StrFormat("%s+0x%x", m.jit_name,
                                      f.rel_pc - proc::jit::kJitTextOffset);
        }
        continue;
      }
      // A file to read symbols from: none for [vdso] and modules without
      // one (a missing file, an image rebuilt from a core's memory).
      if (!m.bias_known || !m.error.empty() || m.from_memory || m.path.empty() ||
          m.path[0] == '[') {
        continue;
      }
      cli::ModuleFiles files;
      files.file = m.file.empty() ? m.path : m.file;
      files.debug_file = m.debug_kind == "debug" ? m.debug_file : "";
      files.recorded_path = m.path;
      out[t][i] = symbolizer_->Symbolize(files, f.rel_pc, return_address);
    }
  }
  return out;
}

}  // namespace unwindd::service

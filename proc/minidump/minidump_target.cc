#include "proc/minidump/minidump_target.h"

#include <algorithm>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "arch/le_bytes.h"
#include "memory/factories.h"
#include "memory/file_region_memory.h"
#include "proc/minidump/context.h"
#include "proc/minidump/format.h"
#include "proc/procfs.h"

namespace unwindd::proc {
namespace {

using minidump::MemoryRange;
using minidump::ModuleEntry;
using minidump::ThreadEntry;

// Breakpad names the vDSO's module "linux-gate.so" (linux_dumper.h
// kLinuxGateLibraryName); the unwinder knows it as the maps' "[vdso]".
constexpr absl::string_view kLinuxGate = "linux-gate.so";

// Signals whose si_addr is the faulting address (signal_info.h).
bool IsFault(int signal) {
  return signal == 4 || signal == 5 || signal == 7 || signal == 8 ||
         signal == 11;
}

// AT_ENTRY from a raw auxv of `word` bytes per field; 0 if absent.
uint64_t AuxvEntry(absl::string_view auxv, int word) {
  const auto* b = reinterpret_cast<const uint8_t*>(auxv.data());
  const absl::Span<const uint8_t> bytes(b, auxv.size());
  constexpr uint64_t kAtEntry = 9;
  for (size_t at = 0; at + 2 * word <= bytes.size(); at += 2 * word) {
    const uint64_t type = arch::LoadLe(bytes, at, word);
    if (type == 0) break;  // AT_NULL
    if (type == kAtEntry) return arch::LoadLe(bytes, at + word, word);
  }
  return 0;
}

// "KEY=value" or KEY="value" from lsb-release / os-release text.
std::string ReleaseField(absl::string_view text, absl::string_view key) {
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    if (!absl::ConsumePrefix(&line, key) || !absl::ConsumePrefix(&line, "=")) {
      continue;
    }
    line = absl::StripAsciiWhitespace(line);
    if (line.size() >= 2 && line.front() == '"' && line.back() == '"') {
      line = line.substr(1, line.size() - 2);
    }
    return std::string(line);
  }
  return "";
}

// Mappings sorted by start without overlaps (a later one that overlaps an
// earlier one is dropped), as the address space expects.
std::vector<Mapping> SortedDisjoint(std::vector<Mapping> in) {
  std::stable_sort(in.begin(), in.end(), [](const Mapping& a, const Mapping& b) {
    return a.start < b.start;
  });
  std::vector<Mapping> out;
  for (Mapping& m : in) {
    if (m.end <= m.start) continue;
    if (!out.empty() && m.start < out.back().end) continue;
    out.push_back(std::move(m));
  }
  return out;
}

}  // namespace

bool LooksLikeMinidump(absl::Span<const uint8_t> head) {
  return head.size() >= 4 && arch::LoadLe32(head, 0) == minidump::kSignature;
}

absl::StatusOr<std::unique_ptr<MinidumpTarget>> OpenMinidump(
    const std::string& path, const MinidumpOptions& options) {
  std::unique_ptr<MinidumpTarget> t(new MinidumpTarget());
  absl::Status s = t->Init(path, options);
  if (!s.ok()) return s;
  return t;
}

absl::Status MinidumpTarget::Init(const std::string& path,
                                  const MinidumpOptions& options) {
  options_ = options;
  report_.path = path;
  absl::StatusOr<memory::OpenedFile> opened =
      memory::OpenMaybeDecompressed(path, options.decompress);
  if (!opened.ok()) return opened.status();
  report_.compression = opened->compression;
  auto fd = std::make_shared<const memory::ScopedFd>(std::move(opened->fd));
  absl::StatusOr<minidump::MinidumpFile> file =
      minidump::MinidumpFile::Read(fd, opened->size, path);
  if (!file.ok()) return file.status();
  file_.emplace(*std::move(file));
  report_.warnings = file_->warnings();
  if (absl::Status s = ChooseArch(); !s.ok()) return s;

  // Recorded build-ids by path, as the module list names the files.
  for (const ModuleEntry& m : file_->modules()) {
    if (m.build_id.empty() || m.name.empty()) continue;
    recorded_build_ids_.try_emplace(m.name, m.build_id);
  }
  BuildMappings();
  FindExecutable();

  // The minidump's own bytes first: they win over the files wherever both
  // hold an address (FileRegionMemory: earlier regions win).
  std::vector<memory::FileRegion> regions;
  for (const MemoryRange& r : file_->memory()) {
    regions.push_back({r.start, r.size, fd, r.file_offset});
  }
  for (const ThreadEntry& t : file_->threads()) {
    const MemoryRange& s = t.stack;
    if (s.size == 0 || s.file_offset > file_->file_size() ||
        s.size > file_->file_size() - s.file_offset ||
        s.start + s.size < s.start) {
      continue;
    }
    regions.push_back({s.start, s.size, fd, s.file_offset});
  }
  ResolvedFiles files = ResolveRecordedFiles(
      mappings_, recorded_build_ids_, options_.lookup, report_.executable,
      "minidump");
  report_.files = std::move(files.files);
  file_index_ = std::move(files.index);
  for (std::string& w : files.warnings) report_.warnings.push_back(std::move(w));
  regions.insert(regions.end(), files.regions.begin(), files.regions.end());
  if (regions.size() > memory::kMaxFileRegions) {
    regions.resize(memory::kMaxFileRegions);
    report_.warnings.push_back("too many memory ranges; the rest are left out");
  }
  absl::StatusOr<std::unique_ptr<memory::Memory>> all =
      memory::CreateFileRegionMemory(std::move(regions));
  if (!all.ok()) return all.status();
  memory_ = memory::CreateCachedMemory(*std::move(all));
  Describe();
  return ChooseThreads(options.tids);
}

absl::Status MinidumpTarget::ChooseArch() {
  if (file_->system_info()) {
    absl::StatusOr<arch::Arch> a = minidump::ArchFromCpuArchitecture(
        file_->system_info()->cpu_architecture);
    if (!a.ok()) return a.status();
    arch_ = *a;
    return absl::OkStatus();
  }
  // No SystemInfo: the first readable context says what it is.
  for (const ThreadEntry& t : file_->threads()) {
    absl::StatusOr<std::vector<uint8_t>> ctx =
        file_->ReadLocation(t.context, minidump::kMaxContextBytes);
    if (!ctx.ok()) continue;
    absl::StatusOr<const minidump::ContextFormat*> f =
        minidump::FindContextFormat(*ctx, std::nullopt);
    if (f.ok()) {
      arch_ = (*f)->arch;
      report_.warnings.push_back(absl::StrCat(
          "no system info stream; the thread contexts say ",
          arch::GetArchInfo(arch_).name));
      return absl::OkStatus();
    }
  }
  return absl::DataLossError(absl::StrCat(
      report_.path, ": no system info stream and no thread context of a "
                    "known architecture"));
}

void MinidumpTarget::BuildMappings() {
  if (file_->linux_streams().maps) {
    absl::StatusOr<std::vector<Mapping>> maps =
        ParseMaps(*file_->linux_streams().maps);
    if (maps.ok() && !maps->empty()) {
      // Files are identified by path and build-id, never by the inode of
      // the machine that crashed (as for cores): a file here with another
      // inode is the same file if its build-id says so.
      for (Mapping& m : *maps) {
        m.inode = 0;
        m.dev_major = m.dev_minor = 0;
      }
      mappings_ = SortedDisjoint(*std::move(maps));
      report_.modules_from = "linux_maps";
      return;
    }
    report_.warnings.push_back(absl::StrCat(
        "maps stream: ",
        maps.ok() ? "empty" : maps.status().message(),
        "; mappings from the module list instead"));
  }
  report_.modules_from = "module_list";
  std::vector<Mapping> out;
  for (const ModuleEntry& m : file_->modules()) {
    if (m.size == 0 || m.base + m.size < m.base) continue;
    Mapping map;
    map.start = m.base;
    map.end = m.base + m.size;
    map.read = map.exec = true;
    // The image as one mapping from its first byte: file offset 0 is at
    // base_of_image (Breakpad records the mapping of offset 0).
    map.path = m.name == kLinuxGate ? "[vdso]" : m.name;
    out.push_back(std::move(map));
  }
  // The stacks as anonymous mappings, so that frame-pointer unwinding
  // knows their bounds.
  for (const ThreadEntry& t : file_->threads()) {
    if (t.stack.size == 0 || t.stack.start + t.stack.size < t.stack.start) {
      continue;
    }
    Mapping map;
    map.start = t.stack.start;
    map.end = t.stack.start + t.stack.size;
    map.read = map.write = true;
    out.push_back(std::move(map));
  }
  mappings_ = SortedDisjoint(std::move(out));
}

void MinidumpTarget::FindExecutable() {
  const minidump::LinuxStreams& ls = file_->linux_streams();
  if (ls.auxv) {
    const uint64_t entry =
        AuxvEntry(*ls.auxv, arch::GetArchInfo(arch_).address_size);
    for (const Mapping& m : mappings_) {
      if (entry != 0 && m.Contains(entry) && NamesFile(m)) {
        report_.executable = m.path;
        return;
      }
    }
  }
  // Breakpad's writer moves the main executable to the front of the list.
  for (const ModuleEntry& m : file_->modules()) {
    if (!m.name.empty() && m.name != kLinuxGate) {
      report_.executable = m.name;
      return;
    }
  }
}

void MinidumpTarget::Describe() {
  const minidump::LinuxStreams& ls = file_->linux_streams();
  if (const std::optional<minidump::SystemInfo>& s = file_->system_info()) {
    report_.os = s->csd_version;
    if (s->platform_id == minidump::kPlatformLinux) {
      report_.platform = "linux";
    } else if (s->platform_id == minidump::kPlatformAndroid) {
      report_.platform = "android";
    } else {
      report_.platform = absl::StrFormat("0x%x", s->platform_id);
    }
  }
  if (ls.lsb_release) {
    report_.distribution = ReleaseField(*ls.lsb_release, "DISTRIB_DESCRIPTION");
    if (report_.distribution.empty()) {
      report_.distribution = ReleaseField(*ls.lsb_release, "PRETTY_NAME");
    }
  }
  if (ls.cmdline) {
    std::string c(absl::StripSuffix(*ls.cmdline, absl::string_view("\0", 1)));
    std::replace(c.begin(), c.end(), '\0', ' ');
    report_.command_line = std::move(c);
  }
  if (file_->process_id()) {
    report_.pid = static_cast<pid_t>(*file_->process_id());
  } else if (ls.proc_status) {
    absl::StatusOr<int64_t> pid =
        ParseStatusField(*ls.proc_status, "Pid", "proc status stream");
    if (pid.ok() && *pid > 0 && *pid <= INT32_MAX) {
      report_.pid = static_cast<pid_t>(*pid);
    }
  }
  if (const std::optional<minidump::ExceptionInfo>& e = file_->exception()) {
    report_.crash_tid = static_cast<pid_t>(e->tid);
    if (e->code == minidump::kExceptionCodeDumpRequested) {
      report_.exception = "dump requested";
    } else if (e->code == 0 || e->code > 64) {
      report_.exception = absl::StrFormat("exception code 0x%x", e->code);
    }
  }
}

absl::Status MinidumpTarget::ChooseThreads(const std::vector<pid_t>& wanted) {
  const std::vector<ThreadEntry>& all = file_->threads();
  for (size_t i = 0; i < all.size(); ++i) {
    thread_index_.try_emplace(static_cast<pid_t>(all[i].tid), i);
  }
  if (report_.pid == 0) report_.pid = static_cast<pid_t>(all.front().tid);
  // The main thread first (Target::Threads), then the file's order.
  if (thread_index_.contains(report_.pid)) threads_.push_back(report_.pid);
  for (const ThreadEntry& t : all) {
    const pid_t tid = static_cast<pid_t>(t.tid);
    if (tid != report_.pid &&
        std::find(threads_.begin(), threads_.end(), tid) == threads_.end()) {
      threads_.push_back(tid);
    }
  }
  if (wanted.empty()) return absl::OkStatus();
  std::vector<pid_t> chosen;
  for (pid_t tid : wanted) {
    if (!thread_index_.contains(tid)) {
      return absl::NotFoundError(
          absl::StrFormat("thread %d is not in %s", tid, report_.path));
    }
    if (std::find(chosen.begin(), chosen.end(), tid) == chosen.end()) {
      chosen.push_back(tid);
    }
  }
  threads_ = std::move(chosen);
  return absl::OkStatus();
}

absl::StatusOr<arch::RegisterSet> MinidumpTarget::InitialRegisters(pid_t tid) {
  auto it = thread_index_.find(tid);
  if (it == thread_index_.end()) {
    return absl::NotFoundError(
        absl::StrFormat("thread %d is not in %s", tid, report_.path));
  }
  minidump::Location loc = file_->threads()[it->second].context;
  // The crashing thread's registers at the fault are the exception
  // stream's; its thread-list context may be the handler's own.
  const std::optional<minidump::ExceptionInfo>& e = file_->exception();
  if (e && static_cast<pid_t>(e->tid) == tid && e->context.size != 0) {
    loc = e->context;
  }
  absl::StatusOr<std::vector<uint8_t>> bytes =
      file_->ReadLocation(loc, minidump::kMaxContextBytes);
  if (!bytes.ok()) return bytes.status();
  absl::StatusOr<arch::RegisterSet> regs =
      minidump::ParseContext(*bytes, arch_);
  if (!regs.ok()) {
    return absl::DataLossError(absl::StrFormat("thread %d: %s", tid,
                                               regs.status().message()));
  }
  return regs;
}

std::vector<std::string> MinidumpTarget::FileCandidates(const Mapping& m) const {
  if (!NamesFile(m)) return {};
  auto it = file_index_.find(m.path);
  if (it != file_index_.end()) {
    const CoreFileStatus& f = report_.files[it->second];
    if (f.state == CoreFileStatus::State::kFound) return {f.file};
    return f.tried;
  }
  return CandidatePaths(options_.lookup, m.path, m.path == report_.executable);
}

std::optional<SignalInfo> MinidumpTarget::ThreadSignal(pid_t tid) const {
  const std::optional<minidump::ExceptionInfo>& e = file_->exception();
  if (!e || static_cast<pid_t>(e->tid) != tid) return std::nullopt;
  // minidump_exception_linux.h: code = signal, flags = si_code, address =
  // si_addr. Other platforms' codes are not signals.
  if (e->code == 0 || e->code > 64) return std::nullopt;
  SignalInfo s;
  s.number = static_cast<int>(e->code);
  s.code = static_cast<int>(e->flags);
  if (IsFault(s.number)) s.fault_address = e->address;
  return s;
}

std::string MinidumpTarget::RecordedBuildId(const Mapping& m) const {
  auto it = recorded_build_ids_.find(m.path);
  return it == recorded_build_ids_.end() ? "" : it->second;
}

}  // namespace unwindd::proc

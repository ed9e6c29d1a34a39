#include "proc/minidump/writer.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <optional>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "memory/scoped_fd.h"
#include "proc/core_elf.h"
#include "proc/minidump/context.h"
#include "proc/minidump/format.h"
#include "proc/minidump/reader.h"
#include "proc/recorded_files.h"

namespace unwindd::proc::minidump {
namespace {

// Below SP, the x86_64 psABI's red zone (§3.2.2): leaf functions keep data
// there, which debuggers show; the unwinder never needs it.
constexpr uint64_t kRedZone = 128;
// Around the crashing PC, for debuggers' disassembly (Breakpad's
// kIPMemorySize).
constexpr uint64_t kPcBytes = 256;
constexpr uint64_t kMaxVdsoBytes = 1 << 20;
// Above a walk's highest SP in a stack: the last frame's saved registers
// and return address, or a signal frame's rt_sigframe (ucontext, siginfo
// and the XSAVE area, a few KiB with AVX-512).
constexpr uint64_t kFrameTail = 16 * 1024;

// The file being built: every RVA is 32 bits, so it must stay under 4 GiB.
class Out {
 public:
  absl::StatusOr<uint32_t> Append(absl::Span<const uint8_t> bytes) {
    while (buf_.size() % 8 != 0) buf_.push_back(0);
    if (buf_.size() + bytes.size() > UINT32_MAX) {
      return absl::ResourceExhaustedError(
          "the minidump would be larger than 4 GiB (32-bit RVAs); lower "
          "--minidump-stack-bytes");
    }
    const uint32_t rva = static_cast<uint32_t>(buf_.size());
    buf_.insert(buf_.end(), bytes.begin(), bytes.end());
    return rva;
  }
  absl::StatusOr<uint32_t> Append(const std::vector<uint8_t>& bytes) {
    return Append(absl::MakeConstSpan(bytes));
  }
  absl::StatusOr<uint32_t> AppendText(absl::string_view s) {
    return Append(absl::MakeConstSpan(
        reinterpret_cast<const uint8_t*>(s.data()), s.size()));
  }
  // MDString: byte length, UTF-16LE units, a 0 unit.
  absl::StatusOr<uint32_t> AppendString(absl::string_view utf8);
  std::vector<uint8_t>& bytes() { return buf_; }

 private:
  std::vector<uint8_t> buf_;
};

void Put16(std::vector<uint8_t>& b, size_t off, uint16_t v) {
  b[off] = static_cast<uint8_t>(v);
  b[off + 1] = static_cast<uint8_t>(v >> 8);
}

void PutLocation(std::vector<uint8_t>& b, size_t off, Location loc) {
  StoreU32(b, off, loc.size);
  StoreU32(b, off + 4, loc.rva);
}

// UTF-8 -> UTF-16; a byte that starts no valid sequence stands for itself
// (U+0080..U+00FF), as service/common/json.h does, so no byte is lost.
std::vector<uint16_t> Utf16(absl::string_view s) {
  std::vector<uint16_t> out;
  size_t i = 0;
  while (i < s.size()) {
    const uint8_t c = static_cast<uint8_t>(s[i]);
    int len = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3
              : (c >> 3) == 30 ? 4 : 0;
    uint32_t cp = len == 1 ? c : len == 2 ? (c & 0x1f) : len == 3 ? (c & 0x0f)
                                                                 : (c & 0x07);
    bool ok = len != 0 && i + len <= s.size();
    for (int k = 1; ok && k < len; ++k) {
      const uint8_t d = static_cast<uint8_t>(s[i + k]);
      ok = (d >> 6) == 2;
      cp = (cp << 6) | (d & 0x3f);
    }
    if (!ok) {
      out.push_back(c);
      ++i;
      continue;
    }
    if (cp >= 0x10000) {
      cp -= 0x10000;
      out.push_back(static_cast<uint16_t>(0xd800 + (cp >> 10)));
      out.push_back(static_cast<uint16_t>(0xdc00 + (cp & 0x3ff)));
    } else {
      out.push_back(static_cast<uint16_t>(cp));
    }
    i += len;
  }
  return out;
}

absl::StatusOr<uint32_t> Out::AppendString(absl::string_view utf8) {
  const std::vector<uint16_t> units = Utf16(utf8);
  std::vector<uint8_t> b(kStringHeaderSize + 2 * (units.size() + 1), 0);
  StoreU32(b, 0, static_cast<uint32_t>(2 * units.size()));
  for (size_t i = 0; i < units.size(); ++i) Put16(b, 4 + 2 * i, units[i]);
  return Append(b);
}

// Bytes of `mem` from `lo`, up to `hi`, stopping at the first unreadable
// byte.
std::vector<uint8_t> ReadPrefix(memory::Memory& mem, uint64_t lo, uint64_t hi) {
  std::vector<uint8_t> out(hi > lo ? hi - lo : 0);
  const size_t n = mem.Read(lo, absl::MakeSpan(out));
  out.resize(n);
  return out;
}

std::vector<uint8_t> HexBytes(absl::string_view hex) {
  std::vector<uint8_t> out;
  for (size_t i = 0; i + 1 < hex.size(); i += 2) {
    int v = 0;
    if (!absl::SimpleHexAtoi(hex.substr(i, 2), &v)) return {};
    out.push_back(static_cast<uint8_t>(v));
  }
  return out;
}

struct ModuleOut {
  std::string name;
  uint64_t base = 0;
  uint64_t end = 0;
  std::string build_id;
};

// The build-id the target records, else the ELF header it has in memory
// (live processes), else the file.
std::string BuildIdOf(Target& target, const Mapping& first,
                      const Mapping* offset0) {
  std::string id = target.RecordedBuildId(first);
  if (!id.empty()) return id;
  if (offset0 != nullptr) {
    absl::StatusOr<ElfImage> img =
        ReadElfImage(target.memory(), offset0->start, ElfView::kLoaded);
    if (img.ok()) {
      absl::StatusOr<std::string> b =
          ReadBuildId(target.memory(), *img, ElfView::kLoaded);
      if (b.ok()) return *b;
    }
  }
  for (const std::string& c : target.FileCandidates(first)) {
    std::optional<OpenedCandidate> f = OpenCandidate(c);
    if (f) return FileBuildId(*f);
  }
  return "";
}

// One module per mapped file (its consecutive mappings, anonymous memory
// between them allowed) and one for the vDSO, as AddressSpace groups them.
std::vector<ModuleOut> Modules(Target& target) {
  std::vector<ModuleOut> out;
  const std::vector<Mapping>& maps = target.mappings();
  size_t i = 0;
  while (i < maps.size()) {
    const Mapping& m = maps[i];
    const bool vdso = m.path == "[vdso]";
    if (!NamesFile(m) && !vdso) {
      ++i;
      continue;
    }
    ModuleOut mod;
    mod.name = vdso ? "linux-gate.so" : m.path;  // Breakpad's vDSO name
    mod.base = m.start;
    mod.end = m.end;
    const Mapping* offset0 = m.offset == 0 ? &m : nullptr;
    size_t j = i + 1;
    for (; j < maps.size(); ++j) {
      if (maps[j].path.empty()) continue;
      if (maps[j].path != m.path) break;
      mod.end = maps[j].end;
      if (offset0 == nullptr && maps[j].offset == 0) offset0 = &maps[j];
    }
    mod.build_id = BuildIdOf(target, m, offset0);
    out.push_back(std::move(mod));
    i = j;
  }
  return out;
}

std::string SynthesizedMaps(const std::vector<Mapping>& maps) {
  std::string out;
  for (const Mapping& m : maps) {
    absl::StrAppendFormat(&out, "%08x-%08x %c%c%c%c %08x %02x:%02x %d", m.start,
                          m.end, m.read ? 'r' : '-', m.write ? 'w' : '-',
                          m.exec ? 'x' : '-', m.shared ? 's' : 'p', m.offset,
                          m.dev_major, m.dev_minor, m.inode);
    if (!m.path.empty()) absl::StrAppend(&out, " ", m.path);
    if (m.deleted) out += " (deleted)";
    out += "\n";
  }
  return out;
}

struct ThreadOut {
  uint32_t tid = 0;
  Location context;
  uint64_t stack_start = 0;
  Location stack;
};

struct Range {
  uint64_t start = 0;
  Location data;
};

// Memory list ranges may not overlap (Breakpad's reader drops the whole
// list if two do): each is clipped to start where the previous one ends.
std::vector<Range> Disjoint(std::vector<Range> in) {
  std::sort(in.begin(), in.end(),
            [](const Range& a, const Range& b) { return a.start < b.start; });
  std::vector<Range> out;
  uint64_t end = 0;
  for (Range r : in) {
    if (!out.empty() && r.start < end) {
      const uint64_t skip = end - r.start;
      if (skip >= r.data.size) continue;
      r.start = end;
      r.data.rva += static_cast<uint32_t>(skip);
      r.data.size -= static_cast<uint32_t>(skip);
    }
    end = r.start + r.data.size;
    out.push_back(r);
  }
  return out;
}

struct Span {
  uint64_t lo = 0;
  uint64_t hi = 0;
};

// What of a thread's stacks to copy, its own (from `sp`) first, within
// `budget` bytes above the SPs (the red zones below come on top):
//   1. with its frames' SPs: for each mapping they are in, from the lowest
//      SP to the highest plus kFrameTail (the last frame's own slots, or
//      a signal frame's ucontext and FPU state above its SP);
//   2. what is left of the budget extends the own stack further up.
// Without frames, the own stack from `sp` up. Each span stays within the
// mapping that holds it. `truncated` counts a thread whose own stack the
// budget cut short of its mapping's end.
std::vector<Span> PlanStack(const std::vector<Mapping>& maps, uint64_t sp,
                            std::vector<uint64_t> frame_sps, uint64_t budget,
                            uint32_t* truncated) {
  auto mapping_of = [&](uint64_t a) -> const Mapping* {
    for (const Mapping& m : maps) {
      if (m.Contains(a)) return &m;
    }
    return nullptr;
  };
  auto lo_of = [&](uint64_t a, const Mapping* m) {
    const uint64_t lo = a >= kRedZone ? a - kRedZone : 0;
    return m != nullptr ? std::max(lo, m->start) : lo;
  };
  auto end_of = [&](const Mapping* m) { return m != nullptr ? m->end : UINT64_MAX; };
  auto add = [](uint64_t a, uint64_t b) { return a + b < a ? UINT64_MAX : a + b; };

  // The frames' SPs by mapping, in the order the walk reached them.
  std::vector<std::pair<const Mapping*, std::pair<uint64_t, uint64_t>>> groups;
  frame_sps.insert(frame_sps.begin(), sp);
  for (uint64_t s : frame_sps) {
    const Mapping* m = mapping_of(s);
    bool found = false;
    for (auto& [gm, range] : groups) {
      const bool same = m != nullptr ? gm == m : (gm == nullptr && s >= range.first &&
                                                  s - range.first < (uint64_t{1} << 20));
      if (!same) continue;
      range.first = std::min(range.first, s);
      range.second = std::max(range.second, s);
      found = true;
      break;
    }
    if (!found) groups.push_back({m, {s, s}});
  }
  std::vector<Span> plan;
  uint64_t left = budget;
  for (const auto& [m, range] : groups) {
    if (left == 0 && !plan.empty()) break;
    const uint64_t want = std::min(add(range.second - range.first, kFrameTail), left);
    const uint64_t hi = std::min(add(range.first, want), end_of(m));
    plan.push_back({lo_of(range.first, m), hi});
    left -= hi - range.first;
  }
  // The rest of the budget: more of the own stack.
  const Mapping* own = groups.front().first;
  Span& first = plan.front();
  const uint64_t room = end_of(own) - first.hi;
  if (room > left) ++*truncated;
  first.hi = add(first.hi, std::min(room, left));
  return plan;
}

}  // namespace

absl::StatusOr<std::vector<uint8_t>> BuildMinidump(
    Target& target, const ProcessInfo& info,
    const MinidumpWriteOptions& options, MinidumpWriteResult* result) {
  *result = MinidumpWriteResult();
  if (options.max_stack_bytes > kMaxStackBytesLimit) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "at most %d stack bytes per thread", kMaxStackBytesLimit));
  }
  Out out;
  out.bytes().resize(kHeaderSize, 0);
  std::vector<std::pair<uint32_t, Location>> streams;
  const std::vector<Mapping>& maps = target.mappings();
  memory::Memory& mem = target.memory();

  // Threads: registers and stacks.
  std::vector<ThreadOut> threads;
  std::vector<Range> ranges;
  std::optional<size_t> crash;
  std::optional<SignalInfo> crash_signal;
  for (pid_t tid : target.Threads()) {
    absl::StatusOr<arch::RegisterSet> regs = target.InitialRegisters(tid);
    if (!regs.ok()) {
      result->warnings.push_back(absl::StrFormat(
          "thread %d left out: %s", tid, regs.status().message()));
      continue;
    }
    ThreadOut t;
    t.tid = static_cast<uint32_t>(tid);
    const std::vector<uint8_t> ctx = WriteContext(*regs);
    absl::StatusOr<uint32_t> rva = out.Append(ctx);
    if (!rva.ok()) return rva.status();
    t.context = {static_cast<uint32_t>(ctx.size()), *rva};
    const uint64_t sp = regs->sp();
    std::vector<uint64_t> frame_sps;
    auto hints = options.frames.find(tid);
    if (hints != options.frames.end()) {
      for (const MinidumpWriteOptions::Frame& f : hints->second) {
        frame_sps.push_back(f.sp);
        // Code no file has: anonymous executable memory.
        const Mapping* m = nullptr;
        for (const Mapping& map : maps) {
          if (map.Contains(f.pc)) m = &map;
        }
        if (m == nullptr || !m->exec || NamesFile(*m) || m->path == "[vdso]") continue;
        const uint64_t lo = std::max(m->start, f.pc >= kPcBytes / 2 ? f.pc - kPcBytes / 2 : 0);
        const uint64_t hi = std::min(m->end, f.pc + kPcBytes / 2);
        const std::vector<uint8_t> code = ReadPrefix(mem, lo, hi);
        if (code.empty()) continue;
        absl::StatusOr<uint32_t> rva = out.Append(code);
        if (!rva.ok()) return rva.status();
        ranges.push_back({lo, {static_cast<uint32_t>(code.size()), *rva}});
      }
    }
    const std::vector<Span> plan = PlanStack(maps, sp, std::move(frame_sps),
                                             options.max_stack_bytes,
                                             &result->truncated_stacks);
    for (size_t i = 0; i < plan.size(); ++i) {
      const std::vector<uint8_t> stack = ReadPrefix(mem, plan[i].lo, plan[i].hi);
      if (stack.empty()) continue;
      absl::StatusOr<uint32_t> rva = out.Append(stack);
      if (!rva.ok()) return rva.status();
      const Range r{plan[i].lo, {static_cast<uint32_t>(stack.size()), *rva}};
      if (i == 0) {
        t.stack_start = r.start;
        t.stack = r.data;
      }
      ranges.push_back(r);
      result->stack_bytes += stack.size();
    }
    if (t.stack.size == 0) {
      result->warnings.push_back(absl::StrFormat(
          "thread %d: its stack at 0x%x is not readable", tid, sp));
    }
    std::optional<SignalInfo> sig = target.ThreadSignal(tid);
    if (!crash && sig && sig->number > 0) {
      crash = threads.size();
      crash_signal = sig;
      // Bytes around the crashing PC, where readable.
      const uint64_t pc = regs->pc();
      const uint64_t pc_lo = pc >= kPcBytes / 2 ? pc - kPcBytes / 2 : 0;
      const std::vector<uint8_t> code = ReadPrefix(mem, pc_lo, pc_lo + kPcBytes);
      if (!code.empty()) {
        rva = out.Append(code);
        if (!rva.ok()) return rva.status();
        ranges.push_back({pc_lo, {static_cast<uint32_t>(code.size()), *rva}});
      }
    }
    threads.push_back(t);
  }
  if (threads.empty()) {
    return absl::FailedPreconditionError("no thread could be written");
  }
  std::vector<uint8_t> list(4 + threads.size() * kThreadSize, 0);
  StoreU32(list, 0, static_cast<uint32_t>(threads.size()));
  for (size_t i = 0; i < threads.size(); ++i) {
    const size_t at = 4 + i * kThreadSize;
    StoreU32(list, at, threads[i].tid);
    StoreU64(list, at + kThreadStackStart, threads[i].stack_start);
    PutLocation(list, at + kThreadStackLocation, threads[i].stack);
    PutLocation(list, at + kThreadContextLocation, threads[i].context);
  }
  absl::StatusOr<uint32_t> rva = out.Append(list);
  if (!rva.ok()) return rva.status();
  streams.push_back({kThreadListStream, {static_cast<uint32_t>(list.size()), *rva}});
  result->threads = static_cast<uint32_t>(threads.size());

  // Modules, with their build-ids as CodeView records.
  const std::vector<ModuleOut> modules = Modules(target);
  std::vector<uint8_t> mlist(4 + modules.size() * kModuleSize, 0);
  StoreU32(mlist, 0, static_cast<uint32_t>(modules.size()));
  for (size_t i = 0; i < modules.size(); ++i) {
    const ModuleOut& m = modules[i];
    const size_t at = 4 + i * kModuleSize;
    StoreU64(mlist, at, m.base);
    StoreU32(mlist, at + kModuleSizeOfImage,
             static_cast<uint32_t>(std::min<uint64_t>(m.end - m.base, UINT32_MAX)));
    rva = out.AppendString(m.name);
    if (!rva.ok()) return rva.status();
    StoreU32(mlist, at + kModuleNameRva, *rva);
    StoreU32(mlist, at + kModuleVersionInfo, kVsFixedFileInfoSignature);
    StoreU32(mlist, at + kModuleVersionInfo + 4, kVsFixedFileInfoVersion);
    const std::vector<uint8_t> id = HexBytes(m.build_id);
    if (!id.empty()) {
      std::vector<uint8_t> cv(4 + id.size());
      StoreU32(cv, 0, kCvSignatureElf);
      std::copy(id.begin(), id.end(), cv.begin() + 4);
      rva = out.Append(cv);
      if (!rva.ok()) return rva.status();
      PutLocation(mlist, at + kModuleCvRecord,
                  {static_cast<uint32_t>(cv.size()), *rva});
    }
    // The vDSO's image, which no file on any machine has.
    if (m.name == "linux-gate.so" && m.end - m.base <= kMaxVdsoBytes) {
      const std::vector<uint8_t> image = ReadPrefix(mem, m.base, m.end);
      if (!image.empty()) {
        rva = out.Append(image);
        if (!rva.ok()) return rva.status();
        ranges.push_back({m.base, {static_cast<uint32_t>(image.size()), *rva}});
      }
    }
  }
  rva = out.Append(mlist);
  if (!rva.ok()) return rva.status();
  streams.push_back({kModuleListStream, {static_cast<uint32_t>(mlist.size()), *rva}});
  result->modules = static_cast<uint32_t>(modules.size());

  const std::vector<Range> disjoint = Disjoint(std::move(ranges));
  std::vector<uint8_t> memlist(4 + disjoint.size() * kMemoryDescriptorSize, 0);
  StoreU32(memlist, 0, static_cast<uint32_t>(disjoint.size()));
  for (size_t i = 0; i < disjoint.size(); ++i) {
    const size_t at = 4 + i * kMemoryDescriptorSize;
    StoreU64(memlist, at, disjoint[i].start);
    PutLocation(memlist, at + 8, disjoint[i].data);
  }
  rva = out.Append(memlist);
  if (!rva.ok()) return rva.status();
  streams.push_back({kMemoryListStream, {static_cast<uint32_t>(memlist.size()), *rva}});

  // The exception: the signal the crashing thread was handling.
  if (crash) {
    std::vector<uint8_t> ex(kExceptionStreamSize, 0);
    StoreU32(ex, 0, threads[*crash].tid);
    StoreU32(ex, kExceptionCode, static_cast<uint32_t>(crash_signal->number));
    StoreU32(ex, kExceptionFlags,
             static_cast<uint32_t>(crash_signal->code.value_or(0)));
    StoreU64(ex, kExceptionAddress, crash_signal->fault_address.value_or(0));
    PutLocation(ex, kExceptionContextLocation, threads[*crash].context);
    rva = out.Append(ex);
    if (!rva.ok()) return rva.status();
    streams.push_back({kExceptionStream, {static_cast<uint32_t>(ex.size()), *rva}});
  }

  std::vector<uint8_t> sys(kSystemInfoSize, 0);
  Put16(sys, 0, CpuArchitectureOf(target.arch()));
  sys[kSystemInfoNumberOfProcessors] = info.processors;
  StoreU32(sys, kSystemInfoPlatformId, kPlatformLinux);
  // Breakpad's reader takes any RVA, 0 too, as a string's: always one.
  rva = out.AppendString(info.os);
  if (!rva.ok()) return rva.status();
  StoreU32(sys, kSystemInfoCsdVersionRva, *rva);
  rva = out.Append(sys);
  if (!rva.ok()) return rva.status();
  streams.push_back({kSystemInfoStream, {static_cast<uint32_t>(sys.size()), *rva}});

  if (target.pid() > 0) {
    std::vector<uint8_t> misc(kMiscInfoSize, 0);
    StoreU32(misc, 0, kMiscInfoSize);
    StoreU32(misc, 4, kMiscInfoProcessId);
    StoreU32(misc, 8, static_cast<uint32_t>(target.pid()));
    rva = out.Append(misc);
    if (!rva.ok()) return rva.status();
    streams.push_back({kMiscInfoStream, {static_cast<uint32_t>(misc.size()), *rva}});
  }

  const std::string maps_text = info.maps.empty() ? SynthesizedMaps(maps) : info.maps;
  const std::pair<uint32_t, const std::string*> texts[] = {
      {kLinuxMaps, &maps_text},          {kLinuxCmdLine, &info.command_line},
      {kLinuxProcStatus, &info.proc_status}, {kLinuxAuxv, &info.auxv},
      {kLinuxLsbRelease, &info.lsb_release}, {kLinuxCpuInfo, &info.cpu_info},
  };
  for (const auto& [type, text] : texts) {
    if (text->empty()) continue;
    rva = out.AppendText(*text);
    if (!rva.ok()) return rva.status();
    streams.push_back({type, {static_cast<uint32_t>(text->size()), *rva}});
  }

  // The directory last, then the header that points at it.
  std::vector<uint8_t> dir(streams.size() * kDirectoryEntrySize, 0);
  for (size_t i = 0; i < streams.size(); ++i) {
    StoreU32(dir, i * kDirectoryEntrySize, streams[i].first);
    PutLocation(dir, i * kDirectoryEntrySize + 4, streams[i].second);
  }
  rva = out.Append(dir);
  if (!rva.ok()) return rva.status();
  std::vector<uint8_t>& b = out.bytes();
  StoreU32(b, 0, kSignature);
  StoreU32(b, 4, kVersion);
  StoreU32(b, 8, static_cast<uint32_t>(streams.size()));
  StoreU32(b, 12, *rva);
  result->bytes = b.size();
  return std::move(b);
}

absl::StatusOr<MinidumpWriteResult> WriteMinidump(
    Target& target, const ProcessInfo& info,
    const MinidumpWriteOptions& options, const std::string& path) {
  MinidumpWriteResult result;
  absl::StatusOr<std::vector<uint8_t>> bytes =
      BuildMinidump(target, info, options, &result);
  if (!bytes.ok()) return bytes.status();
  memory::ScopedFd fd(
      open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600));
  if (!fd.valid()) return absl::ErrnoToStatus(errno, absl::StrCat("create ", path));
  size_t done = 0;
  while (done < bytes->size()) {
    const ssize_t n = write(fd.get(), bytes->data() + done, bytes->size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return absl::ErrnoToStatus(errno, absl::StrCat("write ", path));
    done += static_cast<size_t>(n);
  }
  if (fsync(fd.get()) != 0 && errno != EINVAL) {
    return absl::ErrnoToStatus(errno, absl::StrCat("fsync ", path));
  }
  return result;
}

}  // namespace unwindd::proc::minidump

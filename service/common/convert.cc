#include "service/common/convert.h"

#include <algorithm>
#include <array>
#include <optional>
#include <string>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/strip.h"
#include "proc/signal_info.h"
#include "service/common/utf8.h"

namespace unwindd::service {

v1::Method ToProto(unwinder::Method m) {
  switch (m) {
    case unwinder::Method::kInitial:
      return v1::METHOD_INITIAL;
    case unwinder::Method::kEhFrame:
      return v1::METHOD_EH_FRAME;
    case unwinder::Method::kDebugFrame:
      return v1::METHOD_DEBUG_FRAME;
    case unwinder::Method::kSframe:
      return v1::METHOD_SFRAME;
    case unwinder::Method::kFramePointer:
      return v1::METHOD_FRAME_POINTER;
    case unwinder::Method::kSignal:
      return v1::METHOD_SIGNAL;
  }
  return v1::METHOD_UNSPECIFIED;
}

absl::StatusOr<unwinder::Method> FromProto(v1::Method m) {
  switch (m) {
    case v1::METHOD_INITIAL:
      return unwinder::Method::kInitial;
    case v1::METHOD_EH_FRAME:
      return unwinder::Method::kEhFrame;
    case v1::METHOD_DEBUG_FRAME:
      return unwinder::Method::kDebugFrame;
    case v1::METHOD_SFRAME:
      return unwinder::Method::kSframe;
    case v1::METHOD_FRAME_POINTER:
      return unwinder::Method::kFramePointer;
    case v1::METHOD_SIGNAL:
      return unwinder::Method::kSignal;
    default:
      return absl::InvalidArgumentError(
          absl::StrFormat("unknown method %d", static_cast<int>(m)));
  }
}

v1::StopReason ToProto(unwinder::StopReason r) {
  switch (r) {
    case unwinder::StopReason::kEndOfStack:
      return v1::STOP_REASON_END_OF_STACK;
    case unwinder::StopReason::kNoUnwindInfo:
      return v1::STOP_REASON_NO_UNWIND_INFO;
    case unwinder::StopReason::kMemoryError:
      return v1::STOP_REASON_MEMORY_ERROR;
    case unwinder::StopReason::kMaxFrames:
      return v1::STOP_REASON_MAX_FRAMES;
    case unwinder::StopReason::kLoop:
      return v1::STOP_REASON_LOOP;
    case unwinder::StopReason::kBadUnwindInfo:
      return v1::STOP_REASON_BAD_UNWIND_INFO;
    case unwinder::StopReason::kThreadGone:
      return v1::STOP_REASON_THREAD_GONE;
    case unwinder::StopReason::kCancelled:
      return v1::STOP_REASON_CANCELLED;
  }
  return v1::STOP_REASON_UNSPECIFIED;
}

namespace {

absl::StatusOr<unwinder::StopReason> StopFromProto(v1::StopReason r) {
  switch (r) {
    case v1::STOP_REASON_END_OF_STACK:
      return unwinder::StopReason::kEndOfStack;
    case v1::STOP_REASON_NO_UNWIND_INFO:
      return unwinder::StopReason::kNoUnwindInfo;
    case v1::STOP_REASON_MEMORY_ERROR:
      return unwinder::StopReason::kMemoryError;
    case v1::STOP_REASON_MAX_FRAMES:
      return unwinder::StopReason::kMaxFrames;
    case v1::STOP_REASON_LOOP:
      return unwinder::StopReason::kLoop;
    case v1::STOP_REASON_BAD_UNWIND_INFO:
      return unwinder::StopReason::kBadUnwindInfo;
    case v1::STOP_REASON_THREAD_GONE:
      return unwinder::StopReason::kThreadGone;
    case v1::STOP_REASON_CANCELLED:
      return unwinder::StopReason::kCancelled;
    default:
      return absl::DataLossError(
          absl::StrFormat("unknown stop reason %d", static_cast<int>(r)));
  }
}

}  // namespace

// unwindd.v1 names each arch ARCH_<name in capitals> (ARCH_X86_64,
// ARCH_AARCH64, ARCH_X86): the names connect the two, so a new arch needs
// its enum value in the proto and nothing here.
v1::Arch ToProto(arch::Arch a) {
  v1::Arch out = v1::ARCH_UNSPECIFIED;
  const std::string name =
      absl::AsciiStrToUpper(absl::StrCat("ARCH_", arch::GetArchInfo(a).name));
  return v1::Arch_Parse(name, &out) ? out : v1::ARCH_UNSPECIFIED;
}

namespace {

std::optional<arch::Arch> ArchByName(v1::Arch a) {
  absl::string_view name = v1::Arch_Name(a);
  if (a == v1::ARCH_UNSPECIFIED || !absl::ConsumePrefix(&name, "ARCH_")) {
    return std::nullopt;
  }
  absl::StatusOr<arch::Arch> found = arch::ArchFromName(absl::AsciiStrToLower(name));
  if (!found.ok()) return std::nullopt;
  return *found;
}

}  // namespace

absl::StatusOr<arch::Arch> FromProto(v1::Arch a) {
  // The names, looked up once per enum value: snapshot streams convert
  // every sample's arch.
  static const auto* const by_value = [] {
    auto* t = new std::array<std::optional<arch::Arch>, v1::Arch_ARRAYSIZE>;
    for (int v = 0; v < v1::Arch_ARRAYSIZE; ++v) {
      if (v1::Arch_IsValid(v)) (*t)[v] = ArchByName(static_cast<v1::Arch>(v));
    }
    return t;
  }();
  const int v = static_cast<int>(a);
  if (v >= 0 && v < v1::Arch_ARRAYSIZE && (*by_value)[v].has_value()) {
    return *(*by_value)[v];
  }
  return absl::InvalidArgumentError(
      absl::StrFormat("unknown or unspecified arch %d", static_cast<int>(a)));
}

absl::StatusOr<unwinder::SourcePolicy> SourcesFromProto(
    const google::protobuf::RepeatedField<int>& sources) {
  if (sources.empty()) return unwinder::SourcePolicy();
  std::vector<unwinder::Source> out;
  for (int m : sources) {
    unwinder::Source s;
    switch (m) {
      case v1::METHOD_EH_FRAME:
        s = unwinder::Source::kEhFrame;
        break;
      case v1::METHOD_DEBUG_FRAME:
        s = unwinder::Source::kDebugFrame;
        break;
      case v1::METHOD_SFRAME:
        s = unwinder::Source::kSframe;
        break;
      case v1::METHOD_FRAME_POINTER:
        s = unwinder::Source::kFramePointer;
        break;
      default:
        return absl::InvalidArgumentError(absl::StrFormat(
            "sources: %s is not an unwind-info source (eh_frame, debug_frame, "
            "sframe, frame_pointer)",
            v1::Method_Name(static_cast<v1::Method>(m))));
    }
    if (std::find(out.begin(), out.end(), s) != out.end()) {
      return absl::InvalidArgumentError(
          absl::StrCat("sources: ", unwinder::SourceName(s), " given twice"));
    }
    out.push_back(s);
  }
  return unwinder::SourcePolicy::Of(out);
}

void SourcesToProto(const unwinder::SourcePolicy& policy,
                    google::protobuf::RepeatedField<int>* out) {
  for (unwinder::Source s : policy.sources()) {
    switch (s) {
      case unwinder::Source::kEhFrame:
        out->Add(v1::METHOD_EH_FRAME);
        break;
      case unwinder::Source::kDebugFrame:
        out->Add(v1::METHOD_DEBUG_FRAME);
        break;
      case unwinder::Source::kSframe:
        out->Add(v1::METHOD_SFRAME);
        break;
      case unwinder::Source::kFramePointer:
        out->Add(v1::METHOD_FRAME_POINTER);
        break;
    }
  }
}

namespace {

void SignalToProto(const proc::SignalInfo& s, v1::Signal* out) {
  out->set_number(s.number);
  out->set_name(proc::SignalName(s.number));
  if (s.code) {
    out->set_code(*s.code);
    out->set_code_name(std::string(proc::SignalCodeName(s.number, *s.code)));
  }
  if (s.fault_address) out->set_fault_address(*s.fault_address);
  if (s.sender_pid) out->set_sender_pid(*s.sender_pid);
  if (s.sender_uid) out->set_sender_uid(*s.sender_uid);
}

proc::SignalInfo SignalFromProto(const v1::Signal& s) {
  proc::SignalInfo out;
  out.number = s.number();
  if (s.has_code()) out.code = s.code();
  if (s.has_fault_address()) out.fault_address = s.fault_address();
  if (s.has_sender_pid()) out.sender_pid = s.sender_pid();
  if (s.has_sender_uid()) out.sender_uid = s.sender_uid();
  return out;
}

absl::string_view StateName(v1::CoreFileState s) {
  switch (s) {
    case v1::CORE_FILE_STATE_FOUND:
      return "found";
    case v1::CORE_FILE_STATE_MISSING:
      return "missing";
    case v1::CORE_FILE_STATE_MISMATCH:
      return "mismatch";
    default:
      return "unknown";
  }
}

}  // namespace

void ToProto(const unwinder::ThreadStack& t, v1::ThreadStack* out) {
  out->set_tid(t.tid);
  out->set_stop(ToProto(t.stop));
  out->set_stop_detail(Utf8Lossy(t.stop_detail));
  if (t.signal) SignalToProto(*t.signal, out->mutable_signal());
  out->mutable_frames()->Reserve(t.frames.size());
  for (const unwinder::Frame& f : t.frames) {
    v1::Frame* pf = out->add_frames();
    pf->set_pc(f.pc);
    pf->set_sp(f.sp);
    pf->set_method(ToProto(f.method));
    if (f.module >= 0) {
      pf->set_module(f.module);
      pf->set_rel_pc(f.rel_pc);
      pf->set_file_offset(f.file_offset);
    }
  }
}

void ModulesToProto(const UnwindResult& r,
                    google::protobuf::RepeatedPtrField<v1::Module>* out) {
  for (size_t i = 0; i < r.stacks.modules.size(); ++i) {
    const unwinder::ModuleInfo& m = r.stacks.modules[i];
    v1::Module* pm = out->Add();
    pm->set_path(Utf8Lossy(m.path));
    if (!IsUtf8(m.path)) pm->set_path_bytes(m.path);
    pm->set_build_id(m.build_id);
    pm->set_start(m.start);
    pm->set_end(m.end);
    pm->set_offset(i < r.module_offsets.size() ? r.module_offsets[i] : 0);
    pm->set_load_bias(m.load_bias);
    pm->set_file(Utf8Lossy(m.file));
    if (!IsUtf8(m.file)) pm->set_file_bytes(m.file);
    pm->set_error(Utf8Lossy(m.error));
    pm->set_build_id_mismatch(m.mismatch);
    pm->set_from_memory(m.from_memory);
    pm->set_load_bias_unknown(!m.bias_known);
    pm->set_fetched(m.fetched);
    pm->set_debug_file(Utf8Lossy(m.debug_file));
    pm->set_debug_kind(m.debug_kind);
    pm->set_debug_fetched(m.debug_fetched);
    pm->set_jit_name(Utf8Lossy(m.jit_name));
    if (i < r.packages.size() && r.packages[i]) {
      const proc::PackageNote& n = *r.packages[i];
      v1::PackageNote* pn = pm->mutable_package();
      pn->set_type(Utf8Lossy(n.Get("type")));
      pn->set_os(Utf8Lossy(n.Get("os")));
      pn->set_os_version(Utf8Lossy(n.Get("osVersion")));
      pn->set_name(Utf8Lossy(n.Get("name")));
      pn->set_version(Utf8Lossy(n.Get("version")));
      pn->set_architecture(Utf8Lossy(n.Get("architecture")));
      pn->set_os_cpe(Utf8Lossy(n.Get("osCpe")));
      pn->set_debug_info_url(Utf8Lossy(n.Get("debugInfoUrl")));
      for (const auto& [k, v] : n.fields) (*pn->mutable_fields())[Utf8Lossy(k)] = Utf8Lossy(v);
    }
  }
}

namespace {

v1::CoreFileState StateFromName(absl::string_view s) {
  if (s == "found") return v1::CORE_FILE_STATE_FOUND;
  if (s == "missing") return v1::CORE_FILE_STATE_MISSING;
  if (s == "mismatch") return v1::CORE_FILE_STATE_MISMATCH;
  return v1::CORE_FILE_STATE_UNSPECIFIED;
}

void CoreToProto(const CoreSummary& c, v1::CoreReport* out) {
  out->set_file(Utf8Lossy(c.core));
  out->set_compression(c.compression);
  out->set_executable(Utf8Lossy(c.executable));
  out->set_modules_from(c.modules_from);
  for (const CoreSummary::File& f : c.files) {
    v1::CoreFile* pf = out->add_files();
    pf->set_path(Utf8Lossy(f.path));
    pf->set_state(StateFromName(f.state));
    pf->set_file(Utf8Lossy(f.file));
    pf->set_build_id(f.build_id);
    pf->set_file_build_id(f.file_build_id);
    pf->set_fetched(f.fetched);
  }
  for (const std::string& w : c.warnings) out->add_warnings(Utf8Lossy(w));
  out->set_format(c.kind);
  for (const CoreSummary::Fact& f : c.metadata) {
    v1::CoreFact* pf = out->add_metadata();
    pf->set_key(f.key);
    pf->set_value(Utf8Lossy(f.value));
  }
}

}  // namespace

void ToProto(const UnwindResult& r, v1::UnwindResponse* out) {
  if (r.core) CoreToProto(*r.core, out->mutable_core());
  if (r.signature) {
    v1::CrashSignature* ps = out->mutable_signature();
    ps->set_duphash(r.signature->duphash);
    ps->set_crash_tid(r.signature->crash_tid);
    ps->set_signal(r.signature->signal);
    for (const std::string& f : r.signature->frames) ps->add_frames(f);
  }
  out->set_pid(r.stacks.pid);
  out->set_arch(ToProto(r.stacks.arch));
  for (const unwinder::ThreadStack& t : r.stacks.threads) {
    ToProto(t, out->add_threads());
  }
  ModulesToProto(r, out->mutable_modules());
}

absl::StatusOr<unwinder::ProcessStacks> FromProto(const v1::UnwindResponse& r) {
  unwinder::ProcessStacks out;
  out.pid = r.pid();
  absl::StatusOr<arch::Arch> a = FromProto(r.arch());
  if (!a.ok()) return absl::DataLossError(a.status().message());
  out.arch = *a;
  for (const v1::Module& m : r.modules()) {
    unwinder::ModuleInfo mi;
    mi.path = m.path_bytes().empty() ? m.path() : m.path_bytes();
    mi.build_id = m.build_id();
    mi.start = m.start();
    mi.end = m.end();
    mi.load_bias = m.load_bias();
    mi.bias_known = !m.load_bias_unknown();
    mi.file = m.file_bytes().empty() ? m.file() : m.file_bytes();
    mi.error = m.error();
    mi.mismatch = m.build_id_mismatch();
    mi.from_memory = m.from_memory();
    mi.fetched = m.fetched();
    mi.debug_file = m.debug_file();
    mi.debug_kind = m.debug_kind();
    mi.debug_fetched = m.debug_fetched();
    mi.jit_name = m.jit_name();
    out.modules.push_back(std::move(mi));
  }
  for (const v1::ThreadStack& t : r.threads()) {
    unwinder::ThreadStack ts;
    ts.tid = t.tid();
    absl::StatusOr<unwinder::StopReason> stop = StopFromProto(t.stop());
    if (!stop.ok()) return stop.status();
    ts.stop = *stop;
    ts.stop_detail = t.stop_detail();
    if (t.has_signal()) ts.signal = SignalFromProto(t.signal());
    for (const v1::Frame& f : t.frames()) {
      unwinder::Frame fr;
      fr.pc = f.pc();
      fr.sp = f.sp();
      absl::StatusOr<unwinder::Method> m = FromProto(f.method());
      if (!m.ok()) return absl::DataLossError(m.status().message());
      fr.method = *m;
      if (f.has_module()) {
        if (f.module() >= out.modules.size()) {
          return absl::DataLossError(absl::StrFormat(
              "frame refers to module %d of %d", f.module(), out.modules.size()));
        }
        fr.module = static_cast<int>(f.module());
        fr.rel_pc = f.rel_pc();
        fr.file_offset = f.file_offset();
      }
      ts.frames.push_back(fr);
    }
    out.threads.push_back(std::move(ts));
  }
  return out;
}

CoreSummary FromProto(const v1::CoreReport& r, const std::string& core) {
  CoreSummary s;
  s.core = core;
  s.compression = r.compression();
  s.executable = r.executable();
  s.modules_from = r.modules_from();
  for (const v1::CoreFile& f : r.files()) {
    s.files.push_back({f.path(), std::string(StateName(f.state())), f.file(),
                       f.build_id(), f.file_build_id(), f.fetched()});
  }
  s.warnings.assign(r.warnings().begin(), r.warnings().end());
  if (!r.format().empty()) s.kind = r.format();
  for (const v1::CoreFact& f : r.metadata()) {
    s.metadata.push_back({f.key(), f.key(), f.value()});
  }
  return s;
}

CrashSignature FromProto(const v1::CrashSignature& s) {
  CrashSignature out;
  out.duphash = s.duphash();
  out.crash_tid = s.crash_tid();
  out.signal = s.signal();
  out.frames.assign(s.frames().begin(), s.frames().end());
  return out;
}

ModulePackages PackagesFromProto(const v1::UnwindResponse& r) {
  ModulePackages out(r.modules_size());
  for (int i = 0; i < r.modules_size(); ++i) {
    if (!r.modules(i).has_package()) continue;
    proc::PackageNote n;
    // The map has no order: the well-known keys first, in the spec's.
    const auto& fields = r.modules(i).package().fields();
    for (absl::string_view k : proc::kPackageNoteKeys) {
      auto it = fields.find(std::string(k));
      if (it != fields.end()) n.fields.emplace_back(it->first, it->second);
    }
    std::vector<std::pair<std::string, std::string>> rest;
    for (const auto& [k, v] : fields) {
      bool known = false;
      for (absl::string_view w : proc::kPackageNoteKeys) known |= k == w;
      if (!known) rest.emplace_back(k, v);
    }
    std::sort(rest.begin(), rest.end());
    n.fields.insert(n.fields.end(), rest.begin(), rest.end());
    out[i] = std::move(n);
  }
  return out;
}

}  // namespace unwindd::service

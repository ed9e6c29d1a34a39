#include "service/cli/perf/sinks.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/hash/hash.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "service/cli/output.h"
#include "service/cli/perf_script/perf_script.h"
#include "service/cli/profile/folded.h"
#include "service/cli/profile/pprof.h"
#include "service/cli/profile/profile.h"
#include "service/common/json.h"

namespace unwindd::service::perf {
namespace {

absl::Status Write(std::FILE* out, absl::string_view s) {
  if (!s.empty() && std::fwrite(s.data(), 1, s.size(), out) != s.size()) {
    return absl::DataLossError("cannot write the output");
  }
  return absl::OkStatus();
}

// Writes a large piece (a batch of samples' text) with write(2) from where
// it is, after what stdio holds: stdio would copy most of it into its
// buffer first.
absl::Status WriteDirect(std::FILE* out, absl::string_view s) {
  if (std::fflush(out) != 0) return absl::DataLossError("cannot write the output");
  const int fd = fileno(out);
  while (!s.empty()) {
    const ssize_t n = write(fd, s.data(), s.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      return absl::DataLossError(absl::StrCat("cannot write the output: ",
                                              n < 0 ? std::strerror(errno) : "no progress"));
    }
    s.remove_prefix(static_cast<size_t>(n));
  }
  return absl::OkStatus();
}

// The process's mappings as proc::Mapping (perf-script's address rule).
std::vector<proc::Mapping> Mappings(const UnwoundSample& s) {
  std::vector<proc::Mapping> out;
  if (s.mappings == nullptr) return out;
  out.reserve(s.mappings->size());
  for (const proc::SnapshotMapping& m : *s.mappings) out.push_back(m.mapping);
  return out;
}

// perf script's text for one sample. One per thread that formats: it
// keeps the prepared mapping tables of the processes it saw.
class PerfScriptFormatter {
 public:
  void Format(const UnwoundSample& s, cli::TextBuffer* out) {
    header_.comm = s.comm;
    header_.tid = s.tid;
    header_.cpu = s.cpu;
    header_.time_ns = s.time_ns;
    header_.period = s.period;
    header_.event = s.event;
    cli::AppendPerfScriptHeader(header_, out);
    cli::AppendPerfScriptKernelFrames(s.kernel, out);
    if (s.error.empty()) {
      auto it = tables_.find(s.target_id);
      if (it == tables_.end()) {
        // Samples of a few processes interleave: a table per target, and
        // a fresh start now and then so that old ones do not pile up.
        if (tables_.size() >= kMaxTables) tables_.clear();
        it = tables_.emplace(s.target_id, std::make_unique<cli::PerfScriptMappings>(Mappings(s)))
                 .first;
      }
      cli::AppendPerfScriptFrames(s.thread, *it->second, out);
    }
    out->push_back('\n');
  }

 private:
  static constexpr size_t kMaxTables = 64;
  absl::flat_hash_map<uint64_t, std::unique_ptr<cli::PerfScriptMappings>> tables_;
  cli::PerfScriptHeader header_;  // reused: no allocation per sample
};

class PerfScriptSink : public SampleSink {
 public:
  explicit PerfScriptSink(std::FILE* out) : out_(out) {}
  void Add(const UnwoundSample& s) override {
    if (!status_.ok()) return;
    text_.clear();
    formatter_.Format(s, &text_);
    status_ = Write(out_, text_.view());
  }
  SampleFormatterFactory WorkerFormatter() override {
    return [] {
      auto f = std::make_shared<PerfScriptFormatter>();
      return [f](const UnwoundSample& s, cli::TextBuffer* out) { f->Format(s, out); };
    };
  }
  void AddText(absl::string_view text) override {
    if (status_.ok()) status_ = WriteDirect(out_, text);
  }
  absl::Status Finish(const ProfileInfo& info) override {
    if (status_.ok() && std::fflush(out_) != 0) status_ = absl::DataLossError("cannot write the output");
    return status_;
  }

 private:
  // Written through `out_`'s 256 KiB stdio buffer (OutputFile); a
  // worker-formatted batch's text is larger, and stdio writes most of it
  // straight from the batch.
  std::FILE* out_;
  absl::Status status_;
  PerfScriptFormatter formatter_;  // when no worker formatted
  cli::TextBuffer text_;           // its scratch: no allocation per sample
};

class JsonSink : public SampleSink {
 public:
  explicit JsonSink(std::FILE* out) : out_(out) {}
  void Add(const UnwoundSample& s) override {
    if (!status_.ok()) return;
    std::string text = absl::StrCat(first_ ? "{\"samples\": [\n  " : ",\n  ",
                                    "{\"pid\": ", s.pid, ", \"tid\": ", s.tid,
                                    ", \"comm\": ", JsonString(s.comm),
                                    ", \"time_ns\": ", s.time_ns, ", \"period\": ", s.period,
                                    ", \"event\": ", JsonString(s.event));
    if (s.cpu) absl::StrAppend(&text, ", \"cpu\": ", *s.cpu);
    first_ = false;
    if (!s.error.empty()) {
      absl::StrAppend(&text, ", \"error\": ", JsonString(s.error));
    } else {
      absl::StrAppend(&text, ", \"stop\": \"", unwinder::StopReasonName(s.thread.stop), "\"");
      if (!s.thread.stop_detail.empty()) {
        absl::StrAppend(&text, ", \"stop_detail\": ", JsonString(s.thread.stop_detail));
      }
    }
    text += ", \"kernel\": [";
    for (size_t i = 0; i < s.kernel.size(); ++i) {
      absl::StrAppendFormat(&text, "%s\"0x%x\"", i ? ", " : "", s.kernel[i]);
    }
    text += "], \"frames\": [";
    for (size_t i = 0; i < s.thread.frames.size(); ++i) {
      const unwinder::Frame& f = s.thread.frames[i];
      text += i ? ",\n    " : "\n    ";
      AppendFrameJson(f, f.module >= 0 ? s.modules[f.module] : nullptr, "", &text);
    }
    text += "]}";
    status_ = Write(out_, text);
  }
  absl::Status Finish(const ProfileInfo& info) override {
    if (status_.ok()) status_ = Write(out_, first_ ? "{\"samples\": []}\n" : "\n]}\n");
    if (status_.ok() && std::fflush(out_) != 0) status_ = absl::DataLossError("cannot write the output");
    return status_;
  }

 private:
  std::FILE* out_;
  absl::Status status_;
  bool first_ = true;
};

// pprof and folded: the samples aggregated into a profile::Profile, one
// module per mapping a frame lands in (the kernel's mapping, as pprof wants
// it: profile.h), named by the unwinder's build-id and load bias.
class ProfileSink : public SampleSink {
 public:
  ProfileSink(SinkFormat format, std::FILE* out) : format_(format), out_(out) {}

  void Add(const UnwoundSample& s) override {
    if (!status_.ok()) return;
    if (profile_ == nullptr) {
      const bool clock = s.event == "cpu-clock" || s.event == "task-clock";
      profile_ = std::make_unique<profile::Profile>(
          clock ? profile::ValueType{"cpu", "nanoseconds"}
                : profile::ValueType{s.event.empty() ? "events" : s.event, "count"});
    }
    const profile::SampleValues values{
        1, static_cast<int64_t>(std::min<uint64_t>(s.period, uint64_t{1} << 40))};
    // Most samples of a profile repeat a stack seen before: recognise it
    // from the sample's raw words (one hash), without looking up each
    // frame's mapping and location.
    RawKey(s);
    if (auto hit = raw_stacks_.find(absl::MakeConstSpan(raw_)); hit != raw_stacks_.end()) {
      status_ = profile_->AddToStack(hit->second, values);
      return;
    }
    frames_.clear();
    for (size_t i = 0; i < s.thread.frames.size(); ++i) {
      const unwinder::Frame& f = s.thread.frames[i];
      // A caller's pc is a return address, except right after a signal
      // frame, where it is the interrupted pc (profile.h records the former
      // at address - 1).
      const bool ra = i > 0 && f.method != unwinder::Method::kSignal;
      frames_.push_back({f.pc, ra, ModuleOf(s, f, ra ? f.pc - 1 : f.pc)});
    }
    kernel_.clear();
    for (uint64_t ip : s.kernel) kernel_.push_back({ip, false, profile::kNoModule});
    profile::ThreadLabels labels;
    labels.pid = s.pid;
    labels.tid = s.tid;
    labels.comm = s.comm;
    size_t stack = 0;
    status_ = profile_->AddSample(labels, frames_, kernel_, values, &stack);
    // Bounded like the profile: an entry per distinct stack it holds.
    if (status_.ok()) raw_stacks_.try_emplace(raw_, stack);
  }

  absl::Status Finish(const ProfileInfo& info) override {
    if (!status_.ok()) return status_;
    if (profile_ == nullptr) profile_ = std::make_unique<profile::Profile>();
    std::string bytes;
    if (format_ == SinkFormat::kPprof) {
      absl::StatusOr<std::string> gz = profile::WritePprof(
          *profile_, {info.time_nanos, info.duration_nanos, info.period, {}});
      if (!gz.ok()) return gz.status();
      bytes = *std::move(gz);
    } else {
      bytes = profile::WriteFolded(*profile_, {});
    }
    absl::Status s = Write(out_, bytes);
    if (s.ok() && std::fflush(out_) != 0) s = absl::DataLossError("cannot write the output");
    return s;
  }

 private:
  // A sample's stack as words, into raw_: which mapping table and thread,
  // the kernel ips, the user pcs, and which user frames (past the first)
  // are not return addresses (after a signal frame): everything
  // AddSample's result depends on.
  void RawKey(const UnwoundSample& s) {
    raw_.clear();
    auto [comm, added] = comm_ids_.try_emplace(s.comm, comm_ids_.size());
    raw_.insert(raw_.end(), {s.target_id, s.pid, s.tid, comm->second, s.kernel.size(),
                             s.thread.frames.size()});
    raw_.insert(raw_.end(), s.kernel.begin(), s.kernel.end());
    for (const unwinder::Frame& f : s.thread.frames) raw_.push_back(f.pc);
    for (size_t i = 1; i < s.thread.frames.size(); ++i) {
      if (s.thread.frames[i].method == unwinder::Method::kSignal) raw_.push_back(i);
    }
  }

  struct RawHash {
    using is_transparent = void;
    size_t operator()(absl::Span<const uint64_t> words) const {
      return absl::HashOf(words);
    }
  };
  struct RawEq {
    using is_transparent = void;
    bool operator()(absl::Span<const uint64_t> a, absl::Span<const uint64_t> b) const {
      return a == b;
    }
  };

  // The profile's module for `address` (a lookup address) of `s`: the
  // mapping that holds it, or kNoModule.
  int ModuleOf(const UnwoundSample& s, const unwinder::Frame& f, uint64_t address) {
    if (s.mappings == nullptr) return profile::kNoModule;
    const std::vector<proc::SnapshotMapping>& maps = *s.mappings;
    auto it = std::upper_bound(maps.begin(), maps.end(), address,
                               [](uint64_t a, const proc::SnapshotMapping& m) {
                                 return a < m.mapping.start;
                               });
    if (it == maps.begin() || !std::prev(it)->mapping.Contains(address)) {
      return profile::kNoModule;
    }
    const size_t index = std::prev(it) - maps.begin();
    const auto key = std::make_pair(s.target_id, index);
    if (auto hit = modules_.find(key); hit != modules_.end()) return hit->second;
    const proc::Mapping& m = maps[index].mapping;
    profile::Module pm;
    pm.path = m.path;
    pm.start = m.start;
    pm.limit = m.end;
    pm.file_offset = m.offset;
    if (f.module >= 0) {
      const unwinder::ModuleInfo& info = *s.modules[f.module];
      pm.build_id = info.build_id;
      if (info.bias_known) pm.load_bias = info.load_bias;
      pm.file_found = info.error.empty();
    }
    absl::StatusOr<int> added = profile_->AddModule(pm);
    const int out = added.ok() ? *added : profile::kNoModule;
    modules_.emplace(key, out);
    return out;
  }

  SinkFormat format_;
  std::FILE* out_;
  absl::Status status_;
  std::unique_ptr<profile::Profile> profile_;
  absl::flat_hash_map<std::pair<uint64_t, size_t>, int> modules_;
  std::vector<profile::Frame> frames_, kernel_;
  absl::flat_hash_map<std::string, uint64_t> comm_ids_;
  absl::flat_hash_map<std::vector<uint64_t>, size_t, RawHash, RawEq> raw_stacks_;
  std::vector<uint64_t> raw_;  // RawKey's scratch
};

}  // namespace

SinkFormat SinkFormatOf(Format format) {
  switch (format) {
    case Format::kJson:
      return SinkFormat::kJson;
    case Format::kPprof:
      return SinkFormat::kPprof;
    case Format::kFolded:
      return SinkFormat::kFolded;
    case Format::kText:
    case Format::kPerfScript:
      break;
  }
  return SinkFormat::kPerfScript;
}

std::unique_ptr<SampleSink> MakeSink(SinkFormat format, std::FILE* out) {
  switch (format) {
    case SinkFormat::kPerfScript:
      return std::make_unique<PerfScriptSink>(out);
    case SinkFormat::kJson:
      return std::make_unique<JsonSink>(out);
    case SinkFormat::kPprof:
    case SinkFormat::kFolded:
      return std::make_unique<ProfileSink>(format, out);
  }
  return nullptr;
}

}  // namespace unwindd::service::perf

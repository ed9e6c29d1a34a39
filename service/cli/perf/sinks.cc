#include "service/cli/perf/sinks.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "absl/cleanup/cleanup.h"
#include "absl/container/flat_hash_map.h"
#include "absl/hash/hash.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "service/cli/output.h"
#include "service/cli/perf_script/perf_script.h"
#include "proc/jit/perf_map.h"
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

// The name of the JIT code each mapping of `s` holds ("" for none).
std::vector<std::string> CodeNames(const UnwoundSample& s) {
  std::vector<std::string> out;
  if (s.mappings == nullptr) return out;
  out.reserve(s.mappings->size());
  for (const proc::SnapshotMapping& m : *s.mappings) {
    out.push_back(m.code_image != nullptr ? m.code_image->name : std::string());
  }
  return out;
}

// perf script's text for one sample. One per thread that formats: it
// keeps the prepared mapping tables of the processes it saw.
class PerfScriptFormatter {
 public:
  explicit PerfScriptFormatter(proc::jit::PerfMaps* perf_maps) : perf_maps_(perf_maps) {}

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
        const std::vector<std::string> code_names = CodeNames(s);
        cli::PerfScriptMappings::Names names;
        names.code_names = code_names;
        names.pid = static_cast<pid_t>(s.pid);
        if (perf_maps_ != nullptr && s.pid > 0) names.perf_map = perf_maps_->Get(s.pid);
        it = tables_.emplace(s.target_id,
                             std::make_unique<cli::PerfScriptMappings>(Mappings(s), names))
                 .first;
      }
      cli::AppendPerfScriptFrames(s.thread, *it->second, out,
                                  s.user_callchain.empty() ? cli::FrameAddresses::kUnwound
                                                           : cli::FrameAddresses::kRecorded);
    }
    out->push_back('\n');
  }

 private:
  static constexpr size_t kMaxTables = 64;
  proc::jit::PerfMaps* const perf_maps_;
  absl::flat_hash_map<uint64_t, std::unique_ptr<cli::PerfScriptMappings>> tables_;
  cli::PerfScriptHeader header_;  // reused: no allocation per sample
};

class PerfScriptSink : public SampleSink {
 public:
  PerfScriptSink(std::FILE* out, proc::jit::PerfMaps* perf_maps)
      : out_(out), perf_maps_(perf_maps), formatter_(perf_maps) {}
  void Add(const UnwoundSample& s) override {
    if (!status_.ok()) return;
    text_.clear();
    formatter_.Format(s, &text_);
    status_ = Write(out_, text_.view());
  }
  SampleFormatterFactory WorkerFormatter() override {
    return [perf_maps = perf_maps_] {
      auto f = std::make_shared<PerfScriptFormatter>(perf_maps);
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
  proc::jit::PerfMaps* const perf_maps_;
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

// One thread's part of a profile (pprof, folded): the samples it saw
// aggregated into a profile::Profile, one module per mapping a frame lands
// in (the kernel's mapping, as pprof wants it: profile.h), named by the
// unwinder's build-id and load bias. The pipeline's workers each fill one
// as they unwind; ProfileSink merges them (profile::MergeProfiles).
class ProfileBuilder {
 public:
  void Add(const UnwoundSample& s) {
    if (!status_.ok()) return;
    if (profile_ == nullptr) {
      profile_ = std::make_unique<profile::Profile>(profile::EventValueType(s.event));
      first_seq_ = s.seq;
    }
    const profile::SampleValues values{
        1, static_cast<int64_t>(std::min<uint64_t>(s.period, uint64_t{1} << 40))};
    // A thread's samples share their outer frames with its recent ones
    // (same mapping table, same thread): those frames' nodes are taken from
    // whichever of its two paths (ThreadPaths) shares more of them, and
    // only the frames that differ are looked up (their mapping, then their
    // node), outermost first.
    if (threads_.size() >= kMaxThreadsRemembered || frames_remembered_ > kMaxFramesRemembered) {
      threads_.clear();
      frames_remembered_ = 0;
    }
    ThreadPaths& thread = threads_[{s.target_id, s.tid}];
    // Whatever this sample leaves in the thread's paths is counted.
    frames_remembered_ -= thread.Frames();
    absl::Cleanup count = [this, &thread] { frames_remembered_ += thread.Frames(); };
    const bool new_process = thread.comm != s.comm || thread.pid != s.pid;
    if (thread.label_set < 0 || new_process || thread.event != s.event) {
      // A recording of several events: a thread's samples of each weigh
      // in their event's column (profile.h), with the same stacks.
      profile::ThreadLabels labels;
      labels.pid = s.pid;
      labels.tid = s.tid;
      labels.comm = s.comm;
      labels.event = s.event;
      absl::StatusOr<uint32_t> id = profile_->LabelSet(labels);
      if (!id.ok()) {
        status_ = id.status();
        return;
      }
      thread.label_set = static_cast<int64_t>(*id);
      thread.stack_index = -1;  // the last stack's sums are another label set's
      thread.comm = s.comm;
      thread.pid = s.pid;
      thread.event = s.event;
      if (new_process) thread.Clear();
    }
    // Outermost first: the user frames from the last (kind: a return
    // address, or an exact pc, frame 0's and the one after a signal frame,
    // as profile.h records them), then the kernel's.
    const std::vector<unwinder::Frame>& frames = s.thread.frames;
    keys_.resize(2 * (frames.size() + s.kernel.size()));  // every key written below
    uint64_t* key = keys_.data();
    for (size_t i = frames.size(); i-- > 0;) {
      const bool ra = i > 0 && frames[i].method != unwinder::Method::kSignal;
      *key++ = frames[i].pc;
      *key++ = ra ? kReturnAddress : kPc;
    }
    for (size_t i = s.kernel.size(); i-- > 0;) {
      *key++ = s.kernel[i];
      *key++ = kKernel;
    }
    // Frames equal to the last sample's, and to the deep path's.
    const size_t same_last = SharedFrames(keys_, thread.last.keys);
    const size_t same_deep = SharedFrames(keys_, thread.deep.keys);
    const size_t same = std::max(same_last, same_deep);
    if (same_deep > same_last) {
      thread.last.nodes.assign(thread.deep.nodes.begin(), thread.deep.nodes.begin() + same);
      thread.deep_misses = 0;
    } else {
      thread.last.nodes.resize(same);
      ++thread.deep_misses;
    }
    std::vector<uint32_t>& nodes = thread.last.nodes;
    uint32_t node = same > 0 ? nodes[same - 1] : profile::Profile::kRoot;
    for (size_t k = same; 2 * k < keys_.size(); ++k) {
      const uint64_t address = keys_[2 * k];
      const uint64_t kind = keys_[2 * k + 1];
      absl::StatusOr<uint32_t> child;
      if (kind == kKernel) {
        child = profile_->Child(node, {address, false, profile::kNoModule}, /*kernel=*/true);
      } else {
        const size_t i = frames.size() - 1 - k;
        const bool ra = kind == kReturnAddress;
        child = profile_->Child(
            node, {address, ra, ModuleOf(s, frames[i], ra ? address - 1 : address)},
            /*kernel=*/false);
      }
      if (!child.ok()) {
        status_ = child.status();
        thread.Clear();
        return;
      }
      node = *child;
      nodes.push_back(node);
    }
    thread.last.keys.swap(keys_);
    if (thread.last.keys.size() > thread.deep.keys.size() ||
        thread.deep_misses >= kMaxDeepMisses) {
      thread.deep = thread.last;
      thread.deep_misses = 0;
    }
    // The same stack as the thread's last sample: its sums, found again
    // without the (label set, node) lookup.
    if (node == thread.stack_node && thread.stack_index >= 0) {
      status_ = profile_->AddToStack(static_cast<size_t>(thread.stack_index), values);
      return;
    }
    size_t stack = 0;
    status_ = profile_->AddToNode(static_cast<uint32_t>(thread.label_set), node, values, &stack,
                                  s.seq);
    thread.stack_node = node;
    thread.stack_index = status_.ok() ? static_cast<int64_t>(stack) : -1;
  }

  const absl::Status& status() const { return status_; }
  const profile::Profile* profile() const { return profile_.get(); }
  profile::Profile* mutable_profile() { return profile_.get(); }
  uint64_t first_seq() const { return first_seq_; }

 private:
  // The kinds of frame in a stack's key words.
  static constexpr uint64_t kPc = 0;
  static constexpr uint64_t kReturnAddress = 1;
  static constexpr uint64_t kKernel = 2;
  static constexpr size_t kMaxThreadsRemembered = 4096;
  // Frames in all threads' paths (20 bytes each, as keys and nodes); past
  // it, every thread's are forgotten, as past kMaxThreadsRemembered
  // threads: a recording of thousands of threads with deep stacks then
  // costs lookups, not memory.
  static constexpr size_t kMaxFramesRemembered = size_t{1} << 20;
  // Samples in a row whose prefix the deep path did not lengthen before
  // the next one replaces it.
  static constexpr int kMaxDeepMisses = 16;

  // A sample's frames as (address, kind) pairs, outermost first, and the
  // stack tree node each one ends at.
  struct Path {
    std::vector<uint64_t> keys;
    std::vector<uint32_t> nodes;
  };
  // A thread's paths and labels. `last` is its last sample's path. `deep`
  // is the longest recent one: in a recursion whose depth varies from
  // sample to sample, a sample shares with the last only the levels both
  // reached, and with the deepest all of its own (on the corpus, half to
  // two thirds fewer lookups). It is replaced by a longer path, or by the
  // last one after kMaxDeepMisses samples it gave nothing more to.
  struct ThreadPaths {
    Path last;
    Path deep;
    int deep_misses = 0;
    // The last sample's stack: its node and its index in the profile's
    // samples() (-1: none).
    uint32_t stack_node = 0;
    int64_t stack_index = -1;
    int64_t label_set = -1;
    uint32_t pid = 0;
    std::string comm;
    std::string event;

    void Clear() {
      last = {};
      deep = {};
      deep_misses = 0;
      stack_index = -1;
    }
    size_t Frames() const { return last.nodes.size() + deep.nodes.size(); }
  };

  // How many (address, kind) pairs `a` and `b` start with in common.
  static size_t SharedFrames(const std::vector<uint64_t>& a, const std::vector<uint64_t>& b) {
    const size_t n = std::min(a.size(), b.size());
    size_t i = 0;
    // Two frames at a time, one branch for the four keys; then key by key.
    for (; i + 4 <= n; i += 4) {
      if (((a[i] ^ b[i]) | (a[i + 1] ^ b[i + 1]) | (a[i + 2] ^ b[i + 2]) |
           (a[i + 3] ^ b[i + 3])) != 0) {
        break;
      }
    }
    while (i < n && a[i] == b[i]) ++i;
    return i / 2;
  }

  // The profile's module for `address` (a lookup address) of `s`: the
  // mapping that holds it, or kNoModule.
  int ModuleOf(const UnwoundSample& s, const unwinder::Frame& f, uint64_t address) {
    // Most frames are in the module the frame before was in.
    if (s.target_id == memo_.target_id && address - memo_.start < memo_.size) {
      return memo_.module;
    }
    return FindModule(s, f, address);
  }

  int FindModule(const UnwoundSample& s, const unwinder::Frame& f, uint64_t address) {
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
    const proc::Mapping& m = maps[index].mapping;
    const auto key = std::make_pair(s.target_id, index);
    if (auto hit = modules_.find(key); hit != modules_.end()) {
      memo_ = {s.target_id, m.start, m.end - m.start, hit->second};
      return hit->second;
    }
    profile::Module pm;
    // Anonymous executable memory is perf's "/tmp/perf-PID.map", per
    // process: its code is named by that map when the profile is written.
    pm.path = s.pid > 0 && proc::jit::NamedByPerfMap(m) ? proc::jit::PerfMapPath(s.pid) : m.path;
    if (maps[index].code_image != nullptr) pm.function = maps[index].code_image->name;
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
    memo_ = {s.target_id, m.start, m.end - m.start, out};
    return out;
  }

  absl::Status status_;
  std::unique_ptr<profile::Profile> profile_;
  uint64_t first_seq_ = 0;
  absl::flat_hash_map<std::pair<uint64_t, size_t>, int> modules_;
  // The mapping ModuleOf found last: [start, start + size) of target_id.
  struct {
    uint64_t target_id = 0;
    uint64_t start = 0;
    uint64_t size = 0;
    int module = profile::kNoModule;
  } memo_;
  // (mapping table, tid) -> the thread's recent paths.
  absl::flat_hash_map<std::pair<uint64_t, uint32_t>, ThreadPaths> threads_;
  size_t frames_remembered_ = 0;  // ThreadPaths::Frames() summed over threads_
  std::vector<uint64_t> keys_;  // Add's scratch
};

// pprof and folded: each worker aggregates what it unwinds (a
// ProfileBuilder of its own, WorkerFormatter), and Finish merges them in
// the samples' order, so that the output is what one builder fed every
// sample would write.
class ProfileSink : public SampleSink {
 public:
  ProfileSink(SinkFormat format, std::FILE* out, proc::jit::PerfMaps* perf_maps)
      : format_(format), out_(out), perf_maps_(perf_maps) {}

  void Add(const UnwoundSample& s) override {
    if (own_ == nullptr) own_ = &Builder();
    own_->Add(s);
  }
  SampleFormatterFactory WorkerFormatter() override {
    return [this] {
      ProfileBuilder* b = &Builder();
      return [b](const UnwoundSample& s, cli::TextBuffer*) { b->Add(s); };
    };
  }

  absl::Status Finish(const ProfileInfo& info) override {
    std::vector<const profile::Profile*> parts;
    ProfileBuilder* first = nullptr;
    for (const std::unique_ptr<ProfileBuilder>& b : builders_) {
      if (!b->status().ok()) return b->status();
      if (b->profile() == nullptr) continue;
      parts.push_back(b->profile());
      if (first == nullptr || b->first_seq() < first->first_seq()) first = b.get();
    }
    // The weight is what the first sample's event says (profile.h).
    profile::Profile merged(first != nullptr ? first->profile()->weight_type()
                                             : profile::ValueType{"cpu", "nanoseconds"});
    // One builder saw every sample: its profile is what a merge would make
    // of it (MergeProfiles' contract), without building it again.
    profile::Profile* whole = parts.size() == 1 ? first->mutable_profile() : &merged;
    if (parts.size() > 1) {
      if (absl::Status s = profile::MergeProfiles(parts, merged); !s.ok()) return s;
    }
    if (perf_maps_ != nullptr) NamePerfMapCode(*perf_maps_, *whole);
    std::string bytes;
    if (format_ == SinkFormat::kPprof) {
      absl::StatusOr<std::string> gz = profile::WritePprof(
          *whole, {info.time_nanos, info.duration_nanos, info.period, {}});
      if (!gz.ok()) return gz.status();
      bytes = *std::move(gz);
    } else {
      bytes = profile::WriteFolded(*whole, {});
    }
    absl::Status s = Write(out_, bytes);
    if (s.ok() && std::fflush(out_) != 0) s = absl::DataLossError("cannot write the output");
    return s;
  }

 private:
  ProfileBuilder& Builder() {
    std::lock_guard<std::mutex> lock(mu_);
    builders_.push_back(std::make_unique<ProfileBuilder>());
    return *builders_.back();
  }

  SinkFormat format_;
  std::FILE* out_;
  proc::jit::PerfMaps* const perf_maps_;
  std::mutex mu_;
  std::vector<std::unique_ptr<ProfileBuilder>> builders_;  // guarded by mu_
  ProfileBuilder* own_ = nullptr;  // Add's, when no worker aggregates
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

void NamePerfMapCode(proc::jit::PerfMaps& perf_maps, profile::Profile& profile) {
  for (uint32_t i = 0; i < profile.locations().size(); ++i) {
    const profile::Profile::Location& loc = profile.locations()[i];
    if (loc.module == profile::kNoModule || loc.kernel) continue;
    const pid_t pid = proc::jit::PerfMapPid(profile.modules()[loc.module].path);
    if (pid == 0) continue;
    const proc::jit::PerfMap* map = perf_maps.Get(pid);
    if (map == nullptr) continue;
    if (const proc::jit::PerfMapEntry* e = map->Find(loc.address)) profile.NameLocation(i, e->name);
  }
}

std::unique_ptr<SampleSink> MakeSink(SinkFormat format, std::FILE* out,
                                     proc::jit::PerfMaps* perf_maps) {
  switch (format) {
    case SinkFormat::kPerfScript:
      return std::make_unique<PerfScriptSink>(out, perf_maps);
    case SinkFormat::kJson:
      return std::make_unique<JsonSink>(out);
    case SinkFormat::kPprof:
    case SinkFormat::kFolded:
      return std::make_unique<ProfileSink>(format, out, perf_maps);
  }
  return nullptr;
}

}  // namespace unwindd::service::perf

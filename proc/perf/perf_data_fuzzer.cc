// libFuzzer target: perf.data as `unwind perf` reads it — the header,
// attributes and feature sections, every record in time order (file and
// pipe formats; PerfDataReader), the per-process mapping tables those
// records build (ProcessMaps), and each sample made into a snapshot target
// (PerfSnapshotter: registers, stack copy bounds, the mapping table). A
// recording is a file anyone can hand to the CLI, so every input must be
// read or refused with a status, within the reader's limits.
//
// The same bytes are also read with pread into chunks (a memfd), as a
// pipe-mode stream, and sparsely, as `unwind perf` reads a file (the
// samples' stack copies left in the file): every reader must deliver the
// same records (offsets, sizes, bytes; for the sparse reader, the same
// decoded samples with the same stack bytes, read back from the file) with
// the same status code, or the target traps.
//
// Recorded paths are never opened (they name files of the fuzzing
// machine): SnapshotOptions::locate sends every one to a path that does
// not exist, so the table is built and the files reported missing.
#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <functional>
#include <string_view>
#include <tuple>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/types/span.h"
#include "memory/scoped_fd.h"
#include "proc/perf/perf_data.h"
#include "proc/perf/perf_snapshot.h"
#include "proc/perf/process_maps.h"
#include "proc/perf/records.h"

namespace unwindd::proc::perf {
namespace {

class Consumer : public EventHandler {
 public:
  // `full`: also build the mapping tables and snapshot targets (once per
  // input; the other readers are only compared with it).
  Consumer(const PerfDataReader& reader, SnapshotOptions options, bool full)
      : reader_(reader), snap_(reader.info(), std::move(options)), full_(full) {}

  absl::Status OnEvent(const Event& e) override {
    seen.emplace_back(e.type, e.offset, e.record.size(),
                      std::hash<std::string_view>()(std::string_view(
                          reinterpret_cast<const char*>(e.record.data()), e.record.size())));
    decoded.emplace_back(e.type, e.offset, std::hash<std::string>()(Decoded(e)));
    if (!full_) return absl::OkStatus();
    maps_.Apply(e);
    if (e.type != kRecordSample) return absl::OkStatus();
    KernelCallchain(e.sample);
    e.sample.valid_stack();
    if (e.attr_index < 0 || static_cast<size_t>(e.attr_index) >= reader_.attrs().size()) {
      return absl::OkStatus();
    }
    const EventAttr& attr = reader_.attrs().at(e.attr_index);
    maps_.ThreadComm(e.sample.tid);
    absl::StatusOr<PerfSnapshotter::Prepared> p =
        snap_.Prepare(e.sample, attr, maps_.Find(e.sample.pid));
    if (p.ok()) p->target->ClearSample();
    PerfSnapshotter::Resolved resolved;
    snap_.Resolve(e.sample, attr, maps_.Find(e.sample.pid), resolved).IgnoreError();
    return absl::OkStatus();
  }

  // What was delivered: type, offset, size, a hash of the bytes.
  std::vector<std::tuple<uint32_t, uint64_t, size_t, size_t>> seen;
  // Type, offset and a hash of what the record says, a sample's fields
  // decoded and its stack copy wherever it is.
  std::vector<std::tuple<uint32_t, uint64_t, size_t>> decoded;

 private:
  std::string Decoded(const Event& e) const {
    if (e.type != kRecordSample) {
      return std::string(reinterpret_cast<const char*>(e.record.data()), e.record.size());
    }
    const Sample& s = e.sample;
    std::string out = absl::StrCat(s.ip, ",", s.pid, ",", s.tid, ",", s.time, ",", s.period, ",",
                                   s.cpu, ",", s.regs_user_abi, ",", s.stack_user_size, ",",
                                   s.stack_user_dyn_size, ",", s.weight, ",", s.callchain.size());
    for (size_t i = 0; i < s.callchain.size(); ++i) absl::StrAppend(&out, ",", s.callchain[i]);
    for (size_t i = 0; i < s.regs_user.size(); ++i) absl::StrAppend(&out, ",", s.regs_user[i]);
    std::string stack(s.stack_user_size, '\0');
    if (s.stack_file_offset != 0) {
      if (pread(reader_.stack_file(), stack.data(), stack.size(),
                static_cast<off_t>(s.stack_file_offset)) != static_cast<ssize_t>(stack.size())) {
        stack = "unreadable";
      }
      // The same bytes in place, where `unwind perf` reads copies of large
      // frames: the offset and size come from the file, and must stay
      // within the mapping.
      if (const memory::FileMapping* m = reader_.stack_mapping(); m != nullptr) {
        const absl::Span<const uint8_t> file = m->bytes();
        const bool inside = s.stack_file_offset <= file.size() &&
                            stack.size() <= file.size() - s.stack_file_offset;
        if (inside && stack != "unreadable" &&
            std::memcmp(stack.data(), file.data() + s.stack_file_offset, stack.size()) != 0) {
          __builtin_trap();  // the mapping and the file disagree
        }
      }
    } else {
      stack.assign(reinterpret_cast<const char*>(s.stack_user.span().data()),
                   s.stack_user.span().size());
    }
    return out + stack;
  }

  const PerfDataReader& reader_;
  ProcessMaps maps_;
  PerfSnapshotter snap_;
  bool full_;
};

struct Outcome {
  bool opened = false;
  bool pipe_mode = false;
  absl::StatusCode code = absl::StatusCode::kOk;
  std::vector<std::tuple<uint32_t, uint64_t, size_t, size_t>> seen;
  std::vector<std::tuple<uint32_t, uint64_t, size_t>> decoded;
};

Outcome ReadAll(absl::StatusOr<std::unique_ptr<PerfDataReader>> reader, bool full) {
  Outcome out;
  if (!reader.ok()) return out;
  out.opened = true;
  out.pipe_mode = (*reader)->pipe_mode();
  SnapshotOptions options;
  options.locate = [](const std::string&) { return std::string("/nonexistent/fuzz"); };
  Consumer consumer(**reader, std::move(options), full);
  out.code = (*reader)->Read(consumer).code();
  out.seen = std::move(consumer.seen);
  out.decoded = std::move(consumer.decoded);
  return out;
}

void Run(const uint8_t* data, size_t size) {
  Limits limits;
  const Outcome in_memory =
      ReadAll(PerfDataReader::OpenBuffer(absl::MakeConstSpan(data, size), limits), true);
  if (size == 0) return;  // an empty file is refused by OpenFile alone
  memory::ScopedFd fd(memfd_create("perf.data", MFD_CLOEXEC));
  if (!fd.valid() || write(fd.get(), data, size) != static_cast<ssize_t>(size)) return;
  const std::string path = absl::StrCat("/proc/self/fd/", fd.get());
  const Outcome read = ReadAll(PerfDataReader::OpenFile(path, limits, FileAccess::kRead), false);
  if (read.opened != in_memory.opened || read.code != in_memory.code ||
      read.seen != in_memory.seen) {
    __builtin_trap();  // the chunked reader disagrees with the in-memory one
  }
  const Outcome sparse =
      ReadAll(PerfDataReader::OpenFile(path, limits, FileAccess::kSparse), false);
  if (sparse.opened != in_memory.opened || sparse.code != in_memory.code ||
      sparse.decoded != in_memory.decoded) {
    __builtin_trap();  // the sparse reader disagrees with the in-memory one
  }
  if (!in_memory.pipe_mode) return;
  if (lseek(fd.get(), 0, SEEK_SET) != 0) return;
  const Outcome stream = ReadAll(
      PerfDataReader::OpenStream(memory::ScopedFd(dup(fd.get())), limits), false);
  if (stream.opened != in_memory.opened || stream.code != in_memory.code ||
      stream.seen != in_memory.seen) {
    __builtin_trap();  // the stream reader disagrees with the in-memory one
  }
}

}  // namespace
}  // namespace unwindd::proc::perf

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  unwindd::proc::perf::Run(data, size);
  return 0;
}

// A reader of perf.data as `perf record` writes it — a file (header,
// attrs, data section, feature sections) or pipe mode (`perf record -o -`:
// a 16-byte header, then records, attrs and features arriving as
// synthesized PERF_RECORD_HEADER_* records) — that delivers every record,
// decoded, in timestamp order (ordered_events.h).
//
//   absl::StatusOr<std::unique_ptr<PerfDataReader>> r =
//       PerfDataReader::OpenFile("perf.data");
//   class Printer : public EventHandler {
//     absl::Status OnEvent(const Event& e) override {
//       if (e.type == kRecordSample) use(e.sample);
//       return absl::OkStatus();
//     }
//   } printer;
//   absl::Status s = (*r)->Read(printer);
//   for (const std::string& w : (*r)->warnings().kept()) ...
//
// A file is mapped read-only (or read with pread, FileAccess::kRead),
// never copied whole to the heap; a stream is read through a bounded
// buffer, plus the records a round holds back for ordering. Nothing from the input is trusted: a header or record
// framing that cannot be followed is DataLoss naming the offset; a single
// record that does not decode is skipped with a warning; a truncated file
// gives what it has plus a warning.
#ifndef UNWINDD_PROC_PERF_PERF_DATA_H_
#define UNWINDD_PROC_PERF_PERF_DATA_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "memory/file_mapping.h"
#include "memory/scoped_fd.h"
#include "proc/perf/compressed.h"
#include "proc/perf/header.h"
#include "proc/perf/ordered_events.h"
#include "proc/perf/records.h"
#include "proc/perf/warnings.h"

namespace unwindd::proc::perf {

inline constexpr uint64_t kMaxRecords = uint64_t{1} << 32;
// A payload that follows its record in the stream (HEADER_TRACING_DATA,
// AUXTRACE) is skipped; this bounds how much of it we read to skip it.
inline constexpr uint64_t kMaxPayloadBytes = uint64_t{1} << 30;
// Input read into chunks (FileAccess::kRead, streams): past this many bytes
// of chunks still held (by the time-order queue and by consumers keeping
// Event::keep), records are handed out without a chunk to hold, and a
// consumer copies what it keeps.
inline constexpr uint64_t kMaxHeldBytes = uint64_t{256} << 20;

struct Limits {
  uint64_t max_records = kMaxRecords;
  uint64_t max_queued_events = kMaxQueuedEvents;
  uint64_t max_queued_bytes = kMaxQueuedBytes;
  uint64_t max_payload_bytes = kMaxPayloadBytes;
  uint64_t max_held_bytes = kMaxHeldBytes;
};

// One decoded record. Spans and string_views point into the record and
// are valid only during the OnEvent call.
struct Event {
  uint32_t type = 0;   // kRecord*
  uint16_t misc = 0;
  uint64_t offset = 0;  // file offset (pipe mode: stream offset)
  absl::Span<const uint8_t> record;  // header included
  // What keeps `record` (and every span into it: the sample's stack...)
  // valid after OnEvent returns. Null: the reader's life does when its
  // records_outlive_delivery(), else nothing (copy what you keep). Set:
  // a copy of *keep does (a chunk of the input, or the bytes of a
  // compressed record decompressed, shared, not copied), whatever the
  // reader: check it first.
  const std::shared_ptr<const void>* keep = nullptr;
  int attr_index = -1;  // the attr that wrote it; -1 if unknown
  // Time and ids: the sample's own, or a non-sample's sample_id trailer.
  SampleId id;
  // Filled according to `type`:
  Sample sample;        // kRecordSample
  MmapEvent mmap;       // kRecordMmap, kRecordMmap2
  CommEvent comm;       // kRecordComm
  TaskEvent task;       // kRecordFork, kRecordExit
  LostEvent lost;       // kRecordLost
  ThrottleEvent throttle;  // kRecordThrottle, kRecordUnthrottle
};

// Decodes one record (header included) that attr `attr_index` of `attrs`
// wrote (-1: unknown; non-sample records then use the first attr's
// sample_id trailer) into `e`: what PerfDataReader delivers, and what a
// live sampler's ring buffer holds. NotFound / DataLoss for a record that
// does not decode; other types are delivered undecoded.
// `stack_file_offset`: ParseSample's, for a sparse reader's samples.
absl::Status DecodeEvent(absl::Span<const uint8_t> record, const AttrSet& attrs,
                         int attr_index, Event& e, uint64_t stack_file_offset = 0);

class EventHandler {
 public:
  virtual ~EventHandler() = default;
  // A non-OK status stops Read(), which returns it.
  virtual absl::Status OnEvent(const Event& event) = 0;
};

struct ReadStats {
  uint64_t records = 0;  // every record read, synthesized ones included
  uint64_t samples = 0;  // delivered
  uint64_t events = 0;   // delivered kernel records of every type
  uint64_t skipped = 0;  // records that did not decode, or of no known attr
  uint64_t lost = 0;     // sum of PERF_RECORD_LOST counts
  uint64_t rounds = 0;   // FINISHED_ROUND records
  uint64_t out_of_order = 0;
  uint64_t early_flushes = 0;
  uint64_t max_queued = 0;
};

// How OpenFile reads a regular file. kRead (the default): pread into
// recycled 2 MiB chunks that delivered records point into (Event::keep);
// a file that shrinks is DataLoss. kMap: one mapping of the whole file; a
// file truncated while it is mapped reads as zeros past its new end (the
// SIGBUS guard of memory/file_mapping.h) and the next record delivered is
// DataLoss. kSparse: like kRead, but a sample's STACK_USER copy is not
// read: it is left in the file (Sample::stack_file_offset) for whoever
// unwinds the sample to read as much of it as the walk needs, on its own
// thread (sparse_reader.h).
enum class FileAccess { kMap, kRead, kSparse };

class PerfDataReader {
 public:
  // A perf.data file in either format (perf, too, reads a saved pipe
  // recording), or a directory perf record --threads wrote; a FIFO or
  // other non-regular file is read as a stream.
  // NotFound / PermissionDenied from open; DataLoss or Unimplemented for
  // what is not a supported perf.data.
  static absl::StatusOr<std::unique_ptr<PerfDataReader>> OpenFile(
      const std::string& path, Limits limits = {},
      FileAccess access = FileAccess::kRead);
  // A directory recording (perf record --threads: `data` and data.N
  // files), whatever `access` OpenFile was given: read with pread.
  static absl::StatusOr<std::unique_ptr<PerfDataReader>> OpenDirectory(
      const std::string& path, Limits limits = {});
  // A pipe-mode stream on `fd` (a pipe, a socket, stdin), read once.
  static absl::StatusOr<std::unique_ptr<PerfDataReader>> OpenStream(
      memory::ScopedFd fd, Limits limits = {});
  // Bytes in memory, either format (tests, fuzzers). `bytes` must outlive
  // the reader.
  static absl::StatusOr<std::unique_ptr<PerfDataReader>> OpenBuffer(
      absl::Span<const uint8_t> bytes, Limits limits = {});

  virtual ~PerfDataReader() = default;

  bool pipe_mode() const { return pipe_mode_; }
  // Whether an Event's spans (record, sample stack...) stay valid for as long
  // as the reader lives (a mapped file or a buffer), not only during
  // OnEvent: a consumer may then keep them instead of copying. An Event
  // with `keep` set (a decompressed record) is held by that instead.
  bool records_outlive_delivery() const { return !MustCopy(); }
  // File mode: complete after Open. Pipe mode: grows while Read() goes on
  // (HEADER_ATTR, HEADER_FEATURE, HEADER_BUILD_ID, EVENT_UPDATE records).
  const AttrSet& attrs() const { return attrs_; }
  const RecordingInfo& info() const { return info_; }
  const FileHeader& file_header() const { return file_header_; }
  const Warnings& warnings() const { return warnings_; }
  const ReadStats& stats() const { return stats_; }
  // The file samples' stack copies are read from when the reader left them
  // there (Sample::stack_file_offset; FileAccess::kSparse), valid while the
  // reader lives; -1 otherwise. pread() on it is safe from any thread.
  virtual int stack_file() const { return -1; }
  // The same file mapped, when it could be: a stack copy left there may be
  // read in place (a walk reads a few words of each frame, not the whole
  // copy).
  // Valid while the reader lives; null otherwise.
  virtual const memory::FileMapping* stack_mapping() const { return nullptr; }

  // Delivers every record once, in time order. Call once. Input that
  // cannot be followed (a record framing error) is DataLoss naming the
  // offset, after every record before it was delivered; a non-OK status
  // from the handler stops at once and is returned.
  absl::Status Read(EventHandler& handler);

 protected:
  explicit PerfDataReader(Limits limits) : limits_(limits) {}

  // The next record of the data: its bytes (valid until the next call) and
  // offset. OK with an empty span at the end; `truncated` set if the input
  // ended inside a record.
  virtual absl::Status NextRecord(absl::Span<const uint8_t>& record,
                                  uint64_t& offset, bool& truncated) = 0;
  // Skips `n` bytes that follow the last record (a payload).
  virtual absl::Status SkipPayload(uint64_t n) = 0;
  // The bytes of a record queued earlier at `offset` (mapped input only).
  virtual absl::Span<const uint8_t> RecordAt(uint64_t offset, uint32_t size) = 0;
  // Whether queued records must be copied (streams) when RecordOwner
  // gives nothing to hold instead.
  virtual bool MustCopy() const = 0;
  // What keeps the record NextRecord returned last valid: null when
  // nothing does but the reader (RecordAt) or a copy.
  virtual const std::shared_ptr<const void>* RecordOwner() { return nullptr; }
  // Where the stack copy of the record NextRecord returned last was left
  // in the file (a sparse reader's samples), else 0.
  virtual uint64_t LastStackFileOffset() const { return 0; }
  // Which of the input's files that record came from (a directory
  // recording has several, each its own compressed stream); 0 for one.
  virtual size_t LastSource() const { return 0; }
  // The headers of a whole file (either format; a pipe recording saved to
  // a file is pipe mode, records from kPipeHeaderSize to its end): the
  // attrs and feature sections, and the data's [pos, end).
  absl::Status InitFromFile(FileBytes& bytes, uint64_t& pos, uint64_t& end);
  // DataLoss if `record` (its bytes in the input) can no longer be
  // trusted: a mapped file truncated under it reads as zeros
  // (memory/file_mapping.h). Checked before each record is delivered.
  virtual absl::Status CheckRecord(absl::Span<const uint8_t> record) {
    return absl::OkStatus();
  }
  // Adds a warning, prefixed with the offset unless it is 0.
  void Warn(uint64_t offset, absl::string_view what);

  Limits limits_;
  bool pipe_mode_ = false;
  FileHeader file_header_;
  AttrSet attrs_;
  RecordingInfo info_;
  Warnings warnings_;
  ReadStats stats_;

 private:
  // One record as read (or decompressed): queued in time order, handed on
  // at once, or handled (user records). `owner` holds its bytes when
  // they are in a buffer (else RecordAt finds them again, or they are
  // copied). `stop`: the record limit was reached.
  absl::Status ProcessRecord(absl::Span<const uint8_t> record, uint64_t offset,
                             const std::shared_ptr<const void>* owner,
                             uint64_t stack_file_offset, OrderedQueue& queue,
                             const OrderedQueue::Deliver& deliver, EventHandler& handler,
                             bool& stop);
  // PERF_RECORD_COMPRESSED(2): the records it holds, each processed.
  absl::Status HandleCompressed(absl::Span<const uint8_t> record, uint64_t offset,
                                OrderedQueue& queue, const OrderedQueue::Deliver& deliver,
                                EventHandler& handler, bool& stop);
  // A user record (type >= 64), handled as it arrives.
  absl::Status HandleUserRecord(absl::Span<const uint8_t> record, uint64_t offset,
                                OrderedQueue& queue, const OrderedQueue::Deliver& deliver);
  // Decodes and hands one kernel record to `handler`; records that do not
  // decode become warnings.
  absl::Status Deliver(absl::Span<const uint8_t> record, uint64_t offset,
                       int attr_index, const std::shared_ptr<const void>* keep,
                       uint64_t stack_file_offset, EventHandler& handler);
  // A record the queue hands back, from where its bytes are.
  absl::Status DeliverQueued(OrderedQueue::Entry& e, EventHandler& handler);
  // The timestamp perf would queue the record with; 0 if it has none.
  uint64_t TimeOf(uint32_t type, absl::Span<const uint8_t> record,
                  int attr_index) const;

  bool read_called_ = false;
  bool handler_failed_ = false;
  bool warned_id_positions_ = false;
  // Per input file (LastSource), after its first compressed record.
  std::vector<std::unique_ptr<RecordDecompressor>> decompressors_;
  bool in_compressed_ = false;
  bool warned_build_ids_ = false;
};

}  // namespace unwindd::proc::perf

#endif  // UNWINDD_PROC_PERF_PERF_DATA_H_

// PerfDataReader::Read: the records of the input, decoded and handed to
// the handler in perf's time order (ordered_events.h), the user records
// (HEADER_*, FINISHED_ROUND) handled as they come, the compressed ones
// (perf record -z) opened; where the bytes come from is perf_data.cc's.
#include "proc/perf/perf_data.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <memory>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "proc/perf/bytes.h"
#include "proc/perf/compressed.h"
#include "proc/perf/header.h"

namespace unwindd::proc::perf {

uint64_t PerfDataReader::TimeOf(uint32_t type, absl::Span<const uint8_t> record,
                                int attr_index) const {
  if (attrs_.empty()) return 0;
  if (type == kRecordSample) {
    if (attr_index < 0) return 0;
    const uint64_t t = attrs_.at(attr_index).sample_type;
    if (!(t & kSampleTime)) return 0;
    const uint64_t pos = kRecordHeaderSize + 8 * (((t & kSampleIdentifier) != 0) +
                                                  ((t & kSampleIp) != 0) +
                                                  ((t & kSampleTid) != 0));
    return record.size() >= pos + 8 ? Load64(record.data() + pos) : 0;
  }
  const EventAttr& a = attrs_.at(attr_index < 0 ? 0 : attr_index);
  if (!a.sample_id_all() || !(a.sample_type & kSampleTime)) return 0;
  const uint64_t trailer = SampleIdSize(a.sample_type);
  if (record.size() < kRecordHeaderSize + trailer) return 0;
  const uint64_t pos =
      record.size() - trailer + ((a.sample_type & kSampleTid) ? 8 : 0);
  return Load64(record.data() + pos);
}

absl::Status PerfDataReader::Read(EventHandler& handler) {
  if (read_called_) {
    return absl::FailedPreconditionError("PerfDataReader::Read called twice");
  }
  read_called_ = true;
  OrderedQueue queue(limits_.max_queued_events, limits_.max_queued_bytes);
  OrderedQueue::Deliver deliver = [&](OrderedQueue::Entry& e) {
    return DeliverQueued(e, handler);
  };
  absl::Status status;
  for (;;) {
    absl::Span<const uint8_t> rec;
    uint64_t offset;
    bool truncated;
    status = NextRecord(rec, offset, truncated);
    if (!status.ok()) {
      // Zeros of a file truncated under its mapping make bad framing: say so.
      if (absl::Status c = CheckRecord({}); !c.ok()) status = c;
      break;
    }
    if (truncated) {
      Warn(offset, "the data ends inside this record (truncated file?); "
                   "the records before it are used");
      break;
    }
    if (rec.empty()) break;
    bool stop = false;
    status = ProcessRecord(rec, offset, RecordOwner(), LastStackFileOffset(), queue, deliver,
                           handler, stop);
    if (!status.ok() || stop) break;
  }
  for (const std::unique_ptr<RecordDecompressor>& d : decompressors_) {
    if (d == nullptr || d->pending() == 0 || !status.ok()) continue;
    Warn(0, absl::StrFormat("the compressed records end inside a record (%d bytes of it); "
                            "the records before it are used",
                            d->pending()));
  }
  // After bad input, what came before it is still delivered (a partial
  // result), and the error returned; after the handler's own error,
  // nothing more.
  if (!handler_failed_) {
    absl::Status flushed = queue.FlushAll(deliver);
    if (status.ok()) status = flushed;
  }
  stats_.out_of_order = queue.out_of_order();
  stats_.early_flushes = queue.early_flushes();
  stats_.max_queued = queue.max_queued();
  if (stats_.out_of_order > 0) {
    Warn(0, absl::StrFormat("%d records arrived after later ones had been "
                            "delivered (delivered late, as perf does)",
                            stats_.out_of_order));
  }
  return status;
}

absl::Status PerfDataReader::ProcessRecord(absl::Span<const uint8_t> rec, uint64_t offset,
                                           const std::shared_ptr<const void>* owner,
                                           uint64_t stack_file_offset, OrderedQueue& queue,
                                           const OrderedQueue::Deliver& deliver,
                                           EventHandler& handler, bool& stop) {
  if (stats_.records >= limits_.max_records) {
    Warn(offset, absl::StrFormat("more than %d records; the rest is not read",
                                 limits_.max_records));
    stop = true;
    return absl::OkStatus();
  }
  ++stats_.records;
  const uint32_t type = Load32(rec.data());
  if (type == kRecordCompressed || type == kRecordCompressed2) {
    return HandleCompressed(rec, offset, queue, deliver, handler, stop);
  }
  if (type >= kRecordUserTypeStart) return HandleUserRecord(rec, offset, queue, deliver);
  const int attr_index = attrs_.ForRecord(type, rec);
  const uint64_t time = TimeOf(type, rec, attr_index);
  if (time == 0 || time == ~uint64_t{0}) {
    // perf delivers records without a timestamp at once (-ETIME).
    return Deliver(rec, offset, attr_index, owner, stack_file_offset, handler);
  }
  OrderedQueue::Entry e;
  e.time = time;
  e.offset = offset;
  e.size = static_cast<uint32_t>(rec.size());
  e.attr_index = attr_index;
  e.stack_file_offset = stack_file_offset;
  if (owner != nullptr) {
    e.data = rec.data();
    e.owner = *owner;
  } else if (MustCopy()) {
    e.copy.assign(rec.begin(), rec.end());
  }
  return queue.Push(std::move(e), deliver);
}

absl::Status PerfDataReader::HandleCompressed(absl::Span<const uint8_t> rec, uint64_t offset,
                                              OrderedQueue& queue,
                                              const OrderedQueue::Deliver& deliver,
                                              EventHandler& handler, bool& stop) {
  if (in_compressed_) {
    return absl::DataLossError(absl::StrFormat(
        "a compressed record inside the compressed record at 0x%x", offset));
  }
  // PERF_RECORD_COMPRESSED: header, data; PERF_RECORD_COMPRESSED2:
  // header, u64 data_size, data (then padding).
  absl::Span<const uint8_t> payload = rec.subspan(kRecordHeaderSize);
  if (Load32(rec.data()) == kRecordCompressed2) {
    if (payload.size() < 8 || Load64(payload.data()) > payload.size() - 8) {
      return absl::DataLossError(absl::StrFormat(
          "COMPRESSED2 at 0x%x: its data_size runs past its %d bytes", offset, rec.size()));
    }
    payload = payload.subspan(8, Load64(payload.data()));
  }
  // Each input file is a stream of its own (perf record --threads -z).
  const size_t source = LastSource();
  if (source >= decompressors_.size()) decompressors_.resize(source + 1);
  std::unique_ptr<RecordDecompressor>& decompressor = decompressors_[source];
  if (decompressor == nullptr) decompressor = std::make_unique<RecordDecompressor>();
  absl::StatusOr<std::shared_ptr<const Decompressed>> out = decompressor->Next(payload);
  if (!out.ok()) {
    return absl::Status(out.status().code(),
                        absl::StrFormat("compressed record at 0x%x: %s (perf record -z)",
                                        offset, out.status().message()));
  }
  // Its records are handled as if read from the file at its offset; they
  // point into the decompressed bytes, which the queued ones hold.
  const std::shared_ptr<const void> owner = *out;
  const absl::Span<const uint8_t> bytes = (*out)->bytes();
  size_t pos = 0;
  in_compressed_ = true;
  absl::Status status;
  while (bytes.size() - pos >= kRecordHeaderSize && status.ok() && !stop) {
    const uint16_t size = Load16(bytes.data() + pos + 6);
    if (size < kRecordHeaderSize) {
      status = absl::DataLossError(absl::StrFormat(
          "a record in the compressed record at 0x%x says it is %d bytes (at least %d)",
          offset, size, kRecordHeaderSize));
      break;
    }
    if (size > bytes.size() - pos) break;  // goes on in the next compressed record
    status = ProcessRecord(bytes.subspan(pos, size), offset, &owner, 0, queue, deliver, handler,
                           stop);
    pos += size;
  }
  in_compressed_ = false;
  decompressor->KeepRest(bytes.subspan(pos));
  return status;
}

absl::Status PerfDataReader::HandleUserRecord(absl::Span<const uint8_t> rec,
                                              uint64_t offset, OrderedQueue& queue,
                                              const OrderedQueue::Deliver& deliver) {
  const uint32_t type = Load32(rec.data());
  switch (type) {
    case kRecordFinishedRound:
      ++stats_.rounds;
      return queue.FlushRound(deliver);
    case kRecordHeaderAttr: {
      // struct perf_record_header_attr: header, attr (attr.size bytes),
      // then the event's ids to the end of the record.
      if (rec.size() < kRecordHeaderSize + kAttrSizeVer0) {
        return absl::DataLossError(absl::StrFormat(
            "HEADER_ATTR at 0x%x: %d bytes cannot hold an attr", offset, rec.size()));
      }
      uint32_t size = Load32(rec.data() + kRecordHeaderSize + kAttrOffSize);
      if (size == 0) size = kAttrSizeVer0;
      if (size < kAttrSizeVer0 || size > rec.size() - kRecordHeaderSize) {
        return absl::DataLossError(absl::StrFormat(
            "HEADER_ATTR at 0x%x: attr of %d bytes in a %d-byte record", offset,
            size, rec.size()));
      }
      EventAttr attr;
      absl::Status s = ParseEventAttr(rec.subspan(kRecordHeaderSize, size), attr);
      if (!s.ok()) return s;
      for (size_t p = kRecordHeaderSize + size; p + 8 <= rec.size(); p += 8) {
        attr.ids.push_back(Load64(rec.data() + p));
      }
      s = attrs_.Add(std::move(attr));
      if (!s.ok()) {
        return absl::DataLossError(absl::StrFormat("HEADER_ATTR at 0x%x: %s",
                                                   offset, s.message()));
      }
      break;
    }
    case kRecordHeaderTracingData: {
      // struct perf_record_header_tracing_data { header; u32 size; u32 pad; }
      // and `size` bytes of tracing data after the record.
      if (rec.size() < kRecordHeaderSize + 4) {
        return absl::DataLossError(absl::StrFormat(
            "HEADER_TRACING_DATA at 0x%x is %d bytes", offset, rec.size()));
      }
      uint64_t size = Load32(rec.data() + kRecordHeaderSize);
      size = (size + 7) & ~uint64_t{7};
      if (size > limits_.max_payload_bytes) {
        return absl::DataLossError(absl::StrFormat(
            "HEADER_TRACING_DATA at 0x%x: %d bytes of tracing data (at most %d)",
            offset, size, limits_.max_payload_bytes));
      }
      return SkipPayload(size);
    }
    case kRecordAuxtrace: {
      // struct perf_record_auxtrace { header; u64 size; ... }: `size`
      // bytes of trace data follow the record.
      if (rec.size() < kRecordHeaderSize + 8) {
        return absl::DataLossError(absl::StrFormat(
            "AUXTRACE at 0x%x is %d bytes", offset, rec.size()));
      }
      uint64_t size = Load64(rec.data() + kRecordHeaderSize);
      if (size > limits_.max_payload_bytes) {
        return absl::DataLossError(absl::StrFormat(
            "AUXTRACE at 0x%x: %d bytes of trace (at most %d)", offset, size,
            limits_.max_payload_bytes));
      }
      return SkipPayload(size);
    }
    case kRecordHeaderBuildId: {
      BuildIdEntry e;
      absl::Status s = ParseBuildIdEvent(rec, e);
      if (!s.ok()) {
        Warn(offset, absl::StrCat("HEADER_BUILD_ID: ", s.message(), "; skipped"));
      } else if (info_.build_ids.size() < kMaxBuildIds) {
        info_.build_ids.push_back(std::move(e));
      } else if (!warned_build_ids_) {
        warned_build_ids_ = true;
        Warn(offset, absl::StrFormat("more than %d build-ids; the rest are ignored",
                                     kMaxBuildIds));
      }
      break;
    }
    case kRecordIdIndex: {
      // struct perf_record_id_index { header; u64 nr; entries[nr] of
      // { u64 id, idx, cpu, tid } } (newer perf appends more after them).
      if (rec.size() < kRecordHeaderSize + 8) break;
      const uint64_t nr = Load64(rec.data() + kRecordHeaderSize);
      if (nr > (rec.size() - 16) / 32) {
        Warn(offset, absl::StrFormat("ID_INDEX of %d entries does not fit in "
                                     "%d bytes; skipped", nr, rec.size()));
        break;
      }
      for (uint64_t i = 0; i < nr; ++i) {
        const uint8_t* entry = rec.data() + 16 + 32 * i;
        const uint64_t id = Load64(entry);
        const uint64_t idx = Load64(entry + 8);
        if (attrs_.IndexOfId(id) < 0 && idx < attrs_.size()) {
          absl::Status s = attrs_.AddId(idx, id);
          if (!s.ok()) {
            Warn(offset, absl::StrCat("ID_INDEX: ", s.message()));
            break;
          }
        }
      }
      break;
    }
    case kRecordEventUpdate: {
      // struct perf_record_event_update { header; u64 type; u64 id; ... }.
      if (rec.size() < kRecordHeaderSize + 16) break;
      if (Load64(rec.data() + 8) != kEventUpdateName) break;
      const int index = attrs_.IndexOfId(Load64(rec.data() + 16));
      if (index < 0) break;
      absl::Span<const uint8_t> name = rec.subspan(24);
      size_t n = 0;
      while (n < name.size() && name[n] != 0) ++n;
      attrs_.mutable_at(index).name.assign(reinterpret_cast<const char*>(name.data()), n);
      break;
    }
    case kRecordHeaderFeature: {
      // struct perf_record_header_feature { header; u64 feat_id; data }.
      if (rec.size() < kRecordHeaderSize + 8) break;
      const uint64_t feat = Load64(rec.data() + 8);
      if (feat >= kFeatureBits) break;
      absl::Status s = ParseFeature(static_cast<int>(feat), rec.subspan(16), info_, attrs_);
      if (!s.ok()) {
        Warn(offset, absl::StrFormat("HEADER_FEATURE %d: %s; skipped", feat,
                                     s.message()));
      }
      break;
    }
    default:
      // HEADER_EVENT_TYPE, TIME_CONV, THREAD_MAP, CPU_MAP, STAT*,
      // FINISHED_INIT, AUXTRACE_INFO/ERROR and later types: nothing to
      // unwind with; their size is in their header.
      break;
  }
  if (type == kRecordHeaderAttr && !warned_id_positions_ && !attrs_.IdPositionsAgree()) {
    warned_id_positions_ = true;
    Warn(offset, "the events disagree on where a record's id is (perf: "
                 "\"non matching sample_type\"); records are matched with the "
                 "first event's layout");
  }
  return absl::OkStatus();
}

absl::Status DecodeEvent(absl::Span<const uint8_t> rec, const AttrSet& attrs,
                         int attr_index, Event& e, uint64_t stack_file_offset) {
  e.type = Load32(rec.data());
  e.misc = Load16(rec.data() + 4);
  e.record = rec;
  e.attr_index = attr_index;
  if (e.type == kRecordSample) {
    if (attr_index < 0) {
      return absl::NotFoundError("sample of an event id no attr names");
    }
    const EventAttr& attr = attrs.at(attr_index);
    absl::Status s = ParseSample(rec, attr, e.sample, stack_file_offset);
    if (!s.ok()) return absl::DataLossError(absl::StrCat("PERF_RECORD_SAMPLE: ", s.message()));
    const uint64_t t = attr.sample_type;
    e.id.pid = e.sample.pid;
    e.id.tid = e.sample.tid;
    e.id.has_tid = t & kSampleTid;
    e.id.time = e.sample.time;
    e.id.has_time = t & kSampleTime;
    e.id.id = e.sample.id;
    e.id.has_id = t & (kSampleId | kSampleIdentifier);
    e.id.stream_id = e.sample.stream_id;
    e.id.cpu = e.sample.cpu;
    e.id.has_cpu = t & kSampleCpu;
    return absl::OkStatus();
  }
  const EventAttr* attr = attrs.empty() ? nullptr : &attrs.at(attr_index < 0 ? 0 : attr_index);
  uint64_t trailer = 0;
  if (attr != nullptr && attr->sample_id_all()) {
    trailer = SampleIdSize(attr->sample_type);
    absl::Status s = ParseSampleIdTrailer(rec, attr->sample_type, e.id);
    if (!s.ok()) {
      return absl::DataLossError(absl::StrFormat("record type %d: %s", e.type, s.message()));
    }
  }
  switch (e.type) {
    case kRecordMmap:
      return ParseMmap(rec, trailer, e.mmap);
    case kRecordMmap2:
      return ParseMmap2(rec, trailer, e.mmap);
    case kRecordComm:
      return ParseComm(rec, trailer, e.comm);
    case kRecordFork:
    case kRecordExit:
      return ParseTask(rec, trailer, e.task);
    case kRecordLost:
      return ParseLost(rec, trailer, e.lost);
    case kRecordThrottle:
    case kRecordUnthrottle:
      return ParseThrottle(rec, trailer, e.throttle);
    default:
      return absl::OkStatus();  // delivered undecoded; a handler may look at `record`
  }
}

absl::Status PerfDataReader::DeliverQueued(OrderedQueue::Entry& e,
                                           EventHandler& handler) {
  if (e.owner != nullptr) {
    return Deliver(absl::MakeConstSpan(e.data, e.size), e.offset, e.attr_index,
                   &e.owner, e.stack_file_offset, handler);
  }
  absl::Span<const uint8_t> rec =
      e.copy.empty() ? RecordAt(e.offset, e.size) : absl::MakeConstSpan(e.copy);
  return Deliver(rec, e.offset, e.attr_index, nullptr, e.stack_file_offset, handler);
}

absl::Status PerfDataReader::Deliver(absl::Span<const uint8_t> rec, uint64_t offset,
                                     int attr_index,
                                     const std::shared_ptr<const void>* keep,
                                     uint64_t stack_file_offset,
                                     EventHandler& handler) {
  if (absl::Status c = CheckRecord(rec); !c.ok()) return c;
  Event e;
  e.offset = offset;
  e.keep = keep;
  absl::Status decoded = DecodeEvent(rec, attrs_, attr_index, e, stack_file_offset);
  if (!decoded.ok()) {
    ++stats_.skipped;
    Warn(offset, absl::StrCat(decoded.message(), "; skipped"));
    return absl::OkStatus();
  }
  if (e.type == kRecordSample) ++stats_.samples;
  if (e.type == kRecordLost) stats_.lost += e.lost.lost;
  ++stats_.events;
  absl::Status s = handler.OnEvent(e);
  if (!s.ok()) handler_failed_ = true;
  return s;
}

}  // namespace unwindd::proc::perf

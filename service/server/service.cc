#include "service/server/service.h"

#include <cstdio>

#include <algorithm>
#include <optional>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "grpc/grpc.h"
#include "grpc/slice.h"
#include "service/common/convert.h"
#include "service/common/grpc_status.h"
#include "service/server/batch_reader.h"
#include "service/server/core_files.h"
#include "service/server/snapshot_messages.h"
#include "service/server/unwind.h"

namespace unwindd::service {
namespace {

// Why a request stopped waiting for its unwind (OK: it did not).
absl::Status GaveUp(Watchdog::Reason why) {
  switch (why) {
    case Watchdog::kDeadline:
      return absl::DeadlineExceededError("the request's deadline passed");
    case Watchdog::kGaveUp:
      return absl::CancelledError("the client cancelled the request");
    case Watchdog::kNone:
      break;
  }
  return absl::OkStatus();
}

// How often a waiting handler looks at its call (cancelled?) and deadline.
constexpr absl::Duration kPollInterval = absl::Milliseconds(20);

// Whole-request validation shared by UnwindProcess and UnwindCore.
absl::Status CheckTids(const google::protobuf::RepeatedField<int32_t>& tids,
                       int max, std::vector<pid_t>* out) {
  if (tids.size() > max) {
    return absl::InvalidArgumentError(absl::StrFormat("more than %d tids", max));
  }
  for (int32_t t : tids) {
    if (t <= 0) return absl::InvalidArgumentError(absl::StrFormat("invalid tid %d", t));
    out->push_back(t);
  }
  return absl::OkStatus();
}

}  // namespace

UnwinderService::UnwinderService(const ServiceOptions& options,
                                 const PeerRegistry* peers)
    : options_(options),
      peers_(peers),
      cache_(options.module_cache_bytes),
      pool_(options.workers, options.max_queued),
      watchdog_(kPollInterval) {
  vdso_ = ReadOwnVdso(cache_);
  binaries_.debug_dirs = options.debug_dirs;
  // Only --debuginfod turns it on. (Create() writes DEBUGINFOD_URLS, which
  // libdebuginfod reads; the workers are idle this early.)
  if (!options.debuginfod.urls.empty()) {
    absl::StatusOr<std::unique_ptr<locate::Debuginfod>> d =
        locate::Debuginfod::Create(options.debuginfod);
    if (d.ok()) {
      binaries_.debuginfod = *std::move(d);
    } else {
      std::fprintf(stderr, "unwindd: debuginfod: %s\n",
                   std::string(d.status().message()).c_str());
    }
  }
  // The snapshot streams answer with bytes they encode themselves
  // (response_encoder.h) instead of SnapshotResponse messages: the same
  // RPCs and wire format, with handlers whose response type is the raw
  // ByteBuffer; UnwindSnapshotBatches also reads raw messages, which the
  // batch reader parses (batch_reader.h). MarkMethodStreamed is gRPC's way
  // to give a method another
  // synchronous handler (for a bidi stream, as here, it changes nothing
  // else). The indexes are the methods' order in proto/unwinder.proto.
  MarkMethodStreamed(
      kUnwindSnapshotsMethod,
      new grpc::internal::BidiStreamingHandler<UnwinderService, v1::SnapshotRequest,
                                               grpc::ByteBuffer>(
          [](UnwinderService* service, grpc::ServerContext* context,
             grpc::ServerReaderWriter<grpc::ByteBuffer, v1::SnapshotRequest>* stream) {
            return service->StreamSnapshots(context, stream);
          },
          this));
  MarkMethodStreamed(
      kUnwindSnapshotBatchesMethod,
      new grpc::internal::BidiStreamingHandler<UnwinderService, grpc::ByteBuffer,
                                               grpc::ByteBuffer>(
          [](UnwinderService* service, grpc::ServerContext* context,
             grpc::ServerReaderWriter<grpc::ByteBuffer, grpc::ByteBuffer>* stream) {
            return service->StreamSnapshotBatches(context, stream);
          },
          this));
}

UnwinderService::~UnwinderService() { FinishShutdown(); }

void UnwinderService::BeginShutdown() { shutting_down_.store(true); }

bool UnwinderService::WaitIdle(absl::Time deadline) {
  absl::MutexLock l(&busy_mu_);
  auto idle = [this]() ABSL_SHARED_LOCKS_REQUIRED(busy_mu_) { return busy_ == 0; };
  return busy_mu_.AwaitWithDeadline(absl::Condition(&idle), deadline);
}

int UnwinderService::EndIdleStreams() {
  absl::MutexLock l(&busy_mu_);
  // With the status in the trailers (gRPC sends them, then RST_STREAM
  // NO_ERROR), unlike ServerContext::TryCancel's CANCELLED, which
  // clients do not retry.
  for (grpc::ServerContext* c : idle_streams_) {
    grpc_call_cancel_with_status(
        c->c_call(), GRPC_STATUS_UNAVAILABLE,
        "unwindd is draining: every message so far is answered; reopen the stream",
        nullptr);
  }
  return static_cast<int>(idle_streams_.size());
}

void UnwinderService::FinishShutdown() {
  shutting_down_.store(true);
  pool_.Shutdown(/*cancel=*/true);
}

absl::Time UnwinderService::Deadline(grpc::ServerContext* context) const {
  absl::Time client = absl::FromChrono(context->deadline());
  return std::min(client, absl::Now() + options_.max_request_time);
}

absl::StatusOr<Caller> UnwinderService::Identify(
    grpc::ServerContext* context) const {
  std::string peer = context->peer();
  if (peers_ == nullptr) {
    return absl::UnauthenticatedError("no peer credentials available");
  }
  absl::StatusOr<Caller> caller = peers_->Identify(peer, options_.allow_tcp_unwind_any);
  if (caller.ok() && options_.tls && caller->transport == Caller::Transport::kTcp) {
    std::shared_ptr<const grpc::AuthContext> auth = context->auth_context();
    absl::Status s = auth == nullptr
                         ? absl::UnauthenticatedError("no TLS context for a TCP call")
                         : ApplyTlsIdentity(*auth, options_.tls_allow, &*caller);
    if (!s.ok()) return s;
  }
  return caller;
}

absl::StatusOr<int> UnwinderService::Frames(uint32_t requested) const {
  if (requested == 0) return options_.default_frames;
  return static_cast<int>(std::min<uint32_t>(requested, options_.max_frames));
}

absl::Status UnwinderService::RunJob(grpc::ServerContext* context, int64_t key,
                                     absl::Time deadline, RequestLog& log,
                                     WorkPool::Fn fn, bool here) {
  if (here) {
    Watchdog::Watch watch(deadline, [context] { return context->IsCancelled(); });
    watchdog_.Add(&watch);
    const bool ran = pool_.RunHereIfIdle(key, fn, watch.cancel);
    watchdog_.Remove(&watch);
    if (ran) {
      log.set_queued(absl::ZeroDuration());
      return GaveUp(watch.fired());
    }
  }
  absl::StatusOr<std::shared_ptr<WorkPool::Job>> job =
      pool_.Submit(key, std::move(fn));
  if (!job.ok()) {
    if (absl::IsResourceExhausted(job.status())) ++stats_.rejected_requests;
    return job.status();
  }
  while (!(*job)->Wait(std::min(deadline, absl::Now() + kPollInterval))) {
    const Watchdog::Reason why = absl::Now() >= deadline ? Watchdog::kDeadline
                                 : context->IsCancelled() ? Watchdog::kGaveUp
                                                          : Watchdog::kNone;
    if (why == Watchdog::kNone) continue;
    const absl::Status give_up = GaveUp(why);
    if (!pool_.Withdraw(*job)) {
      // Running: stop the walk at its next frame and let the worker detach.
      (*job)->Cancel();
      (*job)->Wait();
    }
    log.set_queued((*job)->queued_for());
    return give_up;
  }
  log.set_queued((*job)->queued_for());
  return absl::OkStatus();
}

absl::StatusOr<Caller> UnwinderService::Admit(grpc::ServerContext* context,
                                               RequestLog& log) const {
  if (shutting_down_.load()) return absl::UnavailableError("unwindd is shutting down");
  absl::StatusOr<Caller> caller = Identify(context);
  if (caller.ok()) log.set_caller(caller->Describe());
  return caller;
}

absl::Status UnwinderService::RunUnwind(
    grpc::ServerContext* context, int64_t key, RequestLog& log,
    unwinder::UnwindOptions& options, v1::UnwindResponse* response,
    absl::FunctionRef<absl::StatusOr<UnwindResult>()> unwind, bool here) {
  absl::StatusOr<UnwindResult> result = absl::UnknownError("not run");
  absl::Status s = RunJob(
      context, key, Deadline(context), log,
      [&](const std::atomic<bool>& cancel) {
        options.cancel = &cancel;
        result = unwind();
      },
      here);
  if (!s.ok()) return s;
  if (!result.ok()) return result.status();
  log.AddStacks(result->stacks);
  ToProto(*result, response);
  return absl::OkStatus();
}

grpc::Status UnwinderService::UnwindProcess(grpc::ServerContext* context,
                                            const v1::UnwindProcessRequest* request,
                                            v1::UnwindResponse* response) {
  Busy busy(this);  // before the shutdown check: see WaitIdle
  ++stats_.process_requests;
  RequestLog log(stats_, "UnwindProcess", "");
  log.set_target(absl::StrCat("pid ", request->pid()));
  auto done = [&](const absl::Status& s) {
    log.Finish(s);
    return ToGrpcStatus(s);
  };
  absl::StatusOr<Caller> caller = Admit(context, log);
  if (!caller.ok()) return done(caller.status());
  if (absl::Status s = CheckPermission(*caller, kPermitProcesses, "unwind processes");
      !s.ok()) {
    return done(s);
  }

  LiveRequest live;
  live.pid = request->pid();
  live.stop_timeout = options_.stop_timeout;
  absl::Status s = CheckTids(request->tids(), options_.max_tids, &live.tids);
  if (!s.ok()) return done(s);
  absl::StatusOr<unwinder::SourcePolicy> sources = SourcesFromProto(request->sources());
  if (!sources.ok()) return done(sources.status());
  live.options.sources = *sources;
  absl::StatusOr<int> frames = Frames(request->max_frames());
  live.options.max_frames = *frames;
  absl::StatusOr<locate::LocateOptions> locate = RequestLocateOptions(
      binaries_, request->debug_dirs(), request->debuginfod(), "", *caller);
  if (!locate.ok()) return done(locate.status());
  live.locate = *std::move(locate);
  live.options.locate = &live.locate;
  // Refuse early, before taking a worker; checked again once attached.
  s = CheckProcessAccess(*caller, live.pid);
  if (!s.ok()) return done(s);

  UnwindEnv env{&cache_, &stats_.memory_bytes_read, &binaries_};
  // On this thread when a worker is free: a one-shot `unwind --server`
  // waits for nothing else (docs/speed.md, "Through a warm unwindd").
  return done(RunUnwind(context, live.pid, log, live.options, response,
                        [&] { return UnwindLiveProcess(*caller, live, env); },
                        /*here=*/true));
}

grpc::Status UnwinderService::UnwindCore(
    grpc::ServerContext* context, grpc::ServerReader<v1::UnwindCoreRequest>* reader,
    v1::UnwindResponse* response) {
  Busy busy(this);
  ++stats_.core_requests;
  RequestLog log(stats_, "UnwindCore", "");
  auto done = [&](const absl::Status& s) {
    log.Finish(s);
    return ToGrpcStatus(s);
  };
  absl::StatusOr<Caller> caller = Admit(context, log);
  if (!caller.ok()) return done(caller.status());
  if (absl::Status s = CheckPermission(*caller, kPermitCores, "unwind cores"); !s.ok()) {
    return done(s);
  }

  v1::UnwindCoreRequest first;
  if (!reader->Read(&first) || !first.has_options()) {
    return done(absl::InvalidArgumentError(
        "the first UnwindCore message must carry the options"));
  }
  const v1::CoreOptions& o = first.options();
  CoreRequest core;
  absl::Status s = CheckTids(o.tids(), options_.max_tids, &core.tids);
  absl::StatusOr<unwinder::SourcePolicy> sources = SourcesFromProto(o.sources());
  if (s.ok() && !sources.ok()) s = sources.status();
  if (s.ok() && o.path_map_size() > options_.snapshot.max_path_maps) {
    s = absl::InvalidArgumentError("too many path_map entries");
  }
  absl::StatusOr<locate::LocateOptions> locate =
      RequestLocateOptions(binaries_, o.debug_dirs(), o.debuginfod(), o.sysroot(), *caller);
  if (s.ok() && !locate.ok()) s = locate.status();
  if (!s.ok()) return done(s);
  core.locate = *std::move(locate);
  core.options.locate = &core.locate;
  core.options.max_frames = *Frames(o.max_frames());
  core.options.sources = *sources;
  core.max_decompressed_bytes = options_.max_decompressed_core_bytes;
  core.sysroot = o.sysroot();
  core.exe = o.exe();
  for (const v1::PathMapping& pm : o.path_map()) {
    core.path_map.emplace_back(pm.from(), pm.to());
  }

  std::optional<ByteReservation> reservation;
  switch (o.core_case()) {
    case v1::CoreOptions::kServerPath:
      core.server_path = o.server_path();
      log.set_target(absl::StrCat("core ", core.server_path));
      break;
    case v1::CoreOptions::kStreamedSize: {
      log.set_target(absl::StrCat("streamed core of ", o.streamed_size(), " bytes"));
      if (o.streamed_size() > options_.max_core_bytes) {
        return done(absl::ResourceExhaustedError(absl::StrFormat(
            "a %d-byte core is over the server's limit of %d bytes",
            o.streamed_size(), options_.max_core_bytes)));
      }
      absl::StatusOr<ByteReservation> r = ByteReservation::Take(
          core_bytes_in_flight_, o.streamed_size(), options_.max_core_bytes_in_flight);
      if (!r.ok()) {
        ++stats_.rejected_requests;
        return done(r.status());
      }
      reservation.emplace(*std::move(r));
      v1::UnwindCoreRequest msg;
      absl::StatusOr<memory::ScopedFd> fd = ReceiveCore(
          [&](std::string* chunk) {
            if (!reader->Read(&msg)) return false;
            *chunk = msg.chunk();  // options again -> an empty chunk
            return true;
          },
          o.streamed_size());
      if (!fd.ok()) return done(fd.status());
      core.streamed = *std::move(fd);
      break;
    }
    default:
      return done(absl::InvalidArgumentError(
          "CoreOptions must set server_path or streamed_size"));
  }

  UnwindEnv env{&cache_, &stats_.memory_bytes_read, &binaries_};
  return done(RunUnwind(context, 0, log, core.options, response,
                        [&] { return UnwindCoreFile(*caller, core, env); }));
}

// A message's answers, encoded (response_encoder.h) straight into gRPC
// slices that become the reply as they are: the room is not zeroed first,
// and the bytes are not copied into the reply after (for 64 samples of a
// few hundred frames, ~0.5 MB each way). A chunk holds the answers of
// many samples; the reply is a ByteBuffer of the chunks' used parts.
class SliceSink final : public AnswerSink {
 public:
  char* Reserve(size_t n) override {
    if (static_cast<size_t>(end_ - next_) < n) NewChunk(n);
    return next_;
  }
  void Commit(char* end) override { next_ = end; }

  // The answers so far, as a message; the sink is empty after.
  grpc::ByteBuffer Take() {
    Close();
    grpc::ByteBuffer out(slices_.data(), slices_.size());
    slices_.clear();
    return out;
  }

 private:
  static constexpr size_t kChunkBytes = 256 << 10;

  // The used part of the current chunk goes to the reply.
  void Close() {
    if (chunk_.size() == 0) return;
    const size_t used = static_cast<size_t>(next_ - start_);
    if (used > 0) slices_.push_back(chunk_.sub(0, used));
    chunk_ = grpc::Slice();
    start_ = next_ = end_ = nullptr;
  }
  void NewChunk(size_t n) {
    Close();
    // grpc_slice_malloc: uninitialised, ours alone until it is sent.
    grpc_slice s = grpc_slice_malloc(std::max(n, kChunkBytes));
    start_ = next_ = reinterpret_cast<char*>(GRPC_SLICE_START_PTR(s));
    end_ = start_ + GRPC_SLICE_LENGTH(s);
    chunk_ = grpc::Slice(s, grpc::Slice::STEAL_REF);
  }

  std::vector<grpc::Slice> slices_;
  grpc::Slice chunk_;
  char* start_ = nullptr;
  char* next_ = nullptr;
  char* end_ = nullptr;
};

// What a snapshot stream keeps from sample to sample: the caller's session
// (one address space per mapping table), the counters, and the answer each
// sample is unwound into (reused) and the slices they are encoded in.
class UnwinderService::SnapshotStream {
 public:
  SnapshotStream(UnwinderService& service, grpc::ServerContext* context,
                 const char* rpc)
      : service_(service), context_(context), log_(service.stats_, rpc, "") {
    ++service_.stats_.snapshot_streams;
    log_.set_target("samples");
  }
  ~SnapshotStream() {
    absl::MutexLock l(&service_.busy_mu_);
    service_.idle_streams_.erase(context_);
  }

  // The checks before the first sample; not OK ends the stream.
  absl::Status Open() {
    absl::StatusOr<Caller> caller = service_.Admit(context_, log_);
    if (!caller.ok()) return caller.status();
    absl::Status allowed = CheckPermission(*caller, kPermitSnapshots, "stream snapshots");
    if (!allowed.ok()) return allowed;
    SnapshotLimits limits = service_.options_.snapshot;
    limits.default_frames = service_.options_.default_frames;
    limits.max_frames = service_.options_.max_frames;
    session_.emplace(*caller,
                     UnwindEnv{&service_.cache_, &service_.stats_.memory_bytes_read,
                               &service_.binaries_},
                     service_.build_ids_, service_.vdso_, limits);
    // Idle until its first message. Checked again under the lock that
    // EndIdleStreams takes, so a stream opened as the drain begins is
    // either ended by it or refused here.
    absl::MutexLock l(&service_.busy_mu_);
    if (service_.shutting_down_.load()) {
      return absl::UnavailableError("unwindd is shutting down");
    }
    service_.idle_streams_.insert(context_);
    return absl::OkStatus();
  }

  // Unwinds the `n` samples of one message and encodes their answers (a
  // SnapshotResponse, or with `batch` the elements of a
  // SnapshotBatchResponse) for Reply(). One job per message: on this
  // thread when a worker slot is free (a sample takes microseconds and no
  // ptrace), one watchdog registration and one slot for the whole message.
  // The message's deadline (the call's, at most --request-timeout) covers
  // all of it: a sample whose walk it cuts short stops with `cancelled`,
  // and those not begun get DEADLINE_EXCEEDED. A sample that cannot be
  // unwound is answered with its error; a non-OK status (shutdown, the
  // stream's sample limit, a cancelled client) ends the stream.
  // A sample of a message, and its stack copy (the request's own, or
  // borrowed from the received bytes: batch_reader.h).
  struct SampleInput {
    const v1::SnapshotRequest& request;
    StackCopy stack;
  };

  absl::Status Samples(int n, absl::FunctionRef<SampleInput(int)> request, bool batch) {
    out_.Take();  // nothing left of a message whose reply was not sent
    // Even while draining: a message received is answered, and the stream
    // ends after it (EndAfterMessage).
    count_ += n;
    if (count_ > service_.options_.max_samples_per_stream) {
      return absl::ResourceExhaustedError(absl::StrFormat(
          "more than %d samples on one stream; open a new one",
          service_.options_.max_samples_per_stream));
    }
    service_.stats_.samples.fetch_add(n, std::memory_order_relaxed);
    for (int i = 0; i < n; ++i) log_.AddSample();
    int done = 0;
    absl::Status s = service_.RunJob(
        context_, 0, service_.Deadline(context_), log_,
        [&](const std::atomic<bool>& cancel) {
          for (; done < n && !cancel.load(std::memory_order_relaxed); ++done) {
            Answer(request(done), &cancel, absl::OkStatus(), batch);
          }
        },
        /*here=*/true);
    // RunJob gave up because the client cancelled. (A client that goes
    // away otherwise is seen by the next Read or Write; asking the call per
    // message would cost a poll of its completion queue.)
    if (absl::IsCancelled(s)) {
      return absl::CancelledError("the client cancelled the stream");
    }
    // Not begun: the deadline passed first, or the job could not be run
    // (the pool's queue is full, or it is shutting down).
    const absl::Status not_run =
        s.ok() ? absl::DeadlineExceededError("the request's deadline passed") : s;
    for (int i = done; i < n; ++i) Answer(request(i), nullptr, not_run, batch);
    return absl::OkStatus();
  }

  // The bytes Samples() encoded.
  grpc::ByteBuffer Reply() { return out_.Take(); }

  // The checks and tables of a batch, before its samples (BeginBatch):
  // InvalidArgument (ending the stream) for too many samples or a table
  // without an id. Other refusals answer the samples naming them.
  absl::Status DefineTables(const v1::SnapshotBatch& batch) {
    return BeginBatch(*session_, batch);
  }
  void ReleaseTables(const v1::SnapshotBatch& batch) { EndBatch(*session_, batch); }

  // Between messages: the counters the stream's samples added.
  void Flush() { log_.Flush(); }

  // After a message's reply: UNAVAILABLE ends the stream when the server
  // drains or the stream has reached its age (docs/fleet.md "Stream
  // lifetime"). Every message read so far has been answered, so the client
  // loses nothing: it opens a new stream (on another replica) and goes on.
  absl::Status EndAfterMessage() const {
    if (service_.shutting_down_.load(std::memory_order_relaxed)) {
      return absl::UnavailableError(
          "unwindd is draining: every message so far is answered; reopen the stream");
    }
    const absl::Duration age = service_.options_.max_stream_age;
    if (age > absl::ZeroDuration() && absl::Now() - opened_ >= age) {
      return absl::UnavailableError(absl::StrCat(
          "the stream reached its maximum age (", absl::FormatDuration(age),
          "): every message so far is answered; reopen the stream"));
    }
    return absl::OkStatus();
  }

  grpc::Status Finish(const absl::Status& s) {
    log_.Finish(s);
    return ToGrpcStatus(s);
  }

 private:
  // One sample (`error` not OK: answered with it, not unwound), encoded
  // into out_ at once: its answer's strings are the session's until the
  // next sample.
  void Answer(const SampleInput& in, const std::atomic<bool>* cancel,
              const absl::Status& error, bool batch) {
    unwinder::StopReason stop = unwinder::StopReason::kEndOfStack;
    absl::Status s = AnswerSample(*session_, in.request, in.stack, cancel, error, batch,
                                  &answer_, out_, &stop);
    if (s.ok()) {
      log_.AddStack(stop, answer_.frames.size());
    } else {
      log_.AddSampleError(s.code());
    }
  }

  UnwinderService& service_;
  grpc::ServerContext* const context_;
  const absl::Time opened_ = absl::Now();
  RequestLog log_;
  std::optional<SnapshotSession> session_;
  uint64_t count_ = 0;
  SampleAnswer answer_;
  SliceSink out_;
};

grpc::Status UnwinderService::StreamSnapshots(
    grpc::ServerContext* context,
    grpc::ServerReaderWriter<grpc::ByteBuffer, v1::SnapshotRequest>* stream) {
  SnapshotStream samples(*this, context, "UnwindSnapshots");
  if (absl::Status s = samples.Open(); !s.ok()) return samples.Finish(s);
  // One message reused from sample to sample, so its strings (the stack
  // copy, paths) keep their buffers; the session borrows the stack copy in
  // place for the sample.
  v1::SnapshotRequest request;
  while (stream->Read(&request)) {
    Busy busy(this, context);
    absl::Status s = samples.Samples(
        1,
        [&](int) -> SnapshotStream::SampleInput {
          return {request, absl::MakeConstSpan(
                               reinterpret_cast<const uint8_t*>(request.stack().data()),
                               request.stack().size())};
        },
        /*batch=*/false);
    if (!s.ok()) return samples.Finish(s);
    samples.Flush();
    if (!stream->Write(samples.Reply())) {
      return samples.Finish(absl::CancelledError("the client went away"));
    }
    if (absl::Status s = samples.EndAfterMessage(); !s.ok()) return samples.Finish(s);
  }
  return samples.Finish(absl::OkStatus());
}

grpc::Status UnwinderService::StreamSnapshotBatches(
    grpc::ServerContext* context,
    grpc::ServerReaderWriter<grpc::ByteBuffer, grpc::ByteBuffer>* stream) {
  SnapshotStream samples(*this, context, "UnwindSnapshotBatches");
  if (absl::Status s = samples.Open(); !s.ok()) return samples.Finish(s);
  // Each message as received, parsed by the batch reader: the samples'
  // stack copies are used where they lie in the received bytes instead of
  // being copied by protobuf. Both are reused from message to message.
  grpc::ByteBuffer bytes;
  ReceivedBatch received;
  while (stream->Read(&bytes)) {
    Busy busy(this, context);
    const bool parsed = received.Parse(bytes);
    bytes.Clear();  // the reader holds the slices
    if (!parsed) {
      return samples.Finish(
          absl::InvalidArgumentError("a message that does not parse as a SnapshotBatch"));
    }
    const v1::SnapshotBatch& batch = received.batch();
    if (absl::Status s = samples.DefineTables(batch); !s.ok()) return samples.Finish(s);
    absl::Status s = samples.Samples(
        batch.samples_size(),
        [&](int i) -> SnapshotStream::SampleInput {
          return {batch.samples(i), received.stack(i)};
        },
        /*batch=*/true);
    if (!s.ok()) return samples.Finish(s);
    samples.ReleaseTables(batch);
    samples.Flush();
    if (!stream->Write(samples.Reply())) {
      return samples.Finish(absl::CancelledError("the client went away"));
    }
    if (absl::Status s = samples.EndAfterMessage(); !s.ok()) return samples.Finish(s);
  }
  return samples.Finish(absl::OkStatus());
}

grpc::Status UnwinderService::GetStats(grpc::ServerContext* context,
                                       const v1::GetStatsRequest* request,
                                       v1::Stats* out) {
  // A certificate no rule names may do nothing, counters included. (Only
  // with TLS: other callers never lacked the right to read them.)
  if (options_.tls) {
    absl::StatusOr<Caller> caller = Identify(context);
    if (!caller.ok()) return ToGrpcStatus(caller.status());
    if (caller->tls && caller->permissions == 0) {
      return ToGrpcStatus(absl::PermissionDeniedError(absl::StrCat(
          caller->Describe(), " may do nothing, not even read the stats (",
          caller->rule.empty() ? std::string("no --tls-allow rule names its certificate")
                               : absl::StrCat("--tls-allow=", caller->rule),
          ")")));
    }
  }
  out->set_process_requests(stats_.process_requests.load());
  out->set_core_requests(stats_.core_requests.load());
  out->set_snapshot_streams(stats_.snapshot_streams.load());
  out->set_samples(stats_.samples.load());
  for (const auto& [k, v] : stats_.errors()) (*out->mutable_errors())[k] = v;
  out->set_frames(stats_.frames.load());
  for (const auto& [k, v] : stats_.stops()) (*out->mutable_stops())[k] = v;
  unwinder::ModuleCache::Stats cs = cache_.stats();
  out->set_module_cache_hits(cs.hits);
  out->set_module_cache_misses(cs.misses);
  out->set_module_cache_evictions(cs.evictions);
  out->set_module_cache_bytes(cs.bytes);
  out->set_module_cache_modules(cs.modules);
  out->set_memory_bytes_read(stats_.memory_bytes_read.load());
  out->set_active_requests(pool_.running());
  out->set_queued_requests(pool_.queued());
  out->set_rejected_requests(stats_.rejected_requests.load());
  out->set_connections(stats_.connections.load());
  out->set_uptime_seconds(absl::ToDoubleSeconds(absl::Now() - stats_.started));
  return grpc::Status::OK;
}

}  // namespace unwindd::service

// The client side of UnwindSnapshots / UnwindSnapshotBatches: a sample as
// the project holds it (proc/snapshot_target.h's mappings, perf's or DWARF
// registers) turned into the API's messages, the way a profiler backend
// sends it. Shared by the server's throughput benchmark and the perf.data
// replay client (testdata/bench/perf_replay.cc), so that both send what a
// real client would.
//
//   v1::MappingTable* t = batch.add_mapping_tables();
//   t->set_id(id);
//   for (const proc::SnapshotMapping& m : mappings) {
//     MappingToProto(m, /*with_image=*/true, t->add_mappings());
//   }
//   v1::SnapshotRequest* r = batch.add_samples();
//   PerfRegistersToProto(attr.sample_regs_user, sample.regs_user, r->mutable_perf_registers());
//
// Addresses are the sampled process's.
#ifndef UNWINDD_SERVICE_COMMON_SNAPSHOT_REQUESTS_H_
#define UNWINDD_SERVICE_COMMON_SNAPSHOT_REQUESTS_H_

#include <cstdint>

#include "absl/types/span.h"
#include "arch/register_set.h"
#include "proc/snapshot_target.h"
#include "proto/unwinder.pb.h"

namespace unwindd::service {

// One mapping as the API's Mapping: range, file offset, protection, the
// path (lossy UTF-8, plus path_bytes when it is not UTF-8), the file's
// identity (inode and device) as recorded, the build-id the sample gives,
// and, with `with_image`, the in-memory image (e.g. the [vdso] copy perf
// keeps), which a client sends once per stream in a MappingTable. `out` is
// overwritten.
void MappingToProto(const proc::SnapshotMapping& m, bool with_image, v1::Mapping* out);

// Registers as perf's PERF_SAMPLE_REGS_USER has them: `mask` is
// perf_event_attr.sample_regs_user, `values` one per set bit, lowest first.
void PerfRegistersToProto(uint64_t mask, absl::Span<const uint64_t> values,
                          v1::PerfRegisters* out);

// Every valid register of `regs`, by DWARF number.
void DwarfRegistersToProto(const arch::RegisterSet& regs, v1::DwarfRegisters* out);

}  // namespace unwindd::service

#endif  // UNWINDD_SERVICE_COMMON_SNAPSHOT_REQUESTS_H_

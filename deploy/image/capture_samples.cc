// capture_samples PID OUT: one profiler sample per thread of PID (registers
// and a copy of its stack from SP, as perf's PERF_SAMPLE_REGS_USER and
// PERF_SAMPLE_STACK_USER give; service/server/testing/capture.h), written
// to OUT as one serialized unwindd.v1.SnapshotBatch, for runc_smoke.py to
// send to the image's unwindd. The samples carry no pid (the server unwinds
// them from their bytes) and ask for debuginfod: the server finds every
// module by build-id, as a replica with a shared store does.
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "service/server/testing/capture.h"

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: capture_samples PID OUT\n");
    return 2;
  }
  unwindd::service::testing::CaptureOptions o;
  o.with_pid = false;
  absl::StatusOr<std::vector<unwindd::v1::SnapshotRequest>> samples =
      unwindd::service::testing::CaptureSamples(std::atoi(argv[1]), o);
  if (!samples.ok()) {
    std::fprintf(stderr, "capture_samples: %s\n", samples.status().ToString().c_str());
    return 1;
  }
  unwindd::v1::SnapshotBatch batch;
  for (unwindd::v1::SnapshotRequest& r : *samples) {
    r.set_debuginfod(true);
    *batch.add_samples() = std::move(r);
  }
  std::ofstream out(argv[2], std::ios::binary);
  if (!(out << batch.SerializeAsString()) || !out.flush()) {
    std::fprintf(stderr, "capture_samples: cannot write %s\n", argv[2]);
    return 1;
  }
  return 0;
}

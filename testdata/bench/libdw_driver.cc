// Unwinds one stopped thread N times with elfutils' libdwfl
// (dwfl_linux_proc_attach + dwfl_getthread_frames), the library eu-stack is
// built on. Modules are reported once; every iteration is a full unwind.
#include <elfutils/libdwfl.h>

#include "testdata/bench/driver_common.h"

namespace {

int CollectFrame(Dwfl_Frame* frame, void* arg) {
  Dwarf_Addr pc = 0;
  bool activation = false;
  if (!dwfl_frame_pc(frame, &pc, &activation)) return DWARF_CB_ABORT;
  static_cast<std::vector<uint64_t>*>(arg)->push_back(pc);
  return DWARF_CB_OK;
}

}  // namespace

int main(int argc, char** argv) {
  unwindd::bench::DriverArgs a = unwindd::bench::ParseDriverArgs(argc, argv);
  unsetenv("DEBUGINFOD_URLS");
  static const Dwfl_Callbacks kCallbacks = {
      .find_elf = dwfl_linux_proc_find_elf,
      .find_debuginfo = dwfl_standard_find_debuginfo,
  };
  Dwfl* dwfl = dwfl_begin(&kCallbacks);
  if (dwfl == nullptr || dwfl_linux_proc_report(dwfl, a.pid) != 0 ||
      dwfl_report_end(dwfl, nullptr, nullptr) != 0) {
    std::fprintf(stderr, "libdw: cannot report modules: %s\n", dwfl_errmsg(-1));
    return 1;
  }
  unwindd::bench::StopThread(a.tid);
  // We stopped the thread ourselves: libdwfl must not attach again.
  if (dwfl_linux_proc_attach(dwfl, a.pid, /*assume_ptrace_stopped=*/true) != 0) {
    std::fprintf(stderr, "libdw: attach: %s\n", dwfl_errmsg(-1));
    return 1;
  }
  std::vector<uint64_t> pcs;
  uint64_t start = unwindd::bench::NowNs();
  for (int i = 0; i < a.iterations; ++i) {
    pcs.clear();
    dwfl_getthread_frames(dwfl, a.tid, CollectFrame, &pcs);
  }
  uint64_t total = unwindd::bench::NowNs() - start;
  unwindd::bench::ResumeThread(a.tid);
  dwfl_end(dwfl);
  unwindd::bench::PrintResult(pcs, total, a.iterations);
  return 0;
}

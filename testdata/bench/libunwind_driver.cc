// Unwinds one stopped thread N times with libunwind's ptrace accessors
// (_UPT_*), with its global cache on, as a profiler would configure it.
#include <libunwind-ptrace.h>

#include "testdata/bench/driver_common.h"

int main(int argc, char** argv) {
  unwindd::bench::DriverArgs a = unwindd::bench::ParseDriverArgs(argc, argv);
  unw_addr_space_t as = unw_create_addr_space(&_UPT_accessors, 0);
  unw_set_caching_policy(as, UNW_CACHE_GLOBAL);
  unwindd::bench::StopThread(a.tid);
  void* upt = _UPT_create(a.tid);
  std::vector<uint64_t> pcs;
  uint64_t start = unwindd::bench::NowNs();
  for (int i = 0; i < a.iterations; ++i) {
    pcs.clear();
    unw_cursor_t cursor;
    if (unw_init_remote(&cursor, as, upt) != 0) break;
    // Bounded like the others: a runaway walk stops at 4096 frames.
    for (int n = 0; n < 4096; ++n) {
      unw_word_t ip = 0;
      unw_get_reg(&cursor, UNW_REG_IP, &ip);
      pcs.push_back(ip);
      if (unw_step(&cursor) <= 0) break;
    }
  }
  uint64_t total = unwindd::bench::NowNs() - start;
  _UPT_destroy(upt);
  unwindd::bench::ResumeThread(a.tid);
  unw_destroy_addr_space(as);
  unwindd::bench::PrintResult(pcs, total, a.iterations);
  return 0;
}

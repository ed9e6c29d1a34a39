// Per-process mapping tables over time, rebuilt from perf records the way
// the kernel changed them (and perf's machine.c replays them): MMAP/MMAP2
// add a mapping and unmap whatever part of older ones it covers; FORK of a
// new process copies its parent's table, a new thread shares its
// process's; COMM with PERF_RECORD_MISC_COMM_EXEC starts an empty table
// (exec replaced the address space); EXIT of the main thread marks the
// process gone. Fed the records in time order (PerfDataReader), the table
// of a sample's pid is exactly the one the process had at that sample.
//
//   ProcessMaps maps;
//   // in EventHandler::OnEvent:
//   maps.Apply(event);
//   if (event.type == kRecordSample) {
//     const ProcessTable* t = maps.Find(event.sample.pid);
//   }
//
// Addresses are the recorded process's. Bounded: mappings per process and
// processes (exited ones are forgotten first); what does not fit is a
// warning.
#ifndef UNWINDD_PROC_PERF_PROCESS_MAPS_H_
#define UNWINDD_PROC_PERF_PROCESS_MAPS_H_

#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "proc/maps.h"
#include "proc/perf/perf_data.h"
#include "proc/target.h"
#include "proc/perf/warnings.h"

namespace unwindd::proc::perf {

// The kernel's default vm.max_map_count is 65530.
inline constexpr size_t kMaxMappingsPerProcess = 65536;
inline constexpr size_t kMaxProcesses = 65536;
inline constexpr size_t kMaxThreads = 1 << 20;  // names kept

// PROT_* and MAP_SHARED as MMAP2 carries them (asm-generic/mman-common.h).
inline constexpr uint32_t kProtRead = 1;
inline constexpr uint32_t kProtWrite = 2;
inline constexpr uint32_t kProtExec = 4;
inline constexpr uint32_t kMapShared = 1;

struct PerfMapping {
  uint64_t start = 0;
  uint64_t end = 0;
  uint64_t pgoff = 0;  // file offset mapped at `start`
  uint32_t maj = 0;
  uint32_t min = 0;
  uint64_t ino = 0;
  uint64_t ino_generation = 0;
  uint32_t prot = 0;
  uint32_t flags = 0;
  std::shared_ptr<const std::string> filename;  // shared by split parts
  std::string build_id;  // lowercase hex from MMAP2's build-id form; "" if none
  uint64_t time = 0;     // when it was mapped
  // Generated code a runtime announced (a jitdump's): what describes it.
  std::shared_ptr<const CodeImage> code_image;

  const std::string& path() const {
    static const std::string kEmpty;
    return filename ? *filename : kEmpty;
  }
};

struct ProcessTable {
  uint32_t pid = 0;
  // Changes whenever the mappings change; never the same for two
  // different states of any process (one counter for all processes).
  uint64_t generation = 0;
  std::map<uint64_t, PerfMapping> mappings;  // by start; never overlapping
  std::string comm;
  bool exited = false;
};

class ProcessMaps {
 public:
  explicit ProcessMaps(size_t max_mappings = kMaxMappingsPerProcess,
                       size_t max_processes = kMaxProcesses)
      : max_mappings_(max_mappings), max_processes_(max_processes) {}

  // MMAP, MMAP2, COMM, FORK and EXIT change the tables; others are ignored.
  void Apply(const Event& event);

  // The table of `pid` now, or nullptr if nothing is known of it.
  const ProcessTable* Find(uint32_t pid) const;
  // The thread's name now (COMM; a new thread inherits its creator's, as
  // perf's thread__fork does); "" if unknown.
  const std::string& ThreadComm(uint32_t tid) const;
  size_t processes() const { return tables_.size(); }
  const Warnings& warnings() const { return warnings_; }

  // The pieces of Apply, for tests and for callers without Events.
  void Mmap(const MmapEvent& m, uint64_t time);
  // Code a runtime generated (proc/jit), mapped at `m` in `pid` at `time`
  // over what was there, as perf inject --jit's MMAP2 records map it.
  void AddCode(uint32_t pid, const Mapping& m, std::shared_ptr<const CodeImage> code,
               uint64_t time);
  void Fork(const TaskEvent& t);
  void Exit(const TaskEvent& t);
  void Comm(const CommEvent& c);

 private:
  ProcessTable* Get(uint32_t pid);      // creates it (may evict); null if full
  // Maps `n` in `pid` over what it covers (Mmap, AddCode).
  void Insert(uint32_t pid, PerfMapping n);
  void Changed(ProcessTable& t) { t.generation = ++generation_; }

  const size_t max_mappings_;
  const size_t max_processes_;
  absl::flat_hash_map<uint32_t, std::unique_ptr<ProcessTable>> tables_;
  absl::flat_hash_map<uint32_t, std::string> thread_comms_;  // bounded below
  uint64_t generation_ = 0;
  Warnings warnings_;
};

}  // namespace unwindd::proc::perf

#endif  // UNWINDD_PROC_PERF_PROCESS_MAPS_H_

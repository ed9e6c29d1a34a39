// Builds small x86_64 ELF core files byte by byte, for tests of the core
// reader that need exact control: well-formed ones, and ones that are
// truncated, overlapping or lying about their sizes (patch the bytes Build
// returns at the offsets in CoreLayout).
//
//   CoreBuilder b;
//   b.AddThread(100, /*pc=*/0x401000, /*sp=*/0x7ffd0000);
//   b.AddSegment(0x7ffd0000, std::vector<uint8_t>(4096, 0));
//   std::string path = WriteTempFile(b.Build());
#ifndef UNWINDD_PROC_TESTING_CORE_BUILDER_H_
#define UNWINDD_PROC_TESTING_CORE_BUILDER_H_

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace unwindd::proc::testing {

struct CoreLayout {
  uint64_t phdrs = 0;  // file offset of the program headers
  uint64_t notes = 0;  // file offset of the PT_NOTE contents
  uint64_t notes_size = 0;
  std::vector<uint64_t> note_offsets;     // each note's header, in order
  std::vector<uint64_t> segment_offsets;  // each PT_LOAD's data
};

class CoreBuilder {
 public:
  // An NT_PRSTATUS for thread `tid` with rip/rsp/rbp set (other registers 0).
  void AddThread(pid_t tid, uint64_t pc, uint64_t sp, int cursig = 0,
                 uint64_t rbp = 0);
  // An NT_SIGINFO (after the last thread's NT_PRSTATUS).
  void AddSigInfo(int signo, int code, uint64_t addr_or_pid);
  void SetPrpsInfo(pid_t pid, const std::string& fname);
  void SetAuxv(const std::vector<std::pair<uint64_t, uint64_t>>& auxv);
  struct File {
    uint64_t start, end, offset;  // offset in bytes (page multiple)
    std::string path;
  };
  void SetNtFile(const std::vector<File>& files);
  void AddNote(const std::string& name, uint32_t type,
               std::vector<uint8_t> desc);
  // A PT_LOAD whose first bytes are `data`; memsz defaults to data.size().
  void AddSegment(uint64_t vaddr, std::vector<uint8_t> data, uint64_t memsz = 0,
                  uint32_t flags = 6 /* PF_R | PF_W */);

  std::vector<uint8_t> Build(CoreLayout* layout = nullptr) const;

 private:
  struct Note {
    std::string name;
    uint32_t type;
    std::vector<uint8_t> desc;
  };
  struct Segment {
    uint64_t vaddr, memsz;
    uint32_t flags;
    std::vector<uint8_t> data;
  };
  std::vector<Note> notes_;
  std::vector<Segment> segments_;
};

// Little-endian stores into a byte vector (grown as needed).
void PutLe(std::vector<uint8_t>& b, size_t offset, uint64_t v, int size);

// Writes `bytes` to a new file under the test's temp dir; returns its path.
std::string WriteTempFile(const std::vector<uint8_t>& bytes);

}  // namespace unwindd::proc::testing

#endif  // UNWINDD_PROC_TESTING_CORE_BUILDER_H_

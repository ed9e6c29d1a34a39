// PerfDataReader over a regular file that leaves samples' stack copies in
// the file (FileAccess::kSparse): what `unwind perf` reads a file with.
//
// Most of a `--call-graph dwarf` recording is stack copies (8 to 64 KiB a
// sample), and a walk reads only the part of each that its frames cover.
// Reading every byte on the thread that decodes and orders the records
// makes that thread copy the whole file, and then the thread that unwinds
// the sample finds its bytes in another core's cache. Here the decoding
// thread reads everything but the large copies (the record's fields up to the
// STACK_USER size, then dyn_size and what follows); each sample says where
// its copy is (Sample::stack_file_offset, valid_stack_size()), and whoever
// unwinds it reads what it needs with pread, on its own core, or in place
// in the file's mapping (PerfDataReader::stack_mapping), whose pages the
// reader gives back once they are a few MiB behind it.
//
// The records delivered are the records without their copies: a sample's
// record holds its STACK_USER size field followed at once by dyn_size (and
// its header's size field says so), which ParseSample reads given the
// offset. Small samples (a copy under kMinLeftBytes) are read whole, like
// every other record, and then the reader reads ahead to the end of its
// chunk.
#ifndef UNWINDD_PROC_PERF_SPARSE_READER_H_
#define UNWINDD_PROC_PERF_SPARSE_READER_H_

#include <cstdint>
#include <memory>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "memory/scoped_fd.h"
#include "proc/perf/perf_data.h"

namespace unwindd::proc::perf {

// Copies smaller than this are read along with their record, in reads of
// many records at once (as cat reads): a pread of its own for each
// sample's fields and one more for the part of its copy a walk needs cost
// more, in system calls, than copying the whole of a small copy once
// (measured on the corpus, docs/speed.md). Larger copies are mostly what
// no walk reads (a 64 KiB copy of a 20 KiB stack), and are left.
inline constexpr uint64_t kMinLeftBytes = uint64_t{32} << 10;

// `fd`: a regular file of `size` bytes, named `name` in messages. Errors
// as PerfDataReader::OpenFile.
absl::StatusOr<std::unique_ptr<PerfDataReader>> OpenSparseFile(memory::ScopedFd fd,
                                                               uint64_t size,
                                                               Limits limits,
                                                               absl::string_view name);

}  // namespace unwindd::proc::perf

#endif  // UNWINDD_PROC_PERF_SPARSE_READER_H_

// .eh_frame_hdr (LSB Core 5.0 §10.6.2): version, eh_frame_ptr encoding,
// fde_count encoding, table encoding, then a sorted table of
// (initial_location, fde_address) pairs searched by binary search.
//
//   absl::StatusOr<EhFrameHdr> hdr = EhFrameHdr::Parse(bytes, sh_addr, 8);
//   absl::StatusOr<uint64_t> fde_addr = hdr->Lookup(file_pc);
//
// Every table encoding is accepted (not just datarel|sdata4): fixed-size ones
// are searched in place; a table whose encoding is not fixed-size (LEB128) or
// omitted makes Parse succeed with HasTable() false, and callers fall back to
// CfiSection::FindFde.
#ifndef UNWINDD_UNWINDER_CFI_EH_FRAME_HDR_H_
#define UNWINDD_UNWINDER_CFI_EH_FRAME_HDR_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "absl/types/span.h"

namespace unwindd::unwinder {

class EhFrameHdr {
 public:
  // `vaddr` is the section's sh_addr (file address space).
  static absl::StatusOr<EhFrameHdr> Parse(absl::Span<const uint8_t> data,
                                          uint64_t vaddr, int address_size);

  uint64_t eh_frame_vaddr() const { return eh_frame_vaddr_; }
  bool HasTable() const { return fde_count_ > 0 && entry_size_ > 0; }
  uint64_t fde_count() const { return fde_count_; }

  // File address of the FDE whose initial_location is the greatest one <=
  // pc. The caller checks that the FDE's range really covers pc. NotFound if
  // pc is below the first entry or there is no table.
  absl::StatusOr<uint64_t> Lookup(uint64_t pc) const;

 private:
  absl::Span<const uint8_t> data_;
  uint64_t vaddr_ = 0;
  int address_size_ = 8;
  uint64_t eh_frame_vaddr_ = 0;
  uint64_t fde_count_ = 0;
  uint8_t table_encoding_ = 0;
  size_t table_offset_ = 0;
  size_t entry_size_ = 0;  // 2 * encoded size
};

}  // namespace unwindd::unwinder

#endif  // UNWINDD_UNWINDER_CFI_EH_FRAME_HDR_H_

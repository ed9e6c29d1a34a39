// CIEs and FDEs of one .eh_frame or .debug_frame section (DWARF 5 §6.4.1,
// LSB Core 5.0 §10.6 for the .eh_frame differences).
//
//   CfiSection eh(CfiKind::kEhFrame, bytes, sh_addr, Arch::kX86_64, bases);
//   absl::StatusOr<Fde> fde = eh.FindFde(file_pc);         // built index
//   absl::StatusOr<Fde> fde = eh.ParseFdeAt(hdr_offset);   // via eh_frame_hdr
//   absl::StatusOr<Row> row = ComputeRow(fde->cie, *fde, file_pc, arch);
//
// Addresses (pc_begin, pc_end) are in the file's address space. The section
// bytes must outlive this object and every Cie/Fde it returns (spans point
// into them). Thread-compatible: FindFde builds its index lazily, so guard
// concurrent first use.
#ifndef UNWINDD_UNWINDER_CFI_CFI_SECTION_H_
#define UNWINDD_UNWINDER_CFI_CFI_SECTION_H_

#include <cstdint>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "arch/arch.h"
#include "unwinder/cfi/encoding.h"

namespace unwindd::unwinder {

enum class CfiKind : uint8_t { kEhFrame, kDebugFrame };

struct Cie {
  uint64_t offset = 0;  // of the length field, within the section
  uint8_t version = 1;  // 1, 3 or 4
  absl::string_view augmentation;  // points into the section
  uint8_t address_size = 8;        // v4 field, else the arch's
  uint8_t segment_size = 0;
  uint64_t code_alignment = 1;
  int64_t data_alignment = 1;
  uint16_t return_address_register = 0;
  uint8_t fde_encoding = kPeAbsptr;  // 'R'
  uint8_t lsda_encoding = kPeOmit;   // 'L'
  bool has_augmentation_data = false;  // 'z'
  bool signal_frame = false;           // 'S'
  bool b_key = false;                  // 'B' (aarch64 PAC with the B key)
  absl::Span<const uint8_t> initial_instructions;
};

struct Fde {
  uint64_t offset = 0;  // of the length field, within the section
  Cie cie;
  uint64_t pc_begin = 0;  // file address
  uint64_t pc_end = 0;    // file address, exclusive
  absl::Span<const uint8_t> instructions;
};

class CfiSection {
 public:
  // `vaddr` is the section's sh_addr (pc-relative encodings resolve against
  // it); .debug_frame holds absolute addresses and ignores it.
  // `address_size`: the file's pointer size (DW_EH_PE_absptr, CIE v1-3), 0
  // for the arch's; an x32 file (ELFCLASS32 x86_64) has 4.
  CfiSection(CfiKind kind, absl::Span<const uint8_t> data, uint64_t vaddr,
             arch::Arch arch, EncodingBases bases, int address_size = 0);

  CfiKind kind() const { return kind_; }
  uint64_t vaddr() const { return vaddr_; }
  absl::Span<const uint8_t> data() const { return data_; }

  // Parse the entry whose length field is at `offset` (section offset).
  // DataLoss for malformed entries, InvalidArgument if it is the other kind
  // of entry than asked for.
  absl::StatusOr<Cie> ParseCieAt(uint64_t offset) const;
  absl::StatusOr<Fde> ParseFdeAt(uint64_t offset) const;

  // The FDE covering `pc` (file address), via an index built on first use
  // from every FDE in the section (entries that fail to parse are skipped;
  // the walk stops at a zero terminator or a malformed length). NotFound if
  // no FDE covers it.
  absl::StatusOr<Fde> FindFde(uint64_t pc);

  // Number of FDEs indexed (builds the index). For tests and stats.
  size_t IndexedFdeCount();

 private:
  struct IndexEntry {
    uint64_t pc_begin;
    uint64_t pc_end;
    uint64_t offset;
  };
  void BuildIndex();

  CfiKind kind_;
  absl::Span<const uint8_t> data_;
  uint64_t vaddr_;
  int address_size_;
  EncodingBases bases_;
  bool index_built_ = false;
  std::vector<IndexEntry> index_;  // sorted by pc_begin
};

}  // namespace unwindd::unwinder

#endif  // UNWINDD_UNWINDER_CFI_CFI_SECTION_H_

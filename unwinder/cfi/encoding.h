// DW_EH_PE_* pointer encodings used by .eh_frame, .eh_frame_hdr and
// DW_OP_GNU_encoded_addr (LSB Core 5.0 §10.5.1 "DWARF Exception Header
// Encoding"; gcc unwind-pe.h for the numbers).
//
//   EncodingBases bases{.text = text_vaddr, .data = got_vaddr};
//   absl::StatusOr<EncodedPointer> p = ReadEncodedPointer(r, enc, 8, bases);
//
// All results are in the *file's* address space (the reader's base() is the
// section's sh_addr), so callers add the load bias before touching target
// memory.
#ifndef UNWINDD_UNWINDER_CFI_ENCODING_H_
#define UNWINDD_UNWINDER_CFI_ENCODING_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "memory/byte_reader.h"

namespace unwindd::unwinder {

inline constexpr uint8_t kPeAbsptr = 0x00;
inline constexpr uint8_t kPeUleb128 = 0x01;
inline constexpr uint8_t kPeUdata2 = 0x02;
inline constexpr uint8_t kPeUdata4 = 0x03;
inline constexpr uint8_t kPeUdata8 = 0x04;
inline constexpr uint8_t kPeSigned = 0x08;  // DW_EH_PE_signed: absptr, signed
inline constexpr uint8_t kPeSleb128 = 0x09;
inline constexpr uint8_t kPeSdata2 = 0x0a;
inline constexpr uint8_t kPeSdata4 = 0x0b;
inline constexpr uint8_t kPeSdata8 = 0x0c;
inline constexpr uint8_t kPePcrel = 0x10;
inline constexpr uint8_t kPeTextrel = 0x20;
inline constexpr uint8_t kPeDatarel = 0x30;
inline constexpr uint8_t kPeFuncrel = 0x40;
inline constexpr uint8_t kPeAligned = 0x50;
inline constexpr uint8_t kPeIndirect = 0x80;
inline constexpr uint8_t kPeOmit = 0xff;

struct EncodingBases {
  uint64_t text = 0;  // DW_EH_PE_textrel base (.text sh_addr)
  uint64_t data = 0;  // DW_EH_PE_datarel base (.got / .eh_frame_hdr start)
  uint64_t func = 0;  // DW_EH_PE_funcrel base (the FDE's pc_begin)
};

struct EncodedPointer {
  uint64_t value = 0;
  // DW_EH_PE_indirect was set: `value` is the address of the pointer, which
  // the caller must read (after adding the load bias) if it needs it.
  bool indirect = false;
};

// Reads one pointer at the reader's cursor. `address_size` (4 or 8) is the
// width of DW_EH_PE_absptr. kPeOmit is InvalidArgument (callers check it);
// unknown formats or applications are DataLoss.
absl::StatusOr<EncodedPointer> ReadEncodedPointer(memory::ByteReader& r,
                                                  uint8_t encoding,
                                                  int address_size,
                                                  const EncodingBases& bases);

// Size in bytes of a fixed-size encoding (0 for LEB128 and invalid ones).
int EncodedPointerSize(uint8_t encoding, int address_size);

}  // namespace unwindd::unwinder

#endif  // UNWINDD_UNWINDER_CFI_ENCODING_H_

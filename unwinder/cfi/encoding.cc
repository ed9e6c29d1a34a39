#include "unwinder/cfi/encoding.h"

#include <cstdint>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_format.h"
#include "memory/byte_reader.h"

namespace unwindd::unwinder {
namespace {

// The encoding byte splits into a value format (low nibble), an application
// (bits 4-6) and the indirect flag (bit 7); LSB Core 5.0 §10.5.1 tables
// 10-5 and 10-6.
constexpr uint8_t kFormatMask = 0x0f;
constexpr uint8_t kApplicationMask = 0x70;

bool ValidAddressSize(int address_size) {
  return address_size == 4 || address_size == 8;
}

bool KnownFormat(uint8_t format) {
  switch (format) {
    case kPeAbsptr:
    case kPeUleb128:
    case kPeUdata2:
    case kPeUdata4:
    case kPeUdata8:
    case kPeSigned:
    case kPeSleb128:
    case kPeSdata2:
    case kPeSdata4:
    case kPeSdata8:
      return true;
    default:
      return false;
  }
}

bool KnownApplication(uint8_t application) {
  switch (application) {
    case 0x00:  // DW_EH_PE_absptr as an application: no base
    case kPePcrel:
    case kPeTextrel:
    case kPeDatarel:
    case kPeFuncrel:
    case kPeAligned:
      return true;
    default:
      return false;
  }
}

// Reads the raw value of `format`, sign-extended to 64 bits for the signed
// formats so that adding it to a base wraps the way address arithmetic must.
absl::StatusOr<uint64_t> ReadRaw(memory::ByteReader& r, uint8_t format,
                                 int address_size) {
  switch (format) {
    case kPeAbsptr:
      if (address_size == 4) return r.U32();
      return r.U64();
    case kPeUleb128:
      return r.ULEB128();
    case kPeUdata2:
      return r.U16();
    case kPeUdata4:
      return r.U32();
    case kPeUdata8:
      return r.U64();
    case kPeSigned: {
      if (address_size == 4) {
        absl::StatusOr<int32_t> v = r.S32();
        if (!v.ok()) return v.status();
        return static_cast<uint64_t>(static_cast<int64_t>(*v));
      }
      absl::StatusOr<int64_t> v = r.S64();
      if (!v.ok()) return v.status();
      return static_cast<uint64_t>(*v);
    }
    case kPeSleb128: {
      absl::StatusOr<int64_t> v = r.SLEB128();
      if (!v.ok()) return v.status();
      return static_cast<uint64_t>(*v);
    }
    case kPeSdata2: {
      absl::StatusOr<int16_t> v = r.S16();
      if (!v.ok()) return v.status();
      return static_cast<uint64_t>(static_cast<int64_t>(*v));
    }
    case kPeSdata4: {
      absl::StatusOr<int32_t> v = r.S32();
      if (!v.ok()) return v.status();
      return static_cast<uint64_t>(static_cast<int64_t>(*v));
    }
    case kPeSdata8: {
      absl::StatusOr<int64_t> v = r.S64();
      if (!v.ok()) return v.status();
      return static_cast<uint64_t>(*v);
    }
    default:
      break;
  }
  return absl::DataLossError(absl::StrFormat(
      "unknown pointer format 0x%02x at 0x%x", format, r.addr()));
}

}  // namespace

absl::StatusOr<EncodedPointer> ReadEncodedPointer(memory::ByteReader& r,
                                                  uint8_t encoding,
                                                  int address_size,
                                                  const EncodingBases& bases) {
  if (encoding == kPeOmit) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "DW_EH_PE_omit has no value to read at 0x%x", r.addr()));
  }
  if (!ValidAddressSize(address_size)) {
    return absl::InvalidArgumentError(
        absl::StrFormat("address size %d is neither 4 nor 8 (reading at 0x%x)",
                        address_size, r.addr()));
  }
  const uint8_t format = encoding & kFormatMask;
  const uint8_t application = encoding & kApplicationMask;
  // Validate the whole byte before moving the cursor, so a bad encoding
  // leaves the reader where the caller put it.
  if (!KnownFormat(format) || !KnownApplication(application)) {
    return absl::DataLossError(absl::StrFormat(
        "unknown pointer encoding 0x%02x at 0x%x", encoding, r.addr()));
  }

  uint64_t base = 0;
  switch (application) {
    case kPePcrel:
      // Relative to the address of the encoded value itself (gcc
      // unwind-pe.h: `(_Unwind_Internal_Ptr) u`, taken before the read).
      base = r.addr();
      break;
    case kPeTextrel:
      base = bases.text;
      break;
    case kPeDatarel:
      base = bases.data;
      break;
    case kPeFuncrel:
      base = bases.func;
      break;
    case kPeAligned: {
      // gcc unwind-pe.h: the value is a native pointer stored at the next
      // address_size boundary. Alignment is of the file address, which is
      // what the loaded image preserves (sections keep their alignment
      // modulo the page-aligned load bias).
      if (format != kPeAbsptr) {
        return absl::DataLossError(absl::StrFormat(
            "DW_EH_PE_aligned with non-absptr format in encoding 0x%02x at "
            "0x%x",
            encoding, r.addr()));
      }
      const uint64_t misalign = r.addr() % static_cast<uint64_t>(address_size);
      if (misalign != 0) {
        absl::Status s = r.Skip(static_cast<uint64_t>(address_size) - misalign);
        if (!s.ok()) return s;
      }
      break;
    }
    default:  // 0x00: absolute
      break;
  }

  absl::StatusOr<uint64_t> raw = ReadRaw(r, format, address_size);
  if (!raw.ok()) return raw.status();

  EncodedPointer out;
  // Modular addition is intended: a pc-relative sdata4 is a negative offset
  // from a high address, and the sum is defined modulo the address width.
  out.value = base + *raw;
  if (address_size == 4) out.value &= 0xffffffffu;
  out.indirect = (encoding & kPeIndirect) != 0;
  return out;
}

int EncodedPointerSize(uint8_t encoding, int address_size) {
  if (encoding == kPeOmit) return 0;
  // An aligned value may be preceded by padding, so its size is not fixed.
  if ((encoding & kApplicationMask) == kPeAligned) return 0;
  switch (encoding & kFormatMask) {
    case kPeAbsptr:
    case kPeSigned:
      return ValidAddressSize(address_size) ? address_size : 0;
    case kPeUdata2:
    case kPeSdata2:
      return 2;
    case kPeUdata4:
    case kPeSdata4:
      return 4;
    case kPeUdata8:
    case kPeSdata8:
      return 8;
    default:  // LEB128 and unknown formats
      return 0;
  }
}

}  // namespace unwindd::unwinder

// Constants of the SFrame format, versions 1, 2 and 3 (binutils'
// libsframe/doc/sframe-spec.texi and include/sframe.h; section numbers below
// are those of the v3 specification unless a version is named).
//
// An SFrame section is a header (with an optional auxiliary header), an
// array of fixed-size function descriptor entries (FDEs) and a sub-section
// of variable-size frame row entries (FREs). Every multi-byte field is in
// the target's byte order, which the magic number tells (§2.1.1).
#ifndef UNWINDD_UNWINDER_SFRAME_FORMAT_H_
#define UNWINDD_UNWINDER_SFRAME_FORMAT_H_

#include <cstddef>
#include <cstdint>

namespace unwindd::unwinder::sframe {

// §2.1 Preamble.
inline constexpr uint16_t kMagic = 0xdee2;
inline constexpr uint8_t kVersion1 = 1;
inline constexpr uint8_t kVersion2 = 2;
inline constexpr uint8_t kVersion3 = 3;

// §2.1.3 Flags.
inline constexpr uint8_t kFlagFdeSorted = 0x1;
// v1/v2 only: every function keeps a frame pointer, so PCs no FDE covers can
// be unwound through the frame-pointer chain.
inline constexpr uint8_t kFlagFramePointer = 0x2;
// v2 errata 1 and v3: an FDE's function start is relative to the field that
// holds it, not to the start of the section.
inline constexpr uint8_t kFlagFuncStartPcRel = 0x4;

// §2.2.1 ABI/arch identifiers.
inline constexpr uint8_t kAbiAArch64BigEndian = 1;
inline constexpr uint8_t kAbiAArch64LittleEndian = 2;
inline constexpr uint8_t kAbiAmd64LittleEndian = 3;
inline constexpr uint8_t kAbiS390xBigEndian = 4;

// §2.2: the header is 28 bytes in every version, followed by sfh_auxhdr_len
// bytes of auxiliary header; sub-section offsets count from the end of both.
inline constexpr size_t kHeaderSize = 28;

// §2.3: FDE sizes. v1: 17 bytes (no rep size, no padding); v2: 20 bytes;
// v3: a 16-byte index entry whose 5-byte attributes sit in front of the
// function's FREs.
inline constexpr size_t kFdeSizeV1 = 17;
inline constexpr size_t kFdeSizeV2 = 20;
inline constexpr size_t kFdeIndexSizeV3 = 16;
inline constexpr size_t kFdeAttrSizeV3 = 5;

// §2.3.1 FDE info byte: bits 0-3 FRE type, bit 4 PC type, bit 5 aarch64
// PAuth key, bit 7 (v3) signal frame. §2.3.2 (v3) info2: bits 0-4 FDE type.
inline constexpr uint8_t kFreTypeAddr1 = 0;
inline constexpr uint8_t kFreTypeAddr2 = 1;
inline constexpr uint8_t kFreTypeAddr4 = 2;
inline constexpr uint8_t kPcTypeInc = 0;   // FRE start = offset from function
inline constexpr uint8_t kPcTypeMask = 1;  // FRE start = offset in a block
inline constexpr uint8_t kFdeTypeDefault = 0;
inline constexpr uint8_t kFdeTypeFlex = 1;  // v3: control/offset word pairs

// SFrame v1 FDEs carry no repetition size; binutils 2.40 only emits PCMASK
// FDEs for x86-64 .plt, whose pltN entries are 16 bytes.
inline constexpr uint8_t kV1PcMaskBlockSize = 16;

// §2.4.1 FRE info byte: bit 0 CFA base (1 = SP, 0 = FP), bits 1-4 number of
// data words, bits 5-6 data word size, bit 7 aarch64 mangled RA.
inline constexpr uint8_t kDataWord1B = 0;
inline constexpr uint8_t kDataWord2B = 1;
inline constexpr uint8_t kDataWord4B = 2;
inline constexpr int kMaxDataWords = 15;

}  // namespace unwindd::unwinder::sframe

#endif  // UNWINDD_UNWINDER_SFRAME_FORMAT_H_

#include "unwinder/cfi/cfa_vm.h"

#include <array>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/string_view.h"
#include "arch/arch_ops.h"
#include "memory/byte_reader.h"
#include "unwinder/cfi/encoding.h"

namespace unwindd::unwinder {
namespace {

using Kind = RegisterRule::Kind;

// What DW_CFA_remember_state pushes. DWARF 5 §6.4.2.4 says "the set of rules
// for every register"; like libgcc, LLVM libunwind, gdb and libunwindstack we
// include the CFA rule (compilers emit remember/restore around epilogues that
// change the CFA). The aarch64 RA sign state is part of it too: epilogues
// toggle it with DW_CFA_AARCH64_negate_ra_state inside a remembered region and
// the code after the restore_state is signed again. DW_CFA_GNU_args_size is
// not saved (libgcc keeps it outside the saved state as well).
struct State {
  CfaRule cfa;
  std::array<RegisterRule, arch::kMaxRegisters> regs{};
  bool ra_signed = false;
};

// The interpreter's state while one program (the CIE's, then the FDE's) runs.
struct Vm {
  Vm(const Cie& c, const Fde& f, uint64_t p, arch::Arch a)
      : cie(c), fde(f), pc(p), arch(a) {}

  const Cie& cie;
  const Fde& fde;
  const uint64_t pc;
  const arch::Arch arch;
  Row row;
  State initial;             // rules after the CIE program (DW_CFA_restore*)
  std::vector<State> stack;  // DW_CFA_remember_state, <= 64 entries
  memory::ByteReader r;
  bool in_cie = true;
  size_t op_offset = 0;  // of the current opcode within its program
  uint8_t op = 0;
  uint64_t loc = 0;   // DWARF 5 §6.4.2.1: the current location (file address)
  bool done = false;  // an advance moved the location past `pc`

  // Errors name the opcode, its offset in the program and the entry.
  absl::Status Error(absl::StatusCode code, absl::string_view what) const {
    return absl::Status(
        code, absl::StrFormat("CFA opcode 0x%02x at offset %u of the %s "
                              "instructions (entry at section offset 0x%x): %s",
                              op, op_offset, in_cie ? "CIE" : "FDE",
                              in_cie ? cie.offset : fde.offset, what));
  }
  absl::Status Malformed(absl::string_view what) const {
    return Error(absl::StatusCode::kDataLoss, what);
  }
  absl::Status Wrap(const absl::Status& s) const {
    return Error(s.code(), s.message());
  }

  // Reads one operand; truncation is DataLoss naming this opcode.
  template <typename T>
  absl::Status Read(absl::StatusOr<T> (memory::ByteReader::*read)(), T* out) {
    absl::StatusOr<T> v = (r.*read)();
    if (!v.ok()) return Wrap(v.status());
    *out = *v;
    return absl::OkStatus();
  }
  absl::Status Uleb(uint64_t* out) {
    return Read(&memory::ByteReader::ULEB128, out);
  }
  absl::Status Sleb(int64_t* out) {
    return Read(&memory::ByteReader::SLEB128, out);
  }
  // An unsigned operand that a rule stores as int64_t.
  absl::Status UlebAsSigned(int64_t* out) {
    uint64_t u = 0;
    if (absl::Status s = Uleb(&u); !s.ok()) return s;
    if (u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      return Malformed(absl::StrFormat("operand %u does not fit in int64", u));
    }
    *out = static_cast<int64_t>(u);
    return absl::OkStatus();
  }
  // DWARF 5 §6.4.2: "factored" offsets are multiplied by the CIE's
  // data_alignment_factor.
  absl::Status FactorData(int64_t n, int64_t* out) const {
    if (__builtin_mul_overflow(n, cie.data_alignment, out)) {
      return Malformed(
          absl::StrFormat("factored offset %d * data alignment %d overflows", n,
                          cie.data_alignment));
    }
    return absl::OkStatus();
  }

  State Save() const { return State{row.cfa, row.regs, row.ra_signed}; }
  // Rules for columns we do not track (vector registers) are dropped.
  void SetRule(uint64_t reg, const RegisterRule& rule) {
    if (reg < arch::kMaxRegisters) row.regs[reg] = rule;
  }
};

// ---- location ----

// Moves the location to `to`. Rules after this point hold from `to` on, so a
// location exactly at `pc` still applies; one past `pc` ends the program and
// bounds the row (DWARF 5 §6.4.2.1).
absl::Status MoveTo(Vm& vm, uint64_t to) {
  if (to < vm.loc) {
    return vm.Malformed(absl::StrFormat(
        "location moves backwards from 0x%x to 0x%x", vm.loc, to));
  }
  if (to > vm.pc) {
    vm.done = true;
    if (to < vm.row.pc_hi) vm.row.pc_hi = to;
    return absl::OkStatus();
  }
  vm.loc = to;
  vm.row.pc_lo = to;
  return absl::OkStatus();
}

// DW_CFA_advance_loc*: delta * code_alignment_factor (DWARF 5 §6.4.2.1).
absl::Status AdvanceBy(Vm& vm, uint64_t delta) {
  uint64_t bytes = 0;
  uint64_t to = 0;
  if (__builtin_mul_overflow(delta, vm.cie.code_alignment, &bytes) ||
      __builtin_add_overflow(vm.loc, bytes, &to)) {
    return vm.Malformed(
        absl::StrFormat("advance of %u * code alignment %u from 0x%x overflows",
                        delta, vm.cie.code_alignment, vm.loc));
  }
  return MoveTo(vm, to);
}

absl::Status OpAdvanceLoc(Vm& vm, uint8_t low6) { return AdvanceBy(vm, low6); }

// DW_CFA_advance_loc1/2/4: an unsigned 1-, 2- or 4-byte delta.
template <typename T, absl::StatusOr<T> (memory::ByteReader::*kRead)()>
absl::Status OpAdvanceLocN(Vm& vm, uint8_t) {
  absl::StatusOr<T> d = (vm.r.*kRead)();
  if (!d.ok()) return vm.Wrap(d.status());
  return AdvanceBy(vm, *d);
}

// DW_CFA_set_loc: an address in the FDE's pointer encoding (.eh_frame, LSB
// §10.6.1.1) or an absptr of the CIE's address size (.debug_frame, whose CIEs
// carry kPeAbsptr). The VM does not know where the instructions sit in the
// file, so section-relative applications cannot be resolved; gcc and clang
// never emit set_loc in .eh_frame, so they are Unimplemented rather than
// guessed. funcrel is relative to the FDE's pc_begin, as in libgcc.
absl::Status OpSetLoc(Vm& vm, uint8_t) {
  const uint8_t enc = vm.cie.fde_encoding;
  if (enc == kPeOmit) {
    return vm.Malformed("DW_CFA_set_loc but the CIE omits the FDE encoding");
  }
  const uint8_t app = enc & 0x70;
  if ((enc & kPeIndirect) != 0 || (app != 0 && app != kPeFuncrel)) {
    return vm.Error(absl::StatusCode::kUnimplemented,
                    absl::StrFormat("DW_CFA_set_loc with pointer encoding "
                                    "0x%02x (section-relative or indirect)",
                                    enc));
  }
  if (vm.cie.address_size != 4 && vm.cie.address_size != 8) {
    return vm.Malformed(
        absl::StrFormat("CIE address size %d", vm.cie.address_size));
  }
  EncodingBases bases;
  bases.func = vm.fde.pc_begin;
  absl::StatusOr<EncodedPointer> p =
      ReadEncodedPointer(vm.r, enc, vm.cie.address_size, bases);
  if (!p.ok()) return vm.Wrap(p.status());
  return MoveTo(vm, p->value);
}

// ---- register rules ----

// Stores a rule whose offset is n * data_alignment.
absl::Status SetFactoredRule(Vm& vm, uint64_t reg, Kind kind, int64_t n) {
  int64_t off = 0;
  if (absl::Status s = vm.FactorData(n, &off); !s.ok()) return s;
  vm.SetRule(reg, RegisterRule{kind, off, {}});
  return absl::OkStatus();
}

// DW_CFA_offset (DWARF 5 §6.4.2.3): register in the low 6 bits, ULEB factored
// offset.
absl::Status OpOffset(Vm& vm, uint8_t reg) {
  int64_t n = 0;
  if (absl::Status s = vm.UlebAsSigned(&n); !s.ok()) return s;
  return SetFactoredRule(vm, reg, Kind::kOffset, n);
}

// ULEB register, then a ULEB (or SLEB) factored offset: offset_extended,
// offset_extended_sf, val_offset, val_offset_sf.
template <Kind kKind, bool kSignedOperand>
absl::Status OpRegFactored(Vm& vm, uint8_t) {
  uint64_t reg = 0;
  int64_t n = 0;
  if (absl::Status s = vm.Uleb(&reg); !s.ok()) return s;
  absl::Status s = kSignedOperand ? vm.Sleb(&n) : vm.UlebAsSigned(&n);
  if (!s.ok()) return s;
  return SetFactoredRule(vm, reg, kKind, n);
}

// DW_CFA_GNU_negative_offset_extended: an old spelling of offset_extended_sf
// with a ULEB that is negated (gcc dwarf2.def).
absl::Status OpGnuNegativeOffsetExtended(Vm& vm, uint8_t) {
  uint64_t reg = 0;
  int64_t n = 0;
  if (absl::Status s = vm.Uleb(&reg); !s.ok()) return s;
  if (absl::Status s = vm.UlebAsSigned(&n); !s.ok()) return s;
  return SetFactoredRule(vm, reg, Kind::kOffset, -n);
}

// DW_CFA_restore: back to the rule the CIE's initial instructions gave.
absl::Status RestoreRule(Vm& vm, uint64_t reg) {
  if (reg < arch::kMaxRegisters) vm.row.regs[reg] = vm.initial.regs[reg];
  return absl::OkStatus();
}

absl::Status OpRestore(Vm& vm, uint8_t reg) { return RestoreRule(vm, reg); }

absl::Status OpRestoreExtended(Vm& vm, uint8_t) {
  uint64_t reg = 0;
  if (absl::Status s = vm.Uleb(&reg); !s.ok()) return s;
  return RestoreRule(vm, reg);
}

// A ULEB register and no operand: undefined, same_value.
template <Kind kKind>
absl::Status OpRegOnly(Vm& vm, uint8_t) {
  uint64_t reg = 0;
  if (absl::Status s = vm.Uleb(&reg); !s.ok()) return s;
  vm.SetRule(reg, RegisterRule{kKind, 0, {}});
  return absl::OkStatus();
}

absl::Status OpRegister(Vm& vm, uint8_t) {
  uint64_t reg = 0;
  int64_t from = 0;
  if (absl::Status s = vm.Uleb(&reg); !s.ok()) return s;
  if (absl::Status s = vm.UlebAsSigned(&from); !s.ok()) return s;
  vm.SetRule(reg, RegisterRule{Kind::kRegister, from, {}});
  return absl::OkStatus();
}

// DW_CFA_expression / DW_CFA_val_expression: ULEB register, then a ULEB
// length and the expression block, which the rule points at (no copy).
template <Kind kKind>
absl::Status OpRegExpression(Vm& vm, uint8_t) {
  uint64_t reg = 0;
  uint64_t len = 0;
  if (absl::Status s = vm.Uleb(&reg); !s.ok()) return s;
  if (absl::Status s = vm.Uleb(&len); !s.ok()) return s;
  absl::StatusOr<absl::Span<const uint8_t>> block = vm.r.Bytes(len);
  if (!block.ok()) return vm.Wrap(block.status());
  vm.SetRule(reg, RegisterRule{kKind, 0, *block});
  return absl::OkStatus();
}

// ---- CFA rules (DWARF 5 §6.4.2.2) ----

absl::Status SetCfaRegOffset(Vm& vm, uint64_t reg, int64_t offset) {
  // Unlike other columns, an untracked CFA register would leave the row
  // unusable, so it is an error rather than ignored.
  if (reg >= arch::kMaxRegisters) {
    return vm.Malformed(absl::StrFormat("CFA register %u out of range", reg));
  }
  vm.row.cfa = CfaRule{
      CfaRule::Kind::kRegOffset, static_cast<uint16_t>(reg), offset, {}};
  return absl::OkStatus();
}

absl::Status OpDefCfa(Vm& vm, uint8_t) {
  uint64_t reg = 0;
  int64_t off = 0;
  if (absl::Status s = vm.Uleb(&reg); !s.ok()) return s;
  if (absl::Status s = vm.UlebAsSigned(&off); !s.ok()) return s;
  return SetCfaRegOffset(vm, reg, off);
}

absl::Status OpDefCfaSf(Vm& vm, uint8_t) {
  uint64_t reg = 0;
  int64_t n = 0;
  int64_t off = 0;
  if (absl::Status s = vm.Uleb(&reg); !s.ok()) return s;
  if (absl::Status s = vm.Sleb(&n); !s.ok()) return s;
  if (absl::Status s = vm.FactorData(n, &off); !s.ok()) return s;
  return SetCfaRegOffset(vm, reg, off);
}

// "valid only if the current CFA rule is defined to use a register and
// offset": an expression CFA is malformed. An undefined CFA gets offset 0.
absl::Status OpDefCfaRegister(Vm& vm, uint8_t) {
  uint64_t reg = 0;
  if (absl::Status s = vm.Uleb(&reg); !s.ok()) return s;
  if (vm.row.cfa.kind == CfaRule::Kind::kExpression) {
    return vm.Malformed("DW_CFA_def_cfa_register on an expression CFA");
  }
  const int64_t off =
      vm.row.cfa.kind == CfaRule::Kind::kRegOffset ? vm.row.cfa.offset : 0;
  return SetCfaRegOffset(vm, reg, off);
}

// def_cfa_offset{,_sf} need a register to offset from.
absl::Status SetCfaOffset(Vm& vm, int64_t off) {
  if (vm.row.cfa.kind != CfaRule::Kind::kRegOffset) {
    return vm.Malformed("CFA offset set but the CFA is not register+offset");
  }
  vm.row.cfa.offset = off;
  return absl::OkStatus();
}

absl::Status OpDefCfaOffset(Vm& vm, uint8_t) {
  int64_t off = 0;
  if (absl::Status s = vm.UlebAsSigned(&off); !s.ok()) return s;
  return SetCfaOffset(vm, off);
}

absl::Status OpDefCfaOffsetSf(Vm& vm, uint8_t) {
  int64_t n = 0;
  int64_t off = 0;
  if (absl::Status s = vm.Sleb(&n); !s.ok()) return s;
  if (absl::Status s = vm.FactorData(n, &off); !s.ok()) return s;
  return SetCfaOffset(vm, off);
}

absl::Status OpDefCfaExpression(Vm& vm, uint8_t) {
  uint64_t len = 0;
  if (absl::Status s = vm.Uleb(&len); !s.ok()) return s;
  absl::StatusOr<absl::Span<const uint8_t>> block = vm.r.Bytes(len);
  if (!block.ok()) return vm.Wrap(block.status());
  vm.row.cfa = CfaRule{CfaRule::Kind::kExpression, 0, 0, *block};
  return absl::OkStatus();
}

// ---- row state (DWARF 5 §6.4.2.4) ----

absl::Status OpRememberState(Vm& vm, uint8_t) {
  if (vm.stack.size() >= kMaxRememberStateDepth) {
    return vm.Malformed(absl::StrFormat(
        "DW_CFA_remember_state nested deeper than %d", kMaxRememberStateDepth));
  }
  vm.stack.push_back(vm.Save());
  return absl::OkStatus();
}

absl::Status OpRestoreState(Vm& vm, uint8_t) {
  if (vm.stack.empty()) {
    return vm.Malformed("DW_CFA_restore_state without remember_state");
  }
  const State& s = vm.stack.back();
  vm.row.cfa = s.cfa;
  vm.row.regs = s.regs;
  vm.row.ra_signed = s.ra_signed;
  vm.stack.pop_back();
  return absl::OkStatus();
}

// ---- vendor extensions ----

// 0x2d is DW_CFA_AARCH64_negate_ra_state on aarch64 (AADWARF64 §4.4.2: toggle
// whether the RA is PAC-signed), an arch whose return addresses may be signed,
// and DW_CFA_GNU_window_save (SPARC) elsewhere.
absl::Status OpNegateRaState(Vm& vm, uint8_t) {
  if (!arch::GetArchOps(vm.arch).signs_return_addresses) {
    return vm.Error(absl::StatusCode::kUnimplemented,
                    absl::StrCat("DW_CFA_GNU_window_save on ",
                                 arch::GetArchInfo(vm.arch).name));
  }
  vm.row.ra_signed = !vm.row.ra_signed;
  return absl::OkStatus();
}

// DW_CFA_GNU_args_size: bytes of outgoing arguments pushed (for landing pads).
absl::Status OpGnuArgsSize(Vm& vm, uint8_t) {
  return vm.UlebAsSigned(&vm.row.args_size);
}

absl::Status OpNop(Vm&, uint8_t) { return absl::OkStatus(); }

absl::Status OpUnknown(Vm& vm, uint8_t) {
  return vm.Error(absl::StatusCode::kUnimplemented, "unknown CFA opcode");
}

// ---- dispatch ----

// Handlers take the low 6 bits of the opcode (the operand of the three
// primary opcodes; unused by the extended ones).
using Handler = absl::Status (*)(Vm&, uint8_t);

constexpr std::array<Handler, 64> MakeExtendedTable() {
  std::array<Handler, 64> t{};
  for (Handler& h : t) h = &OpUnknown;
  t[0x00] = &OpNop;
  t[0x01] = &OpSetLoc;
  t[0x02] = &OpAdvanceLocN<uint8_t, &memory::ByteReader::U8>;
  t[0x03] = &OpAdvanceLocN<uint16_t, &memory::ByteReader::U16>;
  t[0x04] = &OpAdvanceLocN<uint32_t, &memory::ByteReader::U32>;
  t[0x05] = &OpRegFactored<Kind::kOffset, false>;
  t[0x06] = &OpRestoreExtended;
  t[0x07] = &OpRegOnly<Kind::kUndefined>;
  t[0x08] = &OpRegOnly<Kind::kSameValue>;
  t[0x09] = &OpRegister;
  t[0x0a] = &OpRememberState;
  t[0x0b] = &OpRestoreState;
  t[0x0c] = &OpDefCfa;
  t[0x0d] = &OpDefCfaRegister;
  t[0x0e] = &OpDefCfaOffset;
  t[0x0f] = &OpDefCfaExpression;
  t[0x10] = &OpRegExpression<Kind::kExpression>;
  t[0x11] = &OpRegFactored<Kind::kOffset, true>;
  t[0x12] = &OpDefCfaSf;
  t[0x13] = &OpDefCfaOffsetSf;
  t[0x14] = &OpRegFactored<Kind::kValOffset, false>;
  t[0x15] = &OpRegFactored<Kind::kValOffset, true>;
  t[0x16] = &OpRegExpression<Kind::kValExpression>;
  t[0x2d] = &OpNegateRaState;
  t[0x2e] = &OpGnuArgsSize;
  t[0x2f] = &OpGnuNegativeOffsetExtended;
  return t;
}

constexpr std::array<Handler, 64> kExtended = MakeExtendedTable();
// Indexed by the opcode's high 2 bits (DWARF 5 §7.24, table 7.29).
constexpr std::array<Handler, 4> kPrimary = {nullptr, &OpAdvanceLoc, &OpOffset,
                                             &OpRestore};

// Each instruction consumes at least its opcode byte, so a program runs at
// most as many steps as it has bytes.
absl::Status Run(Vm& vm, absl::Span<const uint8_t> program, bool in_cie) {
  vm.r = memory::ByteReader(program);
  vm.in_cie = in_cie;
  while (!vm.done && !vm.r.AtEnd()) {
    vm.op_offset = vm.r.offset();
    vm.op = program[vm.op_offset];
    if (absl::Status s = vm.r.Skip(1); !s.ok()) return vm.Wrap(s);
    const uint8_t high = vm.op >> 6;
    const uint8_t low = vm.op & 0x3f;
    Handler h = high == 0 ? kExtended[low] : kPrimary[high];
    if (absl::Status s = h(vm, low); !s.ok()) return s;
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<Row> ComputeRow(const Cie& cie, const Fde& fde, uint64_t pc,
                               arch::Arch arch) {
  if (pc < fde.pc_begin || pc >= fde.pc_end) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "pc 0x%x outside the FDE at section offset 0x%x [0x%x, 0x%x)", pc,
        fde.offset, fde.pc_begin, fde.pc_end));
  }
  Vm vm(cie, fde, pc, arch);
  // DWARF 5 §6.4.1: before any instruction the CFA is undefined and every
  // register rule unspecified (Row's defaults). The location starts at the
  // FDE's initial_location for both programs, as in libgcc.
  vm.loc = fde.pc_begin;
  vm.row.pc_lo = fde.pc_begin;
  vm.row.pc_hi = fde.pc_end;
  vm.row.return_address_register = cie.return_address_register;
  vm.row.signal_frame = cie.signal_frame;

  if (absl::Status s = Run(vm, cie.initial_instructions, true); !s.ok()) {
    return s;
  }
  vm.initial = vm.Save();
  if (!vm.done) {
    if (absl::Status s = Run(vm, fde.instructions, false); !s.ok()) return s;
  }
  return vm.row;
}

}  // namespace unwindd::unwinder

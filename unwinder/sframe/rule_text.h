// A Row's CFA, return-address and frame-pointer rules as short text, for
// check-sframe's reports: "CFA=rsp+16 RA=[CFA-8] FP=same".
//
//   [CFA-8]   the value saved at CFA - 8     CFA-8   the value CFA - 8
//   same      the callee's value             undef   no value (outermost)
//   rbp       another register's value       (rbp-8) / rbp-8: flex rules
//   expr:70..  any other DWARF expression, its first bytes in hex
// An aarch64 row whose RA is PAC-signed ends in " RA-signed".
#ifndef UNWINDD_UNWINDER_SFRAME_RULE_TEXT_H_
#define UNWINDD_UNWINDER_SFRAME_RULE_TEXT_H_

#include <string>

#include "arch/arch.h"
#include "unwinder/cfi/row.h"

namespace unwindd::unwinder::sframe {

std::string RowText(const Row& row, arch::Arch arch);

}  // namespace unwindd::unwinder::sframe

#endif  // UNWINDD_UNWINDER_SFRAME_RULE_TEXT_H_

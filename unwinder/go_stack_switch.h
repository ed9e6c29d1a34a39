// Go's stack-switch functions in a module: where a Go program's frames
// continue on another stack, so that neither CFI nor frame pointers can
// step past them (Go writes SP outright there).
//
//   if (IsGoSection(section_name)) go = true;        // for any section
//   if (go) s = FindGoStackSwitches(elf);
//   absl::string_view fn = s.At(vaddr);             // "runtime.mcall"
//
// Go's own traceback stops at such a function unless it is the innermost
// frame (runtime/traceback.go, funcFlag_SPWRITE; the TOPFRAME functions
// end a stack anyway): the walk does the same rather than read two junk
// frames from the other stack's bytes.
#ifndef UNWINDD_UNWINDER_GO_STACK_SWITCH_H_
#define UNWINDD_UNWINDER_GO_STACK_SWITCH_H_

#include <cstdint>
#include <vector>

#include "absl/strings/string_view.h"

typedef struct Elf Elf;

namespace unwindd::unwinder {

class GoStackSwitches {
 public:
  // The function containing `vaddr` (file address) if it is one of Go's
  // stack switches, else "".
  absl::string_view At(uint64_t vaddr) const;
  bool empty() const { return ranges_.empty(); }

  struct Range {
    uint64_t start, end;
    absl::string_view name;  // a static string
  };
  std::vector<Range> ranges_;  // sorted by start
};

// A section only Go's toolchain writes (.gopclntab, .go.buildinfo): a file
// with one is a Go binary.
bool IsGoSection(absl::string_view name);

// The stack switches `elf`'s .symtab (else .dynsym) defines. For a Go
// binary only (IsGoSection names one of its sections): other files are not
// searched, and their symbols are not Go's.
GoStackSwitches FindGoStackSwitches(Elf* elf);

// The functions, by symbol name.
bool IsGoStackSwitch(absl::string_view symbol);

}  // namespace unwindd::unwinder

#endif  // UNWINDD_UNWINDER_GO_STACK_SWITCH_H_

// The key of both caches of unwind rows: Module's row cache (file addresses,
// shared by every target that maps the module) and the step loop's
// StepCache (target addresses, one per AddressSpace). A row depends on the
// frame's address and kind (arch::FrameAddress) and on the source policy
// that chose it, and on nothing else.
//
//   RowKey key(frame, policy.Code());
//   rows_.find(key);  /  step_cache.Find(key);
#ifndef UNWINDD_UNWINDER_ROW_KEY_H_
#define UNWINDD_UNWINDER_ROW_KEY_H_

#include <cstdint>
#include <utility>

#include "arch/frame_address.h"

namespace unwindd::unwinder {

struct RowKey {
  RowKey() = default;
  RowKey(arch::FrameAddress at, uint16_t policy)
      : address(at.address()), policy(policy), return_address(at.is_return_address()) {}

  uint64_t address = 0;   // FrameAddress::address()
  uint16_t policy = 0;    // SourcePolicy::Code()
  bool return_address = false;

  friend bool operator==(const RowKey& a, const RowKey& b) {
    return a.address == b.address && a.policy == b.policy &&
           a.return_address == b.return_address;
  }
  template <typename H>
  friend H AbslHashValue(H h, const RowKey& k) {
    return H::combine(std::move(h), k.address, k.policy, k.return_address);
  }
};

}  // namespace unwindd::unwinder

#endif  // UNWINDD_UNWINDER_ROW_KEY_H_

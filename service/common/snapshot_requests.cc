#include "service/common/snapshot_requests.h"

#include "service/common/utf8.h"

namespace unwindd::service {

void MappingToProto(const proc::SnapshotMapping& sm, bool with_image, v1::Mapping* out) {
  const proc::Mapping& m = sm.mapping;
  out->Clear();
  out->set_start(m.start);
  out->set_end(m.end);
  out->set_offset(m.offset);
  if (IsUtf8(m.path)) {
    out->set_path(m.path);
  } else {
    // proto3 strings must be UTF-8; the exact bytes go beside.
    out->set_path(Utf8Lossy(m.path));
    out->set_path_bytes(m.path);
  }
  out->set_read(m.read);
  out->set_write(m.write);
  out->set_exec(m.exec);
  out->set_inode(m.inode);
  out->set_dev_major(m.dev_major);
  out->set_dev_minor(m.dev_minor);
  out->set_build_id(sm.build_id);
  if (with_image && sm.image != nullptr) {
    out->set_image(sm.image->data(), sm.image->size());
  }
}

void PerfRegistersToProto(uint64_t mask, absl::Span<const uint64_t> values,
                          v1::PerfRegisters* out) {
  out->set_mask(mask);
  out->mutable_values()->Assign(values.begin(), values.end());
}

void DwarfRegistersToProto(const arch::RegisterSet& regs, v1::DwarfRegisters* out) {
  out->clear_values();
  for (int reg = 0; reg < arch::kMaxRegisters; ++reg) {
    if (regs.Valid(reg)) (*out->mutable_values())[reg] = regs.Get(reg);
  }
}

}  // namespace unwindd::service

#include "unwinder/sframe/expr_arena.h"

#include "memory/byte_reader.h"

namespace unwindd::unwinder::sframe {
namespace {

// DWARF 5 §7.7.1 opcodes.
constexpr uint8_t kDwOpBreg0 = 0x70;
constexpr uint8_t kDwOpBregx = 0x92;
constexpr uint8_t kDwOpDeref = 0x06;

void AppendUleb(std::vector<uint8_t>& out, uint64_t v) {
  do {
    uint8_t byte = v & 0x7f;
    v >>= 7;
    out.push_back(v != 0 ? byte | 0x80 : byte);
  } while (v != 0);
}

void AppendSleb(std::vector<uint8_t>& out, int64_t v) {
  while (true) {
    uint8_t byte = v & 0x7f;
    v >>= 7;  // arithmetic shift
    bool done =
        (v == 0 && (byte & 0x40) == 0) || (v == -1 && (byte & 0x40) != 0);
    out.push_back(done ? byte : byte | 0x80);
    if (done) return;
  }
}

}  // namespace

absl::StatusOr<absl::Span<const uint8_t>> ExprArena::Breg(uint32_t reg,
                                                          int64_t offset,
                                                          bool deref) {
  absl::MutexLock lock(&mu_);
  const Key key{reg, offset, deref};
  auto it = exprs_.find(key);
  if (it != exprs_.end()) return absl::MakeConstSpan(*it->second);
  if (exprs_.size() >= kMaxExpressions) {
    return absl::ResourceExhaustedError(
        "too many distinct SFrame flexible rules in one section");
  }
  auto expr = std::make_unique<std::vector<uint8_t>>();
  if (reg <= 31) {
    expr->push_back(static_cast<uint8_t>(kDwOpBreg0 + reg));
  } else {
    expr->push_back(kDwOpBregx);
    AppendUleb(*expr, reg);
  }
  AppendSleb(*expr, offset);
  if (deref) expr->push_back(kDwOpDeref);
  absl::Span<const uint8_t> out = absl::MakeConstSpan(*expr);
  exprs_.emplace(key, std::move(expr));
  return out;
}

std::optional<BregRule> ParseBreg(absl::Span<const uint8_t> expr) {
  memory::ByteReader r(expr);
  absl::StatusOr<uint8_t> op = r.U8();
  if (!op.ok()) return std::nullopt;
  BregRule b;
  if (*op >= kDwOpBreg0 && *op <= kDwOpBreg0 + 31) {
    b.reg = *op - kDwOpBreg0;
  } else if (*op == kDwOpBregx) {
    absl::StatusOr<uint64_t> reg = r.ULEB128();
    if (!reg.ok() || *reg > UINT32_MAX) return std::nullopt;
    b.reg = static_cast<uint32_t>(*reg);
  } else {
    return std::nullopt;
  }
  absl::StatusOr<int64_t> offset = r.SLEB128();
  if (!offset.ok()) return std::nullopt;
  b.offset = *offset;
  if (r.AtEnd()) return b;
  absl::StatusOr<uint8_t> deref = r.U8();
  if (!deref.ok() || *deref != kDwOpDeref || !r.AtEnd()) return std::nullopt;
  b.deref = true;
  return b;
}

}  // namespace unwindd::unwinder::sframe

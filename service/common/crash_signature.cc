#include "service/common/crash_signature.h"

// libmd's SHA-1 (BSD <sha1.h>), not OpenSSL's: libcrypto's start-up
// probes the CPU with `cpuid`, which traps to the hypervisor, and cost
// every run of the static `unwind` 0.09 ms and 17 page faults
// (docs/speed.md); libmd runs nothing at start-up.
#include <sha1.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace unwindd::service {

std::optional<size_t> CrashThreadIndex(const unwinder::ProcessStacks& stacks) {
  if (stacks.threads.empty()) return std::nullopt;
  for (size_t i = 0; i < stacks.threads.size(); ++i) {
    const auto& s = stacks.threads[i].signal;
    if (s && s->number > 0 && s->code) return i;
  }
  for (size_t i = 0; i < stacks.threads.size(); ++i) {
    const auto& s = stacks.threads[i].signal;
    if (s && s->number > 0) return i;
  }
  return 0;
}

uint64_t BuildIdOffset(const unwinder::Frame& f, const unwinder::ModuleInfo& m) {
  return f.pc - m.start;
}

CrashSignature ComputeSignature(const unwinder::ProcessStacks& stacks, int frames) {
  CrashSignature sig;
  std::optional<size_t> crash = CrashThreadIndex(stacks);
  if (!crash) return sig;
  const unwinder::ThreadStack& t = stacks.threads[*crash];
  sig.crash_tid = t.tid;
  if (t.signal) sig.signal = t.signal->number;
  std::string text = "Thread\n";
  for (const unwinder::Frame& f : t.frames) {
    if (static_cast<int>(sig.frames.size()) >= frames) break;
    if (f.module < 0 || static_cast<size_t>(f.module) >= stacks.modules.size()) {
      continue;
    }
    const unwinder::ModuleInfo& m = stacks.modules[f.module];
    if (m.build_id.empty()) continue;
    std::string line = absl::StrFormat("%s+0x%x", m.build_id, BuildIdOffset(f, m));
    absl::StrAppend(&text, line, "\n");
    sig.frames.push_back(std::move(line));
  }
  if (!sig.frames.empty()) sig.duphash = Sha1Hex(text);
  return sig;
}

std::string Sha1Hex(const std::string& text) {
  uint8_t md[SHA1_DIGEST_LENGTH];
  SHA1_CTX ctx;
  SHA1Init(&ctx);
  SHA1Update(&ctx, reinterpret_cast<const uint8_t*>(text.data()), text.size());
  SHA1Final(md, &ctx);
  std::string out;
  for (uint8_t c : md) absl::StrAppendFormat(&out, "%02x", c);
  return out;
}

}  // namespace unwindd::service

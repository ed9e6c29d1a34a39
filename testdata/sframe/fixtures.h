// The committed SFrame fixtures (build_fixtures.sh) and their golden
// `readelf --sframe` dumps, for the tests in this directory.
//
//   for (const SframeFixture& f : SframeFixtures()) {
//     absl::StatusOr<GoldenSframe> g = ReadGolden(f.name);
//     std::string path = SframeFixturePath(f.name);
//   }
#ifndef UNWINDD_TESTDATA_SFRAME_FIXTURES_H_
#define UNWINDD_TESTDATA_SFRAME_FIXTURES_H_

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "testdata/harness/frames.h"
#include "unwinder/module.h"

namespace unwindd::sframe_fixtures {

struct SframeFixture {
  std::string name;
  int version;  // SFrame version in the binary
  bool x86_64;  // runs on this machine (else aarch64: parsed only)
  // check-sframe's expected verdict: "" for none, "plt.got" for the .plt.got
  // entry binutils' ld describes with the pltN template, "planted" for the
  // fixture made to disagree.
  std::string disagreement;
};

const std::vector<SframeFixture>& SframeFixtures();
std::string SframeFixturePath(absl::string_view name);

// One row of `readelf --sframe`: "STARTPC CFA FP RA", or "RA undefined".
struct GoldenRow {
  uint64_t pc = 0;  // as printed: the address, or for [m] FDEs the offset
  std::string cfa, fp, ra;
  bool ra_undefined = false;
};

struct GoldenFunction {
  uint64_t pc = 0;
  uint32_t size = 0;
  bool pc_mask = false;  // "STARTPC[m]"
  std::string attrs;     // v3 'attr = "F"' (flex), "S" (signal)
  bool pauth_key_b = false;
  std::vector<GoldenRow> rows;
};

struct GoldenSframe {
  int version = 0;
  uint32_t num_fdes = 0;
  uint32_t num_fres = 0;
  std::vector<GoldenFunction> functions;
};

absl::StatusOr<GoldenSframe> ParseGolden(absl::string_view text);
absl::StatusOr<GoldenSframe> ReadGolden(absl::string_view fixture);

// The disagreement planted in threads_c_sframe_v2_nopie_disagree:
// [pc_lo, pc_hi) and the CFA offset before and after.
struct Planted {
  uint64_t pc_lo = 0, pc_hi = 0;
  int old_offset = 0, new_offset = 0;
};
absl::StatusOr<Planted> ReadPlanted();

// Where a named section (e.g. ".plt.got") is, nullopt if absent.
struct Section {
  uint64_t addr = 0;    // sh_addr
  uint64_t size = 0;    // sh_size
  uint64_t offset = 0;  // sh_offset
};
std::optional<Section> FindSection(const std::string& file,
                                   absl::string_view name);

// Per-frame method checks of an `unwind` result for the program `fixture`
// (its file name): `frames` counts the frames the source under test
// recovered, `failures` says which frames had the wrong method.
struct MethodCheck {
  int frames = 0;
  std::vector<std::string> failures;
};

// --sources=sframe,eh_frame: every frame recovered from a PC the golden dump
// covers says "sframe"; no frame recovered from another module does.
MethodCheck CheckSframeMethods(const harness::UnwindOutput& out,
                               absl::string_view fixture,
                               const GoldenSframe& golden);

// --sources=fp,eh_frame: with the program's own CFI as the oracle, every
// frame recovered from a PC where the frame record is in place (CFA = rbp +
// 16 with rbp at CFA - 16, or rbp saved at [rbp] in realigned frames) says
// "frame_pointer", except in .cold partitions (named by `names`); no frame
// recovered from a PC without one does.
MethodCheck CheckFramePointerMethods(const harness::UnwindOutput& out,
                                     absl::string_view fixture,
                                     unwinder::Module& module,
                                     const harness::SymbolNames& names);

// `unwind --sources=SOURCES` on the live process `pid`, and eu-stack on the
// same threads: our output, eu-stack's symbol names (for the method checks)
// and the comparison of the two. An error if either tool could not run.
struct LiveComparison {
  harness::UnwindOutput ours;
  harness::SymbolNames names;
  harness::Comparison vs_eu_stack;
};
absl::StatusOr<LiveComparison> CompareLiveWithEuStack(pid_t pid,
                                                      absl::string_view sources);

}  // namespace unwindd::sframe_fixtures

#endif  // UNWINDD_TESTDATA_SFRAME_FIXTURES_H_

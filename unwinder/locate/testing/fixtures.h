// Paths of the testdata/debuginfo fixtures in a test's runfiles.
//
//   std::string split = VariantPath("split", kThreads);   // stripped + link
//   std::string dbg = VariantPath("split", kThreads) + ".debug";
//   std::string base = BasePath(kThreads);                // before stripping
#ifndef UNWINDD_UNWINDER_LOCATE_TESTING_FIXTURES_H_
#define UNWINDD_UNWINDER_LOCATE_TESTING_FIXTURES_H_

#include <string>

namespace unwindd::locate::testing {

inline constexpr char kThreads[] = "threads_c_O2_nofp_pie_debugframe";
inline constexpr char kSignals[] = "signal_handler_O2_nofp_pie_debugframe";
inline constexpr char kRecursion[] = "recursion_O0_nofp_nopie_debugframe";

// testdata/debuginfo/<kind>/<name>: kind is split, mini, mini_symtab, zlib,
// zstd or zlib_gnu (debuginfo_variants.bzl).
std::string VariantPath(const std::string& kind, const std::string& name);
// The binary the variants were made from (with .debug_frame and .symtab).
std::string BasePath(const std::string& name);

}  // namespace unwindd::locate::testing

#endif  // UNWINDD_UNWINDER_LOCATE_TESTING_FIXTURES_H_

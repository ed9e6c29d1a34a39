"""Link options that make a binary mostly static: only glibc stays shared.

//service:unwind adds -static on top (glibc too: no dynamic linking at
all); its twin //service:unwind_debuginfod uses these alone.

For `unwind`, whose whole run (start-up included) is what a user waits for:
each shared library costs the dynamic linker an open, a few mmaps and its
relocations, and libstdc++'s initialisation on top (about 1 ms for
libstdc++ alone on the 2-vCPU machine, against 0.6 ms for a whole empty
program). A cc_binary's own linkopts come right after its object files and
before every dependency's linkopts, so:

  - --as-needed first: the shared libraries the cc_library wrappers in
    BUILD.bazel name later on the line (-lelf, -ldw, -lzstd, ... and the
    toolchain's trailing -lstdc++ -lm) are dropped when nothing is left for
    them to define;
  - one group of Debian's static archives (the -dev packages listed in
    scripts/requirements.txt), so that the order in which they refer to
    each other does not matter;
  - -static-libgcc: libgcc_eh.a instead of libgcc_s.so.

glibc stays shared here: a static glibc would have to dlopen() libdebuginfod
(and libcurl behind it) into a second copy of itself. libdebuginfod is
dlopen()ed only when debuginfod is configured (unwinder/locate/debuginfod.cc),
as libdw does for its own debuginfod use; the static `unwind` hands such
commands to unwind_debuginfod (service/cli/remote_exec.h).

Not for binaries that also load these libraries through other shared
libraries (gRPC's Abseil, libdw.so): one copy of each per process.
"""

_ABSL = [
    "statusor",
    "status",
    "cord",
    "cordz_info",
    "cord_internal",
    "cordz_functions",
    "exponential_biased",
    "cordz_handle",
    "raw_hash_set",
    "hashtablez_sampler",
    "hash",
    "city",
    "low_level_hash",
    "bad_optional_access",
    "bad_variant_access",
    "strerror",
    "str_format_internal",
    "synchronization",
    "graphcycles_internal",
    "stacktrace",
    "symbolize",
    "debugging_internal",
    "demangle_internal",
    "malloc_internal",
    "time",
    "civil_time",
    "time_zone",
    "strings",
    "strings_internal",
    "int128",
    "throw_delegate",
    "base",
    "spinlock_wait",
    "raw_logging_internal",
    "log_severity",
]

STATIC_CLI_LINKOPTS = [
    "-Wl,--as-needed",
    "-static-libgcc",
    "-Wl,--start-group",
] + ["-l:libabsl_%s.a" % name for name in _ABSL] + [
    "-l:libdw.a",
    "-l:libelf.a",
    "-l:libzstd.a",
    "-l:liblz4.a",
    "-l:liblzma.a",
    "-l:libbz2.a",
    "-l:libz.a",
    "-l:libcrypto.a",
    "-l:libstdc++.a",
    "-Wl,--end-group",
]

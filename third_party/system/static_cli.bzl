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
libraries (gRPC's Abseil, libdw.so): one copy of each per process. The
gRPC client //service:unwind_remote takes gRPC itself from static archives
too (STATIC_GRPC_CLIENT_LINKOPTS, below).
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

def _static_group(archives):
    """--as-needed, then `archives` (file names) in one group."""
    return [
        "-Wl,--as-needed",
        "-static-libgcc",
        "-Wl,--start-group",
    ] + ["-l:" + a for a in archives] + ["-Wl,--end-group"]

_CLI_ARCHIVES = ["libabsl_%s.a" % name for name in _ABSL] + [
    "libdw.a",
    "libelf.a",
    "libzstd.a",
    "liblz4.a",
    "liblzma.a",
    "libbz2.a",
    "libz.a",
    "libmd.a",
    "libstdc++.a",
]

# Only in the CLI binaries: protobuf's lite runtime and libnghttp2, for
# `unwind --server=unix:PATH pid`, which calls unwindd in process without
# gRPC (service/remote/socket_client.h). Not in the gRPC client's group
# below, which has the full protobuf runtime.
_CLI_ONLY_ARCHIVES = [
    "libprotobuf-lite.a",
    "libnghttp2.a",
]

STATIC_CLI_LINKOPTS = _static_group(_CLI_ARCHIVES + _CLI_ONLY_ARCHIVES)

# Abseil archives gRPC needs beyond those above (its random-number code).
_ABSL_GRPC = [
    "random_internal_platform",
    "random_internal_pool_urbg",
    "random_internal_randen",
    "random_internal_randen_hwaes",
    "random_internal_randen_hwaes_impl",
    "random_internal_randen_slow",
    "random_internal_seed_material",
    "random_seed_gen_exception",
]

# `unwind_remote`, the gRPC client `unwind --server` execs, linked the same
# way: gRPC, protobuf and what they use (upb, c-ares, RE2, OpenSSL) from
# Debian's static archives, so that the dynamic linker loads and relocates
# only glibc rather than 67 libraries, two thirds of the client's time
# (docs/speed.md). glibc stays shared: gRPC's native resolver calls
# getaddrinfo(). Still position-independent: -no-pie saved another tenth
# of its start-up, not worth a client that parses what a server sends
# losing ASLR for its code. (The group's archives it does not use, such as
# libzstd.a, add nothing to it.)
STATIC_GRPC_CLIENT_LINKOPTS = _static_group(["libabsl_%s.a" % name for name in _ABSL_GRPC] + [
    "libgrpc++.a",
    "libgrpc.a",
    "libgpr.a",
    "libupb.a",
    "libaddress_sorting.a",
    "libcares.a",
    "libre2.a",
    "libprotobuf.a",
    "libssl.a",
    "libcrypto.a",
] + _CLI_ARCHIVES)

def static_cli_linkopts(linkopts):
    """`linkopts` for a CLI binary in the default build; none where the build
    cannot take them: the aarch64 cross toolchain links everything
    statically already, and the sanitizer and fuzzer builds link their
    runtimes their own way."""
    return select({
        "//third_party/system:aarch64_cross": [],
        "//third_party/system:asan": [],
        "//third_party/system:tsan": [],
        "//tools/fuzz:fuzzing": [],
        "//conditions:default": linkopts,
    })

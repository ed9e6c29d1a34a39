"""The aarch64-linux-gnu cross toolchain's configuration (see BUILD.bazel).

It reuses Bazel's own Starlark rule for GCC-like toolchains,
@bazel_tools//tools/cpp:unix_cc_toolchain_config.bzl — the rule Bazel 4.2.3's
autodetected host toolchain is made of — so the features and action configs
(compile, link, archive, PIC, --copt/--linkopt, dbg/opt) behave exactly as on
the host; only the tools, the include directories and the link line differ.

Example:
    aarch64_linux_gnu_toolchain_config(name = "aarch64_linux_gnu")
"""

load(
    "@bazel_tools//tools/cpp:unix_cc_toolchain_config.bzl",
    "cc_toolchain_config",
)

_PREFIX = "/usr/bin/aarch64-linux-gnu-"

# Where the cross compiler looks for headers (`aarch64-linux-gnu-g++ -E -v`):
# its own libstdc++ and glibc headers, then the multiarch ones. Bazel checks
# every included header against this list.
_BUILTIN_INCLUDES = [
    "/usr/lib/gcc-cross/aarch64-linux-gnu/12/include",
    "/usr/aarch64-linux-gnu/include",
    "/usr/include/aarch64-linux-gnu",
    "/usr/include",
]

# The static link closure of the libraries third_party/system/BUILD.bazel
# names, as `pkg-config --static --libs grpc++ protobuf libelf libzstd liblz4
# liblzma zlib` prints it for the arm64 .pc files (PKG_CONFIG_LIBDIR=
# /usr/lib/aarch64-linux-gnu/pkgconfig), plus gRPC's reflection library.
# third_party/system's targets say only "-lgrpc++", "-lelf", ...; with -static
# those pick the .a files, whose own dependencies (Abseil's 60-odd archives,
# re2, upb, c-ares, OpenSSL) come from this group, which the link line puts
# after every target's libraries and linkopts (unix_cc_toolchain_config's
# "default_link_libs" feature). An archive member is pulled in only when
# something needs it, so binaries without gRPC are not made larger.
_STATIC_CLOSURE = [
    "grpc++_reflection",
    "grpc++",
    "grpc",
    "address_sorting",
    "re2",
    "upb",
    "cares",
    "gpr",
    "protobuf",
    "ssl",
    "crypto",
    "absl_statusor",
    "absl_status",
    "absl_cord",
    "absl_cordz_info",
    "absl_cord_internal",
    "absl_cordz_functions",
    "absl_exponential_biased",
    "absl_cordz_handle",
    "absl_raw_hash_set",
    "absl_hashtablez_sampler",
    "absl_hash",
    "absl_city",
    "absl_low_level_hash",
    "absl_random_distributions",
    "absl_random_seed_sequences",
    "absl_random_internal_pool_urbg",
    "absl_random_internal_randen",
    "absl_random_internal_randen_hwaes",
    "absl_random_internal_randen_hwaes_impl",
    "absl_random_internal_randen_slow",
    "absl_random_internal_platform",
    "absl_random_internal_seed_material",
    "absl_random_seed_gen_exception",
    "absl_bad_optional_access",
    "absl_bad_variant_access",
    "absl_strerror",
    "absl_str_format_internal",
    "absl_synchronization",
    "absl_graphcycles_internal",
    "absl_stacktrace",
    "absl_symbolize",
    "absl_debugging_internal",
    "absl_demangle_internal",
    "absl_malloc_internal",
    "absl_time",
    "absl_civil_time",
    "absl_time_zone",
    "absl_strings",
    "absl_strings_internal",
    "absl_int128",
    "absl_throw_delegate",
    "absl_base",
    "absl_spinlock_wait",
    "absl_raw_logging_internal",
    "absl_log_severity",
    "elf",
    "zstd",
    "lz4",
    "lzma",
    "z",
]

def aarch64_linux_gnu_toolchain_config(name):
    cc_toolchain_config(
        name = name,
        cpu = "aarch64",
        compiler = "gcc",
        toolchain_identifier = "aarch64-linux-gnu",
        host_system_name = "x86_64-unknown-linux-gnu",
        target_system_name = "aarch64-unknown-linux-gnu",
        target_libc = "glibc",
        abi_version = "aarch64",
        abi_libc_version = "glibc",
        cxx_builtin_include_directories = _BUILTIN_INCLUDES,
        tool_paths = {
            "ar": _PREFIX + "ar",
            "ld": _PREFIX + "ld",
            "cpp": _PREFIX + "cpp",
            "gcc": _PREFIX + "gcc",
            "dwp": _PREFIX + "dwp",
            "gcov": _PREFIX + "gcov",
            "nm": _PREFIX + "nm",
            "objcopy": _PREFIX + "objcopy",
            "objdump": _PREFIX + "objdump",
            "strip": _PREFIX + "strip",
            # Not shipped for aarch64; only coverage builds would call it.
            "llvm-cov": "/bin/false",
        },
        # As the host toolchain's (local_config_cc), minus what only makes
        # sense for the host's gcc.
        compile_flags = [
            "-U_FORTIFY_SOURCE",
            "-fstack-protector",
            "-Wall",
            "-Wunused-but-set-parameter",
            "-Wno-free-nonheap-object",
            "-fno-omit-frame-pointer",
        ],
        opt_compile_flags = [
            "-g0",
            "-O2",
            "-D_FORTIFY_SOURCE=1",
            "-DNDEBUG",
            "-ffunction-sections",
            "-fdata-sections",
        ],
        dbg_compile_flags = ["-g"],
        cxx_flags = ["-std=c++0x"],
        unfiltered_compile_flags = [
            "-fno-canonical-system-headers",
            "-Wno-builtin-macro-redefined",
            "-D__DATE__=\"redacted\"",
            "-D__TIMESTAMP__=\"redacted\"",
            "-D__TIME__=\"redacted\"",
        ],
        # -static: one file per binary, no dynamic loader needed in the guest.
        # glibc warns that getaddrinfo/getpwnam would need its shared NSS
        # modules at run time; unwindd resolves no names on a Unix socket.
        link_flags = [
            "-static",
            "-pthread",
            "-Wl,-z,relro,-z,now",
            "-pass-exit-codes",
        ],
        link_libs = ["-Wl,--start-group"] +
                    ["-l:lib%s.a" % lib for lib in _STATIC_CLOSURE] +
                    ["-Wl,--end-group", "-ldl", "-lrt", "-latomic", "-lstdc++", "-lm"],
        opt_link_flags = ["-Wl,--gc-sections"],
        coverage_compile_flags = ["--coverage"],
        coverage_link_flags = ["--coverage"],
        supports_start_end_lib = False,
        builtin_sysroot = "",
    )

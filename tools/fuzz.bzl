"""cc_fuzz_target: a libFuzzer target and the regression test of its corpus.

    cc_fuzz_target(
        name = "cfi_section_fuzzer",
        srcs = ["cfi_section_fuzzer.cc"],       # defines LLVMFuzzerTestOneInput
        deps = [":cfi_section"],
        corpus = "testdata/fuzz/cfi_section_fuzzer",
    )

makes
  - `<name>_lib`: the entry point (alwayslink);
  - `<name>`: under --config=fuzz a libFuzzer binary (clang's
    -fsanitize=fuzzer main); in every other build the corpus runner
    (tools/fuzz/corpus_main.cc), so that the normal build compiles it too;
  - `<name>_regression_test`: a cc_test that runs every committed corpus
    input through the same entry point, in the normal (gcc) suite;
  - `<name>.options`: the libFuzzer flags tools/fuzz/run_all.sh uses for it
    (-max_len and anything in `fuzz_flags`).
"""

def cc_fuzz_target(name, srcs, deps, corpus, data = [], max_len = 4096,
                   fuzz_flags = [], size = "small", **kwargs):
    native.cc_library(
        name = name + "_lib",
        testonly = True,
        srcs = srcs,
        deps = deps + ["//tools/fuzz:fuzz_input"],
        alwayslink = True,
        **kwargs
    )
    native.cc_binary(
        name = name,
        testonly = True,
        deps = [":" + name + "_lib"] + select({
            "//tools/fuzz:fuzzing": [],
            "//conditions:default": ["//tools/fuzz:corpus_main"],
        }),
        linkopts = select({
            "//tools/fuzz:fuzzing": ["-fsanitize=fuzzer"],
            "//conditions:default": [],
        }),
        data = data,
        tags = ["fuzz_target"],
    )
    native.cc_test(
        name = name + "_regression_test",
        size = size,
        deps = [":" + name + "_lib", "//tools/fuzz:corpus_main"],
        data = data + native.glob([corpus + "/**"]),
        # The corpus directory, relative to the runfiles root (the cwd).
        args = [native.package_name() + "/" + corpus],
    )
    native.genrule(
        name = name + "_options",
        outs = [name + ".options"],
        cmd = "echo '%s' > $@" % " ".join(["-max_len=%d" % max_len] + fuzz_flags),
        testonly = True,
    )

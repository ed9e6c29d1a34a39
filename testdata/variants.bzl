"""Builds each fixture program in several compiler configurations.

A variant name is "<opt>_<fp>_<pie>[_debugframe]", e.g. "O2_nofp_pie":
  opt: O0 | O2 | O3 | Os
  fp:  fp   -> -fno-omit-frame-pointer (rbp chains every frame)
       nofp -> -fomit-frame-pointer: the toolchain's default compile flags
               already contain -fno-omit-frame-pointer, so "nofp" must say so
               explicitly (our copts come after the toolchain's).
  pie: pie   -> Debian gcc's default (-fPIE, -pie): the executable is mapped at
                a random base and rel_pc != pc
       nopie -> -fno-pie / -no-pie: fixed load address, bias 0
  debugframe (optional): -fno-asynchronous-unwind-tables -fno-unwind-tables,
       so our own code has no .eh_frame entries and its CFI lives only in
       .debug_frame (from -g); libc and crt files keep their .eh_frame.
       Without -g as well there would be no CFI at all, and then the tools
       disagree (gdb's prologue analyzer gets lost in -O2 code where
       eu-stack follows rbp), so there is no "no CFI" variant.
  cet (optional): -fcf-protection=full, Intel CET's endbr64 at every
       indirect-branch target and the .plt.sec stubs it brings (Debian's
       gcc does not turn it on by default; Ubuntu's and Fedora's do).
  m32 (optional, last): -m32, a 32-bit i386 program that our 64-bit
       `unwind` must unwind (Debian's g++-12-multilib; C programs only:
       without the gcc-multilib metapackage, which conflicts with the
       aarch64 cross compiler, C++ headers miss <asm/errno.h> under -m32).
The target is named "<name>_<variant>", and the macro returns the labels it
created so BUILD files can hand them to tests as data.
"""

_OPT = {
    "O0": ["-O0"],
    "O2": ["-O2"],
    "O3": ["-O3"],
    "Os": ["-Os"],
}

_FP = {
    "fp": ["-fno-omit-frame-pointer"],
    "nofp": ["-fomit-frame-pointer"],
}

# copts, linkopts
_PIE = {
    "pie": ([], []),
    "nopie": (["-fno-pie"], ["-no-pie"]),
}

_EXTRA = {
    "debugframe": ["-fno-asynchronous-unwind-tables", "-fno-unwind-tables"],
    "cet": ["-fcf-protection=full"],
    "m32": ["-m32"],
}

_EXTRA_LINKOPTS = {
    # BFD ld: gold (the toolchain's) has no -z ibtplt.
    "cet": ["-fuse-ld=bfd", "-Wl,-z,ibtplt"],
    "m32": ["-m32"],
}

def _split(variant):
    parts = variant.split("_")
    if len(parts) < 3 or len(parts) > 5:
        fail("bad variant name %r" % variant)
    for e in parts[3:]:
        if e not in _EXTRA:
            fail("bad variant name %r: unknown %r" % (variant, e))
    return parts[0], parts[1], parts[2], parts[3:]

def variant_copts(variant):
    """Compiler flags for a variant name such as "O2_nofp_pie"."""
    opt, fp, pie, extra = _split(variant)
    copts = ["-g"] + _OPT[opt] + _FP[fp] + _PIE[pie][0]
    for e in extra:
        copts += _EXTRA[e]
    return copts

def variant_linkopts(variant):
    """Linker flags for a variant name such as "O2_nofp_pie"."""
    _, _, pie, extra = _split(variant)
    linkopts = ["-pthread"] + _PIE[pie][1]
    for e in extra:
        linkopts += _EXTRA_LINKOPTS.get(e, [])
    return linkopts

# fastbuild links with -Wl,-S (--strip=sometimes), which throws away the -g
# output: the DWARF that helps when debugging a fixture with gdb, and the
# .debug_frame the debugframe variants exist for. The toolchain implies the
# strip_debug_symbols feature unconditionally, so a target cannot opt out with
# `features`; instead each fixture is linked in a configuration with
# --strip=never and copied out under its public name.
def _no_strip_impl(settings, attr):
    return {"//command_line_option:strip": "never"}

_no_strip = transition(
    implementation = _no_strip_impl,
    inputs = [],
    outputs = ["//command_line_option:strip"],
)

def _unstripped_binary_impl(ctx):
    binary = ctx.attr.binary[0][DefaultInfo].files_to_run.executable
    out = ctx.actions.declare_file(ctx.label.name)
    ctx.actions.run_shell(
        inputs = [binary],
        outputs = [out],
        command = "cp \"$1\" \"$2\"",
        arguments = [binary.path, out.path],
        mnemonic = "CopyFixture",
    )
    return [DefaultInfo(
        executable = out,
        files = depset([out]),
        runfiles = ctx.runfiles(files = [out]),
    )]

_unstripped_binary = rule(
    implementation = _unstripped_binary_impl,
    attrs = {
        "binary": attr.label(cfg = _no_strip, executable = True, mandatory = True),
        "_allowlist_function_transition": attr.label(
            default = "@bazel_tools//tools/allowlists/function_transition_allowlist",
        ),
    },
    executable = True,
)

def fixture_variants(name, srcs, variants, deps = [], **kwargs):
    """Declares one cc_binary per variant; returns their labels.

    Args:
      name: program name; targets are "<name>_<variant>".
      srcs: sources (C or C++).
      variants: list of variant names, see the module docstring.
      deps: extra deps.
      **kwargs: passed to every cc_binary.
    Returns:
      List of ":<name>_<variant>" labels.
    """
    labels = []
    for variant in variants:
        target = "%s_%s" % (name, variant)

        # Only built through the wrapper below; "manual" keeps
        # //testdata/... from also building a stripped copy.
        native.cc_binary(
            name = target + ".bin",
            tags = ["manual"],
            visibility = ["//visibility:private"],
            srcs = srcs,
            copts = variant_copts(variant),
            linkopts = variant_linkopts(variant),
            deps = deps,
            **kwargs
        )
        _unstripped_binary(
            name = target,
            binary = ":%s.bin" % target,
        )
        labels.append(":" + target)
    return labels

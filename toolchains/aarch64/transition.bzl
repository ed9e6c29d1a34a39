"""Files built for aarch64 from a host build (toolchains/aarch64).

`aarch64_binaries` builds its `srcs` with the aarch64 cross toolchain — the
same settings as `--config=aarch64` — whatever the command line's
configuration, and copies each executable to <name>/<basename>, so that a
host test can carry aarch64 programs in its runfiles (e.g. into a
qemu-system guest) next to host programs of the same name:

    aarch64_binaries(
        name = "guest_binaries",
        srcs = ["//service:unwind"],   # -> guest_binaries/unwind
    )
"""

def _to_aarch64_impl(settings, attr):
    return {
        "//command_line_option:cpu": "aarch64",
        "//command_line_option:crosstool_top": "//toolchains/aarch64:suite",
    }

_to_aarch64 = transition(
    implementation = _to_aarch64_impl,
    inputs = [],
    outputs = [
        "//command_line_option:cpu",
        "//command_line_option:crosstool_top",
    ],
)

def _aarch64_binaries_impl(ctx):
    outs = []
    for src in ctx.attr.srcs:
        exe = src[DefaultInfo].files_to_run.executable
        if exe == None:
            fail("%s is not an executable" % src.label)
        out = ctx.actions.declare_file("%s/%s" % (ctx.label.name, exe.basename))
        ctx.actions.run_shell(
            inputs = [exe],
            outputs = [out],
            command = "cp -f \"$1\" \"$2\" && chmod 755 \"$2\"",
            arguments = [exe.path, out.path],
            mnemonic = "CopyAarch64Binary",
        )
        outs.append(out)
    return [DefaultInfo(files = depset(outs), runfiles = ctx.runfiles(files = outs))]

aarch64_binaries = rule(
    implementation = _aarch64_binaries_impl,
    attrs = {
        "srcs": attr.label_list(cfg = _to_aarch64, mandatory = True),
        "_allowlist_function_transition": attr.label(
            default = "@bazel_tools//tools/allowlists/function_transition_allowlist",
        ),
    },
)

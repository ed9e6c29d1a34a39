"""Binaries whose unwind information lives somewhere else, made at build time
from a fixture binary built with -g and without .eh_frame for its own code
(variants.bzl's "debugframe": -fno-asynchronous-unwind-tables
-fno-unwind-tables), so that its code's CFI is only in .debug_frame.

For a fixture NAME, in this package:
  split/NAME, split/NAME.debug
      `objcopy --only-keep-debug` into NAME.debug (its .eh_frame and code are
      NOBITS there), `strip --strip-all` (no .symtab, no .debug_frame: the
      program's own functions have no CFI left in the file), then
      `objcopy --add-gnu-debuglink=NAME.debug` (name + CRC-32).
      Tests put NAME.debug where they want it: beside, in .debug/, under a
      debug directory, or as DIR/.build-id/xx/rest.debug.
  mini/NAME
      MiniDebugInfo as gdb's manual ("MiniDebugInfo") and Fedora's
      find-debuginfo make it: the function symbols not already in .dynsym,
      kept in a copy of the debug file stripped of DWARF, xz-compressed
      into .gnu_debugdata of the fully stripped binary. Unlike Fedora's, the
      copy keeps .debug_frame (renamed around `objcopy -S`, which would drop
      it), so that the CFI is there.
  mini_symtab/NAME
      The same with Fedora's exact recipe: .symtab only, no CFI.
  zlib/NAME, zstd/NAME, zlib_gnu/NAME
      `objcopy --compress-debug-sections=zlib|zstd|zlib-gnu`: .debug_frame
      SHF_COMPRESSED with ELFCOMPRESS_ZLIB or ELFCOMPRESS_ZSTD, or renamed
      .zdebug_frame with the legacy "ZLIB" header.
"""

def debuginfo_variants(name, binary):
    """Declares the genrules above for `binary`, named NAME; returns labels."""
    b = "$(location %s)" % binary
    d = "$(RULEDIR)"
    native.genrule(
        name = name + "_split",
        srcs = [binary],
        outs = ["split/" + name, "split/%s.debug" % name],
        cmd = " && ".join([
            "objcopy --only-keep-debug %s %s/split/%s.debug" % (b, d, name),
            "strip --strip-all -R .comment -o %s/split/%s %s" % (d, name, b),
            "objcopy --add-gnu-debuglink=%s/split/%s.debug %s/split/%s" % (d, name, d, name),
        ]),
        testonly = True,
    )
    for kind, keep_cfi in [("mini", True), ("mini_symtab", False)]:
        tmp = "%s/%s/%s.tmp" % (d, kind, name)
        cmds = [
            "mkdir -p %s" % tmp,
            "nm -D %s --format=posix --defined-only | awk '{ print $$1 }' | sort > %s/dynsyms" % (b, tmp),
            "nm %s --format=posix --defined-only | awk '{ if ($$2 == \"T\" || $$2 == \"t\" || $$2 == \"D\") print $$1 }' | sort > %s/funcsyms" % (b, tmp),
            "comm -13 %s/dynsyms %s/funcsyms > %s/keep_symbols" % (tmp, tmp, tmp),
            "objcopy --only-keep-debug %s %s/debug" % (b, tmp),
        ]
        if keep_cfi:
            cmds += [
                "objcopy --rename-section .debug_frame=.keep_frame %s/debug" % tmp,
                "objcopy -S --remove-section .gdb_index --remove-section .comment --keep-symbols=%s/keep_symbols %s/debug %s/mini_debuginfo" % (tmp, tmp, tmp),
                "objcopy --rename-section .keep_frame=.debug_frame %s/mini_debuginfo" % tmp,
            ]
        else:
            cmds += [
                "objcopy -S --remove-section .gdb_index --remove-section .comment --keep-symbols=%s/keep_symbols %s/debug %s/mini_debuginfo" % (tmp, tmp, tmp),
            ]
        cmds += [
            "xz -c %s/mini_debuginfo > %s/mini_debuginfo.xz" % (tmp, tmp),
            "strip --strip-all -R .comment -o %s/%s/%s %s" % (d, kind, name, b),
            "objcopy --add-section .gnu_debugdata=%s/mini_debuginfo.xz %s/%s/%s" % (tmp, d, kind, name),
            "rm -rf %s" % tmp,
        ]
        native.genrule(
            name = "%s_%s" % (name, kind),
            srcs = [binary],
            outs = ["%s/%s" % (kind, name)],
            cmd = " && ".join(cmds),
            testonly = True,
        )
    for kind, flag in [("zlib", "zlib"), ("zstd", "zstd"), ("zlib_gnu", "zlib-gnu")]:
        native.genrule(
            name = "%s_%s" % (name, kind),
            srcs = [binary],
            outs = ["%s/%s" % (kind, name)],
            cmd = "objcopy --compress-debug-sections=%s %s $@" % (flag, b),
            testonly = True,
        )
    return [":%s_%s" % (name, k) for k in ["split", "mini", "mini_symtab", "zlib", "zstd", "zlib_gnu"]]

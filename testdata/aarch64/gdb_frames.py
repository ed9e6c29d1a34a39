# Prints every thread's frames for make_fixtures.sh, in the format of the
# golden files: "thread N sp=0x<frame-0 sp>", one "0x<pc> <function>" line
# per real frame (INLINE/TAILCALL frames are gdb's reconstructions from DWARF,
# not stack frames, as in testdata/harness/tools.cc), then "end".
import gdb

for inferior in gdb.inferiors():
    for thread in sorted(inferior.threads(), key=lambda t: t.num):
        thread.switch()
        frame = gdb.newest_frame()
        print("UWD thread %d sp=0x%x" % (thread.num, int(frame.read_register("sp"))))
        while frame is not None:
            if frame.type() not in (gdb.INLINE_FRAME, gdb.TAILCALL_FRAME):
                name = frame.name()
                if frame.type() == gdb.SIGTRAMP_FRAME:
                    name = "<signal handler called>"
                print("UWD 0x%x %s" % (frame.pc(), name or "??"))
            frame = frame.older()
        print("UWD end")

#!/usr/bin/python3
"""Smoke test of unwindd's OCI image under Debian's runc (docs/fleet.md
"The image"), as root on the host:

  1. as the image says (uid 10001, no CAP_SYS_PTRACE), in the host's pid
     namespace: `unwind pid` of a host process is refused with a clear error
     naming CAP_SYS_PTRACE, while `unwind core` of that process's core works,
     and so does the image's unwindd, asked over TCP by the host's unwind
     (a streamed core that names no file of the server's machine) and by a
     profiler's snapshot stream (one sample per thread of that process,
     every module found by build-id in a debuginfod on the host, the
     by-build-id store replicas share: docs/fleet.md);
  2. with CAP_SYS_PTRACE added and the host's pid namespace: `unwind pid` of
     the host process gives the frames the host's own unwind gives.

  runc_smoke.py --image=OUT/oci --unwind=HOST_UNWIND --fixture=PROGRAM --workdir=DIR \
      --capture=capture_samples --pb2-dir=DIR

Prints "image smoke: N passed, M failed"; exits 0 when all passed.
"""
import argparse
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time

# The store the fleet test uses too (a data dependency of the test).
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "testing"))
import debuginfod_store  # noqa: E402

results = []


def check(name, ok, detail=""):
    results.append(ok)
    print("image smoke: %s %s%s" % ("PASS" if ok else "FAIL", name,
                                    (": " + detail) if detail else ""), flush=True)


def frames(json_text):
    """(tid, [(pc, sp, method, rel_pc)]) per thread, from --format=json."""
    doc = json.loads(json_text)
    return sorted((t["tid"], [(f["pc"], f["sp"], f["method"], f.get("rel_pc"))
                              for f in t["frames"]]) for t in doc["threads"])


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def mapped_files(pid):
    """The files a process maps executable code from."""
    out = []
    with open("/proc/%d/maps" % pid) as f:
        for line in f:
            parts = line.split()
            if len(parts) >= 6 and "x" in parts[1] and parts[5].startswith("/"):
                if parts[5] not in out:
                    out.append(parts[5])
    return out


def snapshot_frames(pb, port, batch_file):
    """Sends the captured samples down one UnwindSnapshots stream, as a
    profiler does; (tid, [(pc, sp, method, rel_pc)]) per answer."""
    import grpc
    batch = pb.SnapshotBatch()
    with open(batch_file, "rb") as f:
        batch.ParseFromString(f.read())
    channel = grpc.insecure_channel("127.0.0.1:%d" % port)
    call = channel.stream_stream(
        "/unwindd.v1.Unwinder/UnwindSnapshots",
        request_serializer=pb.SnapshotRequest.SerializeToString,
        response_deserializer=pb.SnapshotResponse.FromString)
    out = []
    for r in call(iter(batch.samples), timeout=60):
        if r.HasField("error"):
            out.append((r.sample_id, "error %d: %s" % (r.error.code, r.error.message)))
            continue
        # As --format=json spells them (frames() above).
        out.append((r.stack.tid, [
            ("0x%x" % f.pc, "0x%x" % f.sp, pb.Method.Name(f.method)[len("METHOD_"):].lower(),
             "0x%x" % f.rel_pc if f.HasField("module") else None)
            for f in r.stack.frames]))
    channel.close()
    return sorted(out, key=lambda t: (t[0], str(t[1])))


class Bundle:
    def __init__(self, image, path):
        self.path = path
        shutil.rmtree(path, ignore_errors=True)
        subprocess.run(["umoci", "unpack", "--image", image + ":latest", path], check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        with open(os.path.join(path, "config.json")) as f:
            self.base = json.load(f)

    def configure(self, args, data, ptrace=False, host_pid=True, host_net=False):
        c = json.loads(json.dumps(self.base))
        p = c["process"]
        p["terminal"] = False
        p["args"] = args
        drop = set()
        if host_pid:
            drop.add("pid")
        if host_net:
            drop.add("network")
        c["linux"]["namespaces"] = [n for n in c["linux"]["namespaces"]
                                    if n["type"] not in drop]
        if ptrace:
            # Ambient too: the image's user is not root.
            for kind in ("bounding", "effective", "permitted", "inheritable", "ambient"):
                caps = p.setdefault("capabilities", {}).setdefault(kind, [])
                if "CAP_SYS_PTRACE" not in caps:
                    caps.append("CAP_SYS_PTRACE")
        c["mounts"].append({"destination": "/data", "type": "bind", "source": data,
                            "options": ["rbind", "ro"]})
        with open(os.path.join(self.path, "config.json"), "w") as f:
            json.dump(c, f)

    def run(self, name, timeout=60):
        return subprocess.run(["runc", "run", "--bundle", self.path, name],
                              capture_output=True, text=True, timeout=timeout)

    def start(self, name, log):
        return subprocess.Popen(["runc", "run", "--bundle", self.path, name],
                                stdout=log, stderr=log)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--image", required=True)
    ap.add_argument("--unwind", required=True)
    ap.add_argument("--fixture", required=True)
    ap.add_argument("--workdir", required=True)
    ap.add_argument("--capture", required=True, help="capture_samples")
    ap.add_argument("--pb2-dir", required=True, help="holds proto/unwinder_pb2.py")
    args = ap.parse_args()
    sys.path.insert(0, args.pb2_dir)
    from proto import unwinder_pb2 as pb
    work = args.workdir
    data = os.path.join(work, "data")
    os.makedirs(data, exist_ok=True)
    os.chmod(work, 0o755)
    os.chmod(data, 0o755)
    exe = os.path.join(data, "program")
    shutil.copy(args.fixture, exe)
    os.chmod(exe, 0o755)
    program = subprocess.Popen([exe], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    server = None
    procs = []
    try:
        program.stdout.readline()  # the fixtures say when they are parked
        time.sleep(0.5)
        pid = program.pid
        host = subprocess.run([args.unwind, "pid", str(pid), "--format=json"],
                              capture_output=True, text=True, timeout=60)
        subprocess.run(["gcore", "-o", os.path.join(data, "core"), str(pid)],
                       capture_output=True, check=True, timeout=120)
        core = os.path.join(data, "core.%d" % pid)
        os.chmod(core, 0o644)
        host_core = subprocess.run([args.unwind, "core", core, "--exe=" + exe,
                                    "--format=json"], capture_output=True, text=True,
                                   timeout=60)
        if host.returncode != 0 or host_core.returncode != 0:
            check("the host's unwind", False, host.stderr + host_core.stderr)
            return 1
        want = frames(host.stdout)
        want_core = frames(host_core.stdout)
        samples = os.path.join(work, "samples.bin")
        subprocess.run([args.capture, str(pid), samples], check=True, timeout=60)
        durl = debuginfod_store.start(mapped_files(pid), work, procs)

        b = Bundle(args.image, os.path.join(work, "bundle"))
        # 1. As the image says: uid 10001, no CAP_SYS_PTRACE.
        b.configure(["/usr/bin/id", "-u"], data)
        r = b.run("unwindd-smoke-id")
        check("runs as a non-root user", r.returncode == 0 and r.stdout.strip() == "10001",
              "uid %s" % r.stdout.strip())
        b.configure(["/usr/bin/unwind", "pid", str(pid), "--format=json"], data)
        r = b.run("unwindd-smoke-noptrace")
        err = r.stderr.strip()
        check("without CAP_SYS_PTRACE, unwinding a host process is refused clearly",
              r.returncode != 0 and "CAP_SYS_PTRACE" in err and len(err.splitlines()) <= 3,
              "exit %d: %s" % (r.returncode, err))
        b.configure(["/usr/bin/unwind", "core", "/data/" + os.path.basename(core),
                     "--exe=/data/program", "--format=json"], data)
        r = b.run("unwindd-smoke-core")
        check("without CAP_SYS_PTRACE, unwind core works",
              r.returncode == 0 and frames(r.stdout) == want_core,
              "exit %d %s" % (r.returncode, r.stderr.strip()[:300]))
        # The image's unwindd, its entrypoint, asked by the host over TCP.
        port = free_port()
        b.configure(["/usr/bin/unwindd", "--listen=tcp:127.0.0.1:%d" % port,
                     "--request-log=none", "--debuginfod=" + durl], data, host_net=True)
        log = open(os.path.join(work, "unwindd.log"), "w")
        server = b.start("unwindd-smoke-server", log)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                time.sleep(0.1)
        # A TCP caller, so the image's unwindd (uid 10001, no CAP_SETUID)
        # opens no file of its own for it: the core naming none is unwound
        # from its memory (no debuginfod here), its threads all there.
        r = subprocess.run([args.unwind, "--server=tcp:127.0.0.1:%d" % port, "core", core,
                            "--format=json"], capture_output=True, text=True, timeout=60)
        got = frames(r.stdout) if r.returncode == 0 else []
        check("the image's unwindd unwinds a streamed core",
              r.returncode == 0 and [t for t, _ in got] == [t for t, _ in want_core] and
              all(f for _, f in got),
              "exit %d %s" % (r.returncode, r.stderr.strip()[:300]))
        # One naming a file here (--exe) is refused, and says why.
        r = subprocess.run([args.unwind, "--server=tcp:127.0.0.1:%d" % port, "core", core,
                            "--exe=/data/program", "--format=json"],
                           capture_output=True, text=True, timeout=60)
        check("... and refuses one that names a file of its machine, clearly",
              r.returncode != 0 and "CAP_SETUID" in r.stderr, r.stderr.strip()[:200])
        # A profiler's stream: every thread's frames as the host's unwind
        # pid gives them, each module fetched by build-id.
        got = snapshot_frames(pb, port, samples)
        check("the image's unwindd unwinds a snapshot stream, modules by build-id",
              got == want,
              "%d threads, %d frames" % (len(got), sum(len(f) for _, f in got)) if got == want
              else "got %s, want %s" % (str(got)[:400], str(want)[:400]))
        subprocess.run(["runc", "kill", "unwindd-smoke-server", "TERM"],
                       capture_output=True)
        server.wait(timeout=30)
        log.close()
        with open(os.path.join(work, "unwindd.log")) as f:
            text = f.read()
        check("the image's unwindd drains and stops on SIGTERM", server.returncode == 0 and
              "unwindd: stopped" in text, "exit %s" % server.returncode)
        server = None
        # 2. CAP_SYS_PTRACE and the host's pid namespace.
        b.configure(["/usr/bin/unwind", "pid", str(pid), "--format=json"], data, ptrace=True)
        r = b.run("unwindd-smoke-ptrace")
        got = frames(r.stdout) if r.returncode == 0 else None
        check("with CAP_SYS_PTRACE and the host pid namespace, a host process unwinds",
              got == want, "exit %d %s" % (r.returncode, r.stderr.strip()[:300]))
    finally:
        if server is not None:
            subprocess.run(["runc", "kill", "unwindd-smoke-server", "KILL"],
                           capture_output=True)
            server.wait(timeout=30)
        for name in ("unwindd-smoke-id", "unwindd-smoke-noptrace", "unwindd-smoke-core",
                     "unwindd-smoke-server", "unwindd-smoke-ptrace"):
            subprocess.run(["runc", "delete", "--force", name], capture_output=True)
        program.send_signal(signal.SIGKILL)
        program.wait()
        for p in procs:
            p.kill()
            p.wait()
    passed = sum(results)
    print("image smoke: %d passed, %d failed" % (passed, len(results) - passed))
    return 0 if passed == len(results) and results else 1


if __name__ == "__main__":
    sys.exit(main())

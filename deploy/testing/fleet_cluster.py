#!/usr/bin/python3
"""A one-machine unwindd cluster under load, with failures (issue 28,
docs/fleet.md "The one-machine cluster test").

Three unwindd replicas on 127.0.0.1, 127.0.0.2 and 127.0.0.3 (one port),
Debian's debuginfod as the by-build-id store they share (--debuginfod), and
Debian's nginx in front (deploy/nginx/unwindd.conf: TLS, client
certificates, grpc_pass). Clients, written only from proto/unwinder.proto
with Debian's python3-grpcio:

  - core clients: UnwindCore with a streamed core (an aarch64 core whose
    executable the replicas fetch from debuginfod), through a round_robin
    channel over the three addresses with a retry policy for UNAVAILABLE,
    and through nginx with the same policy;
  - snapshot clients: UnwindSnapshots streams of captured samples, one
    message at a time; a stream that ends with UNAVAILABLE (a draining
    replica, a stream's age) is reopened and the unanswered sample sent
    again.

Every answer is compared with what a single replica gave before the load.
Phases: throughput with 1 replica, then with 3; then mixed load during
which one replica is stopped with SIGTERM and restarted, and later another
is killed with SIGKILL. It checks:

  - no request lost across the graceful stop (retries allowed), and every
    answer equal to the single server's;
  - after SIGKILL, failed calls at most the calls in flight, and retried;
  - every replica served a share of the calls (their request logs);

and prints throughput, p50/p99 latency and the time the restarted replica
took to get calls again. Exits 0 when all holds; prints
"fleet cluster: N passed, M failed" either way.

  fleet_cluster.py --unwindd=BIN --core=CORE --exe=EXE --samples=FILE \\
      --pb2-dir=DIR --nginx-conf=deploy/nginx/unwindd.conf \\
      --make-certs=make_tls_certs.sh --workdir=DIR
"""
import argparse
import json
import os
import queue
import re
import signal
import socket
import statistics
import subprocess
import sys
import threading
import time

import grpc

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import debuginfod_store  # noqa: E402

SERVICE_CONFIG = json.dumps({
    "loadBalancingConfig": [{"round_robin": {}}],
    "methodConfig": [{
        "name": [{"service": "unwindd.v1.Unwinder"}],
        "retryPolicy": {
            "maxAttempts": 5,
            "initialBackoff": "0.1s",
            "maxBackoff": "1s",
            "backoffMultiplier": 2,
            "retryableStatusCodes": ["UNAVAILABLE"],
        },
    }],
})
CHANNEL_OPTIONS = [
    ("grpc.service_config", SERVICE_CONFIG),
    ("grpc.enable_retries", 1),
    ("grpc.per_rpc_retry_buffer_size", 16 << 20),
    ("grpc.max_receive_message_length", 64 << 20),
]
HOSTS = ["127.0.0.1", "127.0.0.2", "127.0.0.3"]


def log(msg):
    print("fleet: " + msg, flush=True)


def free_port():
    # One port free on all three addresses (each replica binds its own).
    for _ in range(50):
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
        s.close()
        ok = True
        for h in HOSTS:
            t = socket.socket()
            try:
                t.bind((h, port))
            except OSError:
                ok = False
            t.close()
        if ok:
            return port
    raise RuntimeError("no free port on 127.0.0.1-3")


def wait_for(pred, timeout, what):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if pred():
            return
        time.sleep(0.05)
    raise RuntimeError("timed out waiting for " + what)


class Replica:
    def __init__(self, args, index, port, debuginfod_url):
        self.args = args
        self.index = index
        self.host = HOSTS[index]
        self.port = port
        self.debuginfod_url = debuginfod_url
        self.dir = os.path.join(args.workdir, "replica%d" % index)
        os.makedirs(self.dir, exist_ok=True)
        self.proc = None

    def start(self):
        self.stderr = open(os.path.join(self.dir, "stderr.log"), "ab")
        self.proc = subprocess.Popen(
            [self.args.unwindd,
             "--listen=tcp:%s:%d" % (self.host, self.port),
             "--listen=unix:" + os.path.join(self.dir, "unwindd.sock"),
             "--request-log=" + os.path.join(self.dir, "requests.log"),
             "--debuginfod=" + self.debuginfod_url,
             "--workers=2", "--drain-timeout=10",
             "--max-connection-age=%d" % self.args.connection_age,
             "--max-connection-age-grace=10"],
            stdout=subprocess.DEVNULL, stderr=self.stderr)
        wait_for(self.serving, 20, "replica %d" % self.index)

    def serving(self):
        if self.proc.poll() is not None:
            raise RuntimeError("replica %d exited: %s" % (self.index, self.stderr_text()))
        try:
            with socket.create_connection((self.host, self.port), timeout=0.2):
                return True
        except OSError:
            return False

    def stderr_text(self):
        with open(os.path.join(self.dir, "stderr.log"), errors="replace") as f:
            return f.read()[-2000:]

    def requests(self):
        """Lines of its request log (kept across restarts): (rpc, ok)."""
        out = []
        try:
            with open(os.path.join(self.dir, "requests.log")) as f:
                for line in f:
                    try:
                        r = json.loads(line)
                    except ValueError:
                        continue
                    out.append(r)
        except FileNotFoundError:
            pass
        return out

    def stop(self, sig):
        self.proc.send_signal(sig)
        rc = self.proc.wait(timeout=30)
        self.stderr.close()
        return rc


class Stats:
    def __init__(self):
        self.lock = threading.Lock()
        self.ok = 0
        self.failed = []       # (time, kind, code, message)
        self.mismatched = []
        self.differences = []  # the first few, described
        self.latency = []      # seconds, core calls that succeeded
        self.reopened = 0      # snapshot streams reopened after UNAVAILABLE
        self.reset_by_proxy = 0  # ... after nginx reset them (INTERNAL, RST_STREAM)
        self.samples = 0

    def record_ok(self, latency=None):
        with self.lock:
            self.ok += 1
            if latency is not None:
                self.latency.append(latency)


class Load:
    """Client threads that run until stop() and count what they got."""

    def __init__(self, pb, stats):
        self.pb = pb
        self.stats = stats
        self.stopping = threading.Event()
        self.threads = []

    def core_client(self, channel, kind, core, exe_name, reference):
        call = channel.stream_unary(
            "/unwindd.v1.Unwinder/UnwindCore",
            request_serializer=self.pb.UnwindCoreRequest.SerializeToString,
            response_deserializer=self.pb.UnwindResponse.FromString)
        pb = self.pb

        def run():
            while not self.stopping.is_set():
                first = pb.UnwindCoreRequest()
                first.options.streamed_size = len(core)
                first.options.debuginfod = True  # the executable by build-id
                chunk = pb.UnwindCoreRequest(chunk=core)
                start = time.monotonic()
                try:
                    r = call(iter([first, chunk]), timeout=30)
                except grpc.RpcError as e:
                    with self.stats.lock:
                        self.stats.failed.append((time.monotonic(), kind, e.code().name,
                                                  e.details()))
                    continue
                if r.SerializeToString(deterministic=True) != reference:
                    with self.stats.lock:
                        self.stats.mismatched.append(kind)
                        if len(self.stats.differences) < 5:
                            self.stats.differences.append(
                                "%s: %s" % (kind, describe_core_difference(pb, r, reference)))
                else:
                    self.stats.record_ok(time.monotonic() - start)

        self.threads.append(threading.Thread(target=run, daemon=True))

    def snapshot_client(self, channel, kind, samples, reference):
        pb = self.pb
        call = channel.stream_stream(
            "/unwindd.v1.Unwinder/UnwindSnapshots",
            request_serializer=pb.SnapshotRequest.SerializeToString,
            response_deserializer=pb.SnapshotResponse.FromString)

        def run():
            i = 0
            while not self.stopping.is_set():
                q = queue.Queue()
                responses = call(iter(q.get, None), timeout=120)
                try:
                    while not self.stopping.is_set():
                        q.put(samples[i % len(samples)])
                        r = next(responses)
                        got = frames_of(pb, r)
                        want = reference[i % len(samples)]
                        if got != want:
                            with self.stats.lock:
                                self.stats.mismatched.append(kind)
                                if len(self.stats.differences) < 5:
                                    self.stats.differences.append(
                                        "%s: sample %d: got %s, want %s" %
                                        (kind, i % len(samples), summary(got),
                                         summary(want)))
                        else:
                            with self.stats.lock:
                                self.stats.samples += 1
                        i += 1
                    q.put(None)
                    for _ in responses:
                        pass
                except grpc.RpcError as e:
                    # The sample not answered is sent again on a new stream.
                    # UNAVAILABLE is the contract (a drain, a stream's age);
                    # so is, behind a proxy, INTERNAL from an HTTP/2 reset:
                    # nginx resets the caller's stream when the replica's
                    # connection closes under it (docs/fleet.md "Draining").
                    # Anything else is counted as an error, then retried the
                    # same way.
                    with self.stats.lock:
                        if e.code() == grpc.StatusCode.UNAVAILABLE:
                            self.stats.reopened += 1
                        elif (kind == "snap-nginx" and e.code() == grpc.StatusCode.INTERNAL and
                              "RST_STREAM" in (e.details() or "")):
                            self.stats.reset_by_proxy += 1
                        else:
                            self.stats.failed.append((time.monotonic(), kind,
                                                      e.code().name, e.details()))
                    q.put(None)
                    time.sleep(0.05)
                except StopIteration:
                    q.put(None)

        self.threads.append(threading.Thread(target=run, daemon=True))

    def start(self):
        for t in self.threads:
            t.start()

    def stop(self):
        self.stopping.set()
        for t in self.threads:
            t.join(timeout=60)


def frames_of(pb, r):
    if r.HasField("error"):
        return ("error", r.error.code)
    out = []
    for f in r.stack.frames:
        m = r.modules[f.module] if f.HasField("module") else None
        out.append((f.pc, f.sp, f.method, m.path if m else "", m.build_id if m else "",
                    f.rel_pc))
    return (r.stack.tid, r.stack.stop, tuple(out))


def summary(frames):
    if frames[0] == "error":
        return "error %d" % frames[1]
    return "tid %d stop %d, %d frames, modules %s" % (
        frames[0], frames[1], len(frames[2]), sorted(set(f[3] for f in frames[2])))


def describe_core_difference(pb, got, reference):
    want = pb.UnwindResponse.FromString(reference)
    if len(got.threads) != len(want.threads):
        return "%d threads, want %d" % (len(got.threads), len(want.threads))
    for g, w in zip(got.threads, want.threads):
        if g != w:
            return "thread %d: %d frames, want %d" % (g.tid, len(g.frames), len(w.frames))
    for g, w in zip(got.modules, want.modules):
        if g != w:
            return "module %s differs: %s" % (w.path, str(g).replace("\n", "; ")[:300])
    return "other fields differ"


def percentile(values, p):
    if not values:
        return 0.0
    v = sorted(values)
    return v[min(len(v) - 1, int(p / 100.0 * len(v)))]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--unwindd", required=True)
    ap.add_argument("--core", required=True)
    ap.add_argument("--exe", required=True, help="the core's executable (debuginfod serves it)")
    ap.add_argument("--samples", required=True)
    ap.add_argument("--pb2-dir", required=True)
    ap.add_argument("--nginx-conf", required=True)
    ap.add_argument("--make-certs", required=True)
    ap.add_argument("--workdir", required=True)
    ap.add_argument("--phase-seconds", type=float, default=6)
    ap.add_argument("--connection-age", type=int, default=3)
    ap.add_argument("--core-clients", type=int, default=3)
    ap.add_argument("--soak-seconds", type=int, default=0,
                    help="instead of the phases: mixed load for this long, every "
                         "replica's RSS sampled (docs/fleet.md \"Soak\")")
    args = ap.parse_args()
    sys.path.insert(0, args.pb2_dir)
    from proto import unwinder_pb2 as pb

    work = args.workdir
    os.makedirs(work, exist_ok=True)
    os.chmod(work, 0o755)
    procs = []
    results = []   # (name, ok, detail)
    ngdir = None

    def check(name, ok, detail=""):
        results.append((name, ok, detail))
        log("%s %s%s" % ("PASS" if ok else "FAIL", name, (": " + detail) if detail else ""))

    try:
        # ---- debuginfod over the executable ----
        durl = debuginfod_store.start([args.exe], work, procs, timeout=60)
        bid = debuginfod_store.build_id(args.exe)
        log("debuginfod at %s serves build-id %s" % (durl, bid))

        # ---- replicas ----
        port = free_port()
        replicas = [Replica(args, i, port, durl) for i in range(3)]
        for r in replicas:
            r.start()
            procs.append(r.proc)
        log("replicas on %s port %d" % (", ".join(HOSTS), port))

        # ---- nginx: deploy/nginx/unwindd.conf, edited for here ----
        tls = os.path.join(work, "tls")
        os.makedirs(tls, exist_ok=True)
        subprocess.run(["sh", args.make_certs, tls], check=True)
        for name in os.listdir(tls):
            os.chmod(os.path.join(tls, name), 0o644)  # nginx's workers: nobody
        nport = free_port()
        with open(args.nginx_conf) as f:
            conf = f.read()
        conf = conf.replace("/etc/unwindd/tls/", tls + "/")
        conf = re.sub(r"listen 8443 ", "listen 127.0.0.1:%d " % nport, conf)
        conf = conf.replace(":7070 ", ":%d " % port)
        # Below the replicas' age less its jitter, as the file says.
        conf = conf.replace("keepalive_time 100s;", "keepalive_time %dms;" %
                            max(500, int(args.connection_age * 1000 * 0.8)))
        ngdir = os.path.join(work, "nginx")
        os.makedirs(os.path.join(ngdir, "logs"), exist_ok=True)
        with open(os.path.join(ngdir, "unwindd.conf"), "w") as f:
            f.write(conf)
        with open(os.path.join(ngdir, "nginx.conf"), "w") as f:
            f.write("""
pid %(d)s/nginx.pid;
error_log %(d)s/logs/error.log warn;
worker_processes 1;
events { worker_connections 512; }
http {
    access_log %(d)s/logs/access.log;
    client_body_temp_path %(d)s/body;
    proxy_temp_path %(d)s/proxy;
    fastcgi_temp_path %(d)s/fastcgi;
    uwsgi_temp_path %(d)s/uwsgi;
    scgi_temp_path %(d)s/scgi;
    include %(d)s/unwindd.conf;
}
""" % {"d": ngdir})
        t = subprocess.run(["nginx", "-t", "-p", ngdir, "-c", ngdir + "/nginx.conf"],
                           capture_output=True, text=True)
        check("nginx -t accepts deploy/nginx/unwindd.conf", t.returncode == 0,
              t.stderr.strip().splitlines()[-1] if t.stderr else "")
        ng = subprocess.Popen(["nginx", "-p", ngdir, "-c", ngdir + "/nginx.conf",
                               "-g", "daemon off;"], stderr=subprocess.DEVNULL)
        procs.append(ng)

        def nginx_up():
            try:
                with socket.create_connection(("127.0.0.1", nport), timeout=0.2):
                    return True
            except OSError:
                return False
        wait_for(nginx_up, 20, "nginx")

        def read(p):
            with open(p, "rb") as f:
                return f.read()
        creds = grpc.ssl_channel_credentials(
            root_certificates=read(tls + "/ca.pem"),
            private_key=read(tls + "/profiler.key"),
            certificate_chain=read(tls + "/profiler.pem"))
        stranger = grpc.ssl_channel_credentials(root_certificates=read(tls + "/ca.pem"),
                                                private_key=read(tls + "/rogue.key"),
                                                certificate_chain=read(tls + "/rogue.pem"))
        rr_target = "ipv4:" + ",".join("%s:%d" % (h, port) for h in HOSTS)
        nginx_target = "localhost:%d" % nport

        def rr_channel():
            return grpc.insecure_channel(rr_target, options=CHANNEL_OPTIONS)

        def nginx_channel(c=creds):
            return grpc.secure_channel(nginx_target, c, options=CHANNEL_OPTIONS)

        # ---- the single server's answers ----
        with open(args.core, "rb") as f:
            core = f.read()
        single = grpc.insecure_channel("%s:%d" % (HOSTS[0], port))
        first = pb.UnwindCoreRequest()
        first.options.streamed_size = len(core)
        first.options.debuginfod = True
        ref_core = single.stream_unary(
            "/unwindd.v1.Unwinder/UnwindCore",
            request_serializer=pb.UnwindCoreRequest.SerializeToString,
            response_deserializer=pb.UnwindResponse.FromString)(
                iter([first, pb.UnwindCoreRequest(chunk=core)]), timeout=60)
        exe_module = [m for m in ref_core.modules if m.build_id == bid]
        modules = ["%s%s" % (m.path, " (debuginfod)" if m.fetched else "")
                   for m in ref_core.modules]
        check("the core unwinds with its executable from debuginfod",
              bool(exe_module) and exe_module[0].fetched and
              sum(len(t.frames) for t in ref_core.threads) > len(ref_core.threads),
              "%d threads, modules %s" % (len(ref_core.threads), modules))
        reference = ref_core.SerializeToString(deterministic=True)
        with open(args.samples, "rb") as f:
            samples = list(pb.SnapshotBatch.FromString(f.read()).samples)
        snap = single.stream_stream(
            "/unwindd.v1.Unwinder/UnwindSnapshots",
            request_serializer=pb.SnapshotRequest.SerializeToString,
            response_deserializer=pb.SnapshotResponse.FromString)
        ref_samples = [frames_of(pb, r) for r in snap(iter(samples), timeout=60)]
        check("the samples unwind on one server",
              len(ref_samples) == len(samples) and
              all(s[0] != "error" for s in ref_samples),
              "%d samples" % len(samples))
        single.close()

        # nginx refuses a certificate its CA did not sign.
        try:
            with nginx_channel(stranger) as c:
                grpc.channel_ready_future(c).result(timeout=5)
                c.stream_unary("/unwindd.v1.Unwinder/UnwindCore",
                               request_serializer=pb.UnwindCoreRequest.SerializeToString,
                               response_deserializer=pb.UnwindResponse.FromString)(
                                   iter([first, pb.UnwindCoreRequest(chunk=core)]),
                                   timeout=5)
            refused = False
        except (grpc.RpcError, grpc.FutureTimeoutError):
            refused = True
        check("nginx refuses a client certificate from another CA", refused)

        if args.soak_seconds > 0:
            soak(args, pb, replicas, rr_channel, nginx_channel, core, reference, samples,
                 ref_samples, check)
            return finish(results, procs, ngdir)

        # ---- throughput: 1 replica, then 3 ----
        def throughput(target_channel, seconds):
            stats = Stats()
            load = Load(pb, stats)
            channels = [target_channel() for _ in range(args.core_clients)]
            for c in channels:
                load.core_client(c, "core", core, None, reference)
            cpu0 = sum(os.times()[2:4])
            t0 = time.monotonic()
            load.start()
            time.sleep(seconds)
            load.stop()
            elapsed = time.monotonic() - t0
            for c in channels:
                c.close()
            return stats, elapsed

        one = lambda: grpc.insecure_channel("%s:%d" % (HOSTS[0], port), options=CHANNEL_OPTIONS)
        s1, e1 = throughput(one, args.phase_seconds)
        s3, e3 = throughput(rr_channel, args.phase_seconds)
        ncpu = os.cpu_count()
        log("throughput, %d core clients, streamed %d-byte core: 1 replica %.0f calls/s "
            "(%.0f per CPU), 3 replicas %.0f calls/s (%.0f per CPU) on %d CPUs" %
            (args.core_clients, len(core), s1.ok / e1, s1.ok / e1 / ncpu, s3.ok / e3,
             s3.ok / e3 / ncpu, ncpu))
        log("latency 1 replica: p50 %.1f ms p99 %.1f ms; 3 replicas: p50 %.1f ms "
            "p99 %.1f ms" % (1e3 * percentile(s1.latency, 50), 1e3 * percentile(s1.latency, 99),
                             1e3 * percentile(s3.latency, 50), 1e3 * percentile(s3.latency, 99)))
        check("throughput phases without a failure or a wrong answer",
              not s1.failed and not s3.failed and not s1.mismatched and not s3.mismatched
              and s1.ok > 0 and s3.ok > 0,
              "failed %s mismatched %d" % ((s1.failed + s3.failed)[:3],
                                           len(s1.mismatched) + len(s3.mismatched)))

        # ---- mixed load with a graceful stop, a restart and a SIGKILL ----
        stats = Stats()
        load = Load(pb, stats)
        channels = []
        for i in range(args.core_clients):
            c = rr_channel()
            channels.append(c)
            load.core_client(c, "core-rr", core, None, reference)
        c = nginx_channel()
        channels.append(c)
        load.core_client(c, "core-nginx", core, None, reference)
        for maker, kind in ((rr_channel, "snap-rr"), (nginx_channel, "snap-nginx")):
            c = maker()
            channels.append(c)
            load.snapshot_client(c, kind, samples, ref_samples)
        base = [len(r.requests()) for r in replicas]
        load.start()
        time.sleep(args.phase_seconds / 2)

        victim = replicas[1]
        before = len(victim.requests())
        t_term = time.monotonic()
        rc = victim.stop(signal.SIGTERM)
        drain = time.monotonic() - t_term
        check("SIGTERM: replica 2 drains and exits 0", rc == 0,
              "exit %s after %.2f s" % (rc, drain))
        term_failed = [f for f in stats.failed]
        time.sleep(1)
        t_restart = time.monotonic()
        victim.start()
        served_before = len(victim.requests())
        wait_for(lambda: len(victim.requests()) > served_before + 2,
                 60, "the restarted replica to get calls")
        rebalance = time.monotonic() - t_restart
        log("replica 2: drained in %.2f s; after its restart it had calls again in "
            "%.2f s (--max-connection-age=%d)" % (drain, rebalance, args.connection_age))
        time.sleep(args.phase_seconds / 2)
        with stats.lock:
            graceful_failed = list(stats.failed)
        check("no call lost across the graceful stop and restart",
              not graceful_failed, "%d failed: %s" % (len(graceful_failed), graceful_failed[:3]))

        killed = replicas[2]
        in_flight = len(load.threads)  # one call or stream each at most
        t_kill = time.monotonic()
        killed.stop(signal.SIGKILL)
        time.sleep(args.phase_seconds / 2)
        load.stop()
        for c in channels:
            c.close()
        after_kill = [f for f in stats.failed if f[0] >= t_kill]
        check("after SIGKILL: failed calls at most those in flight",
              len(after_kill) <= in_flight,
              "%d failed (in flight at most %d): %s" % (len(after_kill), in_flight,
                                                        after_kill[:3]))
        check("every answer equal to the single server's", not stats.mismatched,
              "%d differ (%s): %s" % (len(stats.mismatched), sorted(set(stats.mismatched)),
                                      stats.differences))
        log("mixed load: %d core calls, %d samples, %d streams reopened after "
            "UNAVAILABLE, %d after nginx reset them, %d failed; p50 %.1f ms p99 %.1f ms" %
            (stats.ok, stats.samples, stats.reopened, stats.reset_by_proxy, len(stats.failed),
             1e3 * percentile(stats.latency, 50), 1e3 * percentile(stats.latency, 99)))
        shares = [len(r.requests()) - b for r, b in zip(replicas, base)]
        check("every replica served a share of the mixed load", all(n > 0 for n in shares),
              "requests per replica %s (streams count once)" % shares)
        with open(os.path.join(ngdir, "logs/access.log")) as f:
            through_nginx = sum(1 for _ in f)
        check("calls went through nginx", through_nginx > 0, "%d" % through_nginx)
    except Exception as e:  # a setup step that failed: one failure, said why
        check("setup", False, "%s: %s" % (type(e).__name__, e))
    return finish(results, procs, ngdir)


def finish(results, procs, ngdir):
    for p in procs:
        if p.poll() is None:
            p.send_signal(signal.SIGTERM)
    for p in procs:
        try:
            p.wait(timeout=15)
        except subprocess.TimeoutExpired:
            p.kill()
    passed = sum(1 for r in results if r[1])
    failed = len(results) - passed
    # What nginx said of its replicas (an upstream that reset or closed a
    # stream is why a caller sees INTERNAL): the test's workdir is gone
    # after it.
    error_log = ngdir and os.path.join(ngdir, "logs/error.log")
    if failed and error_log and os.path.exists(error_log):
        with open(error_log, errors="replace") as f:
            lines = f.read().splitlines()
        log("nginx error.log, %d lines, the last 20:" % len(lines))
        for line in lines[-20:]:
            log("  " + line)
    print("fleet cluster: %d passed, %d failed" % (passed, failed), flush=True)
    return 0 if failed == 0 and passed > 0 else 1


def rss_kib(pid, field="VmRSS"):
    """A /proc/PID/status figure in KiB: VmRSS, or its parts RssAnon (the
    heap and stacks) and RssFile (mapped files: the module cache's images,
    pages the kernel may drop and read again)."""
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return 0


def soak(args, pb, replicas, rr_channel, nginx_channel, core, reference, samples,
         ref_samples, check):
    """Mixed load for --soak-seconds with every replica up; RSS every 10 s."""
    stats = Stats()
    load = Load(pb, stats)
    channels = []
    for i in range(args.core_clients):
        c = rr_channel()
        channels.append(c)
        load.core_client(c, "core-rr", core, None, reference)
    c = nginx_channel()
    channels.append(c)
    load.core_client(c, "core-nginx", core, None, reference)
    for maker, kind in ((rr_channel, "snap-rr"), (nginx_channel, "snap-nginx")):
        for _ in range(2):
            c = maker()
            channels.append(c)
            load.snapshot_client(c, kind, samples, ref_samples)
    rss = {r.index: [] for r in replicas}
    t0 = time.monotonic()
    load.start()
    while time.monotonic() - t0 < args.soak_seconds:
        time.sleep(10)
        line = []
        for r in replicas:
            k = rss_kib(r.proc.pid)
            rss[r.index].append(k)
            line.append("%d MiB (anon %d, file %d)" % (
                k // 1024, rss_kib(r.proc.pid, "RssAnon") // 1024,
                rss_kib(r.proc.pid, "RssFile") // 1024))
        with stats.lock:
            done = (stats.ok, stats.samples, len(stats.failed))
        log("soak %4.0f s: RSS %s; %d core calls, %d samples, %d failed" %
            ((time.monotonic() - t0,) + (", ".join(line),) + done))
    load.stop()
    for c in channels:
        c.close()
    elapsed = time.monotonic() - t0
    check("soak: no call failed", not stats.failed,
          "%d failed: %s" % (len(stats.failed), stats.failed[:3]))
    check("soak: every answer equal to the single server's", not stats.mismatched,
          "%d differ (%s): %s" % (len(stats.mismatched), sorted(set(stats.mismatched)),
                                  stats.differences))
    for i, series in rss.items():
        if len(series) < 4:
            continue
        # Flat: over the second half of the soak (the first fills the
        # caches), RSS grows by at most 10% (or 16 MiB).
        half = series[len(series) // 2]
        top = max(series[len(series) // 2:])
        check("soak: replica %d's RSS stays flat over the second half" % (i + 1),
              top - half <= max(half // 10, 16 << 10),
              "%d MiB at 1 min, %d MiB at half time, %d MiB at the end, %d MiB at most" %
              (series[min(5, len(series) - 1)] // 1024, half // 1024, series[-1] // 1024,
               top // 1024))
    log("soak: %.0f s, %d core calls (%.1f/s), %d samples (%.0f/s), %d streams reopened, "
        "%d after nginx reset them, p50 %.1f ms p99 %.1f ms" %
        (elapsed, stats.ok, stats.ok / elapsed, stats.samples, stats.samples / elapsed,
         stats.reopened, stats.reset_by_proxy, 1e3 * percentile(stats.latency, 50),
         1e3 * percentile(stats.latency, 99)))


if __name__ == "__main__":
    sys.exit(main())

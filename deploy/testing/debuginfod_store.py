"""Debian's debuginfod serving copies of some ELF files by build-id: the
by-build-id store that replicas share (docs/fleet.md), for the deployment
tests (fleet_cluster.py, ../image/runc_smoke.py).

  url = debuginfod_store.start(["/path/exe", ...], workdir, procs)

Starts it on a free port of 127.0.0.1 (appended to `procs`, for the caller
to stop) and returns its URL once it serves every file; raises
RuntimeError if a file has no build-id or it does not serve them within
`timeout` seconds.
"""
import os
import re
import shutil
import socket
import subprocess
import time
import urllib.request


def build_id(path):
    out = subprocess.run(["readelf", "-n", path], capture_output=True, text=True,
                         check=True).stdout
    m = re.search(r"Build ID: ([0-9a-f]+)", out)
    if not m:
        raise RuntimeError("no build-id in " + path)
    return m.group(1)


def _free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def _serves(url, bid):
    try:
        with urllib.request.urlopen("%s/buildid/%s/executable" % (url, bid), timeout=2) as r:
            return r.status == 200
    except Exception:
        return False


def start(files, work, procs, timeout=120):
    store = os.path.join(work, "store")
    os.makedirs(store, exist_ok=True)
    ids = []
    for i, path in enumerate(files):
        # Numbered: two files of one name (two libc.so.6) stay apart.
        shutil.copy(path, os.path.join(store, "%d-%s" % (i, os.path.basename(path))))
        ids.append(build_id(path))
    port = _free_port()
    d = subprocess.Popen(["debuginfod", "-p", str(port), "-F", store,
                          "-d", os.path.join(work, "debuginfod.sqlite"), "-t", "1"],
                         stdout=subprocess.DEVNULL,
                         stderr=open(os.path.join(work, "debuginfod.log"), "wb"))
    procs.append(d)
    url = "http://127.0.0.1:%d" % port
    deadline = time.monotonic() + timeout
    while not all(_serves(url, b) for b in ids):
        if time.monotonic() > deadline:
            raise RuntimeError("debuginfod at %s did not serve %s within %d s" %
                               (url, ", ".join(ids), timeout))
        time.sleep(0.2)
    return url

#!/usr/bin/env python3
"""The fleet view at scale: `cpuzombie fleet` against the real control plane (kube-apiserver
1.37 on etcd, tests/tools/kube) seeded with 1,000 and 10,000 real Node objects
(tests/e2e/fleet_helpers.py: a few hundred True, clustered in one zone and one OS image), pages
of 500, next to what the real kubectl pays to fetch the same pages (`kubectl get nodes -o json
--chunk-size 500`, no analysis at all) in the same run, both as the same viewer ServiceAccount.

Measured per full run, straight against the API server: wall time and the client's CPU (user +
kernel, wait4 rusage), median of BENCH_FLEET_RUNS runs with min-max, and peak RSS (GNU time).
Then one more run of each through the fault proxy (tests/tools/kube/faultproxy.py), which
counts the requests and the bytes of the answers as they went over the wire (the Content-Length
it sent: gzip where the client asked for it). Goal at 10,000 nodes: under 1 s of client CPU and
64 MiB.

Run alone: /usr/bin/python3 tests/bench/bench_fleet.py build/cpuzombie
"""
import collections
import os
import shutil
import statistics
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "e2e"))
import benchlib as bl  # noqa: E402
import fleet_helpers as fh  # noqa: E402
import kube_helpers as kh  # noqa: E402

CZ = os.path.abspath(sys.argv[1])
SIZES = [int(x) for x in os.environ.get("BENCH_FLEET_SIZES", "1000,10000").split(",") if x]
RUNS = int(os.environ.get("BENCH_FLEET_RUNS", "5"))
CHUNK = 500


def seed(n):
    return {"count": n, "zombies": max(n * 3 // 100, 1), "cpu": n // 250, "ena": n // 800,
            "held": 2, "bare": 0.02, "seed": 11, "tag": "bench",
            "leakers": ["ecs.service", "ecs.service", "nvidia-persistenced.service"]}


# The bytes the proxy sent per client (User-Agent), from the Content-Length of each answer, and
# the form they came in (Content-Type, Content-Encoding).
SENT = collections.Counter()
FORM = collections.defaultdict(set)
SENT_LOCK = threading.Lock()
_send_header = kh.faultproxy.Forwarder.send_header


def _counting_send_header(self, key, value):
    if self.path.startswith("/api/v1/nodes"):
        who = client_of(self.headers.get("User-Agent", ""))
        with SENT_LOCK:
            if key.lower() == "content-length":
                SENT[who] += int(value)
            elif key.lower() in ("content-type", "content-encoding"):
                FORM[who].add(value.split(";")[0])
    _send_header(self, key, value)


kh.faultproxy.Forwarder.send_header = _counting_send_header


def client_of(agent):
    return "cpuzombie" if agent.startswith("cpuzombie/") else "kubectl"


def timed(argv, env):
    """(wall s, cpu ms, exit code) of one run."""
    t0 = time.monotonic()
    ms, rc = bl.run_once(argv, env)
    return time.monotonic() - t0, ms, rc


def runs(argv, env):
    walls, cpus, codes = [], [], set()
    timed(argv, env)  # warm
    for _ in range(RUNS):
        w, ms, rc = timed(argv, env)
        walls.append(w)
        cpus.append(ms)
        codes.add(rc)
    return {"wall": statistics.median(walls), "wall_min": min(walls), "wall_max": max(walls),
            "median": statistics.median(cpus), "min": min(cpus), "max": max(cpus),
            "rss": bl.peak_rss_kib(argv, env), "codes": sorted(codes)}


def wire(proxy, argv, env):
    """(requests to /api/v1/nodes, bytes sent) of one run through the proxy."""
    proxy.reset_log()
    SENT.clear()
    FORM.clear()
    bl.run_once(argv, env)
    log = [e for e in proxy.log() if e["path"] == "/api/v1/nodes"]
    assert log and all(e["status"] == 200 for e in log), [e["status"] for e in log]
    who = {client_of(e["agent"]) for e in log}
    assert len(who) == 1, who
    who = who.pop()
    return len(log), SENT[who], " + ".join(sorted(FORM[who]))


def measure(cp, d, n, kubectl):
    fl = fh.Fleet(cp)
    t0 = time.monotonic()
    fl.create(fh.seed_nodes(seed(n)))
    seeded_s = time.monotonic() - t0
    proxy = kh.faultproxy.Proxy(cp.url, cp.ca, cp.proxy_cert, cp.proxy_key).start()
    try:
        direct = fh.viewer_kubeconfig(cp, os.path.join(d, "kc-direct"), cp.url)
        proxied = fh.viewer_kubeconfig(cp, os.path.join(d, "kc-proxy"), proxy.url)
        out = {}
        clients = [("cpuzombie fleet", [CZ, "fleet", "--chunk-size", str(CHUNK)])]
        if kubectl:
            clients.append(("kubectl get nodes -o json",
                            [kubectl, "get", "nodes", "-o", "json", "--chunk-size", str(CHUNK)]))
        for name, argv in clients:
            env = dict(os.environ, HOME=d, KUBECONFIG=direct)
            r = runs(argv, env)
            want = [1] if argv[0] == CZ else [0]      # fleet: some node True
            assert r["codes"] == want, (name, r)
            r["requests"], r["bytes"], r["form"] = wire(proxy, argv, dict(env, KUBECONFIG=proxied))
            out[name] = r
        n_listed = len(fl.listed())
    finally:
        proxy.stop()
        fl.delete()
    return out, seeded_s, n_listed


def main():
    d = tempfile.mkdtemp(prefix="cz-bench-fleet-")
    kubectl = kh.kubectl_path()
    cp = kh.cluster.ControlPlane(os.path.join(d, "cp"))
    cp.start()
    rows, notes = [], []
    try:
        for n in SIZES:
            res, seeded_s, listed = measure(cp, d, n, kubectl)
            notes.append(f"{n:,} nodes seeded in {seeded_s:.0f} s (8 threads); "
                         f"{listed:,} listed")
            ours = res["cpuzombie fleet"]
            ref = res.get("kubectl get nodes -o json")
            for name, r in res.items():
                rows.append((f"{n:,}", name,
                             f"{r['wall']:.2f} ({r['wall_min']:.2f}-{r['wall_max']:.2f})",
                             bl.ms(r), f"{r['rss'] / 1024:.1f} MiB", f"{r['bytes']:,} ({r['form']})",
                             r["requests"],
                             "1.00x" if r is ours or not ref else
                             bl.ratio(r["wall"], ours["wall"]) + " / " +
                             bl.ratio(r["median"], ours["median"])))
            bl.save("fleet_%d" % n, {"cpu_ms": ours["median"], "rss_kib": ours["rss"],
                                     "wall_s": ours["wall"], "bytes": ours["bytes"],
                                     "requests": ours["requests"]})
    finally:
        cp.stop()
        shutil.rmtree(d, ignore_errors=True)
    bl.table(["nodes (pages of 500)", "client", "wall s", "CPU ms", "peak RSS",
              "bytes received (form)", "requests", "wall / CPU vs cpuzombie"], rows)
    print()
    for line in notes:
        print(line)
    big = next(r for r in reversed(rows) if r[1] == "cpuzombie fleet")
    print(f"At {big[0]} nodes: {big[3]} ms of client CPU (goal < 1000) and {big[4]} peak RSS "
          f"(goal < 64 MiB); {RUNS} runs, median (min-max).")
    print("Timed straight against kube-apiserver (its own CPU is not counted); requests and "
          "bytes from one more run of each through the fault proxy. kubectl's Go transport "
          "asks for gzip, our libcurl client does not.")


if __name__ == "__main__":
    main()

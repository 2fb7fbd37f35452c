#!/usr/bin/env python3
"""The remediator's steady-state cost to the API server, three ways in one run on the real
control plane (kube-apiserver on etcd, tests/tools/kube), each as the chart's remediator
ServiceAccount through the fault proxy (which counts the requests and the bytes it relays):

  (a) polling: `cpuzombie remediator` with CZ_REMEDIATOR_POLL=1, a paged LIST (500 a page) of
      every node and of the budget Leases each agent.check_interval (3 s);
  (b) watching: `cpuzombie remediator` as it runs by default, its caches filled by one LIST and
      kept by WATCHes (remediator/informer.c), deciding every 3 s from them;
  (c) client-go: a SharedInformerFactory's informers of the same nodes and Leases
      (tests/bench/informer, client-go pinned to the control plane's staging version).

The nodes are the fleet view's (tests/e2e/fleet_helpers.py: real 5.8 KB Node objects with our
conditions, all healthy here, so nothing is remediated; not kwok-managed: nothing heartbeats
them, the steady state is quiet). Per client, after it has filled its cache (its first cycle, or
"synced") and BENCH_WATCH_SETTLE seconds: a window of BENCH_WATCH_SECONDS (45) in which we count
its LISTs, WATCHes and other requests, the bytes the proxy relayed to it, and the CPU seconds
kube-apiserver spent (utime + stime of its /proc/PID/stat), with the same window with no client
at all (the server's own idle work) measured first and subtracted. The remediators also renew
their leader Lease (a GET and a PUT every 10 s) that the bare informer does not.

Run alone: /usr/bin/python3 tests/bench/bench_watch.py build/cpuzombie
"""
import os
import re
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "e2e"))
import benchkube  # noqa: E402
import benchlib as bl  # noqa: E402
import fleet_helpers as fh  # noqa: E402
import kube_helpers as kh  # noqa: E402
import proc_helpers  # noqa: E402
import remediator_helpers as rh  # noqa: E402

CZ = os.path.abspath(sys.argv[1])
SIZES = [int(x) for x in os.environ.get("BENCH_WATCH_SIZES", "1000,5000,10000").split(",") if x]
WINDOW = float(os.environ.get("BENCH_WATCH_SECONDS", "45"))
SETTLE = float(os.environ.get("BENCH_WATCH_SETTLE", "5"))
TICK = os.sysconf("SC_CLK_TCK")
NODES = "/api/v1/nodes"


def cpu_s(pid):
    """utime + stime of @pid in seconds, from /proc/PID/stat (fields 14 and 15)."""
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


def config(d, kc):
    p = os.path.join(d, "rem.yaml")
    with open(p, "w") as f:
        f.write("kubernetes:\n  kubeconfig: %s\n  timeout: 30s\n" % kc)
        f.write("agent:\n  check_interval: 3s\n")
        f.write("remediation:\n  mode: cordon\n  max_unavailable: \"2\"\n"
                "  lease_namespace: %s\n" % kh.LEASE_NS)
    return p


def kind(e):
    if e["method"] == "GET" and ("watch=1" in e["query"] or "watch=true" in e["query"]):
        return "watch"
    if e["method"] == "GET" and (e["path"] == NODES or e["path"].endswith("/leases")):
        return "list"
    return "other"


def window(cp, kube, p, agent):
    """Counts over one window of client @p (None: none): requests by kind, bytes, server CPU."""
    before = {e["seq"]: e.get("bytes", 0) for e in kube.proxy.log()}
    c0, t0 = cpu_s(cp.apiserver.pid), time.monotonic()
    cc0 = cpu_s(p.pid) if p else 0.0
    time.sleep(WINDOW)
    if p:
        p.check()
    c1, t1 = cpu_s(cp.apiserver.pid), time.monotonic()
    cc1 = cpu_s(p.pid) if p else 0.0
    out = {"list": 0, "watch": 0, "other": 0, "bytes": 0, "cpu": c1 - c0, "secs": t1 - t0,
           "client_cpu": cc1 - cc0}
    for e in kube.proxy.log():
        if agent and not e["agent"].startswith(agent):
            continue
        if e["seq"] not in before:
            out[kind(e)] += 1
        out["bytes"] += e.get("bytes", 0) - before.get(e["seq"], 0)
    return out


def wait_line(p, pattern, seconds=600):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        p.check()
        if re.search(pattern, open(p.log).read()):
            return
        time.sleep(0.5)
    raise AssertionError("%s: no line /%s/ in %d s:\n%s" % (p.name, pattern, seconds, p.tail()))


def clients(d, kc, informer):
    env = dict(os.environ, POD_NAME="rem-bench")
    cfg = config(d, kc)
    summary = r"rem-bench \(leader\): \d+ nodes"
    yield ("(a) polling remediator", "cpuzombie/",
           [CZ, "--config", cfg, "remediator"], dict(env, CZ_REMEDIATOR_POLL="1"), summary)
    yield ("(b) watching remediator", "cpuzombie/",
           [CZ, "--config", cfg, "remediator"], env, summary)
    yield ("(c) client-go informer", "client-go-informer",
           [informer, "-kubeconfig", kc, "-namespace", kh.LEASE_NS], env, r"^synced \d+ nodes")


def main():
    informer = subprocess.run([os.path.join(HERE, "informer", "build.sh")], check=True,
                              capture_output=True, text=True).stdout.strip()
    d = tempfile.mkdtemp(prefix="cz-bench-watch-")
    rows, notes = [], []
    with benchkube.control_plane(os.path.join(d, "k")) as (cp, kube):
        fl = fh.Fleet(cp)
        made = 0
        kc = rh.remediator_kubeconfig(kube, os.path.join(d, "kc-rem"), server=kube.url)
        try:
            for n in SIZES:
                t0 = time.monotonic()
                objs = fh.seed_nodes({"count": n, "zombies": 0, "seed": 11, "tag": "bench"})
                fl.create(objs[made:])
                made = n
                notes.append("%s nodes seeded in %.0f s" % (f"{n:,}", time.monotonic() - t0))
                idle = window(cp, kube, None, None)
                res = {}
                for name, agent, argv, env, ready in clients(d, kc, informer):
                    p = proc_helpers.Proc(name.split()[1], argv, d, env=env)
                    try:
                        t1 = time.monotonic()
                        wait_line(p, ready)
                        synced = time.monotonic() - t1
                        time.sleep(SETTLE)
                        res[name] = dict(window(cp, kube, p, agent), synced=synced)
                    finally:
                        p.stop(timeout=30)
                        rh.drop_leader(kube)
                ref = res["(c) client-go informer"]
                for name, r in res.items():
                    net = max(r["cpu"] - idle["cpu"], 0.0)
                    ref_net = max(ref["cpu"] - idle["cpu"], 0.0)
                    rows.append((f"{n:,}", name, r["list"], r["watch"], r["other"],
                                 f"{r['bytes']:,}", f"{r['cpu']:.2f}", f"{net:.2f}",
                                 bl.ratio(net, ref_net) if ref_net >= 0.05 else
                                 "(informer < 0.05 s)", f"{r['client_cpu']:.2f}",
                                 f"{r['synced']:.1f}"))
                    bl.save("watch_%d_%s" % (n, name[1]), r)
                notes.append("%s nodes: kube-apiserver idle (no client) %.2f CPU s in the window"
                             % (f"{n:,}", idle["cpu"]))
        finally:
            fl.delete()
    bl.table(["nodes", "client", "LISTs", "WATCHes", "other requests", "bytes received",
              "apiserver CPU s", "minus idle", "vs client-go", "client CPU s",
              "first cycle / synced after s"], rows)
    print()
    print("Each window %.0f s of steady state (after the first cycle or sync and %.0f s more); "
          "requests and bytes as the fault proxy relayed them (gzip where asked)."
          % (WINDOW, SETTLE))
    for line in notes:
        print(line)


if __name__ == "__main__":
    main()

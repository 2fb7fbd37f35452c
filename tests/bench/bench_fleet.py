#!/usr/bin/env python3
"""The fleet view at scale: `cpuzombie fleet` against the API server emulator (TLS, 127.0.0.1)
seeded with 2,500 and 10,000 realistic nodes (a few hundred True, clustered in one zone and one
OS image), pages of 500. Measured per full run: the client's CPU (user + kernel, wait4 rusage,
median of BENCH_FLEET_RUNS runs with min-max) and peak RSS (GNU time), next to what the real
kubectl pays to fetch the same pages (`kubectl get nodes -o json --chunk-size 500`, no analysis
at all) in the same run. Goal at 10,000 nodes: under 1 s of client CPU and 64 MiB.

Run alone: /usr/bin/python3 tests/bench/bench_fleet.py build/cpuzombie
"""
import json
import os
import ssl
import statistics
import sys
import tempfile
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "e2e"))
import benchlib as bl  # noqa: E402
import kube_helpers as kh  # noqa: E402

CZ = os.path.abspath(sys.argv[1])
SIZES = [int(x) for x in os.environ.get("BENCH_FLEET_SIZES", "2500,10000").split(",") if x]
RUNS = int(os.environ.get("BENCH_FLEET_RUNS", "5"))
CHUNK = 500


def seed(n):
    return {"count": n, "zombies": max(n * 3 // 100, 1), "cpu": n // 250, "ena": n // 800,
            "held": 2, "bare": 0.02, "seed": 11,
            "leakers": ["ecs.service", "ecs.service", "nvidia-persistenced.service"]}


def runs(argv, env):
    cpu, codes = [], set()
    bl.run_once(argv, env)  # warm
    for _ in range(RUNS):
        ms, rc = bl.run_once(argv, env)
        cpu.append(ms)
        codes.add(rc)
    return {"median": statistics.median(cpu), "min": min(cpu), "max": max(cpu),
            "rss": bl.peak_rss_kib(argv, env), "codes": sorted(codes)}


def page_bytes(emu):
    req = urllib.request.Request(emu.url + "/api/v1/nodes?limit=%d" % CHUNK)
    req.add_header("Authorization", "Bearer " + kh.TOKEN)
    with urllib.request.urlopen(req, context=emu.ssl, timeout=60) as r:
        body = r.read()
    return len(body) / len(json.loads(body)["items"])


def main():
    d = tempfile.mkdtemp(prefix="cz-bench-fleet-")
    certs = kh.Certs(os.path.join(d, "certs"))
    kubectl = kh.kubectl_path()
    rows = []
    for n in SIZES:
        emu = kh.Emulator(certs, d).start()
        try:
            emu.side("POST", "seed-nodes", seed(n))
            kc = emu.kubeconfig(os.path.join(d, "kubeconfig"))
            env = dict(os.environ, HOME=d, KUBECONFIG=kc)
            per_node = page_bytes(emu)
            ours = runs([CZ, "fleet", "--chunk-size", str(CHUNK)], env)
            assert ours["codes"] == [1], ours       # some node True: the run went through
            ref = runs([kubectl, "get", "nodes", "-o", "json", "--chunk-size", str(CHUNK)],
                       env) if kubectl else None
        finally:
            emu.stop()
        rows.append((n, per_node, ours, ref))
        bl.save("fleet_%d" % n, {"cpu_ms": ours["median"], "rss_kib": ours["rss"],
                                 "node_bytes": per_node})
    bl.table(["nodes (pages of 500)", "bytes/node", "cpuzombie fleet CPU ms", "peak RSS",
              "kubectl get -o json CPU ms", "kubectl RSS", "ours / kubectl CPU"],
             [(f"{n:,}", f"{b:,.0f}", bl.ms(o), f"{o['rss'] / 1024:.1f} MiB",
               bl.ms(r) if r else "-", f"{r['rss'] / 1024:.1f} MiB" if r else "-",
               bl.ratio(o["median"], r["median"]) if r else "-") for n, b, o, r in rows])
    print()
    big = rows[-1]
    print(f"At {big[0]:,} nodes: {big[2]['median']:.0f} ms of client CPU (goal < 1000) and "
          f"{big[2]['rss'] / 1024:.1f} MiB peak RSS (goal < 64); {RUNS} runs, median (min-max).")
    print("The emulator's own CPU is not counted (it is the API server's).")


if __name__ == "__main__":
    main()

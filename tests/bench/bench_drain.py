#!/usr/bin/env python3
"""cpuzombie's drain beside the real `kubectl drain`, on the real control plane (etcd,
kube-apiserver, kube-controller-manager, kwok; tests/tools/kube/cluster.py started here) with a
fault proxy in front (tests/tools/kube/faultproxy.py) that counts every request each client
makes. Per repetition, two fresh kwok twin nodes with N ReplicaSet pods and a DaemonSet pod each:
one drained by cpuzombie (`agent --once`, remediation.mode drain, as the chart's ServiceAccount:
lists Leases, takes a slot, cordons, evicts, waits for the pods to go, annotates, posts Events),
the other by `kubectl drain --ignore-daemonsets` as a ServiceAccount with kubectl drain's rights
(cordons, evicts, waits). Measured: the process's wall time, the API span (first request to the
last, the drain proper: cpuzombie's process also samples /proc/stat for 1 s first and runs its
checks), and the requests made. Medians of BENCH_DRAIN_REPS runs (min-max), ratios within the
run.

Run alone: /usr/bin/python3 tests/bench/bench_drain.py build/cpuzombie
"""
import collections
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
os.environ["CZ_BIN"] = os.path.abspath(sys.argv[1]) if len(sys.argv) > 1 else \
    os.environ.get("CZ_BIN", os.path.join(HERE, "..", "..", "build", "cpuzombie"))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "e2e"))
import benchkube as bk  # noqa: E402
import benchlib as bl  # noqa: E402
import drain_helpers as dh  # noqa: E402
import kube_helpers as kh  # noqa: E402

SIZES = [int(x) for x in os.environ.get("BENCH_DRAIN_PODS", "10,50").split(",") if x]
REPS = int(os.environ.get("BENCH_DRAIN_REPS", "3"))


def run(args, env=None):
    t0 = time.monotonic()
    r = subprocess.run(args, capture_output=True, text=True, timeout=300, env=env)
    return r, time.monotonic() - t0


def kind(e):
    p = e["path"]
    if p.endswith("/eviction"):
        return "evictions"
    if e["method"] == "GET" and "/pods" in p:
        return "pod reads" if "/pods/" in p else "pod lists"
    if "/nodes" in p:
        return "node reads" if e["method"] == "GET" else "node writes"
    if "/leases" in p:
        return "leases"
    if p.endswith("/events"):
        return "events"
    return "other (discovery, DaemonSet)"


def measure(entries, user):
    mine = [e for e in entries if e["user"] == user]
    span = max(e["t"] for e in mine) - min(e["t"] for e in mine) if mine else 0.0
    return span, len(mine), collections.Counter(kind(e) for e in mine)


def one(kube, tmp, kc, n, rep):
    a, b = "bda-%d-%d" % (n, rep), "bdb-%d-%d" % (n, rep)
    kube.add(kh.node_obj(a, conditions=[dh.READY, dh.SICK]),
             kh.node_obj(b, conditions=[dh.READY, dh.SICK]),
             *[kh.pod_obj("web-%s-%d" % (node, i), node, owner=("ReplicaSet", "web"),
                          labels={"app": "web"}) for node in (a, b) for i in range(n)],
             *[kh.pod_obj("ds-" + node, node, owner=("DaemonSet", "ds"), labels={"app": "ds"})
               for node in (a, b)])
    for node in (a, b):
        kube.agent_pod(node)
    out = {}
    args, user = dh.remediate_args(kube, tmp, a)
    mark = kube.proxy.seq
    r, wall = run(args)
    assert r.returncode == 0 and "drained by cpuzombie" in r.stdout, r.stdout + r.stderr
    out["cpuzombie"] = (wall, *measure(kube.log(mark), user))
    mark = kube.proxy.seq
    r, wall = run(dh.kubectl_drain_args(kc, b, "--ignore-daemonsets", "--timeout=120s"),
                  env=dict(os.environ, HOME=tmp))
    assert r.returncode == 0 and "drained" in r.stdout, r.stdout + r.stderr
    out["kubectl"] = (wall, *measure(kube.log(mark), dh.KUBECTL_USER))
    for node in (a, b):
        left = [p["metadata"]["name"] for p in kube.pods(node)]
        assert left == ["ds-" + node], (node, left)
    for l in kube.leases():      # the slot is free for the next repetition
        kube.cp.raw("DELETE", "/apis/coordination.k8s.io/v1/namespaces/%s/leases/%s"
                    % (kh.LEASE_NS, l["metadata"]["name"]))
    return out


def med(xs, fmt):
    return "%s (%s-%s)" % (fmt % statistics.median(xs), fmt % min(xs), fmt % max(xs))


def main():
    tmp = tempfile.mkdtemp(prefix="cz-bench-drain-")
    with bk.control_plane(tmp) as (_, kube):
        kube.add(kh.rs_obj("web"), kh.ds_obj("ds"))
        kc = dh.kubectl_drain_user(kube, os.path.join(tmp, "kc-kubectl"))
        rows, kinds = [], {}
        for n in SIZES:
            res = [one(kube, tmp, kc, n, rep) for rep in range(REPS)]
            cz = [r["cpuzombie"] for r in res]
            ku = [r["kubectl"] for r in res]
            rows.append([n, med([x[0] for x in cz], "%.2f"), med([x[0] for x in ku], "%.2f"),
                         bl.ratio(statistics.median(x[0] for x in cz),
                                  statistics.median(x[0] for x in ku)),
                         med([x[1] for x in cz], "%.2f"), med([x[1] for x in ku], "%.2f"),
                         bl.ratio(statistics.median(x[1] for x in cz),
                                  statistics.median(x[1] for x in ku)),
                         med([x[2] for x in cz], "%d"), med([x[2] for x in ku], "%d"),
                         bl.ratio(statistics.median(x[2] for x in cz),
                                  statistics.median(x[2] for x in ku))])
            kinds[n] = (cz[-1][3], ku[-1][3])
        print(f"Real control plane (kube-apiserver, etcd, kwok nodes); {REPS} repetitions per "
              "size, fresh twin nodes each; wall in s; requests counted by the fault proxy.")
        print()
        bl.table(["pods/node", "cpuzombie wall", "kubectl wall", "ratio", "cpuzombie API span",
                  "kubectl API span", "ratio", "cpuzombie requests", "kubectl requests",
                  "ratio"], rows)
        print()
        big = max(SIZES)
        cz_k, ku_k = kinds[big]
        print(f"Requests by kind at {big} pods/node (last repetition):")
        print()
        bl.table(["kind", "cpuzombie", "kubectl drain"],
                 [[k, cz_k.get(k, 0), ku_k.get(k, 0)] for k in sorted(set(cz_k) | set(ku_k))])
        print()
        print("cpuzombie's wall includes its 1 s sampling window and checks before the drain; "
              "kubectl's, its start and API discovery. Both wait for the evicted pods to go "
              "(kwok ends them at once).")
        bl.save("drain", {str(r[0]): r[1:] for r in rows})
    return 0


if __name__ == "__main__":
    sys.exit(main())

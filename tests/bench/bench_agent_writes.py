#!/usr/bin/env python3
"""API cost per node: the agent's writes and reads of its node (and its Events) beside NPD's
exporter, counted in the real kube-apiserver's audit log over the same steady window, each on a
kwok node of its own, at the shipped settings, on this host's real /proc and /sys (its
dying-memcg count moves with the other work on the machine, as a busy node's does):

- agent: `cpuzombie agent` with agent.set_conditions, check_interval 30s, heartbeat 5m (as the
  chart's agent ServiceAccount, token bound to its pod on the node, through the fault proxy).
- NPD: the node-problem-detector the control plane builds (tests/tools/kube/versions.sh) with
  the shipped config/npd/*.json (every check through `cpuzombie check`, the cpu monitor every
  5s) and its default --k8s-exporter-heartbeat-period (5m), beside an agent that does not set
  conditions (the run dir `check cpu` reads). A second NPD with the cpu monitor at 30s runs in
  the same window: NPD's own CPU (its process and the checks it execs) at both intervals.
- kubelet: its documented node-status write every 5 minutes when nothing changed (12 per hour,
  nodeStatusReportFrequency), not measured here.

The first minute (each side's start: one read, the first write of a node without our
conditions) is counted apart; "per hour" scales the rest of the window.

Run alone: /usr/bin/python3 tests/bench/bench_agent_writes.py build/cpuzombie
  BENCH_WRITES_SECONDS (660: two heartbeats after the first minute)
"""
import copy
import os
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
os.environ["CZ_BIN"] = os.path.abspath(sys.argv[1]) if len(sys.argv) > 1 else \
    os.environ.get("CZ_BIN", os.path.join(HERE, "..", "..", "build", "cpuzombie"))
BIN = os.environ["CZ_BIN"]
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "e2e"))
import benchkube as bk  # noqa: E402
import benchlib as bl  # noqa: E402
import kube_helpers as kh  # noqa: E402
import npd_helpers as nh  # noqa: E402
from proc_helpers import stop  # noqa: E402

WINDOW = int(os.environ.get("BENCH_WRITES_SECONDS", "660"))
START = 60
CHECKS = ("cpuzombie-memcg", "cpuzombie-cpu", "cpuzombie-ena", "cpuzombie-ena-allowance")
TICK = os.sysconf("SC_CLK_TCK")


def agent_node(kube, tmp):
    node = "writes-agent"
    kube.add(kh.node_obj(node))
    kc = kube.kubeconfig(os.path.join(tmp, "kc-" + node), node=node)
    cfg = os.path.join(tmp, node + ".yaml")
    with open(cfg, "w") as f:
        f.write("kubernetes:\n  node_name: %s\n  kubeconfig: %s\n  timeout: 5s\n" % (node, kc))
        f.write("agent:\n  set_conditions: true\n  remediate: false\n  kmsg: \"\"\n"
                "  check_interval: 30s\n  heartbeat: 5m\nremediation:\n  mode: \"off\"\n")
    run_dir = os.path.join(tmp, "run-" + node)
    return node, bk.start_agent([BIN, "--config", cfg, "--run-dir", run_dir, "--state-dir",
                              os.path.join(tmp, "state-" + node), "agent"], run_dir)


def npd_node(kube, tmp, name, cpu_every=None):
    """NPD with the shipped configs (the cpu monitor every @cpu_every instead when given) and
    its default exporter heartbeat, and the agent whose run dir `check cpu` reads."""
    node = "writes-" + name
    kube.add(kh.node_obj(node))
    kc = kube.kubeconfig(os.path.join(tmp, "kc-" + node), node=node)
    cfgs = {}
    for c in CHECKS:
        cfg = nh.rewrite(copy.deepcopy(nh.shipped_config(c)), BIN, "/proc", "/sys")
        if c == "cpuzombie-cpu" and cpu_every:
            cfg["pluginConfig"]["invoke_interval"] = cpu_every
        cfgs[c] = cfg
    npd = nh.Npd(os.path.join(tmp, "npd-" + node), cfgs, node, kube.url, kc,
                 binary=nh.npd_binary(nh.CURRENT))
    # NPD's own default heartbeat (5m), not the tests' 5s
    npd.args = [a for a in npd.args if not a.startswith("--k8s-exporter-heartbeat-period")]
    run_dir = os.path.join(npd.run, "cpuzombie")
    agent = bk.start_agent([BIN, "--run-dir", run_dir, "--state-dir",
                         os.path.join(tmp, "state-" + node), "agent"], run_dir)
    npd.start()
    return node, npd, agent


def cpu_s(pid):
    """utime + stime + the reaped children's (the checks NPD exec'd), in seconds."""
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return sum(int(fields[i]) for i in (11, 12, 13, 14)) / TICK


def ts(e):
    s = e["requestReceivedTimestamp"]
    t = time.mktime(time.strptime(s[:19], "%Y-%m-%dT%H:%M:%S")) - time.timezone
    frac = s[19:].rstrip("Z")
    return t + (float(frac) if frac else 0.0)


def count(events, node, t0):
    """{what: (in the first minute, after it)} of @node's calls in the audit @events."""
    out = {k: [0, 0] for k in ("node GET", "node status PATCH", "Event create", "Event PATCH",
                               "other")}
    for e in events:
        ref = e.get("objectRef") or {}
        if ref.get("resource") == "nodes" and ref.get("name") == node:
            what = ("node GET" if e["verb"] == "get" and not ref.get("subresource") else
                    "node status PATCH" if e["verb"] == "patch" and
                    ref.get("subresource") == "status" else "other")
        elif ref.get("resource") == "events" and (ref.get("name") or "").startswith(node + "."):
            what = "Event create" if e["verb"] == "create" else "Event PATCH"
        else:
            continue
        out[what][0 if ts(e) < t0 + START else 1] += 1
    return out


def main():
    if os.geteuid() != 0:
        print("(skipped: needs root: NPD runs in a mount namespace of its own)")
        return 0
    why = nh.npd_missing_reason(nh.CURRENT)
    tmp = tempfile.mkdtemp(prefix="cz-bench-writes-")
    with bk.control_plane(tmp) as (cp, kube):
        mark = cp.audit_mark()
        t0 = time.time()
        an, ap = agent_node(kube, tmp)
        npds = [] if why else [npd_node(kube, tmp, "npd"), npd_node(kube, tmp, "npd30", "30s")]
        c0 = [cpu_s(n.proc.pid) for _, n, _ in npds]
        try:
            time.sleep(max(0, t0 + WINDOW - time.time()))
            c1 = [cpu_s(n.proc.pid) for _, n, _ in npds]
        finally:
            for _, n, a in npds:
                n.stop()
                stop(a)
            stop(ap)
        time.sleep(2)   # the audit log's last lines
        events = cp.audit(mark)[0]
    per_h = 3600.0 / (WINDOW - START)
    sides = [("agent (set_conditions, check_interval 30s, heartbeat 5m)", an)]
    if npds:
        sides.append(("NPD %s exporter (shipped configs: cpu every 5s; heartbeat 5m)"
                      % nh.CURRENT, npds[0][0]))
    rows = []
    got = {}
    for label, node in sides:
        c = count(events, node, t0)
        got[node] = c
        w = c["node status PATCH"]
        r = c["node GET"]
        ev = [c["Event create"][i] + c["Event PATCH"][i] for i in (0, 1)]
        rows.append([label, w[0], r[0], ev[0], w[1], r[1], ev[1], "%.1f" % (w[1] * per_h),
                     "%.1f" % (r[1] * per_h), c["other"][0] + c["other"][1]])
    rows.append(["kubelet (documented: node status every 5m when unchanged)", "-", "-", "-",
                 "-", "-", "-", "12.0", "-", "-"])
    print("Real control plane, kwok nodes, the kube-apiserver's audit log; a %d s window: the "
          "first %d s (start) and the rest (steady), scaled to an hour.%s"
          % (WINDOW, START, "" if not why else " NPD: " + why))
    print()
    bl.table(["who", "start writes", "start reads", "start Events", "steady writes",
              "steady reads", "steady Events", "writes/h", "reads/h", "other calls"], rows)
    if npds:
        print()
        cpu = [b - a for a, b in zip(c0, c1)]
        secs = WINDOW - 0.0
        bl.table(["NPD's own CPU (its process + the checks it execs)", "CPU s in window",
                  "CPU s/h"],
                 [["shipped configs, cpu monitor every 5s", "%.2f" % cpu[0],
                   "%.1f" % (cpu[0] * 3600 / secs)],
                  ["the same, cpu monitor every 30s", "%.2f" % cpu[1],
                   "%.1f" % (cpu[1] * 3600 / secs)],
                  ["5s / 30s", "%.2fx" % (cpu[0] / cpu[1] if cpu[1] else float("nan")), ""]])
    bl.save("agent_writes", {"window": WINDOW, "counts": got})
    return 0


if __name__ == "__main__":
    sys.exit(main())

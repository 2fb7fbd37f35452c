#!/usr/bin/env python3
"""The seed's mechanism on a real kubelet: kubelet's own CPU (cAdvisor's housekeeping, the
eviction manager's and the API's stats passes) and the per-core bursts the agent records, with
0, 10,000 and 50,000 real dying memory cgroups under the kubelet's kubepods cgroup.

A real control plane (tests/tools/kube/cluster.py) and a real node beside it (kubelet,
containerd, runc, kube-proxy: tests/tools/node/node.py), one pause pod running on it; the
cpuzombie agent (the binary given) samples this host's cores into a run dir of its own. Then,
for each size in turn (stacked: 10k, then 40k more), the dying memcgs are made where a node's
crash-looping pods leave theirs: in the v1 memory hierarchy, in a directory under the
kubelet's kubepods cgroup (<memory mount><cgroupRoot>/kubepods/cz-bench-dying-PID-TAG, a live
pod-like directory whose children were each charged a page of page cache and then removed:
tests/e2e/memcg_helpers.py's charger), which cAdvisor's housekeeping reads (memory.stat of
kubepods and of each container below it, whose hierarchical totals count the dying children)
and the root's memory.numa_stat sums over. After a settle time, a fixed window of
BENCH_KUBELET_SECONDS (60) is sampled every second, BENCH_KUBELET_REPS (2) windows per size:

- kubelet's CPU: utime+stime of /proc/<kubelet>/stat (USER_HZ), mean and the largest 1 s;
  its busiest thread in any 1 s (/proc/<kubelet>/task/*/schedstat, on-CPU ns); containerd's
  CPU the same way (with containerd, kubelet asks the CRI for the pods' stats);
- kubelet's VmRSS at the end of the window; kubelet's "Housekeeping took longer" log lines;
- the bursts the agent recorded that started in the window (`report --json`: all, those with a
  kubelet thread among the tasks on the core, the longest), with the shipped cpu thresholds;
- the machine's busy share over the window (/proc/stat; this machine is shared: the noise);

then, out of the window: GET /stats/summary through the API server's node proxy, timed 5 times
(the stats walk a client asks for), and this process's own read of kubepods' memory.stat and
the root's memory.numa_stat (median of 5: the kernel's part of the walk), and the memcg counts
the agent reports (live / dying, as `check memcg` counts them; the census' count).

Everything it made is removed at the end: the dying memcgs (their files deleted, the page cache
dropped, their parents removed, until /proc/cgroups' memory count is back), the pod and the
node (node.py's stop()), the control plane; /proc/cgroups before and after is printed.

Root; holds the e2e host lock (tests/e2e/hostlock.py) for the whole run, so no host
test (real dying memcgs, the real node's bridge) overlaps it. Not part of make bench: make
bench-kubelet. Sizes: BENCH_KUBELET_SIZES (0,10000,50000, ascending); BENCH_KUBELET_SETTLE (30 s).
"""
import fcntl
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(ROOT, "tests", "e2e"))
sys.path.insert(0, os.path.join(ROOT, "tests", "tools", "node"))
import benchlib as bl  # noqa: E402
import hostlock  # noqa: E402
import images  # noqa: E402
import kube_helpers as kh  # noqa: E402
import memcg_helpers as mh  # noqa: E402
import node as nodeh  # noqa: E402

CZ = os.path.abspath(sys.argv[1]) if len(sys.argv) > 1 else os.path.join(ROOT, "build",
                                                                          "cpuzombie")
SIZES = [int(x) for x in os.environ.get("BENCH_KUBELET_SIZES", "0,10000,50000").split(",")]
SECONDS = int(os.environ.get("BENCH_KUBELET_SECONDS", "60"))
REPS = int(os.environ.get("BENCH_KUBELET_REPS", "2"))
SETTLE = int(os.environ.get("BENCH_KUBELET_SETTLE", "30"))
HOST_LOCK = hostlock.path()
CHUNK = 5000                    # memcgs made per charger run, MemAvailable checked between
MIN_AVAILABLE_KIB = 3 << 20     # stop making more below 3 GiB available
HZ = os.sysconf("SC_CLK_TCK")
AGENT_CONFIG = """\
paths:
  pod_logs: ""
memcg:
  latency_canary: 10s
  census_interval: 1m
  systemd_hints: false
agent:
  check_interval: 10s
  kmsg: ""
"""


def log(*a):
    print("bench_kubelet_memcg:", *a, file=sys.stderr, flush=True)


def mem_available_kib():
    with open("/proc/meminfo") as f:
        return int(re.search(r"MemAvailable:\s+(\d+)", f.read()).group(1))


def proc_cgroups():
    """{subsystem: num_cgroups} of /proc/cgroups."""
    out = {}
    with open("/proc/cgroups") as f:
        for line in f:
            p = line.split()
            if p and not p[0].startswith("#"):
                out[p[0]] = int(p[2])
    return out


class Dying(mh.DyingMemcgs):
    """@n real dying memcgs under @parent_dir (a live directory of their own there), made in
    chunks of CHUNK with MemAvailable checked before each; release() as DyingMemcgs'."""

    def __init__(self, n, workdir, parent_dir, tag):
        super().__init__(n, workdir)
        self.parent = os.path.join(parent_dir, "cz-bench-dying-%d-%s" % (os.getpid(), tag))
        self.files = os.path.join(self.workdir, "charged-" + tag)

    def __enter__(self):
        self.baseline = self._dying()
        os.mkdir(self.parent)
        done = 0
        try:
            while done < self.n:
                avail = mem_available_kib()
                if avail < MIN_AVAILABLE_KIB:
                    raise RuntimeError("MemAvailable %d MiB after %d dying memcgs: stopping" %
                                       (avail >> 10, done))
                k = min(CHUNK, self.n - done)
                files = os.path.join(self.files, str(done))   # a new page per memcg
                os.makedirs(files)
                subprocess.run([sys.executable, "-c", mh.CHARGER, self.parent, files, str(k)],
                               check=True, timeout=600)
                done += k
        except BaseException:
            self.release()
            raise
        return self


def cpu_ticks(pid, fields=(11, 12)):
    """utime + stime of @pid (USER_HZ ticks), from /proc/PID/stat; @fields=(12,): stime."""
    with open("/proc/%d/stat" % pid) as f:
        s = f.read()
    f = s[s.rindex(")") + 2:].split()
    return sum(int(f[i]) for i in fields)


def thread_ns(pid):
    """{tid: on-CPU ns} of @pid's threads (schedstat)."""
    out = {}
    d = "/proc/%d/task" % pid
    for t in os.listdir(d):
        try:
            with open("%s/%s/schedstat" % (d, t)) as f:
                out[t] = int(f.read().split()[0])
        except (OSError, ValueError, IndexError):
            pass
    return out


def machine_busy():
    """(busy, total) jiffies of /proc/stat's cpu line (busy = all but idle and iowait)."""
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:]]
    return sum(v) - v[3] - v[4], sum(v)


def vm_rss_kib(pid):
    with open("/proc/%d/status" % pid) as f:
        return int(re.search(r"VmRSS:\s+(\d+)", f.read()).group(1))


def log_lines(path, pattern):
    with open(path, errors="replace") as f:
        return sum(1 for line in f if pattern in line)


def window(node, seconds):
    """One window of @seconds sampled every second: a dict of what the docstring lists."""
    kpid, cpid = node.kubelet.pid, node.containerd.pid
    hk0 = log_lines(node.kubelet.log, "Housekeeping took longer")
    t0_ms = int(time.time() * 1000)
    k0, c0, th0, m0 = cpu_ticks(kpid), cpu_ticks(cpid), thread_ns(kpid), machine_busy()
    ks0 = cpu_ticks(kpid, (12,))
    per_s, thread_max = [], 0
    kp, thp = k0, th0
    nxt = time.monotonic()
    for _ in range(seconds):
        nxt += 1.0
        time.sleep(max(0.0, nxt - time.monotonic()))
        k, th = cpu_ticks(kpid), thread_ns(kpid)
        per_s.append((k - kp) * 1000.0 / HZ)
        thread_max = max([thread_max] + [(v - thp[t]) / 1e6 for t, v in th.items() if t in thp])
        kp, thp = k, th
    k1, c1, m1, ks1 = cpu_ticks(kpid), cpu_ticks(cpid), machine_busy(), cpu_ticks(kpid, (12,))
    t1_ms = int(time.time() * 1000)
    node.check()
    return {"kubelet_ms_s": (k1 - k0) * 1000.0 / HZ / seconds, "kubelet_max_1s": max(per_s),
            "kubelet_sys_ms_s": (ks1 - ks0) * 1000.0 / HZ / seconds,
            "thread_max_ms_s": thread_max,
            "containerd_ms_s": (c1 - c0) * 1000.0 / HZ / seconds,
            "kubelet_rss_mib": vm_rss_kib(kpid) / 1024.0,
            "housekeeping_slow": log_lines(node.kubelet.log, "Housekeeping took longer") - hk0,
            "busy_pct": 100.0 * (m1[0] - m0[0]) / max(m1[1] - m0[1], 1),
            "t0_ms": t0_ms, "t1_ms": t1_ms}


def report_json(run, cfg):
    p = subprocess.run([CZ, "--config", cfg, "--run-dir", run, "--state-dir",
                        os.path.join(os.path.dirname(run), "state"), "report", "--json"],
                       capture_output=True, text=True, timeout=60)
    return json.loads(p.stdout)


def bursts_in(doc, t0_ms, t1_ms, kpid):
    """(all, with a kubelet thread on the core, longest s, kubelet's system ms in them) of the
    bursts that started in [t0_ms, t1_ms]."""
    bs = [b for b in doc["cores"]["bursts"] if t0_ms <= b["start_ms"] <= t1_ms]
    kb = [b for b in bs if any(t["pid"] == kpid or t["comm"] == "kubelet" for t in b["tasks"])]
    ks = sum(t["stime_ms"] for b in kb for t in b["tasks"]
             if t["pid"] == kpid or t["comm"] == "kubelet")
    return len(bs), len(kb), max([b["seconds"] for b in bs] or [0.0]), ks


def timed_read(path, n=5):
    """Median ms of reading @path whole, @n times."""
    ts = []
    for _ in range(n):
        t = time.perf_counter()
        with open(path, "rb") as f:
            f.read()
        ts.append((time.perf_counter() - t) * 1000.0)
    return statistics.median(ts)


def stats_summary(cp, name, n=5):
    """(median, min, max) ms of GET /stats/summary through the API server's node proxy."""
    ts = []
    for _ in range(n):
        t = time.perf_counter()
        st, obj = cp.raw("GET", "/api/v1/nodes/%s/proxy/stats/summary" % name, timeout=60)
        ts.append((time.perf_counter() - t) * 1000.0)
        if st != 200:
            raise RuntimeError("stats/summary: %s %s" % (st, str(obj)[:300]))
    return statistics.median(ts), min(ts), max(ts)


def pause_pod(cp, name):
    """A pod of the pause image on the node (bound by nodeName), Running."""
    pod = {"apiVersion": "v1", "kind": "Pod",
           "metadata": {"name": "cz-bench-pause", "namespace": "default"},
           "spec": {"nodeName": name, "automountServiceAccountToken": False,
                    "containers": [{"name": "pause", "image": images.PAUSE_IMAGE,
                                    "imagePullPolicy": "Never"}]}}
    st, obj = cp.raw("POST", "/api/v1/namespaces/default/pods", pod)
    if st != 201:
        raise RuntimeError("pause pod: %s %s" % (st, obj))
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        st, obj = cp.raw("GET", "/api/v1/namespaces/default/pods/cz-bench-pause")
        if st == 200 and obj.get("status", {}).get("phase") == "Running":
            return
        time.sleep(1)
    raise RuntimeError("pause pod not Running: %s" % obj.get("status"))


def measure_row(made, node, cp, run, cfg, kubepods, rows):
    time.sleep(SETTLE)
    for rep in range(REPS):
        w = window(node, SECONDS)
        doc = report_json(run, cfg)
        w["bursts"] = bursts_in(doc, w["t0_ms"], w["t1_ms"], node.kubelet.pid)
        m = doc["memcg"]
        w["live"], w["dying"] = m.get("live"), m.get("dying")
        w["census"] = (m.get("census") or {}).get("dying")
        w["canary_ms"] = 1000.0 * ((m.get("canary") or {}).get("read_seconds") or 0.0)
        w["summary"] = stats_summary(cp, node.name)
        w["stat_ms"] = timed_read(os.path.join(kubepods, "memory.stat"))
        w["numa_ms"] = timed_read(os.path.join(mh.memory_v1_root(), "memory.numa_stat"))
        w["made"], w["rep"] = made, rep
        log("made %d, window %d: %s" % (made, rep, json.dumps(w)))
        rows.append(w)


def table(rows):
    head = ["memcgs made dying", "agent: live / dying (census)",
            "kubelet CPU ms/s: all, sys (max 1 s)",
            "busiest thread ms/s", "containerd CPU ms/s", "kubelet VmRSS MiB",
            "/stats/summary ms (range)", "kubepods memory.stat / root numa_stat ms",
            "slow housekeeping", "agent bursts (with kubelet), longest s", "machine busy"]
    out = []
    for w in rows:
        b = w["bursts"]
        out.append(["{:,}".format(w["made"]),
                    "%s / %s (%s)" % ("{:,}".format(w["live"]), "{:,}".format(w["dying"]),
                                      "{:,}".format(w["census"]) if w["census"] is not None
                                      else "-"),
                    "%.1f, %.1f (%.0f)" % (w["kubelet_ms_s"], w["kubelet_sys_ms_s"],
                                           w["kubelet_max_1s"]),
                    "%.0f" % w["thread_max_ms_s"], "%.1f" % w["containerd_ms_s"],
                    "%.1f" % w["kubelet_rss_mib"],
                    "%.1f (%.1f-%.1f)" % w["summary"],
                    "%.2f / %.2f" % (w["stat_ms"], w["numa_ms"]),
                    str(w["housekeeping_slow"]),
                    "%d (%d), %.1f" % (b[0], b[1], b[2]), "%.0f%%" % w["busy_pct"]])
    bl.table(head, out)


def kubelet_version(bins):
    p = subprocess.run([os.path.join(bins["kubelet"], "kubelet"), "--version"],
                       capture_output=True, text=True)
    return p.stdout.strip()


def main():
    if os.geteuid() != 0:
        print("(skipped: needs root: runs a kubelet and makes real dying memcgs)")
        return 0
    if not mh.memory_v1_root():
        print("(skipped: written for a v1 memory hierarchy (this project's machines are "
              "hybrid); none here)")
        return 0
    lock = os.open(HOST_LOCK, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    log("waiting for the e2e host lock %s" % HOST_LOCK)
    fcntl.flock(lock, fcntl.LOCK_EX)
    before = proc_cgroups()
    tmp = tempfile.mkdtemp(prefix="cz-bench-kubelet-")
    bins = nodeh.build()
    rows, stacks, agent = [], [], None
    try:
        cp = kh.cluster.ControlPlane(os.path.join(tmp, "control-plane")).start()
        try:
            node = nodeh.Node(cp, os.path.join(tmp, "node"))
            try:
                t = time.monotonic()
                node.start(bins)
                log("node Ready in %.0f s" % (time.monotonic() - t))
                pause_pod(cp, node.name)
                kubepods = mh.memory_v1_root() + node.cgroup_root + "/kubepods"
                cfg = os.path.join(tmp, "cz.yaml")
                with open(cfg, "w") as f:
                    f.write(AGENT_CONFIG)
                run = os.path.join(tmp, "agent", "run")
                os.makedirs(run)
                agent = start_agent(cfg, run, os.path.join(tmp, "agent", "state"))
                made = 0
                for n in SIZES:
                    if n > made:
                        t = time.monotonic()
                        s = Dying(n - made, tmp, kubepods, str(n))
                        stacks.append(s)
                        s.__enter__()
                        log("%d more dying memcgs in %.0f s; MemAvailable %d MiB" %
                            (n - made, time.monotonic() - t, mem_available_kib() >> 10))
                        made = n
                    measure_row(made, node, cp, run, cfg, kubepods, rows)
                machine = describe(bins, node)
            finally:
                if agent is not None:
                    agent.stop()
                for s in reversed(stacks):
                    s.release(timeout=300)
                stacks = []
                node.stop()
        finally:
            cp.stop()
    finally:
        for s in reversed(stacks):
            s.release(timeout=300)
        shutil.rmtree(tmp, ignore_errors=True)
        after = settle_cgroups(before)
        log("/proc/cgroups before %s, after %s" % (before, after))
        os.close(lock)
    print(machine)
    print()
    table(rows)
    print()
    print("/proc/cgroups num_cgroups, before -> after: " + ", ".join(
        "%s %d -> %d" % (k, before[k], after.get(k, 0)) for k in sorted(before)
        if before[k] != 1 or after.get(k, 0) != 1))
    return 0


def settle_cgroups(before, seconds=120):
    """/proc/cgroups once the memory count is back within 50 of @before (others on this
    machine make and leave their own meanwhile), dropping the page cache while it is not."""
    deadline = time.monotonic() + seconds
    while True:
        now = proc_cgroups()
        if now.get("memory", 0) <= before.get("memory", 0) + 50 or \
                time.monotonic() > deadline:
            return now
        with open("/proc/sys/vm/drop_caches", "w") as f:
            f.write("1")
        time.sleep(1)


def start_agent(cfg, run, state):
    """The agent (its log beside the run dir), once its sampler wrote its first heartbeat."""
    p = kh.cluster.Proc("agent", [CZ, "--config", cfg, "--run-dir", run, "--state-dir", state,
                                  "agent"], os.path.dirname(run))
    deadline = time.monotonic() + 15
    while not os.path.exists(os.path.join(run, "cpu-heartbeat")):
        p.check()
        if time.monotonic() > deadline:
            p.stop()
            raise RuntimeError("the agent wrote no heartbeat in 15 s:\n" + p.tail())
        time.sleep(0.1)
    return p


def describe(bins, node):
    model = ""
    with open("/proc/cpuinfo") as f:
        m = re.search(r"^model name\s*:\s*(.*)$", f.read(), re.M)
        model = m.group(1) if m else "unknown"
    return ("%s; kernel %s; %d CPUs: %s; %.0f GiB; %s (failCgroupV1: false, cgroupfs driver, "
            "cgroupRoot %s); cgroup v1 hybrid: memory on its own v1 hierarchy at %s, "
            "cgroup2 beside it without controllers" %
            (time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), os.uname().release,
             os.cpu_count(), model, mem_total_gib(), kubelet_version(bins), node.cgroup_root,
             mh.memory_v1_root()))


def mem_total_gib():
    with open("/proc/meminfo") as f:
        return int(re.search(r"MemTotal:\s+(\d+)", f.read()).group(1)) / 1048576.0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Scale curves, each next to the floor or the naive alternative measured in the same run:

  1. check memcg over 1,000 .. 50,000 REAL dying memcgs (root, cgroup v1 or v2; flat is the
     goal), with the naive plugin and what one read of the root memory.stat costs (kubelet's
     read, the cost cpuzombie exists to catch on old kernels)
  2. check memcg over 100 .. 10,000 LIVE cgroups (generated v1 fixture trees in a temp dir,
     laid out like tests/fixtures/memcg/v1-zombies), with the naive find | wc -l
  3. one sampler sample from 2 to 512 CPUs (generated /proc/stat fixtures, `agent --once` with
     two inline windows: the difference divided by the extra samples, so start-up cancels)
  4. ena-diff on two generated 32-queue dumps of the out-of-tree driver (modelled on
     tests/fixtures/ena/02-* and 03-*), vs the floor and a naive awk diff
  5. the run dir after a simulated day: the history ring (cpu.history 24h at 250 ms) against
     its formula, and the burst log capped at its maximum (simday.c, the agent's own code), and
     a real agent started with cpu.history 24h
Instruction counts (callgrind) carry the curves; CPU ms (wait4 rusage) is shown alongside.
"""
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "e2e"))
import benchlib as bl  # noqa: E402
from proc_helpers import stop  # noqa: E402
from memcg_helpers import DyingMemcgs, memory_v1_root, cgroup2_root, v1_counts  # noqa: E402

CZ = os.path.abspath(sys.argv[1])
FIX = os.path.join(bl.ROOT, "tests", "fixtures")


def env_list(name, default):
    return [int(x) for x in os.environ.get(name, default).split(",") if x]


# ---- 1. real dying memcgs ----

class MoreDying(DyingMemcgs):
    """DyingMemcgs with a parent of its own, so several can be stacked."""

    def __init__(self, n, workdir, tag):
        super().__init__(n, workdir)
        self.parent = os.path.join(self.root, "cpuzombie-bench-%d-%s" % (os.getpid(), tag))
        self.files = os.path.join(self.workdir, "charged-" + tag)


def dying_now():
    if memory_v1_root():
        return v1_counts()
    st = open(os.path.join(cgroup2_root(), "cgroup.stat")).read()
    live = int(re.search(r"nr_descendants (\d+)", st).group(1))
    return live, int(re.search(r"nr_dying_descendants (\d+)", st).group(1))


def read_ms(path, n=5):
    xs = []
    for _ in range(n):
        t = time.perf_counter()
        with open(path, "rb") as f:
            f.read()
        xs.append((time.perf_counter() - t) * 1000)
    return sorted(xs)[n // 2]


def memcg_dying(tmp, floor):
    sizes = env_list("BENCH_MEMCG_SIZES", "1000,5000,20000,50000")
    print("\n### 1. check memcg vs REAL dying memcgs (flat is the goal)\n")
    if os.geteuid() != 0:
        print("(skipped: creating memory cgroups needs root)")
        return
    root = memory_v1_root() or cgroup2_root()
    stat = os.path.join(root, "memory.stat") if memory_v1_root() else None
    naive = ("awk '$1==\"memory\"{n=$3} END{print n}' /proc/cgroups; find %s -type d | wc -l"
             % root)
    state = os.path.join(tmp, "memcg-state")
    rows, made, stack, res = [], 0, [], []
    try:
        for n in sizes:
            m = MoreDying(n - made, tmp, str(n))
            m.__enter__()
            stack.append(m)
            made = n
            live, dying = dying_now()
            cz = bl.measure([CZ, "--state-dir", state, "check", "memcg"], n=20, batches=5,
                            rss=False)
            ir = bl.callgrind_ir([CZ, "--state-dir", state, "check", "memcg"])
            nv = bl.measure(["sh", "-c", naive], n=5, batches=3, rss=False)
            st = read_ms(stat) if stat else None
            res.append({"dying": dying, "cz": cz, "ir": ir, "naive": nv})
            rows.append([dying, live, bl.ms(cz), bl.ratio(cz["median"], floor["median"]),
                         bl.mega(ir), bl.ratio(ir, floor["ir"]), bl.ms(nv),
                         f"{st:.2f}" if st is not None else "-"])
    finally:
        for m in reversed(stack):
            m.release()
    bl.table(["dying memcgs", "live", "check memcg CPU ms/exec", "x floor", "instructions",
              "x floor", "naive CPU ms/exec", "root memory.stat read ms"], rows)
    if len(res) > 1:
        ir_x = res[-1]["ir"] / res[0]["ir"]
        cpu_x = res[-1]["cz"]["median"] / res[0]["cz"]["median"]
        print(f"\n{res[-1]['dying'] / max(res[0]['dying'], 1):.0f}x the dying memcgs: "
              f"instructions {ir_x:.3f}x, CPU {cpu_x:.2f}x (kernel {os.uname().release})")
    bl.save("scale_memcg_dying", res)


# ---- 2. live cgroups (fixture trees) ----

def live_tree(base, n, dying=12840):
    """A v1-zombies-like fixture with n live memory cgroups (root included)."""
    src = os.path.join(FIX, "memcg", "v1-zombies")
    shutil.copytree(os.path.join(src, "proc"), os.path.join(base, "proc"))
    with open(os.path.join(base, "proc", "cgroups"), "w") as f:
        f.write("#subsys_name\thierarchy\tnum_cgroups\tenabled\n"
                "cpuset\t3\t12\t1\ncpu\t2\t12\t1\nmemory\t4\t%d\t1\n" % (n + dying))
    mem = os.path.join(base, "sys", "fs", "cgroup", "memory")
    made = 1
    os.makedirs(mem)
    for top in ("system.slice", "kubepods", "kubepods/burstable", "kubepods/besteffort"):
        os.makedirs(os.path.join(mem, top))
        made += 1
    pod = 0
    while made < n:  # pods of one to three containers, kubelet's layout
        p = os.path.join(mem, "kubepods", ("burstable", "besteffort")[pod % 2], "pod%d" % pod)
        os.mkdir(p)
        made += 1
        for c in range(1 + pod % 3):
            if made >= n:
                break
            os.mkdir(os.path.join(p, "c%d" % c))
            made += 1
        pod += 1


def memcg_live(tmp, floor):
    shm = tempfile.mkdtemp(prefix="cz-bench-live-", dir="/dev/shm")
    try:
        memcg_live_in(shm, floor)
    finally:
        shutil.rmtree(shm, ignore_errors=True)


def memcg_live_in(tmp, floor):
    sizes = env_list("BENCH_LIVE_SIZES", "100,1000,3000,10000")
    print("\n### 2. check memcg vs LIVE cgroups (generated v1 fixture trees on tmpfs, 12,840 dying)\n")
    rows, res = [], []
    for n in sizes:
        base = os.path.join(tmp, "live%d" % n)
        live_tree(base, n)
        argv = [CZ, "--proc-root", base + "/proc", "--sys-root", base + "/sys",
                "--state-dir", base + "/state", "check", "memcg"]
        cz = bl.measure(argv, n=20, batches=5, rss=False)
        ir = bl.callgrind_ir(argv)
        nv = bl.measure(["sh", "-c", "awk '$1==\"memory\"{n=$3} END{print n}' %s/proc/cgroups;"
                         " find %s/sys/fs/cgroup/memory -type d | wc -l" % (base, base)],
                        n=5, batches=3, rss=False)
        res.append({"live": n, "cz": cz, "ir": ir, "naive": nv})
        rows.append([n, bl.ms(cz), bl.ratio(cz["median"], floor["median"]), bl.mega(ir),
                     f"{ir / n:.0f}", bl.ms(nv), bl.ratio(nv["median"], cz["median"]),
                     ",".join(map(str, cz["codes"]))])
        shutil.rmtree(base)
    bl.table(["live cgroups", "check memcg CPU ms/exec", "x floor", "instructions",
              "instr per cgroup", "naive CPU ms/exec", "naive / cpuzombie", "exit"], rows)
    print("\nOn cgroup v1 the live count is a walk of the hierarchy's directories (one getdents "
          "per directory); v2 reads two numbers from the root cgroup.stat instead. The exit "
          "turns 0 once 12,840 dying / live falls under memcg.max_ratio (10), as it should.")
    bl.save("scale_memcg_live", res)


# ---- 3. one sample vs CPU count ----

def proc_stat(n, rnd):
    def row(name):
        return name + " " + " ".join(str(rnd.randrange(10**6, 10**9)) for _ in range(8)) + \
            " 0 0\n"
    irqs = max(64, 3 * n + 24)  # per-CPU timer/IPI vectors and NIC queues grow with n
    return (row("cpu ") + "".join(row("cpu%d" % i) for i in range(n)) +
            "intr %d " % rnd.randrange(10**9) +
            " ".join(str(rnd.randrange(10**6)) for _ in range(irqs)) + "\n" +
            "ctxt 99\nbtime 1700000000\nprocesses 5\nprocs_running 1\nprocs_blocked 0\n"
            "softirq 1 2 3 4 5 6 7 8 9 10 11\n")


def sample_cost(tmp):
    sizes = env_list("BENCH_CPU_SIZES", "2,8,32,96,192,384,512")
    w1, w2, iv = 500, 2500, 100
    k = (w2 - w1) // iv
    print(f"\n### 3. one sample vs CPU count (generated /proc/stat; agent --once, inline "
          f"windows {w1} and {w2} ms at {iv} ms: (cost({w2}) - cost({w1})) / {k} samples)\n")
    rnd = random.Random(8)
    rows, res = [], []
    for n in sizes:
        d = os.path.join(tmp, "cpus%d" % n)
        os.makedirs(d + "/proc")
        with open(d + "/proc/stat", "w") as f:
            f.write(proc_stat(n, rnd))
        out = {}
        for w in (w1, w2):
            cfg = os.path.join(d, "w%d.yaml" % w)
            with open(cfg, "w") as f:
                f.write("cpu:\n  interval: %dms\n  inline_window: %dms\n" % (iv, w))
            argv = [CZ, "--config", cfg, "--proc-root", d + "/proc", "--sys-root",
                    d + "/nosys", "--run-dir", d + "/run%d" % w, "--state-dir", d + "/s",
                    "agent", "--once"]
            out[w] = (bl.measure(argv, n=1, batches=3, rss=False), bl.callgrind_ir(argv))
        ir = (out[w2][1] - out[w1][1]) / k
        cpu = (out[w2][0]["median"] - out[w1][0]["median"]) / k
        res.append({"ncpu": n, "ir": ir, "cpu_ms": cpu, "stat_bytes": os.path.getsize(
            d + "/proc/stat")})
        rows.append([n, os.path.getsize(d + "/proc/stat"), f"{ir / 1e3:.1f} k",
                     f"{ir / n:.0f}", f"{cpu * 1000:.0f}",
                     f"{cpu * 4 * 3600 / 1000:.2f}"])
        shutil.rmtree(d)
    bl.table(["CPUs", "/proc/stat bytes", "instructions per sample", "per CPU",
              "CPU us per sample (rusage, noisy)", "CPU s per hour at 4 Hz"], rows)
    print("\nThe fixture does not change between samples (every delta is 0); the parse, "
          "the shares and the ring write are the per-sample work measured. On a real "
          "kernel, generating /proc/stat (kernel time) comes on top; bench_agent has that.")
    bl.save("scale_cpus", res)


# ---- 4. ena with 32 queues ----

def ena_dumps(tmp, nq=32):
    glob_names = [ln.split(":")[0].strip() for ln in open(
        os.path.join(FIX, "ena", "02-sliderule518-ens34-ena-2.14-2.15-allowance-exceeded.txt"))
        if ln.startswith("     ")]
    qnames = []
    for ln in open(os.path.join(FIX, "ena",
                                "03-sliderule518-perqueue-excerpt-truncated-stat-name.txt")):
        m = re.match(r"\s+queue_3_(\S+):", ln)
        if m and m.group(1) not in qnames:
            qnames.append(m.group(1))
    rnd = random.Random(32)
    before = {k: rnd.randrange(0, 1000) if "allowance" in k else 0 for k in glob_names}
    before["interface_up"] = 1
    for q in range(nq):
        for s in qnames:
            # names are cut at 31 characters (ETH_GSTRING_LEN), as the driver's are
            before[("queue_%d_%s" % (q, s))[:31]] = rnd.randrange(10**6, 10**10) \
                if s.endswith(("cnt", "bytes", "poll", "doorbells")) else 0
    after = {k: v + (rnd.randrange(1000, 10**6) if v else 0) for k, v in before.items()}
    after["total_resets"] = 1
    after["suspected_poll_starvation"] = 1
    after["queue_7_tx_missed_tx"] = 3
    paths = []
    for name, d in (("before", before), ("after", after)):
        p = os.path.join(tmp, "ena-%s.txt" % name)
        with open(p, "w") as f:
            f.write("NIC statistics:\n" + "".join("     %s: %d\n" % kv for kv in d.items()))
        paths.append(p)
    return paths, len(before)


def ena32(tmp, floor):
    (b, a), nstats = ena_dumps(tmp)
    print(f"\n### 4. ena-diff on two 32-queue dumps ({nstats} counters each, a reset by "
          f"suspected_poll_starvation and missed_tx on queue 7 between them)\n")
    naive = ("awk 'NR==FNR {b[$1]=$2; next} /total_resets|reset_fail|tx_timeout|wd_expired|"
             "suspected_poll_starvation|missed_tx/ {d=$2-b[$1]; if (d>0) {print $1, d; n++}} "
             "END {exit n>0}' %s %s" % (b, a))
    rows = []
    cz = bl.measure([CZ, "ena-diff", b, a], n=40, batches=5)
    cz["ir"] = bl.callgrind_ir([CZ, "ena-diff", b, a])
    nv = bl.measure(["sh", "-c", naive], n=20, batches=5)
    nv["ir"] = bl.callgrind_ir(["sh", "-c", naive])
    msg = subprocess.run([CZ, "ena-diff", b, a], capture_output=True, text=True).stdout.strip()
    for name, m in (("do-nothing C binary (floor)", floor),
                    ("cpuzombie ena-diff BEFORE AFTER", cz),
                    ("naive: awk diff of the two dumps", nv)):
        rows.append([name, bl.ms(m), bl.ratio(m["median"], floor["median"]), bl.mega(m["ir"]),
                     bl.ratio(m["ir"], floor["ir"]), f"{m['rss'] / 1024:.1f}",
                     ",".join(map(str, m["codes"]))])
    bl.table(["command", "CPU ms/exec", "x floor", "instructions", "x floor", "peak RSS MiB",
              "exit"], rows)
    print(f"\nverdict: {msg[:160]}")
    print("(check ena's SIOCETHTOOL read needs a real ENA device; this is its parse + verdict "
          "on the same counters.)")
    bl.save("scale_ena32", {"cz": cz, "naive": nv, "nstats": nstats})


# ---- 5. a simulated day ----

def ring_formula(ncpu, slots):
    return 64 + slots * ((20 + ncpu + 7) & ~7)


def day(tmp):
    print("\n### 5. run dir after a simulated day (fixed size by design)\n")
    src = os.path.join(HERE, "simday.c")
    exe = os.path.join(tmp, "simday")
    build = os.path.dirname(CZ)
    r = subprocess.run(["make", "-s", "-C", bl.ROOT, os.path.relpath(build, bl.ROOT) +
                        "/libcz.a"], capture_output=True, text=True)
    if r.returncode == 0:
        r = subprocess.run(["cc", "-std=gnu11", "-D_GNU_SOURCE", "-O2", "-I" + bl.ROOT +
                            "/plugin", "-o", exe, src, build + "/libcz.a", "-Wl,-Bstatic",
                            "-ljson-c", "-lyaml", "-Wl,-Bdynamic", "-lm", "-ldl", "-lpthread"],
                           capture_output=True, text=True)
    if r.returncode != 0:
        print("(simday did not build: %s)" % r.stderr.strip()[:300])
        return
    rows, res = [], {}
    shm = tempfile.mkdtemp(prefix="cz-bench-day-", dir="/dev/shm")
    try:
        for ncpu in (os.cpu_count(), 192):
            run = os.path.join(shm, "run%d" % ncpu)
            os.mkdir(run)
            p = subprocess.run([exe, run, str(ncpu)], capture_output=True, text=True)
            if p.returncode != 0:
                print("(simday failed: %s)" % p.stderr.strip())
                return
            kv = dict(ln.split() for ln in p.stdout.splitlines())
            res[ncpu] = kv
            shutil.rmtree(run)
            rows.append([f"ring, {ncpu} CPUs, 24h at 250 ms", kv["ring_samples_written"],
                         kv["ring_bytes"], kv["ring_formula_bytes"], kv["ring_samples_read"],
                         f"{float(kv['ring_write_cpu_ms']) / 86400:.4f} ms/s"])
            rows.append([f"burst log, {ncpu} CPUs, 1 burst/min",
                         kv["log_events_appended"], kv["log_bytes_after_day"],
                         f"{kv['log_bytes_at_max']} (at {kv['log_events_max']} events)",
                         kv["log_events_read"],
                         f"{float(kv['log_append_cpu_ms_each']):.2f} ms/burst"])
        # the real agent, cpu.history 24h: the file it creates has the formula's size up front
        cfg = os.path.join(tmp, "day.yaml")
        with open(cfg, "w") as f:
            f.write("cpu:\n  history: 24h\n")
        run = os.path.join(shm, "agent")
        ag = subprocess.Popen([CZ, "--config", cfg, "--run-dir", run, "--state-dir",
                               tmp + "/day-state", "agent"], stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)
        time.sleep(2.5)
        stop(ag, None)
        real = os.path.getsize(run + "/cpu-history")
        want = ring_formula(os.cpu_count(), 24 * 3600 * 4)
        rows.append([f"agent with cpu.history 24h, {os.cpu_count()} CPUs, after 2.5 s", "-",
                     real, want, "-", "-"])
        res["agent_ring"] = {"bytes": real, "formula": want}
    finally:
        shutil.rmtree(shm, ignore_errors=True)
    bl.table(["file", "written", "bytes after the day", "bound (formula / cap)", "read back",
              "CPU"], rows)
    print("\nring bytes = 64 + slots x ((20 + ncpu + 7) & ~7), slots = cpu.history / "
          "cpu.interval; the burst log keeps the newest 256 events.")
    bl.save("day", res)


def main():
    tmp = tempfile.mkdtemp(prefix="cz-bench-scale-")
    try:
        fb = bl.noop_binary(os.path.join(tmp, "floor"))
        floor = bl.measure([fb], n=40, batches=5)
        floor["ir"] = bl.callgrind_ir([fb])
        print(f"exec floor (do-nothing C binary) in this run: {bl.ms(floor)} ms CPU, "
              f"{floor['ir']} instructions")
        only = os.environ.get("BENCH_SCALE", "memcg,live,cpus,ena,day").split(",")
        if "memcg" in only:
            memcg_dying(tmp, floor)
        if "live" in only:
            memcg_live(tmp, floor)
        if "cpus" in only:
            sample_cost(tmp)
        if "ena" in only:
            ena32(tmp, floor)
        if "day" in only:
            day(tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""The zombie census over 1,000 .. 50,000 REAL dying memcgs (root; the memory
hierarchy of this host): the agent's own log line splits each census into loading the BPF
program (the verifier: constant) and the walk + drain + grouping (linear is the goal); the
agent's CPU per `agent --once` with the census on vs off gives its cost, and its cost per hour
at the default memcg.census_interval (10m: 6 censuses an hour). Medians of 5 runs per size.
"""
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "e2e"))
import benchlib as bl  # noqa: E402
from memcg_helpers import DyingMemcgs  # noqa: E402

CZ = os.path.abspath(sys.argv[1])
LINE = re.compile(r"Zombie census: (\d+) dying memcgs in (\d+) csses, ([\d.]+) ms "
                  r"\(load ([\d.]+), walk ([\d.]+)\)")


class Stack(DyingMemcgs):
    """DyingMemcgs with a parent of its own, so sizes stack."""

    def __init__(self, n, workdir, tag):
        super().__init__(n, workdir)
        self.parent = os.path.join(self.root, "cpuzombie-bench-census-%d-%s" % (os.getpid(), tag))
        self.files = os.path.join(self.workdir, "charged-census-" + tag)


def agent_cpu(tmp, census, runs=5):
    """(CPU ms of `agent --once` medians, census log fields medians or None)."""
    cfg = os.path.join(tmp, "census-%s.yaml" % census)
    with open(cfg, "w") as f:
        f.write("cpu:\n  inline_window: 0s\nmemcg:\n  systemd_hints: false\n"
                "  census_interval: %s\n" % ("10m" if census else "0"))
    cpu, fields = [], []
    for i in range(runs):
        run = os.path.join(tmp, "run-%s-%d" % (census, i))
        p = subprocess.Popen([CZ, "--config", cfg, "--state-dir", os.path.join(tmp, "st"),
                              "--run-dir", run, "agent", "--once", "-v"],
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        err = p.stderr.read()
        _, _, ru = os.wait4(p.pid, 0)
        p.returncode = 0
        cpu.append((ru.ru_utime + ru.ru_stime) * 1000.0)
        m = LINE.search(err)
        if census and m:
            fields.append([float(x) for x in m.groups()])
    med = statistics.median(cpu)
    if not fields:
        return med, None
    return med, [statistics.median(col) for col in zip(*fields)]


def main():
    sizes = [int(x) for x in os.environ.get("BENCH_CENSUS_SIZES", "1000,10000,50000").split(",")
             if x]
    if os.geteuid() != 0:
        print("(skipped: creating memory cgroups and loading BPF need root)")
        return
    tmp = tempfile.mkdtemp(prefix="cz-bench-census-")
    rows, stack, made, res = [], [], 0, []
    try:
        for n in sizes:
            s = Stack(n - made, tmp, str(n))
            s.__enter__()
            stack.append(s)
            made = n
            on, f = agent_cpu(tmp, True)
            off, _ = agent_cpu(tmp, False)
            if f is None:
                print("(census did not run: see `cpuzombie agent --once -v`)")
                return
            dying, csses, total, load, walk = f
            cost = max(on - off, 0.0)
            res.append({"made": n, "dying": dying, "csses": csses, "total_ms": total,
                        "load_ms": load, "walk_ms": walk, "cpu_on": on, "cpu_off": off})
            rows.append([n, int(dying), int(csses), f"{total:.1f}", f"{load:.1f}",
                         f"{walk:.1f}", f"{walk * 1000 / max(dying, 1):.2f}",
                         f"{on:.1f}", f"{off:.1f}", f"{cost * 6:.0f}"])
    finally:
        for s in reversed(stack):
            s.release()
        shutil.rmtree(tmp, ignore_errors=True)
    bl.table(["made", "dying seen", "csses walked", "census ms", "load ms (verifier)",
              "walk + drain ms", "us per dying (walk)", "agent --once CPU ms, census on", "off",
              "CPU ms/hour at 10m"], rows)
    if len(res) > 1:
        a, b = res[0], res[-1]
        print(f"\n{b['dying'] / max(a['dying'], 1):.1f}x the dying memcgs: walk "
              f"{b['walk_ms'] / max(a['walk_ms'], 0.001):.1f}x, whole census "
              f"{b['total_ms'] / max(a['total_ms'], 0.001):.1f}x (kernel {os.uname().release})")
    bl.save("census", res)


if __name__ == "__main__":
    main()

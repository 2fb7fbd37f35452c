#!/usr/bin/env python3
"""The agent's CPU per sample and per hour at 4 Hz, next to the obvious alternatives running over
the same minutes on the same machine:

  cpuzombie agent        shipped defaults (cpu.interval 250ms, checks every 30 s), run dir on
                         tmpfs (/dev/shm, like the default /run/cpuzombie), and a second agent with
                         its run dir on the disk file system of /var/tmp (heartbeat and ring
                         flushes cost more there)
                         and a third with agent.check_interval 24h: the sampler alone (the
                         agent runs all four checks every check_interval even when NPD runs
                         them and nothing consumes the agent's results)
  mpstat -P ALL 1        sysstat's per-core view at 1 Hz
  node_exporter          Debian's prometheus-node-exporter, cpu + ethtool collectors only, on
                         127.0.0.1, scraped with curl at 4 Hz: its CPU plus the scraper's

CPU is on-CPU time (user + kernel) from /proc/PID/task/*/schedstat of every thread, taken at the
start and end of each window after a warm-up, so start-up is not counted; curl is counted per
exec from wait4 rusage. Every figure is the median over the windows with min-max.
"""
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "e2e"))
import benchlib as bl  # noqa: E402
from proc_helpers import stop_all  # noqa: E402

CZ = os.path.abspath(sys.argv[1])
SECS = int(os.environ.get("BENCH_AGENT_SECONDS", "120"))
WINDOWS = max(2, SECS // 30)


def fstype(path):
    return subprocess.run(["stat", "-f", "-c", "%T", path], capture_output=True,
                          text=True).stdout.strip()


class Scraper(threading.Thread):
    """curl the exporter every 250 ms; per-window CPU of the curl execs and scrape counts."""

    def __init__(self, url):
        super().__init__(daemon=True)
        self.url, self.stop, self.cpu_ms, self.n, self.fail = url, False, 0.0, 0, 0

    def run(self):
        nxt = time.monotonic()
        while not self.stop:
            ms, rc = bl.run_once(["curl", "-sf", "-o", "/dev/null", self.url])
            self.cpu_ms += ms
            self.n += 1
            self.fail += rc != 0
            nxt += 0.25
            time.sleep(max(0.0, nxt - time.monotonic()))


def spawn(argv):
    return subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)


def main():
    tmp = tempfile.mkdtemp(prefix="cz-bench-agent-", dir="/var/tmp")
    shm = tempfile.mkdtemp(prefix="cz-bench-agent-", dir="/dev/shm")
    procs, scraper = {}, None
    ne = shutil.which("prometheus-node-exporter") or shutil.which("node_exporter")
    try:
        procs["agent"] = spawn([CZ, "--run-dir", shm + "/run", "--state-dir", tmp + "/s1",
                                "agent"])
        procs["agent-disk"] = spawn([CZ, "--run-dir", tmp + "/run", "--state-dir",
                                     tmp + "/s2", "agent"])
        cfg = os.path.join(tmp, "sampler-only.yaml")
        with open(cfg, "w") as f:
            f.write("agent:\n  check_interval: 24h\n")
        procs["agent-sampler"] = spawn([CZ, "--config", cfg, "--run-dir", shm + "/run3",
                                        "--state-dir", tmp + "/s3", "agent"])
        procs["mpstat"] = spawn(["mpstat", "-P", "ALL", "1"])
        if ne:
            port = bl.free_port()
            procs["node_exporter"] = spawn([ne, "--collector.disable-defaults",
                                            "--collector.cpu", "--collector.ethtool",
                                            "--web.listen-address=127.0.0.1:%d" % port])
            time.sleep(1.0)
            scraper = Scraper("http://127.0.0.1:%d/metrics" % port)
            scraper.start()
        time.sleep(3.0)  # warm-up: start-up costs are not the steady state
        win = SECS / WINDOWS
        per = {k: [] for k in procs}
        curl, scrapes = [], []
        for _ in range(WINDOWS):
            c0 = {k: bl.task_cpu_ns(p.pid) for k, p in procs.items()}
            s0 = (scraper.cpu_ms, scraper.n) if scraper else (0, 0)
            t0 = time.monotonic()
            time.sleep(win)
            dt = time.monotonic() - t0
            for k, p in procs.items():
                per[k].append((bl.task_cpu_ns(p.pid) - c0[k]) / 1e6 / dt)  # CPU ms per s
            if scraper:
                curl.append((scraper.cpu_ms - s0[0]) / dt)
                scrapes.append((scraper.n - s0[1]) / dt)
        hwm = {k: bl.vm_hwm_kib(p.pid) for k, p in procs.items()}
        alive = {k: p.poll() is None for k, p in procs.items()}
    finally:
        if scraper:
            scraper.stop = True
            scraper.join()
        stop_all(procs.values(), None)
        rings = {k: os.path.getsize(d + "/run/cpu-history")
                 for k, d in (("agent", shm), ("agent-disk", tmp))
                 if os.path.exists(d + "/run/cpu-history")}
        shutil.rmtree(tmp, ignore_errors=True)
        shutil.rmtree(shm, ignore_errors=True)
    report(per, curl, scrapes, hwm, alive, rings, scraper)


def stat(xs):
    return {"median": statistics.median(xs), "min": min(xs), "max": max(xs)}


def report(per, curl, scrapes, hwm, alive, rings, scraper):
    rate = {"agent": 4.0, "agent-disk": 4.0, "agent-sampler": 4.0, "mpstat": 1.0}
    names = {"agent": "cpuzombie agent, 4 Hz, run dir on tmpfs (/dev/shm)",
             "agent-disk": "cpuzombie agent, 4 Hz, run dir on %s (/var/tmp)" % fstype("/var/tmp"),
             "agent-sampler": "cpuzombie agent, sampler only (check_interval 24h), tmpfs",
             "mpstat": "mpstat -P ALL 1 (1 Hz)",
             "node_exporter": "node_exporter cpu+ethtool (scraped at 4 Hz)",
             "ne+curl": "node_exporter + curl scraper (4 Hz)"}
    series = dict(per)
    if scraper:
        series["ne+curl"] = [a + b for a, b in zip(per["node_exporter"], curl)]
        rate["node_exporter"] = rate["ne+curl"] = statistics.median(scrapes)
    print(f"{WINDOWS} windows of {SECS / WINDOWS:.0f} s, all running at once after a 3 s "
          f"warm-up; CPU = user + kernel of every thread (schedstat)")
    if scraper:
        print(f"scrapes: {scraper.n} ({scraper.fail} failed), "
              f"{statistics.median(scrapes):.2f}/s")
    print()
    base = statistics.median(series["agent"])
    rows, res = [], {}
    for k, xs in series.items():
        s = stat(xs)
        ps = {q: v / rate[k] for q, v in s.items()}  # CPU ms per sample/scrape
        res[k] = {"ms_per_s": s, "ms_per_sample": ps, "rss": hwm.get(k, 0)}
        rows.append([names[k] + ("" if alive.get(k, True) else " (EXITED EARLY)"),
                     f"{ps['median']:.3f} ({ps['min']:.3f}-{ps['max']:.3f})",
                     f"{s['median'] * 3.6:.2f} ({s['min'] * 3.6:.2f}-{s['max'] * 3.6:.2f})",
                     f"{s['median']:.3f}", bl.ratio(s["median"], base),
                     f"{hwm[k] / 1024:.1f}" if k in hwm else "-"])
    bl.table(["process", "CPU ms per sample/scrape median (range)",
              "CPU s per hour median (range)", "millicores", "x agent (tmpfs)",
              "peak RSS MiB"], rows)
    print("\nmillicores = CPU ms per second. The agent's figure includes its periodic checks "
          "(agent.check_interval 30s).")
    for k, v in rings.items():
        print(f"history ring after the run ({k}): {v} bytes (fixed size, see the day below)")
    bl.save("agent", res)


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""The cost of the mid-burst links: while a burst lasts, the agent rewrites its
heartbeat every 2 s with the burst's profile so far (fold_format of the samples drained, one
atomic file write, one scan for the hot kernel function) and the core's NIC IRQs. Measured on a
real one-core system-time burst (tests/e2e/cpu_helpers.py) of BENCH_PEEK_SECONDS (default 20;
the shipped cpu.profile_max is 30 s) under `cpuzombie agent -v`, which logs at the burst's end
the thread CPU time its peeks took (CLOCK_THREAD_CPUTIME_ID around each, the file write's
kernel time included), and compared with the agent's whole CPU time over the same burst
(/proc/PID/task/*/schedstat).

Run alone: /usr/bin/python3 tests/bench/bench_latency_peek.py build/cpuzombie
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
BIN = os.path.abspath(sys.argv[1]) if len(sys.argv) > 1 else \
    os.environ.get("CZ_BIN", os.path.join(HERE, "..", "..", "build", "cpuzombie"))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "e2e"))
import benchlib as bl  # noqa: E402
import cpu_helpers as ch  # noqa: E402
from proc_helpers import stop  # noqa: E402

SECONDS = float(os.environ.get("BENCH_PEEK_SECONDS", "20"))
LINE = re.compile(r"burst cpu(\d+): (\d+) mid-burst profile peeks, (\d+) written, ([\d.]+) ms "
                  r"CPU in all \(([\d.]+) ms each\), up to (\d+) bytes")


def main():
    if os.geteuid() != 0 or os.cpu_count() < 2:
        print("(skipped: needs root and 2 CPUs for a real one-core burst and its profile)")
        return 0
    tmp = tempfile.mkdtemp(prefix="cz-bench-peek-")
    try:
        return measure(tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def measure(tmp):
    run_dir = os.path.join(tmp, "run")
    err = os.path.join(tmp, "agent.err")
    p = subprocess.Popen([BIN, "--run-dir", run_dir, "--state-dir", os.path.join(tmp, "state"),
                          "-v", "agent"], stdout=subprocess.DEVNULL, stderr=open(err, "w"))
    try:
        deadline = time.monotonic() + 15
        while not os.path.exists(os.path.join(run_dir, "cpu-heartbeat")):
            if p.poll() is not None or time.monotonic() > deadline:
                print("(agent did not start: %s)" % open(err).read()[-500:])
                return 1
            time.sleep(0.05)
        time.sleep(1.0)
        hot = os.cpu_count() - 1
        with ch.burn_lock():
            c0 = bl.task_cpu_ns(p.pid)
            with ch.burning_locked(hot):
                time.sleep(SECONDS)
            time.sleep(1.0)
            c1 = bl.task_cpu_ns(p.pid)
    finally:
        stop(p, 10, strict=True)
    m = [x for x in LINE.finditer(open(err).read()) if int(x.group(1)) == hot]
    if not m:
        print("(no peek line logged: no profile? %s)" % open(err).read()[-800:])
        return 1
    _, peeks, writes, total, each, size = m[-1].groups()
    agent_ms = (c1 - c0) / 1e6
    print("A %.0f s real burst on cpu%d under `cpuzombie agent` (cpu.profile_hz 99, "
          "profile_max 30s, heartbeat every 2 s); CPU in ms from the kernel's accounting." %
          (SECONDS, hot))
    print()
    bl.table(["mid-burst peeks", "written", "peeks' CPU (ms)", "per peek (ms)",
              "largest profile (bytes)", "agent CPU over the burst (ms)", "peeks' share"],
             [[peeks, writes, total, each, size, "%.1f" % agent_ms,
               "%.1f%%" % (100.0 * float(total) / agent_ms if agent_ms else 0.0)]])
    print()
    print("Bounded: one peek per heartbeat while the burst lasts (and one when the run becomes a "
          "burst), each formatting at most cpu.profile_bytes; the profile stops growing at "
          "cpu.profile_max.")
    bl.save("latency_peek", {"peeks": int(peeks), "ms_each": float(each), "agent_ms": agent_ms})
    return 0


if __name__ == "__main__":
    sys.exit(main())

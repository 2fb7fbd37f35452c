"""make bench, burst profiles and history tiers:

1. Run-dir bytes of the shipped defaults (fine ring 15 min at 250 ms, per-second maxima for 6 h,
   per-minute maxima for 7 d) at 2, 64 and 192 CPUs, measured on the files a real agent creates
   for a fixture /proc and /sys of that many CPUs; goal: under 8 MiB at 192 CPUs. Profiles add at
   most HISTORY_PROFILES_MAX x cpu.profile_bytes.
2. The agent's CPU per hour with profiles on and off, idle and during a real one-core burst (dd
   reading /dev/zero), next to `perf record -F 99 -g -C CPU` of the same burst (perf's own CPU,
   its file written to a tmpfs): the naive way to get the same stacks.
"""
import os
import shutil
import subprocess
import sys
import tempfile
import time

from benchlib import table, task_cpu_ns

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "e2e"))
from cpu_helpers import burning  # noqa: E402
from proc_helpers import stop  # noqa: E402

SECS = float(os.environ.get("BENCH_PROFILE_SECONDS", "10"))


def fake_host(base, ncpu):
    """/proc/stat and /sys/devices/system/cpu/possible for @ncpu CPUs (static counters)."""
    proc, sys_ = os.path.join(base, "proc"), os.path.join(base, "sys")
    os.makedirs(proc)
    os.makedirs(os.path.join(sys_, "devices", "system", "cpu"))
    with open(os.path.join(proc, "stat"), "w") as f:
        f.write("cpu  %s\n" % " ".join(["1000"] * 10))
        for c in range(ncpu):
            f.write("cpu%d %s\n" % (c, " ".join(["100"] * 10)))
        f.write("intr 1\nctxt 1\nbtime 1\nprocesses 1\nprocs_running 1\nprocs_blocked 0\n")
    with open(os.path.join(sys_, "devices", "system", "cpu", "possible"), "w") as f:
        f.write("0-%d\n" % (ncpu - 1))
    return proc, sys_


def run_dir_bytes(binary, ncpu):
    base = tempfile.mkdtemp(prefix="cz-bp-")
    try:
        proc, sys_ = fake_host(base, ncpu)
        run = os.path.join(base, "run")
        p = subprocess.Popen([binary, "--proc-root", proc, "--sys-root", sys_, "--run-dir", run,
                              "--state-dir", os.path.join(base, "state"), "agent"],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(2.5)
        stop(p, 10, strict=True)
        sizes = {f: os.path.getsize(os.path.join(run, f)) for f in os.listdir(run)
                 if f.startswith("cpu-history")}
        return sizes
    finally:
        shutil.rmtree(base, ignore_errors=True)


def agent_cpu(binary, seconds, profile, burn_cpu=None):
    """CPU ms of the agent over @seconds (schedstat), with cpu.profile on/off, optionally while
    a dd burns @burn_cpu."""
    base = tempfile.mkdtemp(prefix="cz-bp-", dir="/dev/shm")
    cfg = os.path.join(base, "cz.yaml")
    with open(cfg, "w") as f:
        f.write("cpu:\n  profile: %s\nagent:\n  check_interval: 24h\n" %
                ("true" if profile else "false"))
    p = subprocess.Popen([binary, "--config", cfg, "--run-dir", os.path.join(base, "run"),
                          "--state-dir", os.path.join(base, "state"), "agent"],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        time.sleep(1.0)
        if burn_cpu is None:
            c0 = task_cpu_ns(p.pid)
            time.sleep(seconds)
            c1 = task_cpu_ns(p.pid)
        else:
            with burning(burn_cpu):
                time.sleep(0.5)
                c0 = task_cpu_ns(p.pid)
                time.sleep(seconds)
                c1 = task_cpu_ns(p.pid)
            time.sleep(0.5)
        prof = [f for f in os.listdir(os.path.join(base, "run")) if f.startswith("cpu-profile-")]
        return (c1 - c0) / 1e6, prof
    finally:
        stop(p, 10, strict=True)
        shutil.rmtree(base, ignore_errors=True)


def perf_record_cpu(cpu, seconds):
    """CPU ms of `perf record -F 99 -g -C cpu` over a burst of @seconds (perf and its children,
    from wait4), its data file on a tmpfs."""
    out = tempfile.mkdtemp(prefix="cz-perf-", dir="/dev/shm")
    try:
        with burning(cpu):
            time.sleep(0.5)
            pid = os.posix_spawnp("perf", ["perf", "record", "-q", "-F", "99", "-g", "-C",
                                           str(cpu), "-o", os.path.join(out, "perf.data"), "--",
                                           "sleep", str(seconds)], os.environ)
            _, status, ru = os.wait4(pid, 0)
        ok = os.waitstatus_to_exitcode(status) == 0
        return (ru.ru_utime + ru.ru_stime) * 1000.0 if ok else None
    finally:
        shutil.rmtree(out, ignore_errors=True)


def main():
    binary = sys.argv[1]
    rows = []
    for n in (2, 64, 192):
        s = run_dir_bytes(binary, n)
        total = sum(s.values())
        rows.append([str(n), "%d" % s.get("cpu-history", 0), "%d" % s.get("cpu-history-1s", 0),
                     "%d" % s.get("cpu-history-1m", 0), "%.2f MiB" % (total / 1048576),
                     "%.0f%%" % (100.0 * total / (8 << 20))])
    print("Run-dir bytes of the history with the shipped defaults (measured files of a real "
          "agent on a fixture host):\n")
    table(["CPUs", "fine ring (15m @250ms)", "per-second (6h)", "per-minute (7d)", "total",
           "of the 8 MiB goal"], rows)
    print("\nBurst profiles add at most 32 files x cpu.profile_bytes (64 KiB) = 2 MiB, "
          "whatever the CPU count.\n")

    if os.geteuid() != 0 or (os.cpu_count() or 1) < 2:
        print("(agent CPU with profiles: needs root and 2 CPUs, skipped)")
        return
    hot = os.cpu_count() - 1
    idle_off, _ = agent_cpu(binary, SECS, False)
    idle_on, _ = agent_cpu(binary, SECS, True)
    burst_off, _ = agent_cpu(binary, SECS, False, hot)
    burst_on, files = agent_cpu(binary, SECS, True, hot)
    perf = shutil.which("perf") and perf_record_cpu(hot, SECS)
    per_h = 3600.0 / SECS / 1000.0  # ms per SECS -> s per hour
    rows = [
        ["agent, profiles off", "%.2f s/h" % (idle_off * per_h), "%.2f s/h" % (burst_off * per_h),
         "-"],
        ["agent, profiles on (cpu.profile_hz 99)", "%.2f s/h" % (idle_on * per_h),
         "%.2f s/h" % (burst_on * per_h), "%d file(s)" % len(files)],
        ["profile's own cost (on - off)", "%.2f s/h" % ((idle_on - idle_off) * per_h),
         "%.2f s/h" % ((burst_on - burst_off) * per_h), ""],
        ["perf record -F 99 -g -C %d (naive)" % hot, "-",
         "%.2f s/h" % (perf * per_h) if perf else "(perf failed)", "perf.data"],
    ]
    print("CPU per hour, %g s windows; 'during a burst' = a dd burning cpu%d the whole window "
          "(s/h = seconds of CPU per hour of that state):\n" % (SECS, hot))
    table(["", "idle", "during a burst", "output"], rows)
    if perf:
        print("\nprofiling a burst costs the agent %.2fx what perf record costs for the same "
              "burst" % ((burst_on - burst_off) / perf if perf > 0 else float("nan")))


if __name__ == "__main__":
    main()

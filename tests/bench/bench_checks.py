#!/usr/bin/env python3
"""Per invocation, CPU and peak memory of every NPD check next to the exec floor (a do-nothing C
binary, dynamic and static, goal: each check within 1.3x of the dynamic one) and a naive shell
plugin doing the same job, all measured in this run; plus callgrind instruction counts, which a
noisy shared machine does not blur. The checks run as NPD runs them: the static check binary
(argv[2], default cpuzombie-check next to argv[1]); `check memcg` also on the full dynamic
binary (argv[1]) for comparison.

  check memcg           this node's real hierarchy   vs  awk /proc/cgroups + find | wc -l
  check cpu (agent)     fresh heartbeat, reads the burst log of a running agent (run dir on
                        tmpfs)                       vs  mpstat -P ALL 1 1 | awk
  check cpu (inline)    no agent: samples cpu.inline_window (3 s, the default) itself
  check ena             this NIC's driver through a temp config, min_read_interval 0 (every exec
                        reads the device, as at NPD's 30 s interval)  vs  ethtool -S | awk
  check ena (durable)   same, ena.window 12ms: the state rewritten (fsync'd) on every exec, as
                        a reading that changed something does
  check ena-allowance   same                         vs  ethtool -S | awk (allowance counters)
"""
import os
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "e2e"))
import benchlib as bl  # noqa: E402
from memcg_helpers import memory_v1_root, v1_counts  # noqa: E402
from proc_helpers import stop  # noqa: E402

CZ = os.path.abspath(sys.argv[1])
CHECK = os.path.abspath(sys.argv[2]) if len(sys.argv) > 2 else \
    os.path.join(os.path.dirname(CZ), "cpuzombie-check")
N = int(os.environ.get("BENCH_N", "40"))


def start_agent(run, state, cfg=None):
    argv = [CZ, "--run-dir", run, "--state-dir", state] + (["--config", cfg] if cfg else []) + \
        ["agent"]
    p = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL)
    deadline = time.time() + 10
    while not os.path.exists(os.path.join(run, "cpu-heartbeat")) and time.time() < deadline:
        time.sleep(0.1)
    return p


def main():
    tmp = tempfile.mkdtemp(prefix="cz-bench-checks-")
    shm = tempfile.mkdtemp(prefix="cz-bench-checks-", dir="/dev/shm")
    agent = None
    try:
        floor_bin = bl.noop_binary(os.path.join(tmp, "floor"))
        floor_static = bl.noop_binary(os.path.join(tmp, "floor"), static=True)
        ifname, driver = bl.default_nic()
        cfg = os.path.join(tmp, "cz.yaml")
        with open(cfg, "w") as f:
            f.write("ena:\n  drivers: [%s]\n  min_read_interval: 0s\n" % (driver or "ena"))
        # the same with a 12 ms window: its state is due a refresh (window/12) on every exec,
        # so each exec pays the durable rewrite that a quiet reading otherwise skips
        cfg_durable = os.path.join(tmp, "cz-durable.yaml")
        with open(cfg_durable, "w") as f:
            f.write("ena:\n  drivers: [%s]\n  min_read_interval: 0s\n  window: 12ms\n"
                    % (driver or "ena"))
        cgroot = memory_v1_root() or "/sys/fs/cgroup"
        state = os.path.join(tmp, "state")
        agent = start_agent(os.path.join(shm, "run"), os.path.join(tmp, "agent-state"))
        time.sleep(1.0)
        base = [CHECK, "--config", cfg, "--state-dir", state]
        full = [CZ, "--config", cfg, "--state-dir", state]
        resets = "total_resets|tx_timeout|wd_expired|reset_fail|suspected_poll_starvation"
        allow = "allowance_exceeded"
        rows = [
            ("floor", "do-nothing C binary, dynamic (exec floor)", [floor_bin], N),
            ("floor-static", "do-nothing C binary, static-pie", [floor_static], N),
            ("memcg", "cpuzombie-check check memcg", base + ["check", "memcg"], N),
            ("memcg-dynamic", "cpuzombie check memcg (full dynamic binary)",
             full + ["check", "memcg"], N),
            ("naive-memcg", "naive: awk /proc/cgroups + find | wc -l",
             ["sh", "-c", "awk '$1==\"memory\"{n=$3} END{print n}' /proc/cgroups; "
              "find %s -type d | wc -l" % cgroot], N // 2),
            ("cpu", "cpuzombie-check check cpu (agent running)",
             base + ["--run-dir", os.path.join(shm, "run"), "check", "cpu"], N),
            ("naive-cpu", "naive: mpstat -P ALL 1 1 | awk",
             ["sh", "-c", "LC_ALL=C mpstat -P ALL 1 1 | awk '$2 ~ /^[0-9]+$/ && $5 >= 90 "
              "{n++} END {print n + 0; exit n > 0}'"], 2),
            ("cpu-inline", "cpuzombie-check check cpu (no agent: 3 s inline)",
             base + ["--run-dir", os.path.join(shm, "empty"), "check", "cpu"], 2),
        ]
        if ifname:
            rows += [
                ("ena", "cpuzombie-check check ena (%s, %s)" % (ifname, driver),
                 base + ["check", "ena"], N),
                ("ena-durable", "cpuzombie-check check ena, state rewritten on every exec "
                 "(window 12ms)", [CHECK, "--config", cfg_durable, "--state-dir",
                                   os.path.join(tmp, "state-durable"), "check", "ena"], N),
                ("naive-ena", "naive: ethtool -S | awk (reset counters)",
                 ["sh", "-c", "ethtool -S %s | awk '/%s/ {s += $2} END {print s; exit s > 0}'"
                  % (ifname, resets)], N // 2),
                ("ena-allowance", "cpuzombie-check check ena-allowance",
                 base + ["check", "ena-allowance"], N),
                ("naive-ena-allowance", "naive: ethtool -S | awk (allowance counters)",
                 ["sh", "-c", "ethtool -S %s | awk '/%s/ {s += $2} END {print s; exit s > 0}'"
                  % (ifname, allow)], N // 2),
            ]
        live, dying = v1_counts() if memory_v1_root() else (0, 0)
        print(f"node: {dying} dying / {live} live memcgs (v1: {bool(memory_v1_root())}), "
              f"NIC {ifname} driver {driver}; agent run dir on tmpfs ({shm}); "
              f"{N} execs x 5 batches (sampling plugins: 2 x 3)")
        print()
        res = {}
        for key, name, argv, n in rows:
            batches = 3 if n <= 2 else 5
            m = bl.measure(argv, n=n, batches=batches)
            m["ir"] = bl.callgrind_ir(argv)
            m["name"] = name
            res[key] = m
        fl = res["floor"]
        out = []
        for key, name, _argv, _n in rows:
            m = res[key]
            out.append([name, bl.ms(m), bl.ratio(m["median"], fl["median"]),
                        f"{m['rss'] / 1024:.1f}", bl.ratio(m["rss"], fl["rss"]),
                        bl.mega(m["ir"]), bl.ratio(m["ir"], fl["ir"]),
                        ",".join(map(str, m["codes"]))])
        bl.table(["command", "CPU ms/exec median (range)", "x floor", "peak RSS MiB",
                  "x floor", "instructions (callgrind)", "x floor", "exit"], out)
        print("\nGoal: each check within 1.3x of the dynamic floor in CPU per exec. 'x floor' "
              "of the naive plugins is what the same job costs done the obvious way.")
        bl.save("checks", res)
        if shutil.which("hyperfine"):
            wall(res, rows)
    finally:
        if agent:
            stop(agent, None)
        shutil.rmtree(tmp, ignore_errors=True)
        shutil.rmtree(shm, ignore_errors=True)


def wall(res, rows):
    """Wall time per exec of the non-sampling commands (hyperfine), for scale only."""
    cmds = [(name, argv) for key, name, argv, n in rows if n > 2]
    out = tempfile.mktemp(suffix=".json")
    import json
    import shlex
    p = subprocess.run(["hyperfine", "-N", "--warmup", "10", "--runs", "100", "--style", "none",
                        "--export-json", out] + [shlex.join(a) for _n, a in cmds],
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    if p.returncode != 0 or not os.path.exists(out):
        print("\n(hyperfine failed; wall times skipped)")
        return
    with open(out) as f:
        data = json.load(f)["results"]
    os.unlink(out)
    print("\nWall time per exec (hyperfine -N, 100 runs): " + "; ".join(
        f"{name}: {r['median'] * 1000:.2f} ms" for (name, _a), r in zip(cmds, data)))


if __name__ == "__main__":
    main()

"""Burst profiles, dips and tiered history on the real kernel.

A real one-core system-time burst (dd reading /dev/zero, SCHED_FIFO, serialised machine-wide by
cpu_helpers' lock) under a real `cpuzombie agent`: the burst's perf profile must name the kernel
function of that path, and `check cpu`, `report`, `--json` and `--svg` must show it. Without
CAP_PERFMON the burst is still recorded and says why it has no profile. A neighbour that steals
short slices of the burning core makes single samples dip; the burst must stay one burst.
"""
import json
import os
import re
import subprocess
import sys
import time

import pytest

from cpu_helpers import _cpu_v1_root, burn_lock, burning_locked
from proc_helpers import stop

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="needs root: a CPU-wide perf event "
                                "(CAP_PERFMON), kallsyms addresses and an RT burner")
needs_2cpu = pytest.mark.skipif(os.cpu_count() < 2, reason="needs 2 CPUs: one to burn, one "
                                "for everything else")
# The /dev/zero read path as kernels name it: read_iter_zero (6.x), read_zero, and the helpers
# that do the copy (iov_iter_zero, clear_user); any of them is "the burner's kernel function".
ZERO_PATH = re.compile(r"read_iter_zero|read_zero|iov_iter_zero|clear_user")


def cz(*args):
    return [os.environ.get("CZ_BIN") or os.path.join(ROOT, "build", "cpuzombie"), *args]


def start_agent(run_dir, config=None, wrap=()):
    cmd = list(wrap) + cz("--run-dir", str(run_dir), "--state-dir", str(run_dir) + "-state",
                          *(["--config", str(config)] if config else []), "-v", "agent")
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 10
    while not (run_dir / "cpu-heartbeat").exists():
        assert p.poll() is None, p.communicate()
        assert time.time() < deadline, "agent wrote no heartbeat"
        time.sleep(0.05)
    return p


def bursts(run_dir):
    return [l.split() for l in (run_dir / "cpu-bursts").read_text().splitlines()
            if l.startswith("burst ")]


def field(ev, name):
    for f in ev:
        if f.startswith(name + "="):
            return f[len(name) + 1:]
    return None


def parse_folded(text):
    """Every line is "frames count" (flamegraph.pl's input); returns [(frames, count)]."""
    out = []
    for line in text.splitlines():
        stack, _, count = line.rpartition(" ")
        assert stack and count.isdigit(), f"not a folded line: {line!r}"
        out.append((stack.split(";"), int(count)))
    return out


@needs_root
@needs_2cpu
def test_burst_profile_names_the_kernel_function(tmp_path):
    run_dir = tmp_path / "run"
    hot = os.cpu_count() - 1
    # the burn lock for the agent's whole life: no other checkout's burn in its picture
    with burn_lock():
        agent = start_agent(run_dir)
        try:
            mid = burst_with_report_midway(run_dir, tmp_path, hot)
            check = subprocess.run(cz("--run-dir", str(run_dir), "--state-dir",
                                      str(tmp_path / "s3"), "check", "cpu"),
                                   capture_output=True, text=True, timeout=30)
        finally:
            stop(agent)
    check_profile(run_dir, tmp_path, hot, mid, check)


def burst_with_report_midway(run_dir, tmp_path, hot):
    """A 4.5 s burn on @hot; returns the `report` run 3 s into it."""
    time.sleep(1.0)
    with burning_locked(hot):
        time.sleep(3.0)
        # during the burst, report already names the tasks it has seen so far
        mid = subprocess.run(cz("--run-dir", str(run_dir), "--state-dir", str(tmp_path / "s2"),
                                "report"), capture_output=True, text=True, timeout=30)
        time.sleep(1.5)
    time.sleep(1.0)
    return mid


def check_profile(run_dir, tmp_path, hot, mid, check):
    assert re.search(rf"cpu{hot} .*\bdd\b", mid.stdout), mid.stdout  # ongoing burst, its task

    ev = [e for e in bursts(run_dir) if int(e[1]) == hot]
    assert len(ev) == 1, (run_dir / "cpu-bursts").read_text()
    prof = field(ev[0], "profile")
    assert prof and prof != "-", ev[0]
    folded = parse_folded((run_dir / prof).read_text())
    total = sum(c for _, c in folded)
    dd = sum(c for fr, c in folded if fr[0] == "dd" and any(ZERO_PATH.search(f) for f in fr))
    # ~4.5 s at 99 Hz is ~450 samples; most of them dd on the /dev/zero path
    assert total >= 100 and dd >= total // 2, (total, dd, folded[:5])

    # check cpu names the hot kernel path after the top task
    assert check.returncode == 1, (check.stdout, check.stderr)
    m = re.search(r"top dd [\d.]+s in (\S+) (\d+)%", check.stdout)
    assert m and ZERO_PATH.search(m.group(1)) and int(m.group(2)) >= 50, check.stdout

    env = {"run": ["--run-dir", str(run_dir), "--state-dir", str(tmp_path / "s4")]}
    text = subprocess.run(cz(*env["run"], "report"), capture_output=True, text=True, timeout=30)
    assert str(run_dir / prof) in text.stdout, text.stdout
    assert re.search(r"dd;.*(read_iter_zero|read_zero|iov_iter_zero|clear_user)", text.stdout), \
        text.stdout
    js = subprocess.run(cz(*env["run"], "report", "--json"), capture_output=True, text=True,
                        timeout=30)
    doc = json.loads(js.stdout)
    b = [x for x in doc["cores"]["bursts"] if x["cpu"] == hot][0]
    assert ZERO_PATH.search(b["profile"]["hot_frame"]), b
    assert b["profile"]["file"].endswith(prof) and b["profile"]["top"], b
    svg = tmp_path / "h.svg"
    subprocess.run(cz(*env["run"], "report", "--svg", str(svg)), capture_output=True, timeout=30)
    assert ZERO_PATH.search(svg.read_text()), "the burst marker's tooltip names the function"


@needs_root
@needs_2cpu
def test_without_perfmon_the_burst_says_why(tmp_path):
    """As root but with CAP_PERFMON and CAP_SYS_ADMIN out of the bounding set (and the kernel's
    perf_event_paranoid >= 1), the CPU-wide event is refused: the burst is recorded anyway."""
    if open("/proc/sys/kernel/perf_event_paranoid").read().strip() in ("-1", "0"):
        pytest.skip("kernel.perf_event_paranoid <= 0 lets anyone profile a CPU")
    run_dir = tmp_path / "run"
    hot = os.cpu_count() - 1
    wrap = ["setpriv", "--bounding-set", "-perfmon,-sys_admin", "--inh-caps", "-all"]
    with burn_lock():
        agent = start_agent(run_dir, wrap=wrap)
        try:
            time.sleep(1.0)
            with burning_locked(hot):
                time.sleep(3.5)
            time.sleep(1.0)
            check = subprocess.run(cz("--run-dir", str(run_dir), "--state-dir",
                                      str(tmp_path / "s"), "check", "cpu"),
                                   capture_output=True, text=True, timeout=30)
        finally:
            stop(agent)
    ev = [e for e in bursts(run_dir) if int(e[1]) == hot]
    assert len(ev) == 1, (run_dir / "cpu-bursts").read_text()
    assert field(ev[0], "profile") == "-", ev[0]
    assert "CAP_PERFMON" in field(ev[0], "why").replace("%20", " "), ev[0]
    assert check.returncode == 1 and f"cpu{hot} " in check.stdout, check.stdout
    assert not list(run_dir.glob("cpu-profile-*")), "no profile file without the privilege"


# A neighbour that steals short slices of the burning core: SCHED_FIFO above the burner, busy
# for 30 ms every 700 ms, so a 250 ms sample loses up to 12%. On this shared machine the network
# softirqs of other work land on the same core too (they count as softirq, not system time):
# measured, single samples of a 6 s burn fell to 77-88%, up to four in a row. That is the noise
# of a real incident, and the shipped hysteresis (20 points, 1 s) must carry the burst through.
THIEF = r"""
import os, time
os.sched_setaffinity(0, {%d})
os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(20))
end = time.time() + %f
while time.time() < end:
    t = time.perf_counter()
    while time.perf_counter() - t < 0.030:
        pass
    time.sleep(0.670)
"""


@needs_root
@needs_2cpu
def test_a_burst_with_brief_dips_is_one_burst(tmp_path):
    run_dir = tmp_path / "run"
    hot = os.cpu_count() - 1
    # the thief must be allowed RT where the burner is (the root cpu cgroup)
    root = _cpu_v1_root()
    pre = f"echo $$ > {root}/cgroup.procs 2>/dev/null; " if root else ""
    with burn_lock():
        agent = start_agent(run_dir)
        try:
            time.sleep(1.0)
            with burning_locked(hot):
                burn_start = int(time.time() * 1000)
                thief = subprocess.Popen(["sh", "-c", pre + f"exec {sys.executable} -c "
                                          f"'{THIEF % (hot, 6.0)}'"])
                try:
                    time.sleep(6.5)
                finally:
                    thief.wait(timeout=10)
                burn_end = int(time.time() * 1000)
        finally:
            stop(agent)
    ev = sorted(([int(e[2]), int(e[3])] for e in bursts(run_dir) if int(e[1]) == hot))
    log = (run_dir / "cpu-bursts").read_text()
    from test_cpu import read_ring
    ring = [(t, pc[hot]) for t, pc in read_ring(run_dir / "cpu-history") if pc[hot] != 255]
    assert ev, (log, ring)
    # The rule, checked on the samples the agent itself recorded (its ring holds each share
    # rounded to a whole percent, so the bounds below keep a point of slack):
    # 1. the burst went on through brief dips: a recorded burst holds a sample under the
    #    threshold (<= 89: truly below 90) that did not end it;
    dipped = [v for a, b in ev for t, v in ring if a < t < b and v <= 89]
    assert dipped, (ev, ring)
    # 2. where a burst ended while the burn went on, the dip was not brief: a sample under
    #    threshold - hysteresis (<= 70) or the share under the threshold for longer than max_dip
    #    (1 s: more than 4 samples) right after its end
    for _, end in ev:
        if end > burn_end - 1500:
            continue  # it ended with the burn
        after = [v for t, v in ring if t > end + 125][:6]  # the ring and the log clocks differ by ms
        low_run = run = 0
        for v in after:
            if v > 90:
                break
            run += 1
            low_run = max(low_run, run)
        assert any(v <= 70 for v in after[:low_run + 1]) or low_run > 4, \
            ("ended on a brief dip", end, ev, ring)
    # 3. the burn was seen: a burst (min_burst, with its half-interval slack) from its start
    assert ev[0][0] <= burn_start + 1500 and ev[0][1] - ev[0][0] >= 2000 - 125, (ev, burn_start, log)

"""History that reaches back: the agent's per-second and per-minute tiers, and
`report --since/--until` drawing a window from the finest tier that covers it."""
import os
import re
import subprocess
import time

import pytest

from proc_helpers import stop
from report_helpers import write_ring, state_file
from test_cpu import read_ring

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def cz(*args):
    return [os.environ.get("CZ_BIN") or os.path.join(ROOT, "build", "cpuzombie"), *args]


def test_agent_writes_the_tiers(tmp_path):
    run = tmp_path / "run"
    p = subprocess.Popen(cz("--run-dir", str(run), "--state-dir", str(tmp_path / "state"),
                            "agent"), stderr=subprocess.PIPE, text=True)
    try:
        time.sleep(3.6)
    finally:
        stop(p, 10, strict=True)
    fine = read_ring(run / "cpu-history")
    sec = read_ring(run / "cpu-history-1s")
    # the fine ring has a sample every 250 ms; the second tier one row per whole second, each
    # stamped at its second's end and holding that second's per-core maxima
    assert len(fine) >= 10 and len(sec) >= 2, (len(fine), len(sec))
    for t, row in sec:
        assert t % 1000 == 0, t
        inside = [pc for ft, pc in fine if t - 1000 < ft <= t]
        for c, v in enumerate(row):
            vals = [pc[c] for pc in inside if pc[c] != 255]
            if vals:
                assert v == max(vals), (t, c, v, vals)
    # the minute tier exists at its full fixed size (7 days of minutes), written at exit
    size = os.path.getsize(run / "cpu-history-1m")
    ncpu = len(fine[0][1])
    assert size == 64 + 7 * 24 * 60 * ((20 + ncpu + 7) & ~7), size


def node_with_tiers(tmp_path, ncpu=4):
    """A run dir as a week-old agent leaves it: 15 min of fine samples, 6 h of seconds, 7 d of
    minutes, and a burst on cpu2 three hours ago that only the tiers still show."""
    now = (int(time.time()) // 60) * 60 * 1000
    run = tmp_path / "run"
    run.mkdir()
    b0, b1 = now - 3 * 3600 * 1000, now - 3 * 3600 * 1000 + 8000  # 8 s burst on cpu2

    def row(t, period):
        pct = [4] * ncpu
        if t - period < b1 and t > b0:
            pct[2] = 100
        return pct

    write_ring(run / "cpu-history", ncpu,
               [(now - i * 1000, [5] * ncpu) for i in range(900, 0, -1)], 1000, 900)
    write_ring(run / "cpu-history-1s", ncpu,
               [(now - i * 1000, row(now - i * 1000, 1000)) for i in range(21600, 0, -1)],
               1000, 21600)
    write_ring(run / "cpu-history-1m", ncpu,
               [(now - i * 60000, row(now - i * 60000, 60000)) for i in range(10080, 0, -1)],
               60000, 10080)
    state_file(run / "cpu-bursts", "cpu-bursts",
               "burst 2 %d %d 100.0 99.0 system irqs=- tasks=4242/4242/kubelet/7900 stack=- "
               "profile=- hot=- why=no%%20CAP_PERFMON\n" % (b0, b1))
    return run, now, b0


def report(run, tmp_path, *args):
    return subprocess.run(cz("--run-dir", str(run), "--state-dir", str(tmp_path / "state"),
                             "--sys-root", str(tmp_path / "nosys"), "report", *args),
                          capture_output=True, text=True, timeout=60)


def heat_row(text, cpu):
    m = re.search(rf"^  cpu{cpu}\s+\|(.*)\|$", text, re.M)
    assert m, text
    return m.group(1)


def test_report_since_draws_the_window_from_the_tiers(tmp_path):
    run, now, b0 = node_with_tiers(tmp_path)
    # the window of the failure, hours ago: only the second tier covers it
    p = report(run, tmp_path, "--since", "3h2m", "--until", "2h58m", "--svg",
               str(tmp_path / "h.svg"))
    assert p.returncode in (0, 1), p.stderr
    assert "from per-second maxima" in p.stdout, p.stdout
    hot = heat_row(p.stdout, 2)
    assert "@" in hot and set(heat_row(p.stdout, 1)) <= {" ", "."}, p.stdout
    assert re.search(r"BURSTS.*: 1\b", p.stdout) and "kubelet" in p.stdout, p.stdout
    assert "recorded profile: none (no CAP_PERFMON)" in p.stdout, p.stdout
    svg = (tmp_path / "h.svg").read_text()
    assert "cpu2 burst" in svg and "no profile: no CAP_PERFMON" in svg
    # the last 10 minutes come from the fine ring; the burst is not in that window
    p = report(run, tmp_path, "--since", "10m")
    assert "from per-" not in p.stdout and "@" not in heat_row(p.stdout, 2), p.stdout
    # two days back: only the minute tier reaches; the burst's minute is still hot
    p = report(run, tmp_path, "--since", "2d")
    assert "from per-minute maxima" in p.stdout and "@" in heat_row(p.stdout, 2), p.stdout
    # an absolute UTC window works the same
    t = time.strftime("%Y-%m-%dT%H:%M", time.gmtime(b0 / 1000 - 60))
    p = report(run, tmp_path, "--since", t, "--until", "@%d" % (b0 // 1000 + 120))
    assert "from per-second maxima" in p.stdout and "@" in heat_row(p.stdout, 2), p.stdout


@pytest.mark.parametrize("args,err", [
    (["--since", "yesterday"], "--since: not a time"),
    (["--since", "1h", "--until", "2h"], "--until is not after --since"),
    (["--until", "2026-13-01T00:00"], "--until: not a time"),
])
def test_bad_windows_are_one_line_errors(tmp_path, args, err):
    run, _, _ = node_with_tiers(tmp_path)
    p = report(run, tmp_path, *args)
    assert p.returncode == 2 and err in p.stderr and p.stderr.count("\n") == 1, p.stderr

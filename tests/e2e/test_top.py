"""`cpuzombie top` in a real terminal: tmux runs it (a server of the test's own,
send-keys, capture-pane) beside a real `cpuzombie agent` and a real one-core system-time burst.

A run becomes a burst when it has lasted cpu.min_burst (2 s): that is when the agent lists it in
its heartbeat, with the task, the kernel function of its profile so far and the NIC queue the
core serves (test_midburst.py). `top` redraws once a second from the run dir; the test counts
the screens (their title clock) drawn after the heartbeat listed the burst until the bursting
core's row shows all three: at most two. Then `p` pauses, SIGWINCH (a resized window) redraws
at the new width, `q` quits with status 0. A burner whose name is made of escape sequences
must reach the terminal only as visible text: the escapes tmux would obey (OSC 0 sets the
pane's title, CSI 2J clears it) do not take effect, and without a terminal the plain lines
carry no ESC byte. Without an agent `top` samples itself and says so.
"""
import os
import re
import shutil
import subprocess
import time

import pytest

from cpu_helpers import burn_lock, burning_locked
from live_helpers import (HOSTILE_COMM, ZERO_PATH, Tmux, burning_hostile, cz, heartbeat_active,
                          heartbeat_field, hot_core, nic_irqs_for_cpu, run_dirs, start_agent)
from proc_helpers import stop

needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="needs root: a CPU-wide perf event, "
                                "kallsyms addresses, IRQ affinities and an RT burner")
needs_2cpu = pytest.mark.skipif(os.cpu_count() < 2, reason="needs 2 CPUs: one to burn")
needs_tmux = pytest.mark.skipif(not shutil.which("tmux"), reason="needs tmux "
                                "(tests/tools/install-deps.sh test)")

TITLE = re.compile(r"cpuzombie top .* (\d\d:\d\d:\d\d) UTC")


def title_time(screen):
    m = TITLE.search(screen)
    return m.group(1) if m else None


def burst_row(screen, cpu):
    """The row under the bursting core's (its '> burst ...' line), or None."""
    lines = screen.splitlines()
    for i, l in enumerate(lines):
        if l.startswith(f"*cpu{cpu} ") and i + 1 < len(lines) and "> burst " in lines[i + 1]:
            return lines[i + 1]
    return None


def wait_screen(tm, pred, timeout):
    deadline = time.time() + timeout
    s = tm.capture()
    while time.time() < deadline:
        s = tm.capture()
        if pred(s):
            return s
        time.sleep(0.1)
    return s


@needs_root
@needs_2cpu
@needs_tmux
def test_top_draws_the_burst_within_two_refreshes_pauses_resizes_quits(tmp_path):
    run_dir = tmp_path / "run"
    hot = hot_core()
    irqs = nic_irqs_for_cpu(hot)
    with burn_lock():
        agent = start_agent(run_dir)
        tm = Tmux(cz(*run_dirs(run_dir, tmp_path / "s"), "top"), cols=200, rows=40)
        try:
            first = wait_screen(tm, lambda s: title_time(s) is not None, 10)
            assert "agent pid" in first and "inline" not in first, first
            listed, frames, shown = None, [], None
            with burning_locked(hot):
                deadline = time.time() + 9
                while time.time() < deadline and shown is None:
                    if listed is None and any(int(a[1]) == hot and heartbeat_field(a, "hot")
                                              for a in heartbeat_active(run_dir)):
                        listed = len(frames)
                    s = tm.capture()
                    t = title_time(s)
                    if t and (not frames or frames[-1][0] != t):
                        frames.append((t, s))
                    row = burst_row(s, hot)
                    if listed is not None and row and ZERO_PATH.search(row):
                        shown = (len(frames), row, s)
                    time.sleep(0.05)
                assert listed is not None, "the heartbeat never listed the burst"
                assert shown, frames[-1][1] if frames else "no screen"
                n, row, screen = shown
                # screens drawn after the heartbeat listed the burst, the showing one included
                assert n - listed <= 2, (n, listed, [f[0] for f in frames])
                assert " top dd " in row, row
                if irqs:
                    q = re.search(r"serves (\S+)", row)
                    assert q and set(q.group(1).split(",")) == irqs, (row, irqs)
                # p pauses (said on screen), p again resumes
                tm.keys("p")
                paused = wait_screen(tm, lambda s: "[paused]" in s, 5)
                assert "[paused]" in paused, paused
                tm.keys("p")
                resumed = wait_screen(tm, lambda s: "[paused]" not in s, 5)
                assert "[paused]" not in resumed, resumed
                # a narrower window: redrawn at its width (SIGWINCH)
                tm.resize(60, 20)
                narrow = wait_screen(tm, lambda s: max(map(len, s.splitlines() or [""])) <= 60
                                     and title_time(s), 5)
                lines = narrow.rstrip("\n").splitlines()
                assert lines and all(len(l) <= 60 for l in lines), narrow
                assert any(l.startswith(f"*cpu{hot} ") for l in lines), narrow
            tm.keys("q")
            deadline = time.time() + 5
            while tm.exit_status() is None and time.time() < deadline:
                time.sleep(0.1)
            assert tm.exit_status() == 0, tm.capture()
        finally:
            tm.close()
            stop(agent)


@needs_root
@needs_2cpu
@needs_tmux
def test_hostile_task_name_never_reaches_the_terminal_raw(tmp_path):
    run_dir = tmp_path / "run"
    hot = hot_core()
    with burn_lock():
        agent = start_agent(run_dir)
        tm = Tmux(cz(*run_dirs(run_dir, tmp_path / "s"), "top"), cols=200, rows=40)
        try:
            wait_screen(tm, lambda s: title_time(s) is not None, 10)
            before = tm.fmt("#{pane_title}")
            with burning_hostile(hot):
                s = wait_screen(tm, lambda s: burst_row(s, hot) and "pwn" in burst_row(s, hot),
                                10)
                pipe = subprocess.Popen(cz(*run_dirs(run_dir, tmp_path / "s2"), "top"),
                                        stdout=subprocess.PIPE, stdin=subprocess.DEVNULL)
                try:
                    lines = [pipe.stdout.readline() for _ in range(2)]
                finally:
                    stop(pipe, 5, strict=True)
            title = tm.fmt("#{pane_title}")
        finally:
            tm.close()
            stop(agent)
    row = burst_row(s, hot)
    assert row, s
    # the name as visible text: ESC as \e, BEL as \x07 (base/textsafe.h)
    assert "top \\e]0;pwn\\x07\\e[2J" in row, row
    assert title == before and "pwn" not in title, (before, title)   # OSC 0 not obeyed
    assert title_time(s), s   # CSI 2J did not clear the screen it came in
    # not a terminal: one plain line a second, no ESC byte, the name visible
    assert all(l.endswith(b"\n") for l in lines), lines
    assert not any(b"\x1b" in l or b"\x07" in l for l in lines), lines
    assert any(b"\\e]0;pwn" in l for l in lines), lines
    assert HOSTILE_COMM not in b"".join(lines)


def test_top_without_agent_samples_inline_and_says_so(tmp_path):
    """No agent: `top` samples /proc/stat itself (one line a second without a terminal)."""
    p = subprocess.Popen(cz(*run_dirs(tmp_path / "run", tmp_path / "s"), "top"),
                         stdout=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True)
    try:
        lines = [p.stdout.readline() for _ in range(3)]
    finally:
        stop(p, 5, strict=True)
    assert p.returncode == 0, p.returncode
    for l in lines:
        assert re.match(r"\d\d:\d\d:\d\d cpu0 ", l), lines
        assert "inline sampling every 250ms (no agent: no sampler)" in l, lines
    # shares appear once the sampler has two readings
    assert re.search(r"cpu0 \d+%", lines[-1]), lines
    once = subprocess.run(cz(*run_dirs(tmp_path / "run", tmp_path / "s"), "top", "--once"),
                          capture_output=True, text=True, timeout=10)
    assert once.returncode == 0 and len(once.stdout.splitlines()) == 1, once

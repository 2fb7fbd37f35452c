# SPDX-License-Identifier: MIT
"""Crash-safe state of the agent and of check ena.

The agent is SIGKILLed at random moments while a pinned on/off load makes it record a burst every
~0.6 s (burst log), rewrite its heartbeat and flush its history ring. After every kill:
  * cpu-bursts and cpu-heartbeat are whole state files (header, payload, CRC trailer) - the old
    or the new version, never torn - and no temporary file is left beside them;
  * the cpu-history ring has the size its geometry says and at most one slot with a bad CRC (the
    one a kill interrupted; readers skip it);
  * a reader (check cpu, run right away while the heartbeat is still fresh) never crashes, never
    says "corrupt", never moves anything aside.
check ena's state is exercised the same way through a veth pair in a network namespace of the
test's own (the ioctl path is the same one ENA devices take; the driver filter is widened to
veth), then with six checks at once (NPD runs plugins concurrently), one of them killed. tests/e2e/test_state_crash.py does this for check memcg.
"""
import os
import random
import re
import shlex
import signal
import struct
import subprocess
import time
import zlib

import pytest

import cpu_helpers as ch
import hardening_helpers as hh

RUNS = int(os.environ.get("CZ_AGENT_CRASH_RUNS", "60"))
needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="needs root: creates a network namespace")


def envelope_ok(path, name):
    data = open(path, "rb").read()
    head = b"cpuzombie-state 1 %s\n" % name.encode()
    assert data.startswith(head), (path, data[:80])
    body, trailer = data[len(head):-13], data[-13:]
    assert trailer == b"end %08x\n" % zlib.crc32(body), (path, data[-40:])
    return body


def ring_bad_slots(path):
    data = open(path, "rb").read()
    assert data[:8] == b"CZHIST1\n"
    _v, ncpu, slots, _ival, ss = struct.unpack_from("<5I", data, 8)
    assert len(data) == 64 + slots * ss, (len(data), slots, ss)
    bad = used = 0
    for i in range(slots):
        off = 64 + i * ss
        seq, = struct.unpack_from("<Q", data, off)
        if not seq:
            continue
        used += 1
        crc, = struct.unpack_from("<I", data, off + 16)
        want = zlib.crc32(data[off:off + 16]) ^ zlib.crc32(data[off + 20:off + 20 + ncpu])
        bad += crc != want
    return bad, used


# The on/off load: 0.3 s of system time (reads of /dev/zero), then 0.3 s asleep. System time at
# SCHED_FIFO (cpu_helpers.burner), so that other work on the machine neither fills the idle
# half (the noise is user time: the core's system share falls and the burst ends) nor takes
# the busy half (a FIFO task is not preempted by it): a burst starts and ends every ~0.6 s on a
# busy machine as on a quiet one.
ONOFF = ("import os,time\nf=os.open('/dev/zero',os.O_RDONLY)\nwhile True:\n"
         " t=time.monotonic()+0.3\n while time.monotonic()<t: os.read(f,1<<25)\n"
         " time.sleep(0.3)\n")


@pytest.fixture
def load():
    """The last CPU: 0.3 s of system time, 0.3 s idle, until the test ends; stopped by PID."""
    cpu = os.cpu_count() - 1
    with ch.burn_lock():
        with ch.burning_locked(cpu, "/usr/bin/python3 -c %s" % shlex.quote(ONOFF)):
            yield cpu


def test_agent_kill9_never_tears_run_files(load, tmp_path):
    run = tmp_path / "run"
    cfg = tmp_path / "cz.yaml"
    cfg.write_text("cpu:\n  interval: 50ms\n  metric: system\n  threshold_pct: 80\n"
                   "  min_burst: 150ms\n  history: 1m\n  inline_window: 0s\n")
    base = [hh.bin_path(), "--config", str(cfg), "--run-dir", str(run),
            "--state-dir", str(tmp_path / "st")]
    rng = random.Random(99)
    seen = {"bursts-grew": 0, "bad-slot": 0, "checks": {}}
    last_bursts = b""
    def heartbeat():
        try:
            return (run / "cpu-heartbeat").read_bytes()
        except FileNotFoundError:
            return None

    for i in range(RUNS):
        before = heartbeat()
        p = subprocess.Popen(base + ["agent"], stdout=subprocess.DEVNULL,
                             stderr=subprocess.PIPE)
        time.sleep(rng.uniform(0.1, 2.0))
        p.send_signal(signal.SIGKILL)
        _, err = p.communicate(timeout=10)
        hh.assert_no_sanitizer(err.decode(errors="replace"))
        files = sorted(os.listdir(run))
        assert not [f for f in files if f.endswith((".tmp", ".corrupt"))], files
        if (run / "cpu-heartbeat").exists():
            envelope_ok(run / "cpu-heartbeat", "cpu-heartbeat")
        if (run / "cpu-bursts").exists():
            b = envelope_ok(run / "cpu-bursts", "cpu-bursts")
            seen["bursts-grew"] += b != last_bursts
            last_bursts = b
        if (run / "cpu-history").exists():
            bad, _used = ring_bad_slots(run / "cpu-history")
            assert bad <= 1, bad
            seen["bad-slot"] += bad
        # the reader, right away (fresh heartbeat: it trusts and reads the files)
        c = subprocess.run(base + ["check", "cpu"], capture_output=True, text=True, timeout=30)
        hh.assert_no_sanitizer(c.stderr)
        assert c.returncode in (0, 1, 2), c
        assert "corrupt" not in c.stdout + c.stderr, c
        if c.returncode == 2:
            # only an agent killed before its first heartbeat may leave Unknown: "no sampler"
            # with no heartbeat at all, "sampler stale" with the one an earlier agent left (a
            # loaded machine: a cold make test saw one 6 s old)
            assert c.stdout.startswith("no sampler") or (
                c.stdout.startswith("sampler stale") and before is not None
                and heartbeat() == before), (c, before)
        seen["checks"][c.returncode] = seen["checks"].get(c.returncode, 0) + 1
    print("agent kill -9 x%d: %s" % (RUNS, seen))
    # the loop really raced the writers: bursts were recorded between kills, checks saw them
    assert seen["bursts-grew"] >= max(2, RUNS // 20), seen
    assert seen["checks"].get(1, 0) >= 1, seen


@needs_root
def test_check_ena_kill9_never_tears_state(tmp_path):
    ns = "czcrash%d" % os.getpid()
    subprocess.run(["ip", "netns", "add", ns], check=True)
    try:
        sh = lambda *c: subprocess.run(["ip", "netns", "exec", ns, *c], check=True,
                                       capture_output=True)
        sh("ip", "link", "add", "veth-a", "type", "veth", "peer", "name", "veth-b")
        sh("ip", "link", "set", "veth-a", "up")
        sh("ip", "link", "set", "veth-b", "up")
        st = tmp_path / "st"
        cfg = tmp_path / "cz.yaml"
        cfg.write_text("ena:\n  drivers: [veth]\n  min_read_interval: 0s\n"
                       "  reset_counters: [peer_ifindex]\n")
        cmd = ["ip", "netns", "exec", ns, hh.bin_path(), "--config", str(cfg), "--state-dir",
               str(st), "check", "ena"]
        first = subprocess.run(cmd, capture_output=True, text=True, timeout=30)
        assert first.returncode == 0, first
        rng = random.Random(7)
        outcomes = {"killed": 0, "finished": 0}
        prev = envelope_ok(st / "ena", "ena")
        for i in range(RUNS * 2):
            p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            time.sleep(rng.uniform(0, 0.004))
            p.send_signal(signal.SIGKILL)
            rc = p.wait()
            outcomes["killed" if rc == -9 else "finished"] += 1
            assert not [f for f in os.listdir(st) if f.endswith(".corrupt")], os.listdir(st)
            cur = envelope_ok(st / "ena", "ena")
            assert cur.startswith(b"read ") or cur == prev, cur[:100]
            prev = cur
        # NPD running checks concurrently, some of them killed: still never torn
        for i in range(RUNS // 4):
            ps = [subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                   text=True) for _ in range(6)]
            time.sleep(rng.uniform(0, 0.01))
            ps[i % 6].send_signal(signal.SIGKILL)
            for q in ps:
                out, err = q.communicate(timeout=30)
                assert q.returncode in (0, -9), (q.returncode, out, err)
                assert "corrupt" not in out + err, (out, err)
            envelope_ok(st / "ena", "ena")
            assert not [f for f in os.listdir(st) if f.endswith(".corrupt")], os.listdir(st)
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=30)
        assert r.returncode == 0 and "corrupt" not in r.stdout + r.stderr, r
        print("check ena kill -9 x%d: %s" % (RUNS * 2, outcomes))
        assert outcomes["killed"] >= RUNS // 4, outcomes
    finally:
        subprocess.run(["ip", "netns", "del", ns], check=False)


def metrics_whole(text):
    """The textfile as metrics_format() writes it: every family, ending in a whole line."""
    assert text.startswith("# HELP cpuzombie_agent_info "), text[:80]
    assert text.endswith("\n"), text[-80:]
    assert "# TYPE cpuzombie_condition_true gauge\n" in text, text[-200:]
    for line in text.splitlines():
        assert line.startswith("#") or re.match(r"^cpuzombie_\w+(\{.*\})? \S+$", line), line


def test_agent_kill9_never_tears_metrics(tmp_path):
    """The metrics textfile goes through the same atomic writer as the state files: the agent,
    killed at random moments while it rewrites the file every 100 ms, leaves the old or the new
    file, whole, and never a temporary file beside it in node_exporter's directory."""
    textdir = tmp_path / "st" / "textfile"     # a host file lies in the state dir
    textdir.mkdir(parents=True)
    prom = textdir / "cpuzombie.prom"
    cfg = tmp_path / "cz.yaml"
    cfg.write_text("agent:\n  check_interval: 100ms\n  metrics_textfile: %s\n"
                   "cpu:\n  inline_window: 0s\n" % prom)
    base = [hh.bin_path(), "--config", str(cfg), "--run-dir", str(tmp_path / "run"),
            "--state-dir", str(tmp_path / "st"), "--node-name", "crash-node"]
    rng = random.Random(2024)
    seen = {"changed": 0}
    last = None
    for i in range(max(10, RUNS // 2)):
        p = subprocess.Popen(base + ["agent"], stdout=subprocess.DEVNULL,
                             stderr=subprocess.PIPE)
        time.sleep(rng.uniform(0.2, 1.5))
        p.send_signal(signal.SIGKILL)
        _, err = p.communicate(timeout=10)
        hh.assert_no_sanitizer(err.decode(errors="replace"))
        left = sorted(os.listdir(textdir))
        assert left in ([], ["cpuzombie.prom"]), left
        if prom.exists():
            text = prom.read_text()
            metrics_whole(text)
            assert (prom.stat().st_mode & 0o777) == 0o644, oct(prom.stat().st_mode)
            seen["changed"] += text != last
            last = text
    print("metrics kill -9: %s" % seen)
    # the file really was rewritten between kills (each has a new timestamp)
    assert seen["changed"] >= 3, seen

"""Crash-safe state: SIGKILL check memcg at random moments while it replaces its state file
(what NPD's timeout does). Afterwards the file is always the old or the new version, never torn,
and nothing is ever moved aside as corrupt."""
import os
import random
import signal
import subprocess
import time
import zlib

import pytest

from conftest import FIXTURES

TREE = os.path.join(FIXTURES, "memcg", "v1-zombies")


def envelope(payload):
    return b"cpuzombie-state 1 memcg\n" + payload + b"end %08x\n" % zlib.crc32(payload)


def parse(data):
    head = b"cpuzombie-state 1 memcg\n"
    assert data.startswith(head), data
    body, trailer = data[len(head):-13], data[-13:]
    assert trailer == b"end %08x\n" % zlib.crc32(body), data
    return body


def test_kill9_never_tears_state(cz_bin, tmp_path):
    state = tmp_path / "state"
    state.mkdir()
    rng = random.Random(1234)
    outcomes = {"old": 0, "new": 0}
    runs = 500
    argv = [cz_bin, "--state-dir", str(state), "--proc-root", TREE + "/proc", "--sys-root",
            TREE + "/sys", "check", "memcg"]
    # the kills must land anywhere in a run, so the window is this binary's own run time
    # (measured, not assumed: an ASan build that loads libcurl, libsystemd and libbpf takes
    # several times the plain one's ~4 ms to reach the write)
    times = []
    for _ in range(7):
        (state / "memcg").write_bytes(envelope(b"s %d 12000\n" % (int(time.time() * 1000) -
                                                                  600000)))
        t0 = time.monotonic()
        subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        times.append(time.monotonic() - t0)
    window = sorted(times)[len(times) // 2] * 1.2
    for i in range(runs):
        # a sample 10 minutes old makes every run append one and rewrite the file
        old_payload = b"s %d 12000\n" % (int(time.time() * 1000) - 600000)
        (state / "memcg").write_bytes(envelope(old_payload))
        p = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(rng.uniform(0, window))
        p.send_signal(signal.SIGKILL)
        p.wait()
        body = parse((state / "memcg").read_bytes())
        if body == old_payload:
            outcomes["old"] += 1
        else:
            assert body.startswith(old_payload) and body.count(b"\n") == 2, body
            outcomes["new"] += 1
        assert not (state / "memcg.corrupt").exists()
    # the kills landed on both sides of the rename, or the test proved nothing
    assert outcomes["old"] > 0 and outcomes["new"] > 0, (outcomes, window)
    left = sorted(os.listdir(state))
    assert set(left) <= {"memcg", "memcg.lock", "memcg.tmp"}, left


def test_state_saved_without_proc(cz_bin, tmp_path):
    """The writer names its new file through /proc/self/fd (O_TMPFILE + linkat). A container
    without /proc still gets its state: the writer falls back to writing <name>.tmp by name, and
    a stale one from a killed writer is replaced."""
    if os.geteuid() != 0:
        pytest.skip("needs root: hides /proc in a private mount namespace")
    if "build-asan" in cz_bin:
        pytest.skip("ASan's runtime reads /proc/self/maps at start; the plain pass runs this")
    state = tmp_path / "state"
    state.mkdir()
    (state / "memcg.tmp").write_bytes(b"half a file from a killed writer")
    payload = b"s %d 12000\n" % (int(time.time() * 1000) - 600000)
    (state / "memcg").write_bytes(envelope(payload))
    script = ('mount --make-rprivate / && mount -t tmpfs -o size=1m none /proc && '
              'test ! -e /proc/self/fd && exec "$@"')
    r = subprocess.run(["unshare", "-m", "sh", "-c", script, "sh", cz_bin, "--state-dir",
                        str(state), "--proc-root", TREE + "/proc", "--sys-root", TREE + "/sys",
                        "check", "memcg"], capture_output=True, text=True, timeout=30)
    assert r.returncode == 1, r                      # the zombie fixture is a problem
    assert "state" not in r.stderr, r.stderr         # no "Failed to save state" warning
    body = parse((state / "memcg").read_bytes())
    assert body.startswith(payload) and body.count(b"\n") == 2, body   # one sample appended
    assert sorted(os.listdir(state)) == ["memcg", "memcg.lock"], os.listdir(state)

"""The agent follows the kernel log (agent.kmsg): records of facility 0 only, resumed by sequence
number, into the run dir's kernel-event log that `check ena` reads. A FIFO stands in for
/dev/kmsg so the test can write kernel-facility records; one test writes to the real /dev/kmsg
(where user space can only ever write facility >= 1) and proves the agent reads past it and
records nothing."""
import json
import os
import subprocess
import time

import pytest

from conftest import is_root
from proc_helpers import stop


def mono_us():
    return int(time.clock_gettime(time.CLOCK_MONOTONIC) * 1e6)


def events_file(run):
    p = os.path.join(run, "kernel-events")
    return open(p).read() if os.path.exists(p) else ""


def wait_for(pred, timeout=20.0):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        v = pred()
        if v:
            return v
        time.sleep(0.1)
    return pred()


def start_agent(cz_bin, tmp_path, kmsg):
    cfg = tmp_path / "cz.yaml"
    (tmp_path / "state").mkdir(exist_ok=True)
    prom = tmp_path / "state" / "cz.prom"      # a host file lies in the state dir
    cfg.write_text(f"agent:\n  kmsg: {kmsg}\n  check_interval: 1s\n  metrics_textfile: {prom}\n"
                   "cpu:\n  attribute_tasks: false\n")
    run = tmp_path / "run"
    cmd = [cz_bin, "--config", str(cfg), "--run-dir", str(run), "--state-dir",
           str(tmp_path / "state"), "agent"]
    err = open(tmp_path / "agent.err", "w")
    return subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=err), str(run), str(cfg)


@pytest.fixture
def fifo(tmp_path):
    path = tmp_path / f"kmsg-{os.getpid()}.fifo"
    os.mkfifo(path)
    return str(path)


def test_fifo_reset_to_check_ena(cz_bin, cz, tmp_path, fifo):
    """Records as the driver prints them (driver without reason counters: the upstream texts) go
    through the agent into ENADeviceReset; a user-facility record saying the same is ignored."""
    p, run, cfg = start_agent(cz_bin, tmp_path, fifo)
    try:
        w = os.open(fifo, os.O_WRONLY)  # blocks until the agent has it open for reading
        now = mono_us()
        recs = [
            # facility 1 (user): what `echo ... > /dev/kmsg` produces; must never count
            f"12,1233,{now},-;ena 0000:00:05.0 eth0: Keep alive watchdog timeout.",
            f"14,1234,{now},-;watchdog: BUG: soft lockup - CPU#1 stuck for 40s! [forged:7]",
            # facility 0: the kernel (in-tree ena_netdev.c texts)
            f"3,1235,{now},-;ena 0000:00:05.0 eth0: The number of lost tx completions is above "
            "the threshold (156 > 128). Reset the device",
            " SUBSYSTEM=net",
            " DEVICE=n2",
            f"3,1236,{now + 1000},-;ena 0000:00:05.0 eth0: Trigger reset is on",
            f"3,1237,{now + 1100},-;ena 0000:00:05.0 eth0: tx_timeout: 0",
            f"3,1238,{now + 900000},-;ena 0000:00:05.0: Device reset completed successfully",
        ]
        lockup = (f"0,1239,{now + 950000},-;watchdog: BUG: soft lockup - CPU#37 stuck for 23s! "
                  "[kubelet:2212]")
        os.write(w, ("\n".join(recs + [lockup]) + "\n").encode())
        text = wait_for(lambda: "CPU#37" in events_file(run) and events_file(run))
        assert text, open(tmp_path / "agent.err").read()
        assert "next_seq 1240" in text and "count ena_tx_lost 1" in text
        assert "count ena_stat 1" in text and "tx_timeout: 0" not in text  # counted, not kept
        assert "Keep alive" not in text and "forged" not in text and "count soft_lockup 1" in text
        r = cz("--config", cfg, "--run-dir", run, "check", "ena", check=1)
        assert r.line == ("eth0 1 reset/1h: lost Tx completions 156 > 128 (cpu37 soft lockup "
                          "kubelet); kernel log")
        # check cpu: the soft lockup is a 23 s burst on its CPU, with the task it names
        r = cz("--config", cfg, "--run-dir", run, "check", "cpu", check=1)
        assert r.line.startswith("cpu37 100% sys 23.0s x1/10m; top kubelet 23.0s"), r
        assert r.line.endswith("1 soft lockup (kernel log)"), r
        # metrics (the agent's textfile) and the report see the same log
        prom = str(tmp_path / "state" / "cz.prom")
        assert wait_for(lambda: os.path.exists(prom) and 'cpuzombie_kernel_events_total{kind="ena_tx_lost"} 1\n'
                        in open(prom).read()), open(prom).read() if os.path.exists(prom) else ""
        m = open(prom).read()
        assert 'cpuzombie_kernel_events_total{kind="soft_lockup"} 1\n' in m
        assert 'cpuzombie_kernel_events_total{kind="ena_stat"} 1\n' in m
        rep = json.loads(cz("--config", cfg, "--run-dir", run, "report", "--json", check=None).out)
        kinds = [e["kind"] for e in rep["kernel"]["events"]]
        assert kinds == ["ena_tx_lost", "ena_reset_trigger", "ena_reset", "soft_lockup"], kinds
        assert rep["kernel"]["events"][3]["cpu"] == 37 and rep["kernel"]["events"][3]["task"] == "kubelet"
        # a later record with a gap in the sequence: 1240 lost, counted
        os.write(w, f"4,1241,{mono_us()},-;ena 0000:00:05.0 eth0: Keep alive watchdog timeout.\n"
                 .encode())
        assert wait_for(lambda: "lost 1\n" in events_file(run))
        os.close(w)
    finally:
        assert stop(p, 20, strict=True) == 0
    # resume: a new agent on the same run dir skips what was read (same seqs fed again)
    p, run, cfg = start_agent(cz_bin, tmp_path, fifo)
    try:
        w = os.open(fifo, os.O_WRONLY)
        os.write(w, ("\n".join(recs) + "\n").encode())
        os.write(w, f"3,1242,{mono_us()},-;ena 0000:00:05.0 eth0: Trigger reset is on\n".encode())
        assert wait_for(lambda: "next_seq 1243" in events_file(run))
        text = events_file(run)
        assert "count ena_tx_lost 1\n" in text and "count ena_reset_trigger 2\n" in text
        os.close(w)
    finally:
        assert stop(p, 20, strict=True) == 0
    r = cz("--config", cfg, "--run-dir", run, "check", "ena", check=1)
    assert r.line.startswith("eth0 2 resets/1h: keep-alive watchdog timeout"), r
    assert r.line.endswith("; kernel log"), r


def test_missing_kmsg_path_is_not_fatal(cz_bin, tmp_path):
    p, run, _ = start_agent(cz_bin, tmp_path, str(tmp_path / "no-such-kmsg"))
    try:
        assert wait_for(lambda: os.path.exists(os.path.join(run, "cpu-heartbeat")))
        assert p.poll() is None
    finally:
        assert stop(p, 20, strict=True) == 0
    assert "Failed to follow the kernel log" in open(tmp_path / "agent.err").read()


def kmsg_seq_of(marker):
    """The sequence number of our own record in the real /dev/kmsg, read like the agent does."""
    fd = os.open("/dev/kmsg", os.O_RDONLY | os.O_NONBLOCK)
    try:
        seq = None
        while True:
            try:
                rec = os.read(fd, 8192).decode(errors="replace")
            except BlockingIOError:
                return seq
            except BrokenPipeError:
                continue
            if marker in rec:
                head = rec.split(";", 1)[0].split(",")
                seq = (int(head[0]), int(head[1]))
    finally:
        os.close(fd)


@pytest.mark.skipif(not is_root(), reason="writing to /dev/kmsg needs root")
def test_real_kmsg_user_line_ignored(cz_bin, cz, tmp_path):
    """A root process writes an ENA reset line to the real /dev/kmsg, even asking for priority
    <0> (kernel facility): the kernel stores it as facility 1 (devkmsg_write() never lets user
    space write facility 0), the agent reads past it and records nothing; check ena stays OK."""
    if not os.path.exists("/dev/kmsg"):
        pytest.skip("no /dev/kmsg")
    marker = f"cpuzombie-test-{os.getpid()}-{time.time_ns()}"
    p, run, cfg = start_agent(cz_bin, tmp_path, "/dev/kmsg")
    try:
        with open("/dev/kmsg", "w") as k:
            k.write(f"<3>ena 0000:00:05.0 eth0: Keep alive watchdog timeout. {marker}\n")
        with open("/dev/kmsg", "w") as k:
            k.write(f"<0>ena 0000:00:05.0 eth0: Trigger reset is on {marker}\n")
        pri_seq = kmsg_seq_of(marker)
        assert pri_seq is not None, "our record is not in /dev/kmsg"
        pri, seq = pri_seq
        assert pri >> 3 != 0, f"user space wrote facility 0: PRI {pri}"
        # the agent has read past our records (its resume point moved beyond them) ...
        def read_past():
            t = events_file(run)
            for line in t.splitlines():
                if line.startswith("next_seq ") and line[9:].isdigit():
                    return int(line[9:]) > seq
            return False
        assert wait_for(read_past, timeout=30), events_file(run)
    finally:
        assert stop(p, 20, strict=True) == 0
    # ... and kept nothing of them
    assert marker not in events_file(run)
    r = cz("--config", cfg, "--run-dir", run, "check", "ena", check=None)
    assert "kernel log" not in r.out and "eth0" not in r.out, r

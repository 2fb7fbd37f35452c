"""Mid-burst links: while a real burst still runs, `check cpu`, `report`, `report
--json` and `report --svg` name the NIC queue the core serves and the kernel function of its
profile so far, as they do after it, marked as going on.

A 9 s one-core system-time burst (dd reading /dev/zero, SCHED_FIFO, cpu_helpers' lock) under a
real `cpuzombie agent`, which drains its profile every cpu.interval (250 ms) and becomes a burst
at cpu.min_burst (2 s): at second 5 the profile has been drained ~20 times, so this is "longer
than the first drain" by far. The NIC IRQs are the machine's own (sysfs and /proc/interrupts,
as test_cpu reads them).
"""
import json
import os
import re
import time

import pytest

from cpu_helpers import burn_lock, burning_locked
from live_helpers import (ZERO_PATH, cz_run, heartbeat_active, heartbeat_field, hot_core,
                          nic_irqs_for_cpu, start_agent)
from proc_helpers import stop

needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="needs root: a CPU-wide perf event, "
                                "kallsyms addresses, IRQ affinities and an RT burner")
needs_2cpu = pytest.mark.skipif(os.cpu_count() < 2, reason="needs 2 CPUs: one to burn")


def wait_active_with_hot(run_dir, cpu, timeout=8.0):
    """The heartbeat line of @cpu's burst once it names a hot frame (None after @timeout)."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        for a in heartbeat_active(run_dir):
            if int(a[1]) == cpu and heartbeat_field(a, "hot"):
                return a
        time.sleep(0.1)
    return None


@needs_root
@needs_2cpu
def test_mid_burst_names_queue_and_function_everywhere(tmp_path):
    run_dir = tmp_path / "run"
    hot = hot_core()
    want_irqs = nic_irqs_for_cpu(hot)
    prom = tmp_path / "run-state" / "cz.prom"     # start_agent's state dir: host files lie there
    prom.parent.mkdir(exist_ok=True)
    cfg = tmp_path / "cz.yaml"
    cfg.write_text(f"agent:\n  metrics_textfile: {prom}\n  check_interval: 1s\n")

    def ongoing_metric():
        try:
            m = re.search(rf'^cpuzombie_cpu_burst_ongoing{{cpu="{hot}"}} (\d)$', prom.read_text(),
                          re.M)
        except OSError:
            return None
        return m and int(m.group(1))

    with burn_lock():
        agent = start_agent(run_dir, config=cfg)
        try:
            time.sleep(1.0)
            with burning_locked(hot) as burner:
                t0 = time.time()
                hb = wait_active_with_hot(run_dir, hot)
                time.sleep(max(0.0, 5.0 - (time.time() - t0)))
                check = cz_run(run_dir, tmp_path / "s1", "check", "cpu")
                text = cz_run(run_dir, tmp_path / "s2", "report")
                js = cz_run(run_dir, tmp_path / "s3", "report", "--json")
                svg = tmp_path / "mid.svg"
                sv = cz_run(run_dir, tmp_path / "s4", "report", "--svg", str(svg))
                metric_mid = ongoing_metric()
                # the burst is still going on when every command above has answered
                still = burner.poll() is None and any(
                    int(a[1]) == hot for a in heartbeat_active(run_dir))
                time.sleep(max(0.0, 9.0 - (time.time() - t0)))
            time.sleep(1.0)
            after = cz_run(run_dir, tmp_path / "s5", "check", "cpu")
            deadline = time.time() + 5
            while ongoing_metric() != 0 and time.time() < deadline:
                time.sleep(0.2)
            metric_after = ongoing_metric()
        finally:
            stop(agent)
    assert still, "the burst ended before the mid-burst commands were done"
    assert hb, (run_dir / "cpu-heartbeat").read_text()
    assert ZERO_PATH.search(heartbeat_field(hb, "hot")), hb

    # check cpu mid-burst: the queue, the task and the function, and that it is going on
    assert check.returncode == 1, (check.stdout, check.stderr)
    line = check.stdout.strip()
    assert line.startswith(f"cpu{hot} "), line
    m = re.search(r"top dd [\d.]+s in (\S+) (\d+)%", line)
    assert m and ZERO_PATH.search(m.group(1)), line
    if want_irqs:
        s = re.search(r"serves ([^;\s]+)", line)
        assert s and s.group(1) in want_irqs, (line, want_irqs)
    else:
        assert "serves " not in line, line
    assert "burst ongoing" in line, line
    # ...and after it the same links, no longer marked as going on
    assert after.returncode == 1 and "burst ongoing" not in after.stdout, after.stdout
    assert re.search(r"top dd [\d.]+s in \S+ \d+%", after.stdout), after.stdout
    if want_irqs:
        assert re.search(r"serves ([^;\s]+)", after.stdout).group(1) in want_irqs, after.stdout

    # report text: the ongoing row ("+"), its NIC IRQs and the recorded profile so far
    out = text.stdout
    assert text.returncode in (0, 1), (text.returncode, text.stderr)
    row = re.search(rf"^  cpu{hot}\s+\S+\s+[\d.]+s\+.*$", out, re.M)
    assert row and " dd" in row.group(0), out
    if want_irqs:
        n = re.search(r"NIC IRQs on this core: (\S+)", out)
        assert n and set(n.group(1).split(",")) == want_irqs, out
    r = re.search(r"recorded profile: (\S+), (\d+) samples, hot (\S+) \d+%", out)
    assert r and int(r.group(2)) > 0 and ZERO_PATH.search(r.group(3)), out
    assert re.search(r"dd;.*(read_iter_zero|read_zero|iov_iter_zero|clear_user)", out), out

    # report --json: the same burst, ongoing, with its queue and hot frame
    doc = json.loads(js.stdout)
    b = [x for x in doc["cores"]["bursts"] if x["cpu"] == hot]
    assert len(b) == 1 and b[0]["ongoing"] is True, b
    assert set(b[0]["nic_irqs"]) == want_irqs, (b[0]["nic_irqs"], want_irqs)
    assert ZERO_PATH.search(b[0]["profile"]["hot_frame"]), b[0]
    assert b[0]["profile"]["top"], b[0]

    # the metrics (agent.metrics_textfile): the burst counts, marked as going on, then not
    assert metric_mid == 1 and metric_after == 0, (metric_mid, metric_after)

    # report --svg: the burst marker's tooltip names the function and the queue
    assert sv.returncode in (0, 1), sv.stderr
    body = svg.read_text()
    assert ZERO_PATH.search(body), "the ongoing burst's tooltip names the function"
    for q in want_irqs:
        assert q in body, q


@needs_root
@needs_2cpu
def test_condition_patched_when_the_run_crosses_min_burst(kube, tmp_path):
    """agent.set_conditions with agent.check_interval 1h: after the first cycle (at start) no
    periodic cycle can come during the test, so CPUCoreSaturation True on the real API server
    can only be the event-driven PATCH (plugin/agent/trigger.h), sent when the run crossed
    cpu.min_burst, while the burst still ran: its message says so and names the links."""
    import kube_helpers as kh

    node = "mid-1"
    kube.add(kh.node_obj(node))
    kc = kube.kubeconfig(str(tmp_path / "kc"), node=node)
    cfg = tmp_path / "cz.yaml"
    cfg.write_text("kubernetes:\n  node_name: %s\n  kubeconfig: %s\n  timeout: 5s\n"
                   "agent:\n  set_conditions: true\n  remediate: false\n  check_interval: 1h\n"
                   "remediation:\n  mode: \"off\"\n" % (node, kc))
    run_dir = tmp_path / "run"
    hot = hot_core()

    def cpu_cond():
        for c in kube.node(node)["status"].get("conditions", []):
            if c["type"] == "CPUCoreSaturation":
                return c
        return None

    def wait(pred, timeout):
        deadline = time.time() + timeout
        while time.time() < deadline:
            c = cpu_cond()
            if c and pred(c):
                return c
            time.sleep(0.1)
        return cpu_cond()

    with burn_lock():
        agent = start_agent(run_dir, config=cfg)
        try:
            first = wait(lambda c: c["status"] == "False", 30)
            assert first and first["status"] == "False", first
            mark = kube.proxy.seq
            with burning_locked(hot):
                c = wait(lambda c: c["status"] == "True", 8)
                during = any(int(a[1]) == hot for a in heartbeat_active(run_dir))
            time.sleep(0.5)
        finally:
            stop(agent)
        err = agent.stderr.read()
    assert c and c["status"] == "True", (c, err[-2000:])
    assert c["reason"] == "CoreSaturationBursts", c
    msg = c["message"]
    assert msg.startswith(f"cpu{hot} ") and "burst ongoing" in msg, msg
    assert re.search(r"top dd [\d.]+s", msg), msg
    assert during, "the burst was over when the condition came"
    # the PATCH came from the agent's ServiceAccount, and from the trigger (its log line)
    patches = [e for e in kube.log(mark) if e["method"] == "PATCH"
               and e["path"] == f"/api/v1/nodes/{node}/status"]
    assert patches and all(e["user"].endswith(":cpuzombie") for e in patches), patches
    assert all(e["status"] == 200 for e in patches), patches
    # rate limit: one PATCH of the condition for one burst (the gap is 5 s; no cycle in 1h)
    assert len(patches) == 1, patches
    assert "trigger: conditions: 1 set, 1 changed" in err, err[-2000:]


def test_kernel_logged_ena_reset_patches_its_condition_at_once(kube, tmp_path):
    """The same for a kernel-logged ENA reset: agent.kmsg is a FIFO standing in for /dev/kmsg
    (test_kmsg.py), agent.check_interval 1h, so ENADeviceReset True can only come from the
    trigger the kernel-log record set off."""
    import kube_helpers as kh

    node = "mid-ena"
    kube.add(kh.node_obj(node))
    kc = kube.kubeconfig(str(tmp_path / "kc"), node=node)
    fifo = tmp_path / "kmsg.fifo"
    os.mkfifo(fifo)
    cfg = tmp_path / "cz.yaml"
    cfg.write_text("kubernetes:\n  node_name: %s\n  kubeconfig: %s\n  timeout: 5s\n"
                   "agent:\n  set_conditions: true\n  remediate: false\n  check_interval: 1h\n"
                   "  kmsg: %s\nremediation:\n  mode: \"off\"\ncpu:\n  attribute_tasks: false\n"
                   % (node, kc, fifo))
    run_dir = tmp_path / "run"

    def ena_cond():
        for c in kube.node(node)["status"].get("conditions", []):
            if c["type"] == "ENADeviceReset":
                return c
        return None

    def wait(pred, timeout):
        deadline = time.time() + timeout
        while time.time() < deadline:
            c = ena_cond()
            if c and pred(c):
                return c
            time.sleep(0.1)
        return ena_cond()

    agent = start_agent(run_dir, config=cfg)
    try:
        w = os.open(fifo, os.O_WRONLY)   # the agent has it open
        first = wait(lambda c: c["status"] != "True", 30)
        assert first and first["status"] != "True", first
        mark = kube.proxy.seq
        now = int(time.clock_gettime(time.CLOCK_MONOTONIC) * 1e6)
        os.write(w, (f"3,500,{now},-;ena 0000:00:05.0 eth0: The number of lost tx completions "
                     "is above the threshold (156 > 128). Reset the device\n"
                     f"3,501,{now + 1000},-;ena 0000:00:05.0 eth0: Trigger reset is on\n")
                 .encode())
        c = wait(lambda c: c["status"] == "True", 15)
        os.close(w)
    finally:
        stop(agent)
    err = agent.stderr.read()
    assert c and c["status"] == "True", (c, err[-2000:])
    assert c["reason"] == "ENAResetsDetected" and c["message"].startswith("eth0 1 reset/1h"), c
    patches = [e for e in kube.log(mark) if e["method"] == "PATCH"
               and e["path"] == f"/api/v1/nodes/{node}/status"]
    assert len(patches) == 1 and patches[0]["status"] == 200, patches
    assert "trigger: conditions: 2 set" in err, err[-2000:]

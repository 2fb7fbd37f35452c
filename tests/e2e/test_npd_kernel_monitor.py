# SPDX-License-Identifier: MIT
"""config/npd-log/cpuzombie-kernel-monitor.json, NPD's own kernel log monitor (system-log-monitor,
kmsg source) for the ENA and lockup lines, as events only: no condition of its own and none of
the custom-plugin conditions (ENADeviceReset, CPUCoreSaturation), so the two never fight.

Each rule's pattern is checked against the driver's and the kernel's lines (the sourced texts of
tests/fixtures/klog); the real node-problem-detector, v0.8.20 (../shared/bin), v1.34.0 and
v1.36.0 (the chart's; tests/tools/kube/build.sh), then runs the shipped file unchanged, and a line written to
the real /dev/kmsg makes it emit the event.

What this can and cannot prove: user space cannot write a kernel-facility record (the kernel
turns facility 0 into 1 in devkmsg_write()), so the line is a user-facility one; NPD's kmsg
watcher (pkg/systemlogmonitor/logwatchers/kmsg) never looks at the facility, so it reacts all
the same. That proves NPD loads the file, compiles every pattern and matches the driver's text;
it also shows why these rules only make events: any root process can trigger them, while
`cpuzombie agent` (agent.kmsg) counts facility 0 only (tests/e2e/test_kmsg.py)."""
import json
import os
import re
import subprocess
import time
import urllib.request

import pytest

import npd_helpers as nh
from conftest import FIXTURES, ROOT, is_root
from proc_helpers import stop

CONFIG = os.path.join(ROOT, "config", "npd-log", "cpuzombie-kernel-monitor.json")
KLOG = os.path.join(FIXTURES, "klog")

# rule reason -> message texts it must match (from the sourced fixtures and test_klog.c rows)
MUST = {
    "ENAPollStarvation": [
        "ena 0000:20:03.0 eth0: napi handler hasn't been called for a long time but is scheduled"],
    "ENATxTimeout": [
        "ena 0000:20:03.0 eth0: TX q 5 is paused for too long (threshold 5000000). Time since "
        "last napi 6596000 usec. napi scheduled: 1",
        "ena 0000:00:05.0 eth0: TX q 2 is paused for too long (threshold 5000000). usecs since "
        "napi 7001000. napi scheduled: 1. napi CPU: 11. msecs since interrupt: 7001"],
    "ENALostTxCompletions": [
        "ena 0000:00:05.0 eth0: The number of lost tx completions is above the threshold "
        "(156 > 128). Reset the device",
        "ena 0000:00:05.0 eth0: Lost TX completions are above the threshold (156 > 128). "
        "Completion transmission timeout: 5000 (msec). 10240 msecs since last interrupt, 10240 "
        "msecs since last napi execution.",
        "ena 0000:00:05.0 eth0: [1/2] Lost TX completions are above threshold (156 > 128), "
        "completion timeout: 5000 (msec), 10240 msecs since interrupt, 10240 msecs since napi, "
        "qid: 2"],
    "ENAMissingInterrupt": [
        "ena 0000:00:05.0 eth0: Potential MSIX issue on Rx side Queue = 3. Reset the device"],
    "ENAKeepAliveTimeout": [
        "ena 0000:00:06.0 eth1: Keep alive watchdog timeout.",
        "ena 0000:00:05.0 eth0: Keep alive watchdog timeout, 6012 msecs since last keep alive."],
    "ENAAdminQueueTimeout": [
        "ena 0000:00:05.0 eth0: ENA admin queue is not in running state!",
        "ena 0000:00:05.0: The ena device didn't send a completion for the admin cmd 11 status 0"],
    "ENADeviceRequestedReset": [
        "ena 0000:00:05.0 eth0: The device has detected an unhealthy state, reset is requested"],
    "ENAResetTriggered": ["ena 0000:20:03.0 eth0: Trigger reset is on",
                          "ena 0000:00:05.0 eth0: Destroy failure, restarting device"],
    "ENAResetCompleted": [
        "ena 0000:20:03.0: Device reset completed successfully, Driver info: Elastic Network "
        "Adapter (ENA) v2.11.0g",
        "ena 0000:00:05.0: Device reset completed successfully",
        "ena 0000:00:05.0: Device reset completed, status: 0, Driver info: Elastic Network "
        "Adapter (ENA) v2.17.0g"],
    "ENAResetFailed": [
        "ena 0000:00:05.0: Reset attempt failed. Can not reset the device",
        "ena 0000:00:05.0: Device reset completed, status: -110, Driver info: Elastic Network "
        "Adapter (ENA) v2.17.0g"],
    "SoftLockup": ["watchdog: BUG: soft lockup - CPU#3 stuck for 23s! [kubelet:2212]",
                   "NMI watchdog: BUG: soft lockup - CPU#7 stuck for 22s! [kworker/7:1:88]"],
    "HardLockup": ["watchdog: Watchdog detected hard LOCKUP on cpu 5",
                   "watchdog: CPU3: Watchdog detected hard LOCKUP on cpu 4"],
    "RCUStall": ["rcu: INFO: rcu_preempt self-detected stall on CPU",
                 "INFO: rcu_sched detected stalls on CPUs/tasks: { 6} (detected by 2, t=60002 "
                 "jiffies)"],
    "NetdevWatchdog": ["NETDEV WATCHDOG: eth0 (ena): transmit queue 5 timed out",
                       "ena 0000:00:05.0 eth0: NETDEV WATCHDOG: CPU: 1: transmit queue 3 timed "
                       "out 5376 ms"],
}
MUST_NOT = ["ena 0000:00:05.0 eth0: Link is up", "ena 0000:00:05.0 eth0: tx_timeout: 1",
            "ixgbe 0000:03:00.0 eth2: Trigger reset is on",
            "ena 0000:00:05.0: Elastic Network Adapter (ENA) v2.11.0g"]


def load():
    with open(CONFIG) as f:
        return json.load(f)


def matches(pattern, msg):
    # NPD: regexp.Compile(pattern + `\z`) searched in the buffered lines (log_buffer.go)
    return re.search("(?:" + pattern + r")\Z", msg) is not None


def test_config_shape_events_only():
    cfg = load()
    assert cfg["plugin"] == "kmsg" and cfg["source"] == "cpuzombie-kernel-monitor"
    assert cfg["conditions"] == []
    assert all(r["type"] == "temporary" and "condition" not in r for r in cfg["rules"])
    reasons = [r["reason"] for r in cfg["rules"]]
    assert len(reasons) == len(set(reasons)) and set(reasons) == set(MUST)
    # none of the custom-plugin conditions' reasons (config/npd/*.json)
    for f in os.listdir(os.path.join(ROOT, "config", "npd")):
        with open(os.path.join(ROOT, "config", "npd", f)) as fh:
            other = json.load(fh)
        taken = {r.get("reason") for r in other.get("rules", [])}
        taken |= {c.get("reason") for c in other.get("conditions", [])}
        assert not taken & set(reasons), f


def test_every_rule_matches_the_sourced_lines():
    rules = {r["reason"]: r["pattern"] for r in load()["rules"]}
    for reason, msgs in MUST.items():
        for m in msgs:
            hit = [r for r, p in rules.items() if matches(p, m)]
            assert hit == [reason], (m, hit)
    for m in MUST_NOT:
        assert not [r for r, p in rules.items() if matches(p, m)], m
    # the fixture pastes' kernel lines hit the rules their events say they should
    with open(os.path.join(KLOG, "incident-2.11.0g.dmesg")) as f:
        msgs = [re.sub(r"^\[[ 0-9.]+\] ", "", l.rstrip("\n")) for l in f]
    hits = sorted({r for m in msgs for r, p in rules.items() if matches(p, m)})
    assert hits == ["ENAPollStarvation", "ENAResetCompleted", "ENAResetTriggered",
                    "ENATxTimeout", "NetdevWatchdog"]


def counter(port, reason):
    with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % port, timeout=5) as r:
        text = r.read().decode()
    m = re.search(r'^problem_counter\{reason="%s"\} (\S+)$' % reason, text, re.M)
    return float(m.group(1)) if m else 0.0


@pytest.mark.skipif(not is_root(), reason="NPD's kmsg watcher and the write to /dev/kmsg need root")
@pytest.mark.parametrize("version", nh.version_params())
def test_real_npd_loads_it_and_reacts_to_a_line(tmp_path, version):
    if not os.path.exists("/dev/kmsg"):
        pytest.skip("no /dev/kmsg")
    binary = nh.npd_for(version)
    port = nh.free_port()
    log = tmp_path / "npd.log"
    p = subprocess.Popen([binary, "--config.system-log-monitor=" + CONFIG,
                          "--config.custom-plugin-monitor=", "--enable-k8s-exporter=false",
                          "--hostname-override=npd-klog-%d" % os.getpid(),
                          "--prometheus-address=127.0.0.1", "--prometheus-port=%d" % port,
                          "--logtostderr"], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                         stderr=open(log, "w"))
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                counter(port, "ENAKeepAliveTimeout")
                break
            except OSError:
                assert p.poll() is None and time.monotonic() < deadline, log.read_text()[-3000:]
                time.sleep(0.2)
        time.sleep(3)  # the watcher replays the last 5 min (lookback) first; let it settle
        before = counter(port, "ENAKeepAliveTimeout")
        marker = "cz-npd-%d-%d" % (os.getpid(), time.time_ns())
        with open("/dev/kmsg", "w") as k:
            k.write("%s (test line, not a real reset) ena 0000:00:05.0 eth9: Keep alive "
                    "watchdog timeout.\n" % marker)
        deadline = time.monotonic() + 30
        while counter(port, "ENAKeepAliveTimeout") <= before and time.monotonic() < deadline:
            time.sleep(0.3)
        assert counter(port, "ENAKeepAliveTimeout") == before + 1, log.read_text()[-3000:]
        assert p.poll() is None
        text = log.read_text()
        assert "cpuzombie-kernel-monitor" in text  # NPD started the monitor with our source
        assert marker in text  # and logged the event it made of our line
    finally:
        stop(p, 15)

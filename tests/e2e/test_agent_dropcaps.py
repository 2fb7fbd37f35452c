# SPDX-License-Identifier: MIT
"""The agent holds CAP_PERFMON and CAP_SYSLOG only while it starts (issue #38).

It opens one disabled perf event per CPU and reads /proc/kallsyms's real addresses at start, then
drops every capability nothing later needs (agent/privdrop.h) before it starts a thread: a
compromised agent then cannot read another process's /proc/PID/environ, which CAP_PERFMON alone
allows (the kernel's mm_access() lets a perfmon_capable() caller's PTRACE_MODE_READ through;
test_privilege_ptrace.py measures it), nor its /proc/PID/root (the gid check).

Started as the chart starts it (setpriv: uid 0, gid nodeGroups.agent 64391, exactly PERFMON and
SYSLOG in the bounding set, no_new_privs, the chart's config: no kmsg, no census), measured on
the real kernel:
- every thread of the running agent has CapEff, CapPrm, CapInh and CapAmb 0; its bounding set
  keeps PERFMON and SYSLOG because PR_CAPBSET_DROP needs CAP_SETPCAP, which the chart does not
  give (the start line says so; no_new_privs makes the bounding set inert: no execve() can
  raise anything). Given CAP_SETPCAP too, CapBnd is 0 as well;
- a real one-core burst still gets a profile with kernel symbols (the events opened at start,
  enabled without a capability);
- a process with the agent's exact credentials after the drop (read from its /proc status) is
  refused an NPD-like target's environ and root (uid 0, gid 64390, no capability), while one
  with the credentials the agent started with (PERFMON) reads that environ: the probe can
  succeed, so its refusal means something.
"""
import json
import os
import re
import shutil
import subprocess
import sys
import time

import pytest

import proc_helpers as ph
from cpu_helpers import burn_lock, burning_locked

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
AGENT_GID, NPD_GID = 64391, 64390      # the chart's nodeGroups.agent, nodeGroups.npd
CAP = {"setpcap": 8, "sys_ptrace": 19, "sys_admin": 21, "syslog": 34, "perfmon": 38, "bpf": 39}
ZERO_PATH = re.compile(r"read_iter_zero|read_zero|iov_iter_zero|clear_user")
SECRET = "cz-dropcaps-secret"

pytestmark = [
    pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("setpriv"),
                       reason="needs root and setpriv"),
    pytest.mark.skipif(os.cpu_count() < 2, reason="needs 2 CPUs: one to burn"),
]

# The chart's agent config as far as capabilities go (charts/cpuzombie: agent.kmsg "" and,
# with zombieCensus off, memcg.census_interval 0)
CONFIG = "agent:\n  kmsg: \"\"\nmemcg:\n  census_interval: 0\n"

PROBE = r"""
import errno, json, os, sys
pid = sys.argv[1]
out = {}
try:
    out["root"] = "ok:%d" % len(os.listdir("/proc/%s/root" % pid))
except OSError as e:
    out["root"] = errno.errorcode.get(e.errno, str(e.errno))
try:
    with open("/proc/%s/environ" % pid, "rb") as f:
        out["environ"] = "ok:%d" % f.read().count(b"CZ_SECRET")
except OSError as e:
    out["environ"] = errno.errorcode.get(e.errno, str(e.errno))
print(json.dumps(out))
"""


def cz(*args):
    return [os.environ.get("CZ_BIN") or os.path.join(ROOT, "build", "cpuzombie"), *args]


def names(mask):
    return sorted(n for n, b in CAP.items() if mask >> b & 1) + \
        ["cap_%d" % b for b in range(64) if mask >> b & 1 and b not in CAP.values()]


def setpriv(uid, gid, eff=(), bounding=None):
    """@uid:@gid holding exactly @eff (as ambient capabilities: they survive the exec; uid 0's
    own rule is off, SECBIT_NOROOT), the bounding set @bounding (default: @eff), no groups,
    no_new_privs."""
    eff = list(eff)
    bnd = list(eff if bounding is None else bounding)
    return ["setpriv", "--reuid", str(uid), "--regid", str(gid), "--clear-groups",
            "--securebits", "+noroot,+noroot_locked",
            "--inh-caps", ",".join(["-all"] + ["+" + c for c in eff]),
            "--ambient-caps", ",".join(["-all"] + ["+" + c for c in eff]),
            "--bounding-set", ",".join(["-all"] + ["+" + c for c in bnd]),
            "--no-new-privs", "--"]


def chart_like(caps):
    """As the container runtime starts the chart's agent: uid 0, its gid, @caps effective and
    permitted (uid 0's rule: the bounding set), no ambient, no_new_privs."""
    return ["setpriv", "--reuid", "0", "--regid", str(AGENT_GID), "--clear-groups",
            "--inh-caps", "-all", "--ambient-caps", "-all",
            "--bounding-set", ",".join(["-all"] + ["+" + c for c in caps]), "--no-new-privs", "--"]


def text(p):
    with open(p.log) as f:
        return f.read()


def status(pid, tid=None):
    path = "/proc/%d/task/%d/status" % (pid, tid) if tid else "/proc/%d/status" % pid
    out = {}
    for line in open(path):
        k, _, v = line.partition(":")
        out[k] = v.strip()
    return out


def masks(st):
    return {k: int(st[k], 16) for k in ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb")}


@pytest.fixture
def agent(tmp_path):
    """Starts the agent chart-like with @caps; returns (Proc, run dir)."""
    started = []

    def start(caps):
        cfg = tmp_path / "cpuzombie.yaml"
        cfg.write_text(CONFIG)
        run = tmp_path / "run"
        p = ph.Proc("agent", chart_like(caps) + cz("--config", str(cfg), "--run-dir", str(run),
                                                  "--state-dir", str(tmp_path / "state"),
                                                  "agent"), logdir=str(tmp_path))
        started.append(p)
        deadline = time.time() + 15
        while not (run / "cpu-heartbeat").exists():
            assert p.p.poll() is None, p.tail()
            assert time.time() < deadline, "no heartbeat: " + p.tail()
            time.sleep(0.05)
        # the drop happens before the periodic thread starts, right after the heartbeat
        while "capabilities:" not in text(p) and time.time() < deadline:
            time.sleep(0.05)
        return p, run
    yield start
    for p in started:
        p.stop()


@pytest.fixture
def target(tmp_path):
    """An NPD-like process (uid 0, gid 64390, no capability) with a secret in its environment."""
    started = []

    def start():
        env = dict(os.environ, CZ_SECRET=SECRET)
        p = ph.Proc("npd-like", setpriv(0, NPD_GID) + ["sleep", "600"], logdir=str(tmp_path),
                    env=env)
        started.append(p)
        for _ in range(200):
            try:
                st = status(p.pid)
                if st["Name"] == "sleep" and st["Gid"].split()[0] == str(NPD_GID):
                    assert masks(st)["CapPrm"] == 0 and masks(st)["CapEff"] == 0, st
                    return p.pid
            except OSError:
                pass
            time.sleep(0.05)
        raise AssertionError("target did not start: " + p.tail())
    yield start
    for p in started:
        p.stop()


def probe(pid, prefix):
    r = subprocess.run(prefix + [sys.executable, "-I", "-c", PROBE, str(pid)],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr
    return json.loads(r.stdout)


def creds_of(pid):
    """The prefix that runs a command with @pid's exact uid, gid, groups and capability sets
    (setpriv from its /proc status)."""
    st = status(pid)
    m = masks(st)
    uid, gid = int(st["Uid"].split()[0]), int(st["Gid"].split()[0])
    assert st["Uid"].split() == [str(uid)] * 4 and st["Gid"].split() == [str(gid)] * 4, st
    assert st["Groups"] == "", st
    # setpriv can give the same effective set only through the ambient one (uid 0's rule is off)
    assert m["CapEff"] == m["CapPrm"], m
    return setpriv(uid, gid, names(m["CapEff"]), names(m["CapBnd"])), m


def test_agent_drops_capabilities_and_still_profiles(agent, target):
    p, run = agent(["perfmon", "syslog"])
    # the periodic thread, started after the drop and its log line: under ASan on a loaded
    # machine it can come a while after the line (a cold make test once read one thread)
    deadline = time.time() + 15
    while True:
        tids = [int(t) for t in os.listdir("/proc/%d/task" % p.pid)]
        if len(tids) >= 2 or time.time() > deadline:
            break
        time.sleep(0.05)
    assert len(tids) >= 2, tids
    for tid in tids:
        m = masks(status(p.pid, tid))
        assert m["CapEff"] == m["CapPrm"] == m["CapInh"] == m["CapAmb"] == 0, (tid, m)
        # PR_CAPBSET_DROP needs CAP_SETPCAP, which the chart does not give: the bounding set
        # keeps what it had, inert under no_new_privs
        assert names(m["CapBnd"]) == ["perfmon", "syslog"], (tid, m)
        assert status(p.pid, tid)["NoNewPrivs"] == "1"
    assert "capabilities: dropped syslog,perfmon after start; kept none; bounding set " \
        "syslog,perfmon (no CAP_SETPCAP to drop it); no_new_privs" in text(p), text(p)
    # the events stay open: one per CPU, nothing mapped until a burst
    perf = [f for f in os.listdir("/proc/%d/fd" % p.pid)
            if os.readlink("/proc/%d/fd/%s" % (p.pid, f)) == "anon_inode:[perf_event]"]
    assert len(perf) == os.cpu_count(), perf

    # the agent's exact credentials now: refused the NPD-like target's environ and root
    npd = target()
    prefix, m = creds_of(p.pid)
    assert m["CapEff"] == 0
    assert probe(npd, prefix) == {"root": "EACCES", "environ": "EACCES"}
    # the baseline: the same uid and gid with CAP_PERFMON, as the agent held it before the
    # drop, reads the environment (the probe can succeed); root stays refused (the gid)
    assert probe(npd, setpriv(0, AGENT_GID, ["perfmon", "syslog"])) == \
        {"root": "EACCES", "environ": "ok:1"}

    # a real one-core burst still gets a profile, with kernel symbols
    hot = os.cpu_count() - 1
    with burn_lock():
        time.sleep(1.0)
        with burning_locked(hot):
            time.sleep(4.5)
        time.sleep(1.5)
    ev = [l.split() for l in (run / "cpu-bursts").read_text().splitlines()
          if l.startswith("burst ") and l.split()[1] == str(hot)]
    assert len(ev) == 1, (run / "cpu-bursts").read_text()
    prof = [f[len("profile="):] for f in ev[0] if f.startswith("profile=")]
    assert prof and prof[0] != "-", ev[0]
    folded = (run / prof[0]).read_text().splitlines()
    total = sum(int(l.rpartition(" ")[2]) for l in folded)
    dd = sum(int(l.rpartition(" ")[2]) for l in folded
             if l.startswith("dd;") and ZERO_PATH.search(l))
    assert total >= 100 and dd >= total // 2, (total, dd, folded[:5])
    # and still nothing held after it (a burst opened nothing new)
    assert masks(status(p.pid))["CapEff"] == 0


def test_with_setpcap_the_bounding_set_goes_too(agent):
    """Given CAP_SETPCAP as well, the agent also empties its bounding set (PR_CAPBSET_DROP),
    SETPCAP last: every set is 0."""
    p, _ = agent(["perfmon", "syslog", "setpcap"])
    for tid in os.listdir("/proc/%d/task" % p.pid):
        m = masks(status(p.pid, int(tid)))
        assert m == {"CapInh": 0, "CapPrm": 0, "CapEff": 0, "CapBnd": 0, "CapAmb": 0}, (tid, m)
    assert "capabilities: dropped setpcap,syslog,perfmon after start; kept none; bounding " \
        "set none; no_new_privs" in text(p), text(p)


def test_census_keeps_bpf_and_perfmon(agent, tmp_path):
    """With the census on (chart agent.zombieCensus: BPF, PERFMON) the agent keeps exactly those
    two, since it loads its program every census; SYSLOG goes."""
    global CONFIG
    saved = CONFIG
    CONFIG = "agent:\n  kmsg: \"\"\nmemcg:\n  census_interval: 10m\n"
    try:
        p, _ = agent(["perfmon", "syslog", "bpf"])
    finally:
        CONFIG = saved
    m = masks(status(p.pid))
    assert names(m["CapEff"]) == names(m["CapPrm"]) == ["bpf", "perfmon"], m
    assert "capabilities: dropped syslog after start; kept perfmon,bpf" in text(p), text(p)

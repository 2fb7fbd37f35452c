# SPDX-License-Identifier: MIT
"""The node containers cannot reach each other's processes, nor can other pods reach theirs,
through /proc: proven on this kernel with processes started under the uid, gid and
capabilities the chart renders (setpriv), the prober in a PID and mount namespace of its own
with the host's /proc bind-mounted read-only, as the agent container has it.

The kernel's rule (kernel/ptrace.c __ptrace_may_access, mode PTRACE_MODE_READ_FSCREDS for
/proc/PID/root, cwd, fd and environ, ATTACH_FSCREDS for mem): the caller passes when its fsuid
equals the target's uid, euid and suid AND its fsgid equals the target's gid, egid and sgid, or
when it holds CAP_SYS_PTRACE over the target's user namespace; then the capability check
(security/commoncap.c cap_ptrace_access_check): the target's permitted set must be a subset of
the caller's, unless CAP_SYS_PTRACE. The chart gives NPD's container and the agent a gid each
of their own (nodeGroups): so

- the agent (uid 0, its gid, CAP_PERFMON + CAP_SYSLOG) and NPD's container (uid 0, its gid, no
  capability) differ in gid: neither passes the first test, neither holds CAP_SYS_PTRACE;
- a pod running as root with every capability dropped (uid 0, gid 0) differs in gid from both;
- a pod running as 65534 differs in uid from the root rendering, and in gid from the non-root
  rendering (65534, the containers' own gids);
- agent.readKernelStacks adds CAP_SYS_PTRACE: then the agent passes everything (host root).

One exception is the kernel's, not the chart's: mm_access() (environ, maps, auxv: the reads
through a process's mm) also lets a PTRACE_MODE_READ through for a caller with CAP_PERFMON
(perfmon_capable(), as perf's own sampling of any process's user stack does). So the agent
with burst profiles (CAP_PERFMON) reads the environment of every process on the node; not its
root, cwd, fd or mem. Measured here, asserted, and said in docs/privileges.md. No token is in
an environment: NPD's is a file in its mount namespace, reached only through /proc/PID/root.

Each refusal has its control: the same probe, the target as the chart rendered it before (both
containers 0:0, or 65534:65534), opens the files (the probe can succeed)."""

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

import pytest

import deploy_helpers as dh
import proc_helpers as ph

pytestmark = pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("setpriv") or
                                not shutil.which("unshare"),
                                reason="needs root, setpriv and unshare")

SECRET = "cz-ptrace-secret"
PROBE = r"""
import errno, json, os, sys
pid = sys.argv[1]
proc = sys.argv[2]
out = {}
for what in ("root", "environ", "mem"):
    p = os.path.join(proc, pid, what)
    try:
        if what == "root":
            out[what] = "ok:" + ",".join(sorted(os.listdir(p))[:3])
        else:
            with open(p, "rb") as f:
                out[what] = "ok:" + (("%d" % f.read().count(b"CZ_SECRET")) if what == "environ"
                                     else "open")
    except OSError as e:
        out[what] = errno.errorcode.get(e.errno, str(e.errno))
print(json.dumps(out))
"""


def creds(variant, extra=()):
    """{container: (uid, gid, [capabilities])} of the node containers the chart renders."""
    _, objs = dh.render(variant, list(extra))
    ds = dh.one(objs, "DaemonSet")
    out = {}
    for c in ds["spec"]["template"]["spec"]["containers"]:
        sc = c["securityContext"]
        uid = sc["runAsUser"]
        out[c["name"]] = (uid, sc.get("runAsGroup", uid),
                          [x.lower() for x in sc["capabilities"].get("add", [])])
        assert sc["capabilities"]["drop"] == ["ALL"]
    return out


def setpriv(uid, gid, caps):
    bound = ",".join(["-all"] + ["+" + c for c in caps])
    return ["setpriv", "--reuid", str(uid), "--regid", str(gid), "--clear-groups",
            "--inh-caps", "-all", "--ambient-caps", "-all", "--bounding-set", bound,
            "--no-new-privs", "--"]


@pytest.fixture
def procs(tmp_path):
    started = []

    def target(name, uid, gid, caps):
        """A process as a container's would run: @uid, @gid, exactly @caps, with a secret in
        its environment."""
        env = dict(os.environ, CZ_SECRET=SECRET)
        p = ph.Proc(name, setpriv(uid, gid, caps) + ["sleep", "600"], logdir=str(tmp_path),
                    env=env)
        started.append(p)
        # setpriv execs sleep: the same pid, once it runs as @uid:@gid
        want = "%d\n%d" % (uid, gid)
        for _ in range(200):
            try:
                st = open("/proc/%d/status" % p.pid).read()
                if "sleep" in open("/proc/%d/comm" % p.pid).read() and \
                        ("Uid:\t%d\t" % uid) in st and ("Gid:\t%d\t" % gid) in st:
                    return p.pid
            except OSError:
                pass
            time.sleep(0.05)
        raise AssertionError("%s did not start as %s: %s" % (name, want, p.tail()))
    yield target
    for p in started:
        p.stop()


def probe(pid, uid, gid, caps):
    """The probe as @uid:@gid with exactly @caps, in a PID and mount namespace of its own
    with the host's /proc bind-mounted read-only at a directory of its own (the agent
    container's /host/proc): what it could open of process @pid."""
    d = tempfile.mkdtemp(prefix="cz-ptrace-")
    try:
        script = os.path.join(d, "probe.py")
        with open(script, "w") as f:
            f.write(PROBE)
        os.chmod(d, 0o755)
        os.chmod(script, 0o644)
        mnt = os.path.join(d, "proc")
        os.mkdir(mnt)
        inner = ("mount --make-rprivate / && mount --bind /proc %s && "
                 "mount -o remount,bind,ro %s && exec \"$@\"" % (mnt, mnt))
        cmd = ["unshare", "--pid", "--fork", "--mount", "--", "sh", "-c", inner, "sh",
               *setpriv(uid, gid, caps), sys.executable, "-I", script, str(pid), mnt]
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
        assert r.returncode == 0, r.stdout + r.stderr
        return json.loads(r.stdout)
    finally:
        shutil.rmtree(d, ignore_errors=True)


REFUSED = {"root": "EACCES", "environ": "EACCES", "mem": "EACCES"}
# CAP_PERFMON's caller: mm_access() lets the environment through, nothing else
PERFMON_READS = {"root": "EACCES", "environ": "ok:1", "mem": "EACCES"}


def opened(got):
    return all(v.startswith("ok:") for v in got.values()) and got["environ"] == "ok:1"


def test_the_rendered_containers_have_gids_of_their_own():
    for variant, extra, uid in (("default", (), 0),
                                ("default", ("--set", "agent.profileBursts=false"), 65534)):
        c = creds(variant, extra)
        assert c["node-problem-detector"][:2] == (uid, 64390), c
        assert c["agent"][:2] == (uid, 64391), c
    c = creds("standalone")
    assert c["agent"][1] == 64391, c


def test_agent_cannot_reach_npds_container(procs):
    """The issue's attack: the agent's credentials against NPD's container (which holds the
    node's token). Refused; the control (both 0:0, the rendering before) opens everything."""
    c = creds("default")
    npd, agent = c["node-problem-detector"], c["agent"]
    assert agent[0] == npd[0] == 0 and set(agent[2]) == {"perfmon", "syslog"} and npd[2] == []
    pid = procs("npd", *npd)
    assert probe(pid, *agent) == PERFMON_READS
    # without CAP_PERFMON (agent.profileBursts off, the root rendering kept by another feature)
    assert probe(pid, agent[0], agent[1], []) == REFUSED
    # and the other way round
    apid = procs("agent", *agent)
    assert probe(apid, *npd) == REFUSED
    # control: the same two as they were rendered with one gid (0)
    old = procs("npd-old", 0, 0, [])
    assert opened(probe(old, 0, 0, agent[2])), "the probe cannot open what it may"


def test_root_pod_with_all_dropped_cannot_reach_either(procs):
    """Any pod running as root with drop: [ALL] (gid 0): refused by NPD's gid, and by the
    agent's gid and capabilities. Nor can the agent reach such a pod's processes."""
    c = creds("default")
    npd, agent = procs("npd", *c["node-problem-detector"]), procs("agent", *c["agent"])
    assert probe(npd, 0, 0, []) == REFUSED
    assert probe(agent, 0, 0, []) == REFUSED
    pod = procs("root-pod", 0, 0, [])
    assert probe(pod, *c["agent"]) == PERFMON_READS
    assert probe(pod, c["agent"][0], c["agent"][1], []) == REFUSED
    assert opened(probe(pod, 0, 0, [])), "control: root to root, one gid"


def test_nobody_pod_cannot_reach_the_non_root_rendering(procs):
    """agent.profileBursts off: both containers run as 65534, each with its own gid; a pod
    running as 65534 (gid 65534) reaches neither; the control (65534:65534, the rendering
    before) it opens."""
    c = creds("default", ("--set", "agent.profileBursts=false"))
    npd, agent = c["node-problem-detector"], c["agent"]
    assert npd[0] == agent[0] == 65534 and npd[2] == agent[2] == []
    n, a = procs("npd", *npd), procs("agent", *agent)
    for target in (n, a):
        assert probe(target, 65534, 65534, []) == REFUSED
    assert probe(n, *agent) == REFUSED and probe(a, *npd) == REFUSED
    old = procs("npd-old", 65534, 65534, [])
    assert opened(probe(old, 65534, 65534, []))
    # and 65534 against the root rendering's NPD: the uid differs
    root_npd = procs("npd-root", *creds("default")["node-problem-detector"])
    assert probe(root_npd, 65534, 65534, []) == REFUSED


def test_read_kernel_stacks_is_host_root(procs):
    """agent.readKernelStacks adds CAP_SYS_ADMIN and CAP_SYS_PTRACE: the agent then opens NPD's
    container whatever its gid (docs/privileges.md says host root)."""
    c = creds("default", ("--set", "agent.readKernelStacks=true"))
    assert {"sys_admin", "sys_ptrace"} <= set(c["agent"][2])
    pid = procs("npd", *c["node-problem-detector"])
    assert opened(probe(pid, *c["agent"]))

# SPDX-License-Identifier: MIT
"""Least privilege, measured: each subcommand run as an unprivileged uid
(nobody, 65534) with every capability dropped (setpriv: bounding, inheritable and ambient sets),
adding back only what a feature is shown to need. Each test asserts that the documented minimum
works and that less fails cleanly - exit 2 with a message naming the file, or a documented
degradation - never exit 1 and never a crash. docs/privileges.md's list is these results:

  check memcg      no capability, any uid; reads host /proc and /sys; state dir optional
  check cpu        no capability, any uid (task attribution reads world-readable task stat files);
                   kernel stacks of the top task additionally need CAP_SYS_ADMIN + CAP_SYS_PTRACE
                   (+ CAP_DAC_READ_SEARCH when not uid 0), else they are left out ("-")
  check ena(-allowance), ena-diff -   no capability (ETHTOOL_GDRVINFO/GSSET_INFO/GSTRINGS/GSTATS
                   are unprivileged ioctls); the host network namespace; state dir writable
  agent            no capability; run dir writable; stacks as check cpu; burst profiles need
                   CAP_PERFMON (a CPU-wide perf event) and, for real addresses in kallsyms,
                   CAP_SYSLOG unless kptr_restrict=0 and perf_event_paranoid <= 1; without them
                   the burst is recorded with "why=" and no profile
  report           no capability; reads what the checks read; writes only the --svg file
"""
import os
import shutil
import subprocess
import time

import pytest

import hardening_helpers as hh
from conftest import reachable_tmp

NOBODY = 65534
pytestmark = pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("setpriv"),
                                reason="needs root and setpriv to run as another uid with "
                                       "chosen capabilities")
MEMCG = os.path.join(hh.FIXTURES, "memcg", "this-vm-hybrid")


@pytest.fixture
def tmp_path():
    """Our own, not pytest's: nobody must reach it (conftest.reachable_tmp says why)."""
    yield from reachable_tmp("cz-priv-")


def as_user(*caps, uid=NOBODY):
    """setpriv prefix: @uid (None = stay root) with exactly @caps (e.g. 'sys_admin')."""
    if not caps:
        capspec = ["--inh-caps=-all", "--bounding-set=-all"]
        if uid is not None:
            capspec.append("--ambient-caps=-all")
    else:
        plus = ",".join("+" + c for c in caps)
        capspec = ["--inh-caps=-all," + plus, "--bounding-set=-all," + plus]
        if uid is not None:
            capspec.append("--ambient-caps=-all," + plus)
    ids = [] if uid is None else ["--reuid=%d" % uid, "--regid=%d" % uid, "--clear-groups"]
    return ["setpriv", *ids, *capspec, "--"]


def owned_dir(path, uid=NOBODY, mode=0o700):
    os.makedirs(path, exist_ok=True)
    os.chown(path, uid, uid)
    os.chmod(path, mode)
    return str(path)


def world_readable(tmp_path):
    """pytest's tmp dirs are 0700 root: let nobody reach the files we hand it."""
    p = tmp_path
    while str(p) != "/":
        os.chmod(p, os.stat(p).st_mode | 0o011)
        p = p.parent


def cz(prefix, *args, timeout=60):
    p = hh.run(list(args), prefix=prefix, timeout=timeout)
    hh.assert_no_sanitizer(p.stderr)
    assert p.returncode in (0, 1, 2), p
    return p


def test_check_memcg_needs_no_capability(tmp_path):
    world_readable(tmp_path)
    st = owned_dir(tmp_path / "st")
    root = cz([], "--state-dir", str(tmp_path / "rootst"), "check", "memcg")
    p = cz(as_user(), "--state-dir", st, "check", "memcg")
    assert p.returncode == root.returncode and p.returncode in (0, 1), (p, root)
    assert p.stdout.split()[1:4] == ["dying", "memcgs", "vs"], p
    assert os.path.exists(os.path.join(st, "memcg")), "history not kept as nobody"
    # less: no writable state dir -> same verdict, a note on stderr, no growth history
    p2 = cz(as_user(), "--state-dir", str(tmp_path / "rootst"), "check", "memcg")
    assert p2.returncode == root.returncode and "ignoring" in p2.stderr, p2


def test_check_memcg_without_host_files_is_unknown(tmp_path):
    world_readable(tmp_path)
    t = tmp_path / "tree"
    shutil.copytree(MEMCG, t)
    os.chmod(t / "proc" / "cgroups", 0o600)     # root's: nobody may not read it
    p = cz(as_user(), "--state-dir", owned_dir(tmp_path / "st"), "--proc-root",
           str(t / "proc"), "--sys-root", str(t / "sys"), "check", "memcg")
    assert p.returncode == 2 and p.stdout == "cannot read %s/proc/cgroups: Permission denied\n" \
        % t, p
    p = cz(as_user(), "--proc-root", str(tmp_path / "nomount"), "--sys-root",
           str(tmp_path / "nomount"), "check", "memcg")
    assert p.returncode == 2 and p.stdout.startswith("cannot read"), p


@pytest.fixture
def burn():
    cpu = os.cpu_count() - 1
    p = subprocess.Popen(["taskset", "-c", str(cpu), "dd", "if=/dev/zero", "of=/dev/null",
                          "bs=1M"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(0.2)
    yield cpu
    p.kill()
    p.wait()


def cpu_config(tmp_path, extra=""):
    c = tmp_path / "cz.yaml"
    c.write_text("cpu:\n  metric: busy\n  threshold_pct: 70\n  min_burst: 1s\n"
                 "  inline_window: 2s\n" + extra)
    os.chmod(c, 0o644)
    return str(c)


def test_agent_and_check_cpu_need_no_capability(burn, tmp_path):
    world_readable(tmp_path)
    cfg = cpu_config(tmp_path)
    run = owned_dir(tmp_path / "run")
    p = cz(as_user(), "--config", cfg, "--run-dir", run, "agent", "--once")
    assert p.returncode == 0, p
    bursts = open(os.path.join(run, "cpu-bursts")).read()
    # task attribution works without any capability: the burner is named
    assert "/dd/" in bursts, bursts
    p = cz(as_user(), "--config", cfg, "--run-dir", run, "check", "cpu")
    assert p.returncode == 1 and "cpu%d" % burn in p.stdout, p  # (another core may lead)


def _sysctl(name):
    return int(open("/proc/sys/kernel/" + name).read())


@pytest.mark.parametrize("caps", [(), ("perfmon",), ("perfmon", "syslog")])
def test_burst_profiles_need_perfmon_and_syslog(burn, tmp_path, caps):
    """The minimum for a burst profile, measured: the agent as nobody with exactly @caps."""
    world_readable(tmp_path)
    cfg = cpu_config(tmp_path)
    run = owned_dir(tmp_path / "run")
    p = cz(as_user(*caps), "--config", cfg, "--run-dir", run, "agent", "--once")
    assert p.returncode == 0, p
    line = [l for l in open(os.path.join(run, "cpu-bursts")).read().splitlines()
            if l.startswith("burst %d " % burn)]
    assert line, open(os.path.join(run, "cpu-bursts")).read()
    # kallsyms shows addresses to anyone only with kptr_restrict=0 and perf_event_paranoid <= 1
    # (kernel/kallsyms.c kallsyms_show_value()); otherwise it takes CAP_SYSLOG
    open_syms = _sysctl("kptr_restrict") == 0 and _sysctl("perf_event_paranoid") <= 1
    if "perfmon" not in caps and _sysctl("perf_event_paranoid") > 0:
        assert "profile=- " in line[0] and "why=no%20CAP_PERFMON" in line[0], line
    elif "syslog" not in caps and not open_syms:
        assert "profile=- " in line[0] and "why=kallsyms%20hidden" in line[0], line
    else:
        assert "profile=cpu-profile-%d-" % burn in line[0] and " hot=-" not in line[0], line
        prof = line[0].split(" profile=")[1].split()[0]
        assert os.stat(os.path.join(run, prof)).st_uid == NOBODY


def test_check_cpu_with_less(tmp_path):
    world_readable(tmp_path)
    cfg = cpu_config(tmp_path)
    run = owned_dir(tmp_path / "run", uid=0)       # the agent's, root-only
    cz([], "--config", cfg, "--run-dir", run, "agent", "--once")
    # cannot read the agent's files: samples inline, and says why
    p = cz(as_user(), "--config", cfg, "--run-dir", run, "check", "cpu")
    assert p.returncode in (0, 1) and "heartbeat unreadable (Permission denied)" in p.stdout, p
    # ... and with no inline window it is Unknown, never a problem
    cfg0 = tmp_path / "cz0.yaml"
    cfg0.write_text("cpu:\n  metric: busy\n  inline_window: 0s\n")
    os.chmod(cfg0, 0o644)
    p = cz(as_user(), "--config", str(cfg0), "--run-dir", run, "check", "cpu")
    assert p.returncode == 2 and "heartbeat unreadable" in p.stdout, p
    # the agent itself without a writable run dir: exit 2 naming it
    p = cz(as_user(), "--config", cfg, "--run-dir", run, "agent", "--once")
    assert p.returncode == 2 and run in p.stderr and "Permission denied" in p.stderr, p


def read_stack(prefix, pid):
    return subprocess.run([*prefix, "head", "-c", "200", "/proc/%d/stack" % pid],
                          capture_output=True, text=True)


def test_kernel_stacks_need_sys_admin_and_sys_ptrace():
    """The measurement behind the table's 'stacks' column (the kernel's rule, proc_pid_stack():
    CAP_SYS_ADMIN, plus ptrace access to a task with more capabilities than ours)."""
    s = subprocess.Popen(["sleep", "30"])
    try:
        time.sleep(0.2)
        assert "nanosleep" in read_stack([], s.pid).stdout
        for caps, uid in [((), NOBODY), (("sys_admin",), None), (("sys_ptrace",), None),
                          (("sys_admin", "dac_read_search"), NOBODY)]:
            assert read_stack(as_user(*caps, uid=uid), s.pid).returncode != 0, caps
        assert "nanosleep" in read_stack(as_user("sys_admin", "sys_ptrace", uid=None),
                                         s.pid).stdout
        assert "nanosleep" in read_stack(as_user("sys_admin", "sys_ptrace", "dac_read_search"),
                                         s.pid).stdout
    finally:
        s.kill()
        s.wait()


@pytest.fixture
def netns():
    ns = "czpriv%d" % os.getpid()
    subprocess.run(["ip", "netns", "add", ns], check=True)
    try:
        for c in (["ip", "link", "add", "veth-a", "type", "veth", "peer", "name", "veth-b"],
                  ["ip", "link", "set", "veth-a", "up"]):
            subprocess.run(["ip", "netns", "exec", ns, *c], check=True)
        yield ns
    finally:
        subprocess.run(["ip", "netns", "del", ns], check=False)


def test_check_ena_needs_no_capability(netns, tmp_path):
    world_readable(tmp_path)
    cfg = tmp_path / "ena.yaml"
    cfg.write_text("ena:\n  drivers: [veth]\n  min_read_interval: 0s\n")
    os.chmod(cfg, 0o644)
    st = owned_dir(tmp_path / "st")
    ns = ["ip", "netns", "exec", netns]
    for check in ("ena", "ena-allowance"):
        p = cz(ns + as_user(), "--config", str(cfg), "--state-dir", st, "check", check)
        assert p.returncode == 0 and "veth-a first reading" in p.stdout, p
    p = cz(ns + as_user(), "--config", str(cfg), "ena-diff", "-")
    assert p.returncode == 0 and "peer_ifindex:" in p.stdout, p
    # less: a state dir it cannot write -> Unknown naming the state file, never a problem
    rootst = owned_dir(tmp_path / "rootst", uid=0)
    p = cz(ns + as_user(), "--config", str(cfg), "--state-dir", rootst, "check", "ena")
    assert p.returncode == 2 and "Permission denied" in p.stdout and rootst in p.stdout, p


def test_report_needs_no_capability(tmp_path):
    world_readable(tmp_path)
    out = owned_dir(tmp_path / "out")
    root = cz([], "--state-dir", str(tmp_path / "rst"), "--run-dir", str(tmp_path / "rrun"),
              "report", "--json")
    p = cz(as_user(), "--state-dir", owned_dir(tmp_path / "st"), "--run-dir",
           owned_dir(tmp_path / "run"), "report", "--svg", os.path.join(out, "h.svg"))
    assert p.returncode == root.returncode, (p, root)
    assert "MEMCG" in p.stdout and "CORES" in p.stdout, p
    assert os.path.getsize(os.path.join(out, "h.svg")) > 0
    # less: an SVG path it may not write -> exit 2 naming it
    rootdir = owned_dir(tmp_path / "rootonly", uid=0)
    p = cz(as_user(), "--state-dir", owned_dir(tmp_path / "st"), "report", "--svg",
           os.path.join(rootdir, "h.svg"))
    assert p.returncode == 2 and "Permission denied" in p.stderr and rootdir in p.stderr, p

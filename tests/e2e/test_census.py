# SPDX-License-Identifier: MIT
"""The zombie census on the real kernel: real dying memcgs with distinctive names
(NamedZombies: one level and two levels down a private parent, each charged a known amount of
page cache) are listed by the agent's BPF census under their former names, grouped by pattern
and by parent, with the bytes they still pin; `check memcg` then names the group they came from
-- from the census in the run dir, with memcg.systemd_hints off (no systemd) and on this host's
v1 memory hierarchy (no cgroup v2). Without the capabilities to load BPF the agent publishes the
reason and the check line says it."""
import json
import os
import re
import shutil
import subprocess
import time

import pytest

from census_helpers import NamedZombies, parse_census
from conftest import reachable_tmp, needs_root
from memcg_helpers import memory_v1_root, v1_counts
from proc_helpers import stop

pytestmark = [needs_root]


@pytest.fixture
def tmp_path():
    """Our own, not pytest's: nobody must reach it (conftest.reachable_tmp says why)."""
    yield from reachable_tmp("cz-census-")

CFG = """cpu:
  inline_window: 1s
memcg:
  systemd_hints: false
  census_interval: 10m
  min_dying: 5
  max_ratio: 0.001
"""
# What a memcg charged with SIZE bytes of page cache still pins: the file's pages, plus the
# little the writer's own allocations (page tables, slab of the inode and dentry, a stack page)
# charged while it was inside. Measured on 6.18: +4 KiB to +96 KiB per memcg.
SLACK = 128 * 1024


def census_file(run):
    text = open(os.path.join(run, "memcg-census")).read()
    if "\ne built without the BPF census\n" in text:
        pytest.skip("this binary was built without the BPF census (no bpftool, clang, libbpf "
                    "or kernel BTF at build time: make test installs them)")
    return text, parse_census(text)


def agent_once(cz, tmp_path, prefix=(), extra=""):
    cfg = tmp_path / "agent.yaml"
    cfg.write_text(CFG + extra)
    r = cz("--config", str(cfg), "agent", "--once", timeout=120) if not prefix else None
    if prefix:
        cmd = [*prefix, os.environ.get("CZ_BIN") or cz.bin, "--config", str(cfg),
               "--state-dir", str(cz.state), "--run-dir", str(cz.run), "agent", "--once"]
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
        assert "runtime error:" not in p.stderr and "Sanitizer" not in p.stderr, p
        return p.returncode, p.stderr
    return r.rc, r.err


@pytest.fixture
def czb(cz, cz_bin):
    cz.bin = cz_bin
    return cz


def run_check(cz, tmp_path):
    """`check memcg` as NPD runs it: the static check binary when there is one."""
    check_bin = os.path.join(os.path.dirname(cz.bin), "cpuzombie-check")
    if not os.access(check_bin, os.X_OK):
        check_bin = cz.bin
    return subprocess.run([check_bin, "--config", str(tmp_path / "agent.yaml"), "--state-dir",
                           str(cz.state), "--run-dir", str(cz.run), "check", "memcg"],
                          capture_output=True, text=True, timeout=60)


def test_census_lists_real_zombies_by_name_with_pinned_bytes(czb, tmp_path):
    cz = czb
    cz.state.mkdir(exist_ok=True)
    prom = cz.state / "cz.prom"        # a host file lies in the state dir
    with NamedZombies(tmp_path) as z:
        rc, err = agent_once(cz, tmp_path, extra="agent:\n  metrics_textfile: %s\n" % prom)
        assert rc in (0, 1), err	# 1: the node's own checks (not ours) may find problems
        text, g = census_file(str(cz.run))
        flat = ("g", z.name + "/ga-*")
        nested = ("g", z.name + "/nest-*/nb-*")
        nests = ("g", z.name + "/nest-*")
        assert flat in g and nested in g and nests in g, text
        assert g[flat][0] == z.flat, text
        assert g[nested][0] == z.nests * z.per_nest, text
        assert g[nests][0] == z.nests, text	# the dying parents, rebuilt through the chain
        # by parent: the flat ones under the test's parent, the nested ones under nest-*
        assert g[("p", z.name)][0] == z.flat + z.nests, text
        assert g[("p", z.name + "/nest-*")][0] == z.nests * z.per_nest, text
        # pinned bytes: what each was charged, within the stated slack
        for key, n in ((flat, z.flat), (nested, z.nests * z.per_nest)):
            got = g[key][1]
            assert n * z.size <= got <= n * (z.size + SLACK), (key, got, n * z.size, text)
            print("pinned %s: %d bytes for %d x %d charged (+%d per memcg)"
                  % (key[1], got, n, z.size, (got - n * z.size) // n))
        # the metrics carry the top groups (when ours is among them: others' tests may crowd)
        metrics = prom.read_text()
        assert "# TYPE cpuzombie_memcg_dying_by_group gauge" in metrics, metrics
        top = [k for k in g if k[0] == "g"]
        if flat in top:
            assert 'cpuzombie_memcg_dying_by_group{group="%s"} %d' % (flat[1], z.flat) \
                in metrics, metrics
        # report --json carries the same census, and the text report lists the groups
        r = cz("--config", str(tmp_path / "agent.yaml"), "report", "--json", timeout=120)
        j = json.loads(r.out)
        cen = j["memcg"]["census"]
        assert cen["dying"] == int(text.split("\nn ")[1].split()[0]), (cen, text)
        groups = {x["group"]: x for x in cen["groups"]}
        assert groups[flat[1]]["dying"] == z.flat, cen
        assert groups[flat[1]]["pinned_bytes"] == g[flat][1], cen
        r = cz("--config", str(tmp_path / "agent.yaml"), "report", timeout=120)
        assert "  census     %s dying" % cen["dying"] in r.out, r.out
        if [x["group"] for x in cen["groups"]].index(flat[1]) < 5:	# the text lists 5
            assert " %s (oldest seen 0 min ago)" % flat[1] in r.out, r.out


def test_check_memcg_names_the_group_from_the_census(czb, tmp_path):
    """The census's own case: v1 memory hierarchy only, memcg.systemd_hints off. The check
    names the census's biggest group; other checkouts' tests on this shared box make dying
    memcgs of their own (2000 at a time), so the test makes more than the node holds."""
    if memory_v1_root() is None:
        pytest.skip("this test proves the v1 case (no cgroup v2): no v1 memory hierarchy here")
    cz = czb
    flat = min(max(100, v1_counts()[1] + 300), 8000)
    with NamedZombies(tmp_path, flat=flat, nests=1, per_nest=5, size=4096) as z:
        rc, err = agent_once(cz, tmp_path)
        assert rc == 0, err
        text, g = census_file(str(cz.run))
        top = [ln for ln in text.splitlines() if ln.startswith("g ")][0].split(" ")
        p = run_check(cz, tmp_path)
        assert p.returncode == 1, p
        # the line carries the census's top group, whichever it is ...
        assert "; %s were %s, " % (top[1], top[4]) in p.stdout, (p.stdout, text)
        assert "pinned" in p.stdout and "top restarts" not in p.stdout, p.stdout
        # ... and that is ours unless another test outran us between our count and its census
        assert top[4] == z.name + "/ga-*" or int(top[1]) > z.flat, (p.stdout, text)
        assert "%d were %s/ga-*, " % (z.flat, z.name) in p.stdout or int(top[1]) > z.flat
        print("check memcg:", p.stdout.strip())


def test_census_first_seen_kept_between_runs(czb, tmp_path):
    """first_ms is the first census that saw a memcg dying: with one agent it stays, and the
    oldest of a group is its minimum. Two --once runs are two agents: each starts afresh, so
    here it is only checked to be within the run (the merge is unit-sized: census_build)."""
    cz = czb
    with NamedZombies(tmp_path, flat=5, nests=1, per_nest=3) as z:
        rc, err = agent_once(cz, tmp_path)
        assert rc == 0, err
        text, g = census_file(str(cz.run))
        t = int([ln for ln in text.splitlines() if ln.startswith("t ")][0].split()[1])
        assert g[("g", z.name + "/ga-*")][2] == t, text


def test_census_without_capabilities_says_why(czb, tmp_path):
    if not shutil.which("setpriv"):
        pytest.skip("needs setpriv to drop capabilities")
    cz = czb
    # uid 0 with no capability at all: the run dir (root's) is writable, BPF is refused
    drop = ["setpriv", "--inh-caps=-all", "--bounding-set=-all", "--"]
    with NamedZombies(tmp_path, flat=3, nests=1, per_nest=2):
        rc, err = agent_once(cz, tmp_path, prefix=drop)
        assert rc == 0, err
        text, _ = census_file(str(cz.run))	# (skips when built without the census)
        assert "\ne no capability to load the census BPF program (CAP_BPF, CAP_PERFMON)\n" \
            in text, text
        assert "Zombie census off: no capability" in err, err
        p = subprocess.run([cz.bin, "--config", str(tmp_path / "agent.yaml"), "--state-dir",
                            str(cz.state), "--run-dir", str(cz.run), "check", "memcg"],
                           capture_output=True, text=True, timeout=60)
        assert p.returncode == 1, p
        assert "census: no capability to load the census BPF program" in p.stdout, p.stdout


@pytest.mark.parametrize("caps,works", [((), False), (("bpf",), False), (("perfmon",), False),
                                        (("bpf", "perfmon"), True), (("sys_admin",), True)])
def test_census_privileges_measured_as_nobody(czb, tmp_path, caps, works):
    """What the census needs, as nobody (65534) with exactly @caps: CAP_BPF and CAP_PERFMON
    (the ring buffer and the probe reads of a tracing program), or CAP_SYS_ADMIN, which covers
    both; CAP_SYS_ADMIN is not needed for the cgroup iterator. Less: the reason, not a failure."""
    if not shutil.which("setpriv"):
        pytest.skip("needs setpriv to run as nobody with chosen capabilities")
    cz = czb
    p = tmp_path
    while str(p) != "/":	# let nobody reach the binary's config and its dirs
        os.chmod(p, os.stat(p).st_mode | 0o011)
        p = p.parent
    for d in (cz.run, cz.state):
        os.makedirs(str(d), exist_ok=True)
        os.chown(str(d), 65534, 65534)
    plus = ",".join("+" + c for c in caps)
    spec = ["--inh-caps=-all" + ("," + plus if plus else ""),
            "--bounding-set=-all" + ("," + plus if plus else ""),
            "--ambient-caps=-all" + ("," + plus if plus else "")]
    prefix = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", *spec, "--"]
    rc, err = agent_once(cz, tmp_path, prefix=prefix)
    assert rc in (0, 1), err
    text, _ = census_file(str(cz.run))	# (skips when built without the census)
    if works:
        assert "\nn " in text and "\ne " not in text, (caps, text, err)
    else:
        assert "\ne no capability to load the census BPF program" in text, (caps, text, err)


def memcg_status(prom):
    """The agent's last memcg check status from its metrics textfile, or None before one."""
    try:
        for ln in open(prom):
            if ln.startswith('cpuzombie_check_status{check="memcg"'):
                return int(ln.split()[-1])
    except FileNotFoundError:
        pass
    return None


def start_quiet_agent(cz, tmp_path):
    """An agent whose memcg check is OK (False) after its first cycle: the threshold just above
    the node's dying memcgs. Others' tests on this box make thousands at a time, so a start
    that finds it already True is retried with a fresh threshold."""
    cz.state.mkdir(exist_ok=True)
    prom = cz.state / "cz.prom"        # a host file lies in the state dir
    for _ in range(5):
        cfg = tmp_path / "agent.yaml"
        cfg.write_text("memcg:\n  systemd_hints: false\n  census_interval: 1h\n"
                       "  min_dying: %d\n  max_ratio: 0.001\nagent:\n  check_interval: 1s\n"
                       "  metrics_textfile: %s\n" % (v1_counts()[1] + 150, prom))
        if prom.exists():
            prom.unlink()
        agent = subprocess.Popen([cz.bin, "--config", str(cfg), "--state-dir", str(cz.state),
                                  "--run-dir", str(cz.run), "agent"],
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.time() + 30
        while memcg_status(prom) is None and time.time() < deadline:
            time.sleep(0.2)
        if memcg_status(prom) == 0:
            return agent
        stop(agent, 30, strict=True)
    pytest.skip("the node's dying memcgs kept crossing the threshold as the agent started "
                "(other tests making thousands): no False -> True transition to observe")


def test_census_runs_at_once_when_the_leak_turns_true(czb, tmp_path):
    """A running agent with a census period of an hour counts again as soon as MemcgZombieLeak
    turns True (its checks run every second here), not an hour later."""
    if memory_v1_root() is None:
        pytest.skip("the threshold below counts v1 dying memcgs: no v1 memory hierarchy here")
    cz = czb
    agent = start_quiet_agent(cz, tmp_path)
    try:
        text, _ = census_file(str(cz.run))	# the first census, at start
        t0 = int(text.split("\nt ")[1].split()[0])
        with NamedZombies(tmp_path, flat=300, nests=0, per_nest=0, size=4096) as z:
            made_ms = int(time.time() * 1000)
            deadline = time.time() + 30
            text, g = census_file(str(cz.run))
            while time.time() < deadline and \
                    int(text.split("\nt ")[1].split()[0]) == t0:
                time.sleep(0.2)
                text, g = census_file(str(cz.run))
            t1 = int(text.split("\nt ")[1].split()[0])
            assert t1 > t0, ("no census after the leak turned True", text)
            # ours, unless another test's zombies turned it True before ours existed
            assert ("g", z.name + "/ga-*") in g or t1 < made_ms, (text, made_ms)
            assert g.get(("g", z.name + "/ga-*"), (z.flat,))[0] == z.flat, text
    finally:
        stop(agent, 30, strict=True)


def test_report_by_hand_counts_the_census_itself(czb, tmp_path):
    """`make run` is `report` with no agent: the full binary takes the census itself (the
    static check binary never does), so the one command names the groups; without the
    privileges for BPF it says both why there is none from an agent and why not here."""
    cz = czb
    cfg = tmp_path / "agent.yaml"
    cfg.write_text(CFG)
    with NamedZombies(tmp_path, flat=12, nests=1, per_nest=3) as z:
        r = cz("--config", str(cfg), "report", "--json", timeout=120)
        cen = json.loads(r.out)["memcg"]["census"]
        if "error" in cen and "built without the BPF census" in cen["error"]:
            pytest.skip("this binary was built without the BPF census")
        groups = {x["group"]: x for x in cen["groups"]}
        assert groups[z.name + "/ga-*"]["dying"] == z.flat, cen
        assert groups[z.name + "/nest-*/nb-*"]["dying"] == z.nests * z.per_nest, cen
        assert not os.path.exists(os.path.join(str(cz.run), "memcg-census")), \
            "a report publishes nothing"
        text = cz("--config", str(cfg), "report", timeout=120).out
        assert re.search(r"  census     \d+ dying, ", text), text
        # the check NPD runs stays with what an agent published: none here
        p = run_check(cz, tmp_path)
        assert "census: no census from the agent" in p.stdout, p.stdout
        if not shutil.which("setpriv"):
            return
        drop = ["setpriv", "--inh-caps=-all", "--bounding-set=-all", "--"]
        p = subprocess.run([*drop, cz.bin, "--config", str(cfg), "--state-dir", str(cz.state),
                            "--run-dir", str(cz.run), "report"], capture_output=True,
                           text=True, timeout=120)
        assert "census     unavailable: no census from the agent, and counting here failed: " \
            "no capability to load the census BPF program (CAP_BPF, CAP_PERFMON)" in p.stdout, \
            p.stdout

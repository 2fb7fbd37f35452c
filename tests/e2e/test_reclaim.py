# SPDX-License-Identifier: MIT
"""remediation.reclaim: the agent frees the dying memcgs once MemcgZombieLeak has been
True for remediation.for, at most once per reclaim_interval, and says how many went.

On the real kernel: named dying memcgs (NamedZombies, their page cache written back first, as a
real zombie's long is) are freed by vm.drop_caches=1; the Event on the node (the real API server, through the test's fault proxy; the agent acts as the
chart's ServiceAccount with a token bound to its pod on the node)
carries the before/after counts, the census rerun after the reclaim no longer lists them, and the
metrics, `report --json` and a second cycle (rate-limited) agree. dry-run frees nothing. What it
needs is measured: uid 0 with no capability writes drop_caches; nobody with CAP_SYS_ADMIN or
CAP_DAC_OVERRIDE cannot.

On fixture trees (--proc-root/--sys-root): the writes land under the host roots the agent was
given (drop_caches "1"; on cgroup v2 the byte count in memory.reclaim of the subtree holding the
zombies, a hostile name escaped), `for` holds it back, a read-only mount is refused with a Warning
Event that says what to grant, and the refusal is rate-limited too (no retry storm)."""
import json
import os
import re
import shutil
import subprocess

import pytest

import kube_helpers as kh
from census_helpers import NamedZombies
from conftest import reachable_tmp, needs_root
from test_bad_inputs import promtool_ok

@pytest.fixture
def tmp_path():
    """Our own, not pytest's: nobody must reach it (conftest.reachable_tmp says why)."""
    yield from reachable_tmp("cz-reclaim-")


BIN = os.environ.get("CZ_BIN", os.path.join(kh.ROOT, "build", "cpuzombie"))
FREED = re.compile(r"vm\.drop_caches=1 freed (\d+) of (\d+) dying memcgs \((\d+) left\)")

REAL_CFG = """cpu:
  inline_window: 1s
  min_burst: 1h
memcg:
  systemd_hints: false
  census_interval: 10m
  min_dying: 5
  max_ratio: 0.001
"""


def written_back(z):
    """A real zombie's pages were written back long ago (the kernel writes dirty data back
    within dirty_expire_centisecs, 30 s); a fresh test file's data and the filesystem metadata
    its creation dirtied are not yet, and drop_caches drops only clean pages (measured: after
    fsync of the files alone, 5 to 8 of 82 stayed pinned by dirty metadata; after sync, none).
    So: sync, as 30 s of waiting would. The agent itself never syncs: on a busy node sync()
    waits for every dirty page of every filesystem, and a zombie's pages are old and clean."""
    assert os.path.isdir(z.files)
    os.sync()


def census_groups(run):
    """{pattern: count} of the census the agent last published in @run."""
    out = {}
    for ln in open(os.path.join(str(run), "memcg-census")).read().splitlines():
        if ln.startswith("g "):
            _, count, _bytes, _first, key = ln.split(" ")
            out[key] = int(count)
        elif ln.startswith("e "):
            pytest.skip("no census here: %s" % ln[2:])
    return out


def events(kube, reason_prefix="CpuzombieReclaim"):
    """The reclaim Events the agent posted (the proxy's log of its requests); each one the
    real server must have created (201: the chart's grant and admission policy let it)."""
    posts = [e for e in kube.log() if e["path"].endswith("/events") and
             e["method"] == "POST" and e["body"]["reason"].startswith(reason_prefix)]
    assert all(e["status"] == 201 for e in posts), posts
    return [e["body"] for e in posts]


def real_config(tmp_path, kc=None, extra=""):
    cfg = tmp_path / "agent.yaml"
    text = REAL_CFG + extra
    if kc:
        text += "kubernetes:\n  node_name: n1\n  kubeconfig: %s\n  timeout: 5s\n" % kc
    cfg.write_text(text)
    return str(cfg)


# -- the real kernel ---------------------------------------------------------------------------

@needs_root
def test_reclaim_frees_real_zombies_and_the_event_counts_them(cz, kube, tmp_path):
    kube.add(kh.node_obj("n1"))
    kc = kube.kubeconfig(str(tmp_path / "kc"))
    cz.state.mkdir(exist_ok=True)
    prom = cz.state / "cz.prom"        # a host file lies in the state dir
    cfg = real_config(tmp_path, kc, "agent:\n  metrics_textfile: %s\n"
                      "remediation:\n  reclaim: drop_caches\n  for: 0s\n" % prom)
    with NamedZombies(tmp_path, flat=60, nests=2, per_nest=10) as z:
        ours = z.flat + z.nests * z.per_nest + z.nests
        written_back(z)
        r = cz("--config", cfg, "agent", "--once", timeout=120)
        assert r.rc == 0, r
        m = FREED.search(r.out)
        assert m, r.out
        freed, before, left = map(int, m.groups())
        assert before >= ours and before - freed == left, r.out
        assert freed >= 1, r.out
        # the census the agent took again after the reclaim: ours are gone. Not always every
        # one: measured over runs here, 0 to 1 of 82 stayed pinned by a reference the kernel
        # still held (the newest pages' per-CPU LRU batch); an old zombie has none such
        groups = census_groups(cz.run)
        left_ours = sum(n for k, n in groups.items() if k.startswith(z.name))
        assert left_ours <= ours // 10, (groups, r.out)
        print("ours: %d dying before, %d after" % (ours, left_ours))
        # the Event on the node says the same, as `kubectl describe node` finds it
        ev = events(kube)
        assert len(ev) == 1, ev
        assert ev[0]["reason"] == "CpuzombieReclaim" and ev[0]["type"] == "Normal", ev
        assert ev[0]["involvedObject"]["name"] == "n1", ev
        assert ev[0]["involvedObject"]["uid"] == "n1", ev   # kubelet's way: describe asks for it
        assert m.group(0) in ev[0]["message"], ev
        assert ev[0]["message"] in r.out, (ev, r.out)
        print("reclaim:", ev[0]["message"])
        # metrics (promtool-clean), report --json
        metrics = prom.read_text()
        assert 'cpuzombie_reclaim_runs_total{result="ok"} 1\n' in metrics, metrics
        assert 'cpuzombie_reclaim_last_dying{when="before",method="drop_caches"} %d\n' % before \
            in metrics, metrics
        assert "cpuzombie_reclaim_freed_memcgs_total %d\n" % freed in metrics, metrics
        promtool_ok(str(prom))
        j = json.loads(cz("--config", cfg, "report", "--json", timeout=120).out)
        rec = j["memcg"]["reclaim"]
        assert (rec["method"], rec["result"]) == ("drop_caches", "ok"), rec
        assert (rec["dying_before"], rec["dying_after"]) == (before, left), rec
        text = cz("--config", cfg, "report", timeout=120).out
        assert "  reclaim    " in text and m.group(0) in text, text
        # the next cycle, with dying memcgs of its own above min_dying: the reclaim may have
        # freed all but a few of the host's (a new VM had 3 left, and MemcgZombieLeak went
        # False). At most one reclaim per reclaim_interval, no second Event
        kube.reset_log()
        with NamedZombies(tmp_path, flat=10, nests=0, per_nest=0) as z2:
            r2 = cz("--config", cfg, "agent", "--once", timeout=120)
            assert r2.rc == 0, r2
            assert "reclaim: last reclaim 0s ago, at most one per 1h" in r2.out or \
                "at most one per 1h" in r2.out, (r2.out, census_groups(cz.run), z2.name)
        assert events(kube) == [], kube.log()


def test_reclaim_dry_run_writes_nothing_and_describe_node_shows_it(kube, tmp_path):
    """dry-run (remediation.mode) honoured: the Event says what would be done, nothing is
    written; real kubectl's `describe node` shows that Event (it asks by the node's UID and by
    its name: the agent uses the name, as kubelet does)."""
    kube.add(kh.node_obj("n1"))
    kc = kube.kubeconfig(str(tmp_path / "kc"))
    tree = fixture(tmp_path, "v1-zombies")
    cfg = fixture_config(tmp_path, "n1", kc, mode="dry-run", reclaim="drop_caches",
                         **{"for": "0s"})
    p = once(cfg, tree, tmp_path, "n1")
    assert p.returncode == 0, p
    msg = "dry-run: would reclaim with vm.drop_caches=1: 12840 dying memcgs"
    assert "reclaim: " + msg in p.stdout, p.stdout
    assert read(tree, "proc", "sys", "vm", "drop_caches") == ""
    ev = events(kube)
    assert [(e["reason"], e["type"], e["message"]) for e in ev] == \
        [("CpuzombieReclaimDryRun", "Normal", msg)], ev
    # rate-limited like a reclaim: one Event per reclaim_interval, not one per cycle
    kube.reset_log()
    p = once(cfg, tree, tmp_path, "n1")
    assert "at most one per 1h" in p.stdout and events(kube) == [], p.stdout
    kubectl = kh.kubectl_path()
    if not kubectl:
        pytest.skip("no kubectl (tests/tools/get-kube-tools.sh could not fetch it): the "
                    "describe half is not run")
    # the person looking is the admin (the agent's ServiceAccount may not list events)
    out = kh.kubectl(kube.admin_kubeconfig(str(tmp_path / "admin")), "describe", "node",
                     "n1").stdout
    assert "CpuzombieReclaimDryRun" in out and "would reclaim with vm.drop_caches=1" in out, out


def nobody_can_reach(tmp_path, *dirs):
    p = tmp_path
    while str(p) != "/":
        os.chmod(p, os.stat(p).st_mode | 0o011)
        p = p.parent
    for d in dirs:
        os.makedirs(str(d), exist_ok=True)
        os.chown(str(d), 65534, 65534)


@needs_root
@pytest.mark.parametrize("who,works", [
    (("--inh-caps=-all", "--bounding-set=-all"), True),          # uid 0, no capability
    (("--reuid=65534", "--regid=65534", "--clear-groups", "--inh-caps=-all,+sys_admin",
      "--ambient-caps=+sys_admin", "--bounding-set=-all,+sys_admin"), False),
    (("--reuid=65534", "--regid=65534", "--clear-groups", "--inh-caps=-all,+dac_override",
      "--ambient-caps=+dac_override", "--bounding-set=-all,+dac_override"), False),
], ids=["root-no-caps", "nobody-sys-admin", "nobody-dac-override"])
def test_reclaim_privileges_measured(cz, tmp_path, who, works):
    """vm.drop_caches is 0200 root: the kernel's sysctl check wants uid 0 and no capability
    stands in for it (measured here); a refusal is a Warning with what to grant, never a crash."""
    if not shutil.which("setpriv"):
        pytest.skip("needs setpriv to run with chosen ids and capabilities")
    if "--reuid=65534" in who:
        nobody_can_reach(tmp_path, cz.run, cz.state)
    cfg = real_config(tmp_path, None, "remediation:\n  reclaim: drop_caches\n  for: 0s\n")
    with NamedZombies(tmp_path, flat=10, nests=0, per_nest=0):
        p = subprocess.run(["setpriv", *who, "--", BIN, "--config", cfg, "--state-dir",
                            str(cz.state), "--run-dir", str(cz.run), "agent", "--once"],
                           capture_output=True, text=True, timeout=120)
    assert "runtime error:" not in p.stderr and "Sanitizer" not in p.stderr, p
    if works:
        assert p.returncode == 0 and FREED.search(p.stdout), p
    else:
        assert p.returncode != 0, p
        assert "reclaim with vm.drop_caches=1 refused: Permission denied (the agent needs root " \
            "and the host's /proc/sys/vm writable)" in p.stdout, p
        assert "Segmentation" not in p.stderr and p.returncode > 0, p


# -- fixture trees: the writes, the guards, the refusals ----------------------------------------

def fixture(tmp_path, case):
    tree = kh.agent_tree(tmp_path, case)
    vm = os.path.join(tree, "proc", "sys", "vm")
    os.makedirs(vm, exist_ok=True)
    open(os.path.join(vm, "drop_caches"), "w").close()    # write-only in /proc: reads nothing
    return tree


def fixture_config(tmp_path, name, kc=None, **rem):
    p = tmp_path / ("cz-%s.yaml" % name)
    text = kh.AGENT_CPU
    if kc:
        text += "kubernetes:\n  node_name: %s\n  kubeconfig: %s\n  timeout: 5s\n" % (name, kc)
    text += "remediation:\n" + "".join("  %s: %s\n" % kv for kv in rem.items())
    p.write_text(text)
    return str(p)


def once(cfg, tree, tmp_path, name, prefix=()):
    args = [*prefix, *kh.agent_once_args(BIN, cfg, tree, str(tmp_path), name)]
    p = subprocess.run(args, capture_output=True, text=True, timeout=120)
    assert "runtime error:" not in p.stderr and "Sanitizer" not in p.stderr, p
    return p


def read(tree, *rel):
    return open(os.path.join(tree, *rel)).read()


def test_reclaim_v1_fixture_writes_drop_caches_once_per_interval(tmp_path):
    tree = fixture(tmp_path, "v1-zombies")
    cfg = fixture_config(tmp_path, "n1", reclaim="drop_caches", **{"for": "0s"})
    p = once(cfg, tree, tmp_path, "n1")
    assert p.returncode == 0, p
    # the fixture's 12840 stay (nothing frees a file's count): the agent waited, then told so
    assert "reclaim: vm.drop_caches=1 freed 0 of 12840 dying memcgs (12840 left)" in p.stdout, p
    assert read(tree, "proc", "sys", "vm", "drop_caches") == "1", "not written through the root"
    # no node name: it still reclaims, and says why there is no Event
    assert "Reclaim Events off: no node name" in p.stderr, p.stderr
    # the next cycle, and a restarted agent (--once is a new process): not again
    open(os.path.join(tree, "proc", "sys", "vm", "drop_caches"), "w").close()
    p = once(cfg, tree, tmp_path, "n1")
    assert p.returncode == 0, p
    assert "at most one per 1h" in p.stdout, p.stdout
    assert read(tree, "proc", "sys", "vm", "drop_caches") == ""


def test_reclaim_waits_for_the_condition_to_last(tmp_path):
    tree = fixture(tmp_path, "v1-zombies")
    cfg = fixture_config(tmp_path, "n1", reclaim="drop_caches", **{"for": "1h"})
    p = once(cfg, tree, tmp_path, "n1")
    assert p.returncode == 0, p
    assert "reclaim: MemcgZombieLeak True for 0s of 1h" in p.stdout, p.stdout
    assert read(tree, "proc", "sys", "vm", "drop_caches") == ""
    # a healthy node: nothing to do at all
    healthy = fixture(tmp_path, "v1-healthy")
    p = once(cfg, healthy, tmp_path, "n2")
    assert "reclaim: MemcgZombieLeak is not True" in p.stdout, p.stdout
    assert read(healthy, "proc", "sys", "vm", "drop_caches") == ""
    # and nothing written for it: a healthy node's state dir sees no write cycle after cycle
    assert not os.path.exists(os.path.join(str(tmp_path), "state-n2", "reclaim"))


def v2_tree(tmp_path, subtree="system.slice", with_reclaim=True):
    tree = fixture(tmp_path, "v2-where-unit")
    cg = os.path.join(tree, "sys", "fs", "cgroup")
    if subtree != "system.slice":
        os.rename(os.path.join(cg, "system.slice"), os.path.join(cg, subtree))
    if with_reclaim:
        open(os.path.join(cg, subtree, "memory.reclaim"), "w").close()
    with open(os.path.join(cg, subtree, "memory.stat"), "w") as f:
        f.write("anon 1048576\nfile 900000000\ninactive_file 734003200\nactive_file 1\n")
    return tree, os.path.join(cg, subtree)


def test_reclaim_v2_fixture_asks_memory_reclaim_of_the_subtree(tmp_path):
    tree, sub = v2_tree(tmp_path)
    cfg = fixture_config(tmp_path, "n1", reclaim="memory.reclaim", **{"for": "0s"})
    p = once(cfg, tree, tmp_path, "n1")
    assert p.returncode == 0, p
    assert read(sub, "memory.reclaim") == "734003200", "the subtree's inactive_file"
    assert read(tree, "proc", "sys", "vm", "drop_caches") == "", "no drop_caches on v2"
    assert "reclaim: memory.reclaim of system.slice freed 0 of 5200 dying memcgs" in p.stdout, p


def test_reclaim_v2_without_memory_reclaim_falls_back_and_says_why(tmp_path):
    tree, sub = v2_tree(tmp_path, with_reclaim=False)
    cfg = fixture_config(tmp_path, "n1", reclaim="memory.reclaim", **{"for": "0s"})
    p = once(cfg, tree, tmp_path, "n1")
    assert p.returncode == 0, p
    assert read(tree, "proc", "sys", "vm", "drop_caches") == "1"
    assert not os.path.exists(os.path.join(sub, "memory.reclaim"))
    assert "no memory.reclaim (5.19+): vm.drop_caches=1 instead" in p.stderr, p.stderr


def test_reclaim_hostile_subtree_name_is_escaped_everywhere(kube, tmp_path):
    kube.add(kh.node_obj("n1"))
    kc = kube.kubeconfig(str(tmp_path / "kc"))
    evil = "evil\x1b[31m slice\u202e"
    tree, sub = v2_tree(tmp_path, subtree=evil)
    cfg = fixture_config(tmp_path, "n1", kc, reclaim="memory.reclaim", **{"for": "0s"})
    p = once(cfg, tree, tmp_path, "n1")
    assert p.returncode == 0, p
    assert read(sub, "memory.reclaim") == "734003200"   # the real path, not the escaped one
    ev = events(kube)
    assert len(ev) == 1 and "memory.reclaim of evil?[31m?slice???" in ev[0]["message"], ev
    for text in (p.stdout, ev[0]["message"]):
        assert "\x1b" not in text and "\u202e" not in text, text


@needs_root
def test_reclaim_refused_by_a_read_only_mount_is_a_warning_and_rate_limited(kube, tmp_path):
    """What the chart guards against: the host's /proc/sys/vm mounted read-only (a container's
    default). The agent says what to grant, in a Warning Event, and does not retry every cycle."""
    if not shutil.which("unshare"):
        pytest.skip("needs unshare for a private read-only bind mount")
    kube.add(kh.node_obj("n1"))
    kc = kube.kubeconfig(str(tmp_path / "kc"))
    tree = fixture(tmp_path, "v1-zombies")
    vm = os.path.join(tree, "proc", "sys", "vm")
    cfg = fixture_config(tmp_path, "n1", kc, reclaim="drop_caches", **{"for": "0s"})
    ro = ["unshare", "-m", "--propagation", "private", "sh", "-c",
          'mount --bind "$0" "$0" && mount -o remount,bind,ro "$0" && exec "$@"', vm]
    p = once(cfg, tree, tmp_path, "n1", prefix=ro)
    assert p.returncode != 0, p
    msg = ("reclaim with vm.drop_caches=1 refused: Read-only file system (the agent needs root "
           "and the host's /proc/sys/vm writable)")
    assert msg in p.stdout, p
    ev = events(kube)
    assert [(e["reason"], e["type"], e["message"]) for e in ev] == \
        [("CpuzombieReclaimFailed", "Warning", msg)], ev
    assert read(tree, "proc", "sys", "vm", "drop_caches") == ""
    kube.reset_log()
    p = once(cfg, tree, tmp_path, "n1", prefix=ro)
    assert p.returncode == 0 and "at most one per 1h" in p.stdout, p
    assert events(kube) == []

# SPDX-License-Identifier: MIT
"""check memcg names the cgroup v2 subtree holding the dying memcgs, from fixture trees in the
shape a 6.12+ kernel writes cgroup.stat (nr_dying_subsys_memory; tests/fixtures/memcg/
make-where.py) and the older two-counter shape: a pod's cgroup, a crash-looping unit's slice,
nothing when the zombies are spread, nothing on a healthy verdict."""
import os
import re

import pytest

from conftest import FIXTURES

POD = "kubepods-burstable-pod6b1c2d3e_4f5a_6b7c_8d9e_0f1a2b3c4d5e.slice"


def check(cz, tree, *extra):
    root = os.path.join(FIXTURES, "memcg", tree)
    return cz("--proc-root", root + "/proc", "--sys-root", root + "/sys", *extra,
              "check", "memcg")


@pytest.mark.parametrize("tree,count", [("v2-where-pod", 12300),
                                         ("v2-where-pod-descendants", 13530)])
def test_names_the_pod_cgroup(cz, tree, count):
    r = check(cz, tree)
    assert r.rc == 1, r
    m = re.search(r"; most under (\S+) \((\d+)\)", r.line)
    assert m, r.line
    # the front is cut to fit: the end names the pod
    assert m.group(1).endswith(POD) or POD.endswith(m.group(1).lstrip(".")), m.group(1)
    assert int(m.group(2)) == count       # nr_dying_subsys_memory when there is one
    assert len(r.line.encode()) <= 256


def test_names_the_crash_looping_units_slice(cz):
    r = check(cz, "v2-where-unit")
    assert r.rc == 1, r
    assert "; most under system.slice (5100);" in r.line, r.line


def test_spread_zombies_name_no_subtree(cz):
    r = check(cz, "v2-where-spread")
    assert r.rc == 1, r
    assert "most under" not in r.line, r.line


def test_ok_verdict_names_no_subtree(cz, tmp_path):
    """The subtree is named only on a problem (the walk runs only then)."""
    cfg = tmp_path / "c.yaml"
    cfg.write_text("memcg:\n  min_dying: 100000000\n")
    r = check(cz, "v2-where-pod", "--config", str(cfg))
    assert r.rc == 0 and "most under" not in r.line, r


def test_pod_named_from_what_the_agent_published(cz, tmp_path):
    """The agent names this node's pods from the kubelet's pod log directories
    (paths.pod_logs: /var/log/pods/NAMESPACE_NAME_UID, a fixture tree here) and publishes them
    by UID, with no API server at all (no list pods, on the node or cluster-wide);
    check memcg then names the pod holding the zombies by namespace/name."""
    import shutil
    import uuid
    uid = str(uuid.uuid4())
    other = str(uuid.uuid4())
    # the fixture tree, its pod cgroup renamed to this pod's UID (systemd driver: '_' for '-')
    tree = tmp_path / "tree"
    shutil.copytree(os.path.join(FIXTURES, "memcg", "v2-where-pod"), tree, symlinks=True)
    burst = tree / "sys/fs/cgroup/kubepods.slice/kubepods-burstable.slice"
    os.rename(burst / POD, burst / ("kubepods-burstable-pod%s.slice" % uid.replace("-", "_")))
    logs = tmp_path / "var-log-pods"
    for d in ("team-a_web-7f9c_" + uid, "team-b_other_" + other,
              "kube-system_etcd-n1_0123456789abcdef0123456789abcdef",   # a static pod's hash
              "not_a_pod_dir_" + uid, "Bad_name_" + str(uuid.uuid4())):
        (logs / d / "c").mkdir(parents=True)
        (logs / d / "c" / "0.log").write_text("a log line the agent never reads\n")
    (logs / "stray-file").write_text("")
    cfg = tmp_path / "agent.yaml"
    cfg.write_text("paths:\n  pod_logs: %s\ncpu:\n  inline_window: 1s\n" % logs)
    roots = ["--proc-root", str(tree / "proc"), "--sys-root", str(tree / "sys")]
    r = cz("--config", str(cfg), "agent", "--once", env={"NODE_NAME": "where-node"})
    assert r.rc == 0, r
    pods = (cz.run / "pods").read_text().splitlines()
    assert pods[0] == "cpuzombie-pods 1" and pods[1].startswith("t "), pods
    assert sorted(pods[2:]) == sorted(["p %s team-a web-7f9c" % uid, "p %s team-b other" % other]), pods
    assert "never reads" not in r.out + r.err
    r = cz(*roots, "check", "memcg")
    assert r.rc == 1 and "; most under pod team-a/web-7f9c (12300);" in r.line, r
    # without the agent's list, the cgroup's path instead
    os.unlink(cz.run / "pods")
    r = cz(*roots, "check", "memcg")
    assert r.rc == 1 and "most under ...s-burstable-pod" in r.line, r

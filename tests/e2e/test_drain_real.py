# SPDX-License-Identifier: MIT
"""cpuzombie's drain side by side with the real `kubectl drain` on the real control plane
(kube-apiserver, etcd, the real disruption controller computing PDB status, kwok nodes): twin
nodes carry the same kinds of pods; node A is drained by cpuzombie (remediation.mode drain, as
the chart's ServiceAccount), node B by kubectl drain with the matching options, as a
ServiceAccount of the test's own that has only kubectl drain's rights. The same pods must leave
and the same stay; where cpuzombie deliberately differs it is asserted as documented:

- bare pods (no controller): cpuzombie evicts them as `kubectl drain --force` does (an eviction,
  never a delete); kubectl without --force refuses the whole drain;
- finished pods (Succeeded/Failed): cpuzombie leaves them (nothing runs to move), kubectl evicts
  them;
- emptyDir pods without delete_emptydir_data: kubectl refuses the drain before evicting
  anything; cpuzombie evicts the other pods, leaves the emptyDir pods and reports the drain
  blocked (the node stays cordoned, drain-incomplete).
"""

import pytest

import drain_helpers as dh
import kube_helpers as kh

pytestmark = pytest.mark.skipif(kh.kubectl_path() is None, reason="no kubectl "
                                "(tests/tools/get-kube-tools.sh)")

A, B, C = "dra", "drb", "drc"       # twins A (cpuzombie) and B (kubectl); C: the spare


def kubectl_kc(kube, tmp_path):
    return dh.kubectl_drain_user(kube, str(tmp_path / "kc-kubectl"))


def twin_cluster(kube, extra=()):
    kube.add(kh.node_obj(A, conditions=[dh.READY, dh.SICK]),
             kh.node_obj(B, conditions=[dh.READY, dh.SICK]), kh.node_obj(C),
             *dh.twin_owners(), *dh.twin_pods(A, C), *dh.twin_pods(B, C), *extra)
    for n in (A, B):
        kube.agent_pod(n)           # the agent's own DaemonSet pod, on both twins
        dh.wait_pdb(kube, "db-" + n, allowed=1, healthy=2)


def strip(names, node):
    return sorted(n.replace("-" + node, "") for n in names)


def test_drain_side_by_side_with_kubectl(kube, tmp_path):
    twin_cluster(kube)
    kc = kubectl_kc(kube, tmp_path)
    # kubectl without --force refuses bare pods, before evicting anything (it has cordoned)
    r = dh.kubectl_drain(kc, B, "--ignore-daemonsets", "--delete-emptydir-data", "--timeout=60s")
    assert r.returncode != 0 and "bare-" + B in r.stderr, r.stdout + r.stderr
    assert "declare no controller" in r.stderr, r.stderr
    assert dh.evictions(kube.log(), dh.KUBECTL_USER) == []
    kube.reset_log()
    # the two drains at once: cpuzombie (delete_emptydir_data) and kubectl with the options
    # that match it (--force: cpuzombie evicts bare pods too)
    ours = dh.remediate(kube, tmp_path, A, popen=True, delete_emptydir_data="true")
    theirs = dh.kubectl_drain(kc, B, "--ignore-daemonsets", "--delete-emptydir-data",
                              "--force", "--timeout=60s", popen=True)
    out, err = ours.communicate(timeout=120)
    dh.sanitizer_clean(err)
    assert ours.returncode == 0 and "drained by cpuzombie" in out, out + err
    kout, kerr = theirs.communicate(timeout=120)
    assert theirs.returncode == 0, kout + kerr
    assert "node/%s drained" % B in kout, kout
    log = kube.log()
    # each had the rights it needed: nothing refused (kubectl's ServiceAccount has only
    # kubectl drain's rights: a missing one would show here)
    assert [e for e in log if e["status"] in (401, 403)] == []
    stay_a, stay_b = kube.pods(A), kube.pods(B)
    # what stayed: the DaemonSet pods (the agent's too) and the static pod's mirror on both;
    # the finished pod only under cpuzombie
    assert strip(dh.names(stay_a), A) == ["done", "ds", "static"]
    assert strip(dh.names(stay_b), B) == ["ds", "static"]
    for n in (A, B):
        assert len(kube.pods(n, ns=kh.AGENT_NS)) == 1
    # what left, by eviction only: the same pods but the finished one
    ev_a = dh.evictions(log, dh.REMEDIATOR_USER)
    ev_b = dh.evictions(log, dh.KUBECTL_USER)
    left_a = sorted({p for p, st in ev_a if st == 201})
    left_b = sorted({p for p, st in ev_b if st == 201})
    assert strip(left_a, A) == ["bare", "db-1", "scratch", "web-1", "web-2"]
    assert strip(left_b, B) == ["bare", "db-1", "done", "scratch", "web-1", "web-2"]
    assert all(st == 201 for _, st in ev_a + ev_b), (ev_a, ev_b)   # the PDB allowed one
    assert dh.pod_deletes(log, dh.REMEDIATOR_USER) == dh.pod_deletes(log, dh.KUBECTL_USER) == []
    # the PDB's other pod, on the spare, untouched; the budget now spent
    assert sorted(dh.names(kube.pods(C))) == ["db-%s-2" % A, "db-%s-2" % B]
    for n in (A, B):
        assert kube.node(n)["spec"]["unschedulable"] is True
        dh.wait_pdb(kube, "db-" + n, allowed=0, healthy=1)
    assert "cpuzombie.io/drained" in kube.node(A)["metadata"]["annotations"]


def test_emptydir_refusal_side_by_side(kube, tmp_path):
    twin_cluster(kube)
    kc = kubectl_kc(kube, tmp_path)
    kube.reset_log()
    ours = dh.remediate(kube, tmp_path, A)          # delete_emptydir_data: false (default)
    theirs = dh.kubectl_drain(kc, B, "--ignore-daemonsets", "--force", "--timeout=60s")
    assert ours.returncode == 0, ours.stdout + ours.stderr
    assert "drain blocked: 1 pod(s) use emptyDir" in ours.stdout, ours.stdout
    assert theirs.returncode != 0, theirs.stdout + theirs.stderr
    assert "local storage" in theirs.stderr and "scratch-" + B in theirs.stderr, theirs.stderr
    log = kube.log()
    # kubectl: nothing evicted; cpuzombie: all but the emptyDir pod (and what it skips)
    assert dh.evictions(log, dh.KUBECTL_USER) == []
    assert len(dh.names(kube.pods(B))) == 9 - 1         # all of B's but db-B-2 (on C)
    assert strip(dh.names(kube.pods(A)), A) == ["done", "ds", "scratch", "static"]
    for n in (A, B):                                    # both leave the node cordoned
        assert kube.node(n)["spec"]["unschedulable"] is True
    assert "cpuzombie.io/drained" not in kube.node(A)["metadata"].get("annotations", {})


def test_pdb_blocks_both_until_budget_allows(kube, tmp_path):
    """A PDB whose only pod is on the node: both drains meet 429, keep waiting (neither deletes
    the pod), and both finish once a second matching pod runs Ready on the spare node."""
    kube.add(kh.node_obj(A, conditions=[dh.READY, dh.SICK]),
             kh.node_obj(B, conditions=[dh.READY, dh.SICK]), kh.node_obj(C), kh.rs_obj("db"),
             *[kh.pod_obj("db-%s-1" % n, n, owner=("ReplicaSet", "db"),
                          labels={"app": "db-" + n}) for n in (A, B)],
             *[kh.pdb_obj("db-" + n, {"app": "db-" + n}, 1) for n in (A, B)])
    for n in (A, B):
        dh.wait_pdb(kube, "db-" + n, allowed=0, healthy=1)
    kc = kubectl_kc(kube, tmp_path)
    kube.reset_log()
    ours = dh.remediate(kube, tmp_path, A, popen=True)
    theirs = dh.kubectl_drain(kc, B, "--ignore-daemonsets", "--timeout=120s", popen=True)
    refused = {u: (lambda e, u=u: e["user"] == u and e["path"].endswith("/eviction")
                   and e["status"] == 429) for u in (dh.REMEDIATOR_USER, dh.KUBECTL_USER)}
    for u, pred in refused.items():
        dh.wait_log(kube, pred, [ours, theirs], 60, "a 429 eviction for " + u)
    # both retry: a second 429 each, and still running
    for u in refused:
        dh.wait_log(kube, lambda e, u=u: sum(refused[u](x) for x in kube.log()) >= 2,
                    [ours, theirs], 60, "a second 429 for " + u)
    for n in (A, B):
        assert dh.names(kube.pods(n)) == ["db-%s-1" % n]
    # a second matching pod, Ready on the spare: the budget allows one
    kube.add(*[kh.pod_obj("db-%s-2" % n, C, owner=("ReplicaSet", "db"),
                          labels={"app": "db-" + n}) for n in (A, B)])
    out, err = ours.communicate(timeout=120)
    dh.sanitizer_clean(err)
    assert ours.returncode == 0 and "drained by cpuzombie" in out, out + err
    kout, kerr = theirs.communicate(timeout=150)
    assert theirs.returncode == 0 and "node/%s drained" % B in kout, kout + kerr
    assert "disruption budget" in kerr, kerr          # kubectl said why it waited
    log = kube.log()
    for user, n in ((dh.REMEDIATOR_USER, A), (dh.KUBECTL_USER, B)):
        ev = dh.evictions(log, user)
        assert {p for p, _ in ev} == {"db-%s-1" % n}
        assert [st for _, st in ev][-1] == 201 and ev.count(("db-%s-1" % n, 429)) >= 2, ev
        assert dh.pod_deletes(log, user) == []
        assert kube.pods(n) == []
    assert dh.names(kube.pods(C)) == ["db-%s-2" % A, "db-%s-2" % B]

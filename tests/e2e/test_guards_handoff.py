# SPDX-License-Identifier: MIT
"""The hand-off with medik8s NodeHealthCheck on the real control plane: before a cordon the
remediator takes medik8s' per-node Lease node-<name> in medik8s-leases (medik8s/common
pkg/lease: the Lease its NodeHealthCheck and remediators take), so two remediators never act on
one node. A live Lease of another holder leaves the node alone; an expired one is taken over as
medik8s itself does; ours is given back at the uncordon."""

import json
import time

import pytest

import drain_helpers as dh
import guard_helpers as gh
import kube_helpers as kh
import remediator_helpers as rh


@pytest.fixture
def medik8s(kube, control_plane):
    kube.ensure_ns(gh.MEDIK8S_NS)
    gh.apply_medik8s_rbac(control_plane)
    yield kube
    rh.drop_leader(kube)
    gh.restore_rbac(control_plane)


def test_a_held_medik8s_lease_blocks_us(medik8s, tmp_path):
    kube = medik8s
    names = ["handoff-1", "handoff-2"]
    objs = gh.sick_nodes(names)
    for o in objs:
        o["metadata"]["labels"]["guards"] = "handoff"
    kube.add(*objs)
    st, held = kube.cp.raw("POST", gh.MEDIK8S_LEASES,
                           gh.medik8s_lease(names[0], "NodeHealthCheck", time.time() - 5))
    assert st == 201, held
    cfg = rh.config(tmp_path, rh.remediator_kubeconfig(kube, str(tmp_path / "kc")), "h",
                    mode="cordon", max_unavailable="2", node_selector='"guards=handoff"',
                    medik8s_lease_namespace=gh.MEDIK8S_NS)
    r = rh.run_once(cfg)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "%s: skipped" % names[0] in r.stdout and "is held by NodeHealthCheck" in r.stdout, \
        r.stdout
    assert "%s: cordoned" % names[1] in r.stdout, r.stdout
    assert gh.held(kube, names) == names[1:]
    # theirs untouched; ours taken as medik8s' manager would (holder, owner, duration)
    theirs = kube.get(gh.MEDIK8S_LEASES + "/node-" + names[0])
    assert theirs["spec"]["holderIdentity"] == "NodeHealthCheck"
    assert theirs["metadata"]["resourceVersion"] == held["metadata"]["resourceVersion"]
    ours = kube.get(gh.MEDIK8S_LEASES + "/node-" + names[1])
    assert ours["spec"]["holderIdentity"] == "cpuzombie"
    assert ours["metadata"]["ownerReferences"][0]["kind"] == "Node"
    assert ours["metadata"]["ownerReferences"][0]["uid"] == \
        kube.node(names[1])["metadata"]["uid"]
    # the budget slot of the node left to medik8s was given back
    assert [l["spec"]["holderIdentity"] for l in kube.leases()] == [names[1]]
    # recovery: uncordoned, and medik8s' Lease given back
    kube.set_conditions(names[1], dh.WELL)
    r = rh.run_once(cfg)
    assert "%s: uncordoned" % names[1] in r.stdout, r.stdout + r.stderr
    assert kube.cp.raw("GET", gh.MEDIK8S_LEASES + "/node-" + names[1])[0] == 404
    # their Lease expires (renewed 2 h ago, 1 h hold): taken over as medik8s does
    theirs["spec"]["renewTime"] = gh.micro(time.time() - 7200)
    st, obj = kube.cp.raw("PUT", gh.MEDIK8S_LEASES + "/node-" + names[0], theirs)
    assert st == 200, obj
    r = rh.run_once(cfg)
    assert "%s: cordoned" % names[0] in r.stdout, r.stdout + r.stderr
    got = kube.get(gh.MEDIK8S_LEASES + "/node-" + names[0])["spec"]
    assert got["holderIdentity"] == "cpuzombie" and got["leaseTransitions"] == 1


def test_medik8s_lease_unreadable_holds_the_node(kube, tmp_path):
    """medik8s_lease_namespace names a namespace the remediator holds no rights in (the chart
    can only grant them in a namespace that exists, so such a namespace answers 403, not 404):
    whether another remediator holds the node cannot be told, so nothing is done to it, and
    the budget slot taken for it is given back."""
    n = "handoff-none"
    kube.add(*gh.sick_nodes([n]))
    cfg = rh.config(tmp_path, rh.remediator_kubeconfig(kube, str(tmp_path / "kc")), "h0",
                    mode="cordon", node_selector='"kubernetes.io/hostname=%s"' % n,
                    medik8s_lease_namespace="medik8s-absent")
    try:
        r = rh.run_once(cfg)
    finally:
        rh.drop_leader(kube)
    assert r.returncode == 2, r.stdout + r.stderr
    assert "%s: waiting: cannot take medik8s' Lease medik8s-absent/node-%s" % (n, n) in \
        r.stdout, r.stdout
    assert "HTTP 403" in r.stderr, r.stderr
    assert gh.held(kube, [n]) == [] and kube.leases() == []


@pytest.fixture
def kured(kube, control_plane):
    kh.apply_chart_rbac(control_plane, gh.KURED_VALUES)
    ds = kh.ds_obj("kured", ns="kube-system")
    st, obj = kube.cp.raw("POST", "/apis/apps/v1/namespaces/kube-system/daemonsets", ds)
    assert st == 201, obj
    yield kube
    kube.cp.raw("DELETE", gh.KURED_PATH)
    rh.drop_leader(kube)
    gh.restore_rbac(control_plane)


def _set_lock(kube, value):
    st, obj = kube.cp.raw("PATCH", gh.KURED_PATH, {"metadata": {"annotations": {
        "weave.works/kured-node-lock": value}}}, "application/strategic-merge-patch+json")
    assert st == 200, obj


def _lock(kube):
    return kube.get(gh.KURED_PATH)["metadata"].get("annotations", {}).get(gh.KURED_LOCK)


def _ds_writes(kube):
    return [e for e in kube.log() if e["user"] == rh.REM_USER and e["path"] == gh.KURED_PATH
            and e["method"] != "GET"]


def _kured_nodes(kube, names):
    objs = gh.sick_nodes(names)
    for o in objs:
        o["metadata"]["labels"]["guards"] = "kured"
    kube.add(*objs)


def test_kured_lock_of_another_node_blocks_us(kured, tmp_path):
    """kured's lock (the annotation weave.works/kured-node-lock on its DaemonSet, as kured's
    pkg/daemonsetlock writes it) is one lock for the cluster: while it is live for another node
    (kured reboots one node at a time) cpuzombie acts on no node; while it names kured-1 itself
    (kured is rebooting it), kured-1 is left to kured and kured-2 waits too. Their lock is never
    written. Once its TTL has passed it is free, and cpuzombie takes it as kured would: for one
    node only, though the budget allows two."""
    kube = kured
    names = ["kured-1", "kured-2"]
    _kured_nodes(kube, names)
    cfg = rh.config(tmp_path, rh.remediator_kubeconfig(kube, str(tmp_path / "kc")), "k",
                    mode="cordon", max_unavailable="2", node_selector='"guards=kured"',
                    kured_daemonset=gh.KURED_DS)
    theirs = gh.kured_lock("kured-0", time.time() - 60)        # TTL 0: kured's default
    _set_lock(kube, theirs)
    rv = kube.get(gh.KURED_PATH)["metadata"]["resourceVersion"]
    r = rh.run_once(cfg)
    assert r.returncode == 0, r.stdout + r.stderr
    for n in names:
        assert "%s: waiting" % n in r.stdout, r.stdout
    assert "is held by kured-0: one node at a time" in r.stdout, r.stdout
    assert gh.held(kube, names) == [] and kube.leases() == []
    assert _lock(kube) == theirs and _ds_writes(kube) == []
    assert kube.get(gh.KURED_PATH)["metadata"]["resourceVersion"] == rv
    # kured's own lock on kured-1: kured reboots it
    theirs = gh.kured_lock(names[0], time.time() - 60, ttl_ns=3600 * 10**9)
    _set_lock(kube, theirs)
    r = rh.run_once(cfg)
    assert "%s: skipped" % names[0] in r.stdout and "kured is rebooting it" in r.stdout, \
        r.stdout
    assert "%s: waiting" % names[1] in r.stdout and "is held by kured-1" in r.stdout, r.stdout
    assert gh.held(kube, names) == [] and _lock(kube) == theirs and _ds_writes(kube) == []
    # the lock expired (created 2 h ago, TTL 1 h): taken for one node, not both
    _set_lock(kube, gh.kured_lock(names[0], time.time() - 7200, ttl_ns=3600 * 10**9))
    r = rh.run_once(cfg)
    assert r.returncode == 0, r.stdout + r.stderr
    held = gh.held(kube, names)
    assert len(held) == 1, r.stdout
    lock = json.loads(_lock(kube))
    assert lock["nodeID"] == held[0] and lock["holder"] == "cpuzombie", lock
    other = [n for n in names if n not in held][0]
    assert "%s: waiting" % other in r.stdout and "is held by %s" % held[0] in r.stdout, \
        r.stdout


def test_kured_lock_taken_held_and_given_back(kured, tmp_path):
    """A free lock is taken before the cordon, as kured's Acquire() writes it (nodeID,
    metadata, created, TTL in ns; an Update at the resourceVersion read: here a merge patch
    carrying it), held while the node is ours and given back at the uncordon. A lock that is
    no longer ours by then (it expired and kured took it for kured-9) is left as it is."""
    kube = kured
    n = "kured-a"
    _kured_nodes(kube, [n])
    cfg = rh.config(tmp_path, rh.remediator_kubeconfig(kube, str(tmp_path / "kc")), "ka",
                    mode="cordon", node_selector='"guards=kured"', kured_daemonset=gh.KURED_DS)
    rv = kube.get(gh.KURED_PATH)["metadata"]["resourceVersion"]
    r = rh.run_once(cfg)
    assert r.returncode == 0 and "%s: cordoned" % n in r.stdout, r.stdout + r.stderr
    lock = json.loads(_lock(kube))
    assert lock["nodeID"] == n and lock["holder"] == "cpuzombie", lock
    # kured's start-up uncordons a node whose lock it finds unless metadata.unschedulable
    assert lock["metadata"] == {"unschedulable": True}, lock
    assert lock["TTL"] == 3600 * 10**9, lock
    created = time.mktime(time.strptime(lock["created"][:19], "%Y-%m-%dT%H:%M:%S")) - \
        time.timezone
    assert abs(created - time.time()) < 600, lock
    w = _ds_writes(kube)
    assert [(e["method"], e["status"]) for e in w] == [("PATCH", 200)], w
    assert w[0]["body"]["metadata"]["resourceVersion"] == rv, w[0]["body"]
    # still sick: held, the lock ours and not rewritten (renewed only half-way through its TTL)
    before = _lock(kube)
    r = rh.run_once(cfg)
    assert gh.held(kube, [n]) == [n] and _lock(kube) == before, r.stdout + r.stderr
    assert len(_ds_writes(kube)) == 1
    # recovery: uncordoned, the lock given back (the annotation removed)
    kube.set_conditions(n, dh.READY, dh.WELL)
    r = rh.run_once(cfg)
    assert "%s: uncordoned" % n in r.stdout, r.stdout + r.stderr
    assert _lock(kube) is None
    assert [(e["method"], e["status"]) for e in _ds_writes(kube)] == [("PATCH", 200)] * 2
    # again, but the lock is kured's for kured-9 by the uncordon: never removed by us
    kube.set_conditions(n, dh.READY, dh.SICK)
    r = rh.run_once(cfg)
    assert "%s: cordoned" % n in r.stdout, r.stdout + r.stderr
    theirs = gh.kured_lock("kured-9", time.time() - 5)
    _set_lock(kube, theirs)
    kube.set_conditions(n, dh.READY, dh.WELL)
    r = rh.run_once(cfg)
    assert "%s: uncordoned" % n in r.stdout, r.stdout + r.stderr
    assert _lock(kube) == theirs
    assert len(_ds_writes(kube)) == 3       # the take; no write at the release

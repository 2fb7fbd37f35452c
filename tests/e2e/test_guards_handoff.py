# SPDX-License-Identifier: MIT
"""The hand-off with medik8s NodeHealthCheck on the real control plane: before a cordon the
remediator takes medik8s' per-node Lease node-<name> in medik8s-leases (medik8s/common
pkg/lease: the Lease its NodeHealthCheck and remediators take), so two remediators never act on
one node. A live Lease of another holder leaves the node alone; an expired one is taken over as
medik8s itself does; ours is given back at the uncordon."""

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


def test_kured_node_lock_leaves_its_node_to_kured(kured, tmp_path):
    """kured's lock (the annotation weave.works/kured-node-lock on its DaemonSet, as kured
    writes it) names kured-1: kured is rebooting it, so cpuzombie leaves it and remediates
    kured-2. Once the lock's TTL has passed, kured-1 is cpuzombie's again."""
    kube = kured
    names = ["kured-1", "kured-2"]
    objs = gh.sick_nodes(names)
    for o in objs:
        o["metadata"]["labels"]["guards"] = "kured"
    kube.add(*objs)
    _set_lock(kube, gh.kured_lock(names[0], time.time() - 60, ttl_ns=3600 * 10**9))
    cfg = rh.config(tmp_path, rh.remediator_kubeconfig(kube, str(tmp_path / "kc")), "k",
                    mode="cordon", max_unavailable="2", node_selector='"guards=kured"',
                    kured_daemonset=gh.KURED_DS)
    r = rh.run_once(cfg)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "%s: skipped" % names[0] in r.stdout and "kured's node lock" in r.stdout, r.stdout
    assert gh.held(kube, names) == names[1:]
    assert "weave.works/kured-node-lock" in kube.get(gh.KURED_PATH)["metadata"]["annotations"]
    # the lock expired (created 2 h ago, TTL 1 h): kured-1 is remediated
    _set_lock(kube, gh.kured_lock(names[0], time.time() - 7200, ttl_ns=3600 * 10**9))
    r = rh.run_once(cfg)
    assert "%s: cordoned" % names[0] in r.stdout, r.stdout + r.stderr
    assert gh.held(kube, names) == names

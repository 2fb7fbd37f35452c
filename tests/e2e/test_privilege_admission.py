# SPDX-License-Identifier: MIT
"""The writes RBAC cannot narrow, held by the chart's admission policies on the real control
plane (the chart's access objects as `helm template` renders them with remediation on and both
hand-offs, kured's DaemonSet and medik8s' Leases; the uninstall hook's account too). Each attack
is refused by the real server (403, its audit record saying admission, the object unchanged),
and each legitimate write of the same kind is still taken:

- kured's DaemonSet: the remediator and the cleanup account change its node lock annotation
  and nothing else (not the pod template that runs on every node, no label, no annotation);
- a node, by the remediator: spec.unschedulable and cpuzombie.io/ annotations only, and nothing
  on a control-plane node (allow_control_plane off);
- a node, by the cleanup account: only removing cpuzombie conditions, annotations and taints;
- Events: an update by a node agent only of an Event about its own node, its subject unchanged;
- Leases: budget slots cpuzombie-slot-0..N-1 only; medik8s' node-* Lease only when absent,
  expired (by the server's own clock: the write's managedFields time) or ours; the cleanup
  account deletes only our Leases."""

import json
import time

import pytest

import guard_helpers as gh
import kube_helpers as kh
import privilege_helpers as ph
import remediator_helpers as rh

SMP = "application/strategic-merge-patch+json"
MERGE = "application/merge-patch+json"
CLEANUP_SA = "cpuzombie-cleanup"
CLEANUP_USER = "system:serviceaccount:%s:%s" % (kh.AGENT_NS, CLEANUP_SA)
VALUES = kh.CHART_VALUES + ("--set", "config.remediation.kured_daemonset=" + gh.KURED_DS,
                            "--set", "config.remediation.medik8s_lease_namespace=" +
                            gh.MEDIK8S_NS, "--set-string", "config.remediation.max_unavailable=1",
                            "--set", "config.remediation.allow_control_plane=false")
LEASES = "/apis/coordination.k8s.io/v1/namespaces/%s/leases"
CP_LABEL = "node-role.kubernetes.io/control-plane"
CP_TAINT = {"key": CP_LABEL, "effect": "NoSchedule"}
OUR_TAINT = {"key": "cpuzombie.io/draining", "effect": "NoSchedule"}


def _wait_refused(kube, token, method, path, body, ctype, what):
    """Until the server refuses a dry run of @method @path (the policy just applied is in
    force a moment later)."""
    sep = "&" if "?" in path else "?"

    def refused():
        st, obj = kube.call(method, path + sep + "dryRun=All", body, ctype=ctype, token=token)
        assert st in (200, 201, 403), (what, st, obj)
        return st == 403
    kh.wait_until(refused, 60, what)


@pytest.fixture(scope="module")
def policies(control_plane):
    """The chart's access objects with both hand-offs on, for this module (medik8s' namespace
    first: its Role lives there)."""
    ns = "/api/v1/namespaces/" + gh.MEDIK8S_NS
    st, obj = control_plane.raw("POST", "/api/v1/namespaces", {
        "apiVersion": "v1", "kind": "Namespace", "metadata": {"name": gh.MEDIK8S_NS}})
    assert st in (201, 409), obj
    kh.apply_chart_rbac(control_plane, VALUES)
    yield
    gh.restore_rbac(control_plane)
    control_plane.raw("DELETE", ns)
    kh.wait_until(lambda: control_plane.raw("GET", ns)[0] == 404, 60, ns + " to go")


@pytest.fixture
def cluster(kube, control_plane, policies):
    """Nodes na, nb (workers) and cp1 (control plane, tainted); kured's DaemonSet; medik8s'
    namespace; every new policy in force."""
    cp1 = kh.node_obj("cp1", labels={CP_LABEL: ""})
    cp1["spec"]["taints"] = [CP_TAINT]
    kube.add(kh.node_obj("na"), kh.node_obj("nb"), cp1)
    kube.cp.raw("DELETE", gh.KURED_PATH)
    kh.wait_until(lambda: kube.cp.raw("GET", gh.KURED_PATH)[0] == 404, 30, "old kured to go")
    st, obj = kube.cp.raw("POST", "/apis/apps/v1/namespaces/kube-system/daemonsets",
                          kh.ds_obj("kured", ns="kube-system"))
    assert st == 201, obj
    rem, cln = rh.remediator_token(kube), cleanup_token(kube)
    _wait_refused(kube, rem, "PATCH", gh.KURED_PATH, {"metadata": {"labels": {"x": "y"}}},
                  MERGE, "the kured policy to be in force")
    _wait_refused(kube, cln, "PATCH", gh.KURED_PATH, {"metadata": {"labels": {"x": "y"}}},
                  MERGE, "the cleanup's kured policy to be in force")
    _wait_refused(kube, rem, "PATCH", "/api/v1/nodes/na", {"metadata": {"labels": {"x": "y"}}},
                  MERGE, "the remediator's node policy to be in force")
    _wait_refused(kube, cln, "PATCH", "/api/v1/nodes/na", {"metadata": {"labels": {"x": "y"}}},
                  MERGE, "the cleanup's node policy to be in force")
    _wait_refused(kube, rem, "POST", LEASES % kh.LEASE_NS, lease("cpuzombie-slot-1", "x"),
                  "application/json", "the slot bound to be in force")
    yield kube
    kube.cp.raw("DELETE", gh.KURED_PATH)
    for name in ("node-na", "node-nb"):
        kube.cp.raw("DELETE", gh.MEDIK8S_LEASES + "/" + name)
    rh.drop_leader(kube)


def cleanup_token(kube):
    """The uninstall hook's account (its Job's pod runs on any node: not pod-bound)."""
    return kube.cp.token(kh.AGENT_NS, CLEANUP_SA, None, 3600)


def lease(name, holder, renewed=None, seconds=30):
    spec = {"holderIdentity": holder, "leaseDurationSeconds": seconds}
    if renewed is not None:
        spec["renewTime"] = spec["acquireTime"] = gh.micro(renewed)
    return {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
            "metadata": {"name": name}, "spec": spec}


def refused(kube, token, user, method, path, body=None, ctype="application/json"):
    return ph.refused(kube, token, user, method, path, body, ctype, "admission")


# -- kured's DaemonSet ----------------------------------------------------------------------------

TEMPLATE_ATTACK = {"spec": {"template": {"spec": {"containers": [{
    "name": "kured", "image": "busybox", "command": ["nsenter", "-t", "1", "-a", "sh"]}]}}}}


@pytest.mark.parametrize("who", ["remediator", "cleanup"])
@pytest.mark.parametrize("what", ["template", "label", "annotation", "drop-annotation"])
def test_kured_daemonset_only_its_lock(cluster, who, what):
    """RBAC's patch of kured's DaemonSet is of all of it; the pod template would run on every
    node. Only weave.works/kured-node-lock may change: a template, a label, another annotation
    (added or removed) are refused; the lock itself is taken and given back."""
    kube = cluster
    tok, user = ((rh.remediator_token(kube), rh.REM_USER) if who == "remediator"
                 else (cleanup_token(kube), CLEANUP_USER))
    st, obj = kube.cp.raw("PATCH", gh.KURED_PATH, {"metadata": {"annotations": {
        "example.com/theirs": "1"}}}, MERGE)
    assert st == 200, obj
    before = kube.get(gh.KURED_PATH)
    body = {"template": json.loads(json.dumps(TEMPLATE_ATTACK)),
            "label": {"metadata": {"labels": {"app": "owned"}}},
            "annotation": {"metadata": {"annotations": {"example.com/other": "x"}}},
            "drop-annotation": {"metadata": {"annotations": {"example.com/theirs": None}}},
            }[what]
    # the attack carries a lock change too: the policy still refuses the whole write
    body.setdefault("metadata", {}).setdefault("annotations", {})[gh.KURED_LOCK] = "{}"
    refused(kube, tok, user, "PATCH", gh.KURED_PATH, body, MERGE)
    after = kube.get(gh.KURED_PATH)
    assert after["spec"] == before["spec"] and after["metadata"].get("labels") == \
        before["metadata"].get("labels") and after["metadata"]["annotations"] == \
        before["metadata"]["annotations"]
    # the legitimate write: the lock alone, taken and given back
    lock = gh.kured_lock("na", time.time())
    st, obj = kube.call("PATCH", gh.KURED_PATH, {"metadata": {"annotations": {
        gh.KURED_LOCK: lock}}}, ctype=MERGE, token=tok)
    assert st == 200 and obj["metadata"]["annotations"][gh.KURED_LOCK] == lock, (st, obj)
    st, obj = kube.call("PATCH", gh.KURED_PATH, {"metadata": {"annotations": {
        gh.KURED_LOCK: None}}}, ctype=MERGE, token=tok)
    assert st == 200 and gh.KURED_LOCK not in obj["metadata"]["annotations"], (st, obj)
    assert obj["spec"] == before["spec"]


# -- nodes: the remediator -------------------------------------------------------------------------

REMEDIATOR_NODE_ATTACKS = {
    "trusted-label": ("nb", {"metadata": {"labels": {
        "node-restriction.kubernetes.io/trusted": "yes"}}}),
    "relabel-control-plane": ("nb", {"metadata": {"labels": {CP_LABEL: ""}}}),
    "untaint-control-plane": ("cp1", {"spec": {"taints": None}}),
    "cordon-control-plane": ("cp1", {"spec": {"unschedulable": True}}),
    "annotate-control-plane": ("cp1", {"metadata": {"annotations": {
        "cpuzombie.io/cordoned-by": "x"}}}),
    "provider-id": ("nb", {"spec": {"providerID": "aws:///evil"}}),
    "noexecute-taint": ("nb", {"spec": {"taints": [{"key": "x", "effect": "NoExecute"}]}}),
    "pod-cidr": ("nb", {"spec": {"podCIDR": "10.9.0.0/24"}}),
    "other-annotation": ("nb", {"metadata": {"annotations": {"example.com/x": "1"}}}),
    "cordon-and-label": ("nb", {"spec": {"unschedulable": True},
                                "metadata": {"labels": {"team": "evil"}}}),
}


@pytest.mark.parametrize("what", sorted(REMEDIATOR_NODE_ATTACKS))
def test_remediator_changes_only_the_cordon_and_its_annotations(cluster, what):
    kube = cluster
    node, body = REMEDIATOR_NODE_ATTACKS[what]
    before = kube.node(node)
    refused(kube, rh.remediator_token(kube), rh.REM_USER, "PATCH", "/api/v1/nodes/" + node,
            body, MERGE)
    assert ph.node_state(kube.node(node)) == ph.node_state(before), what


def test_remediator_may_not_write_a_nodes_status(cluster):
    """No grant either (RBAC), and the policy would refuse it: nodes/status is not the cordon."""
    kube = cluster
    ph.refused(kube, rh.remediator_token(kube), rh.REM_USER, "PATCH", "/api/v1/nodes/nb/status",
               {"status": {"conditions": [{"type": "Ready", "status": "False",
                                           "reason": "X", "message": "m"}]}}, SMP, "rbac")


def test_remediator_cordons_and_uncordons_a_worker(cluster):
    """The legitimate write: cordon with its annotation (as remediate.c sends it, a merge patch
    at the resourceVersion read), then uncordon and remove it."""
    kube = cluster
    tok = rh.remediator_token(kube)
    rv = kube.node("nb")["metadata"]["resourceVersion"]
    st, obj = kube.call("PATCH", "/api/v1/nodes/nb", {
        "metadata": {"resourceVersion": rv, "annotations": {
            "cpuzombie.io/cordoned-by": "MemcgZombieLeak"}},
        "spec": {"unschedulable": True}}, ctype=MERGE, token=tok)
    assert st == 200 and obj["spec"]["unschedulable"] is True, (st, obj)
    st, obj = kube.call("PATCH", "/api/v1/nodes/nb", {
        "metadata": {"annotations": {"cpuzombie.io/cordoned-by": None}},
        "spec": {"unschedulable": None}}, ctype=MERGE, token=tok)
    assert st == 200 and not obj["spec"].get("unschedulable"), (st, obj)
    assert "cpuzombie.io/cordoned-by" not in (obj["metadata"].get("annotations") or {})


# -- nodes: the cleanup account --------------------------------------------------------------------

def _mark_ours(kube, node):
    """Our condition, annotation and taint on @node, and theirs beside them (as the admin)."""
    st, obj = kube.cp.raw("PATCH", "/api/v1/nodes/" + node, {
        "metadata": {"annotations": {"cpuzombie.io/cordoned-by": "MemcgZombieLeak",
                                     "example.com/theirs": "1"}},
        "spec": {"taints": [OUR_TAINT, {"key": "example.com/theirs", "effect": "NoSchedule"}]}},
        MERGE)
    assert st == 200, obj
    kube.set_conditions(node, {"type": "MemcgZombieLeak", "status": "True",
                               "reason": "ZombieMemcgsHigh", "message": "m"})


CLEANUP_ATTACKS = {
    "set-ready-false": ("/status", {"status": {"conditions": [
        {"type": "Ready", "status": "False", "reason": "KubeletDown", "message": "m"}]}}),
    "set-our-condition": ("/status", {"status": {"conditions": [
        {"type": "CPUCoreSaturation", "status": "True", "reason": "X", "message": "m"}]}}),
    "change-our-condition": ("/status", {"status": {"conditions": [
        {"type": "MemcgZombieLeak", "status": "False", "reason": "X", "message": "m"}]}}),
    "label": ("", {"metadata": {"labels": {"node-restriction.kubernetes.io/x": "y"}}}),
    "label-via-status": ("/status", {"metadata": {"labels": {"evil": "1"}}}),
    "add-our-annotation": ("", {"metadata": {"annotations": {"cpuzombie.io/new": "1"}}}),
    "drop-their-annotation": ("", {"metadata": {"annotations": {"example.com/theirs": None}}}),
    "drop-their-taint": ("", {"spec": {"taints": [OUR_TAINT]}}),
    "cordon": ("", {"spec": {"unschedulable": True}}),
}


def test_cleanup_lifts_only_its_own_cordon(cluster):
    """The one spec change cleanup may make: uncordon a node whose cordon is ours (marker
    cpuzombie.io/cordoned); someone else's cordon is refused, ours passes."""
    kube = cluster
    tok = cleanup_token(kube)
    st, obj = kube.cp.raw("PATCH", "/api/v1/nodes/nb", {"spec": {"unschedulable": True}}, MERGE)
    assert st == 200, obj
    before = kube.node("nb")
    refused(kube, tok, CLEANUP_USER, "PATCH", "/api/v1/nodes/nb",
            {"spec": {"unschedulable": None}}, MERGE)
    assert ph.node_state(kube.node("nb")) == ph.node_state(before)
    st, obj = kube.cp.raw("PATCH", "/api/v1/nodes/nb", {
        "metadata": {"annotations": {"cpuzombie.io/cordoned": "MemcgZombieLeak"}}}, MERGE)
    assert st == 200, obj
    st, obj = kube.call("PATCH", "/api/v1/nodes/nb", {
        "metadata": {"annotations": {"cpuzombie.io/cordoned": None}},
        "spec": {"unschedulable": None}}, ctype=MERGE, token=tok)
    assert st == 200 and not obj["spec"].get("unschedulable"), (st, obj)


@pytest.mark.parametrize("what", sorted(CLEANUP_ATTACKS))
def test_cleanup_only_removes_what_is_ours(cluster, what):
    kube = cluster
    _mark_ours(kube, "nb")
    sub, body = CLEANUP_ATTACKS[what]
    before = kube.node("nb")
    refused(kube, cleanup_token(kube), CLEANUP_USER, "PATCH", "/api/v1/nodes/nb" + sub, body,
            SMP)
    assert ph.node_state(kube.node("nb")) == ph.node_state(before), what


def test_cleanup_removes_ours_and_keeps_theirs(cluster):
    kube = cluster
    _mark_ours(kube, "nb")
    tok = cleanup_token(kube)
    st, obj = kube.call("PATCH", "/api/v1/nodes/nb/status", {"status": {"conditions": [
        {"type": "MemcgZombieLeak", "$patch": "delete"}]}}, ctype=SMP, token=tok)
    assert st == 200, obj
    st, obj = kube.call("PATCH", "/api/v1/nodes/nb", {
        "metadata": {"annotations": {"cpuzombie.io/cordoned-by": None}},
        "spec": {"taints": [{"key": "example.com/theirs", "effect": "NoSchedule"}]}},
        ctype=MERGE, token=tok)
    assert st == 200, obj
    n = kube.node("nb")
    assert [c["type"] for c in n["status"]["conditions"]] == ["Ready"]
    assert n["metadata"]["annotations"].get("example.com/theirs") == "1"
    assert not [k for k in n["metadata"]["annotations"] if k.startswith("cpuzombie.io/")]
    assert [t["key"] for t in n["spec"]["taints"]] == ["example.com/theirs"]


def test_cleanup_deletes_only_our_leases(cluster):
    """RBAC gives the cleanup list and delete of every Lease in its namespaces: the policy
    lets it delete a budget slot and medik8s' Lease it holds, not another's Lease."""
    kube = cluster
    tok = cleanup_token(kube)
    made = []
    for ns, l in ((kh.LEASE_NS, lease("someone-else", "x")),
                  (kh.LEASE_NS, lease("cpuzombie-slot-0", "na")),
                  (gh.MEDIK8S_NS, gh.medik8s_lease("na", "NodeHealthCheck", time.time())),
                  (gh.MEDIK8S_NS, gh.medik8s_lease("nb", "cpuzombie", time.time()))):
        st, obj = kube.cp.raw("POST", LEASES % ns, l)
        assert st == 201, obj
        made.append(LEASES % ns + "/" + l["metadata"]["name"])
    try:
        refused(kube, tok, CLEANUP_USER, "DELETE", made[0])
        refused(kube, tok, CLEANUP_USER, "DELETE", made[2])
        for path in (made[1], made[3]):
            st, obj = kube.call("DELETE", path, token=tok)
            assert st == 200, (path, st, obj)
        assert [kube.cp.raw("GET", p)[0] for p in made] == [200, 404, 200, 404]
    finally:
        for p in made:
            kube.cp.raw("DELETE", p)


# -- Events ----------------------------------------------------------------------------------------

def _event(node, name):
    return {"apiVersion": "v1", "kind": "Event",
            "metadata": {"name": name, "namespace": "default"},
            "involvedObject": {"kind": "Node", "name": node, "apiVersion": "v1"},
            "reason": "NodeNotReady", "message": "m", "type": "Warning", "count": 1}


@pytest.mark.parametrize("how", ["repoint", "plain"])
def test_agent_may_not_rewrite_another_nodes_event(cluster, how):
    """An Event about na (the node controller's, here the admin's): nb's agent may not patch
    it, neither re-pointing involvedObject to itself in the same patch (the new object alone
    would pass) nor plainly."""
    kube = cluster
    path = "/api/v1/namespaces/default/events/na.theirs"
    st, ev = kube.cp.raw("POST", "/api/v1/namespaces/default/events",
                         _event("na", "na.theirs"))
    assert st == 201, ev
    kube.extra.append(path)
    body = {"message": "rewritten", "count": 9}
    if how == "repoint":
        body["involvedObject"] = {"kind": "Node", "name": "nb", "apiVersion": "v1"}
    refused(kube, kube.agent_token("nb"), rh.AGENT_USER, "PATCH", path, body, SMP)
    got = kube.get(path)
    assert (got["message"], got["count"], got["involvedObject"]["name"]) == ("m", 1, "na")


def test_agent_may_not_repoint_its_own_event(cluster):
    kube = cluster
    tok = kube.agent_token("nb")
    path = "/api/v1/namespaces/default/events/nb.own"
    st, ev = kube.call("POST", "/api/v1/namespaces/default/events", _event("nb", "nb.own"),
                       token=tok)
    assert st == 201, ev
    kube.extra.append(path)
    refused(kube, tok, rh.AGENT_USER, "PATCH", path, {"involvedObject": {
        "kind": "Node", "name": "nb", "apiVersion": "v1", "uid": "forged"}}, SMP)
    st, obj = kube.call("PATCH", path, {"count": 2}, ctype=SMP, token=tok)  # NPD's repeat
    assert st == 200 and obj["count"] == 2, (st, obj)


# -- Leases ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["cpuzombie-slot-1", "cpuzombie-slot-99999",
                                  "cpuzombie-slot-00", "cpuzombie-slot-0x"])
def test_remediator_slots_only_within_the_budget(cluster, name):
    """max_unavailable 1: cpuzombie-slot-0 is the one slot; another number is refused."""
    kube = cluster
    refused(kube, rh.remediator_token(kube), rh.REM_USER, "POST", LEASES % kh.LEASE_NS,
            lease(name, "na"))
    assert kube.cp.raw("GET", LEASES % kh.LEASE_NS + "/" + name)[0] == 404


def test_remediator_takes_slot_zero(cluster):
    kube = cluster
    tok = rh.remediator_token(kube)
    st, obj = kube.call("POST", LEASES % kh.LEASE_NS, lease("cpuzombie-slot-0", "na"),
                        token=tok)
    assert st == 201, obj
    assert kube.call("DELETE", LEASES % kh.LEASE_NS + "/cpuzombie-slot-0", token=tok)[0] == 200


def _put(kube, tok, path, body, manager="cpuzombie"):
    q = "?fieldManager=" + manager if manager else ""
    return kube.call("PUT", path + q, body, token=tok)


def _take(old):
    new = json.loads(json.dumps(old))
    new["spec"].update(holderIdentity="cpuzombie", renewTime=gh.micro(time.time()),
                       acquireTime=gh.micro(time.time()),
                       leaseTransitions=old["spec"].get("leaseTransitions", 0) + 1)
    return new


def test_medik8s_live_lease_of_another_is_not_taken(cluster):
    """NodeHealthCheck's live Lease node-na (renewed now, an hour's hold): taking it over is
    refused however the write is dressed: as the remediator sends it, without the field
    manager the policy reads the clock from, with managedFields forged to a future time, or
    with renewTime claimed far ahead. Deleting it is refused too."""
    kube = cluster
    path = gh.MEDIK8S_LEASES + "/node-na"
    st, theirs = kube.cp.raw("POST", gh.MEDIK8S_LEASES,
                             gh.medik8s_lease("na", "NodeHealthCheck", time.time()))
    assert st == 201, theirs
    tok = rh.remediator_token(kube)
    refused(kube, tok, rh.REM_USER, "PUT", path + "?fieldManager=cpuzombie", _take(theirs))
    refused(kube, tok, rh.REM_USER, "PUT", path, _take(theirs))
    forged = _take(theirs)
    forged["metadata"]["managedFields"] = [{
        "manager": "cpuzombie", "operation": "Update", "apiVersion": "coordination.k8s.io/v1",
        "time": "2099-01-01T00:00:00Z", "fieldsType": "FieldsV1",
        "fieldsV1": {"f:spec": {"f:holderIdentity": {}}}}]
    refused(kube, tok, rh.REM_USER, "PUT", path + "?fieldManager=cpuzombie", forged)
    ahead = _take(theirs)
    ahead["spec"]["renewTime"] = gh.micro(time.time() + 86400 * 365)
    refused(kube, tok, rh.REM_USER, "PUT", path + "?fieldManager=cpuzombie", ahead)
    refused(kube, tok, rh.REM_USER, "DELETE", path)
    got = kube.get(path)
    assert got["spec"] == theirs["spec"], got


def test_medik8s_expired_absent_or_ours_is_taken(cluster):
    """The legitimate writes: create when absent; take over an expired Lease (renewed 2 h ago,
    1 h hold) as medik8s does; renew and delete our own."""
    kube = cluster
    tok = rh.remediator_token(kube)
    st, obj = kube.call("POST", gh.MEDIK8S_LEASES + "?fieldManager=cpuzombie",
                        gh.medik8s_lease("nb", "cpuzombie", time.time()), token=tok)
    assert st == 201, obj
    st, obj = _put(kube, tok, gh.MEDIK8S_LEASES + "/node-nb", _take(obj))
    assert st == 200, obj
    assert kube.call("DELETE", gh.MEDIK8S_LEASES + "/node-nb", token=tok)[0] == 200
    st, theirs = kube.cp.raw("POST", gh.MEDIK8S_LEASES,
                             gh.medik8s_lease("na", "NodeHealthCheck", time.time() - 7200))
    assert st == 201, theirs
    st, obj = _put(kube, tok, gh.MEDIK8S_LEASES + "/node-na", _take(theirs))
    assert st == 200 and obj["spec"]["holderIdentity"] == "cpuzombie", (st, obj)


# -- the same rules, offline: the policies' CEL on sample requests ---------------------------------

def _offline_policies():
    import deploy_helpers as dh
    _, objs = dh.render("remediation", ["--set", "config.remediation.kured_daemonset=" +
                                        gh.KURED_DS],
                        ns_args=("-n", "cpuzombie", "--set", "createNamespace=true"))
    return {o["metadata"]["name"]: o["spec"] for o in objs
            if o["kind"] == "ValidatingAdmissionPolicy"}


def _sample_node(labels=None, ann=None, spec=None, conds=None):
    return {"metadata": {"name": "n", "labels": labels or {"a": "b"},
                         "annotations": ann or {"x": "1"}},
            "spec": spec or {},
            "status": {"conditions": conds or [{"type": "Ready", "status": "True"}],
                       "capacity": {"cpu": "2"}}}


def _sample(user, res, old, new, sub="", group="", ns="", name="n"):
    return {"request": {"operation": "UPDATE", "name": name, "namespace": ns,
                        "subResource": sub,
                        "resource": {"group": group, "version": "v1", "resource": res},
                        "userInfo": {"username": user, "extra": {}}},
            "object": new, "oldObject": old}


def test_policies_offline_by_a_cel_evaluator():
    """The new policies' expressions, run by a standard CEL evaluator (test_deploy's) on sample
    requests: what the real server answers above, without it (a CEL slip shows here first)."""
    import copy
    from test_deploy import CEL_SCRIPT, node_eval
    pols = _offline_policies()
    rem = "system:serviceaccount:cpuzombie:cpuzombie-remediator"
    cln = "system:serviceaccount:cpuzombie:cpuzombie-cleanup"
    o = _sample_node()
    cp = _sample_node(labels={CP_LABEL: ""})
    samples = [
        (_sample(rem, "nodes", o, _sample_node(spec={"unschedulable": True}, ann={
            "x": "1", "cpuzombie.io/cordoned": "t"})), True),
        (_sample(rem, "nodes", o, _sample_node(labels={
            "a": "b", "node-restriction.kubernetes.io/trusted": "yes"})), False),
        (_sample(rem, "nodes", o, _sample_node(ann={"x": "2"})), False),
        (_sample(rem, "nodes", o, _sample_node(spec={"providerID": "p"})), False),
        (_sample(rem, "nodes", cp, _sample_node(labels={CP_LABEL: ""},
                                                spec={"unschedulable": True})), False),
    ]
    got = node_eval(CEL_SCRIPT, {"policy": pols["cpuzombie-remediator-nodes"],
                                 "samples": [s for s, _ in samples]})
    assert got == [w for _, w in samples], got
    ours = _sample_node(ann={"x": "1", "cpuzombie.io/a": "1"},
                        spec={"taints": [dict(OUR_TAINT), {"key": "k", "effect": "NoSchedule"}]},
                        conds=[{"type": "Ready", "status": "True"},
                               {"type": "MemcgZombieLeak", "status": "True"}])

    def changed(f):
        n = copy.deepcopy(ours)
        f(n)
        return n
    samples = [
        (_sample(cln, "nodes", ours, changed(lambda n: (
            n["metadata"]["annotations"].pop("cpuzombie.io/a"),
            n["spec"].update(taints=[{"key": "k", "effect": "NoSchedule"}])))), True),
        (_sample(cln, "nodes", ours, changed(lambda n: n["status"].update(
            conditions=[{"type": "Ready", "status": "True"}])), "status"), True),
        (_sample(cln, "nodes", ours, changed(lambda n: n["status"].update(conditions=[
            {"type": "Ready", "status": "False"},
            {"type": "MemcgZombieLeak", "status": "True"}])), "status"), False),
        (_sample(cln, "nodes", ours, changed(lambda n: n["metadata"]["labels"].update(l="1"))),
         False),
        (_sample(cln, "nodes", ours, changed(lambda n: n["metadata"]["annotations"].update(
            {"cpuzombie.io/new": "1"}))), False),
    ]
    got = node_eval(CEL_SCRIPT, {"policy": pols["cpuzombie-cleanup-writes"],
                                 "samples": [s for s, _ in samples]})
    assert got == [w for _, w in samples], got
    ds = {"metadata": {"name": "kured", "labels": {"app": "kured"}, "annotations": {"a": "1"}},
          "spec": {"template": {"spec": {"containers": [{"name": "k", "image": "i"}]}}}}
    lock = copy.deepcopy(ds)
    lock["metadata"]["annotations"][gh.KURED_LOCK] = "{}"
    pod = copy.deepcopy(lock)
    pod["spec"]["template"]["spec"]["containers"][0]["command"] = ["nsenter", "-t", "1"]
    for name, user in (("cpuzombie-remediator-kured", rem), ("cpuzombie-cleanup-kured-lock", cln)):
        got = node_eval(CEL_SCRIPT, {"policy": pols[name], "samples": [
            _sample(user, "daemonsets", ds, x, group="apps", ns="kube-system", name="kured")
            for x in (lock, pod)]})
        assert got == [True, False], (name, got)

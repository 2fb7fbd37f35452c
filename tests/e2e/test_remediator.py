# SPDX-License-Identifier: MIT
"""The remediator split on the real control plane (tests/tools/kube), as the chart's
ServiceAccounts with the chart's RBAC and admission policy as rendered with remediation on
(kube_helpers.CHART_VALUES): node agents only report; one remediator (a Deployment, leader
elected) cordons, drains and holds the budget Leases. What each may not do is refused by the
real server itself, each refusal its own test, with the server's audit record saying who
refused it (RBAC or the admission policy) and the object left as it was."""

import time

import pytest

import kube_helpers as kh
import remediator_helpers as rh

SMP = "application/strategic-merge-patch+json"
LEASES = "/apis/coordination.k8s.io/v1/namespaces/%s/leases"


@pytest.fixture
def two(kube):
    """Nodes na and nb with a pod each; the agent's token is bound to its pod on na."""
    kube.add(kh.node_obj("na"), kh.node_obj("nb"), kh.pod_obj("pa", "na"),
             kh.pod_obj("pb", "nb"))
    yield kube
    rh.drop_leader(kube)


def lease(name, holder):
    return {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
            "metadata": {"name": name},
            "spec": {"holderIdentity": holder, "leaseDurationSeconds": 30}}


def eviction(name):
    return {"apiVersion": "policy/v1", "kind": "Eviction",
            "metadata": {"name": name, "namespace": "default"}}


def refused(kube, token, user, method, path, body=None, ctype="application/json", by=None):
    """Does @method @path as @token; asserts the real server refused it with 403, and that
    its audit record says @by ("rbac" or "admission") refused it. Returns the answer."""
    mark = kube.cp.audit_mark()
    st, obj = kube.call(method, path, body, ctype=ctype, token=token)
    verb = {"POST": "create", "PATCH": "patch", "PUT": "update", "DELETE": "delete"}[method]
    evs = rh.audited(kube, mark, user, verb, path.split("?")[0])
    assert evs, ("no audit event for", method, path)
    codes = [e["responseStatus"]["code"] for e in evs]
    assert (st, codes[-1]) == (403, 403), (method, path, st, codes, obj)
    if by:
        assert rh.refused_by(evs[-1]) == by, evs[-1].get("annotations")
    if by == "admission":
        assert "ValidatingAdmissionPolicy" in obj["message"], obj["message"]
    return obj


# -- the agent: reports on its own node, nothing more ------------------------------------------

def test_agent_may_report_on_its_own_node(two):
    """What the agent keeps: its own node's status, Events about it, reading nodes. Not pods
    (their names come from the node's pod log directories): refused."""
    tok = two.agent_token("na")
    st, obj = two.call("PATCH", "/api/v1/nodes/na/status", {"status": {"conditions": [
        {"type": "MemcgZombieLeak", "status": "False", "reason": "ZombieMemcgsNormal",
         "message": "m"}]}}, ctype=SMP, token=tok)
    assert st == 200, obj
    st, obj = two.call("POST", "/api/v1/namespaces/default/events", {
        "apiVersion": "v1", "kind": "Event", "metadata": {"generateName": "na."},
        "involvedObject": {"kind": "Node", "name": "na", "apiVersion": "v1"},
        "reason": "ZombieMemcgsNormal", "message": "m", "type": "Normal"}, token=tok)
    assert st == 201, obj
    assert two.call("GET", "/api/v1/nodes/nb", token=tok)[0] == 200
    assert two.call("GET", "/api/v1/pods?fieldSelector=spec.nodeName%3Dna", token=tok)[0] == 403


def test_agent_may_not_patch_another_nodes_status(two):
    before = two.node("nb")["metadata"]["resourceVersion"]
    obj = refused(two, two.agent_token("na"), rh.AGENT_USER, "PATCH", "/api/v1/nodes/nb/status",
                  {"status": {"conditions": [{"type": "MemcgZombieLeak", "status": "True",
                                              "reason": "ZombieMemcgsHigh", "message": "m"}]}},
                  ctype=SMP, by="admission")
    assert "may not change node nb" in obj["message"]
    assert two.node("nb")["metadata"]["resourceVersion"] == before


def test_agent_may_not_record_events_about_another_node(two):
    obj = refused(two, two.agent_token("na"), rh.AGENT_USER, "POST",
                  "/api/v1/namespaces/default/events", {
                      "apiVersion": "v1", "kind": "Event", "metadata": {"generateName": "nb."},
                      "involvedObject": {"kind": "Node", "name": "nb", "apiVersion": "v1"},
                      "reason": "CpuzombieCordon", "message": "m", "type": "Warning"},
                  by="admission")
    assert "its own node" in obj["message"]
    assert two.events("nb") == []


def test_agent_may_not_cordon_another_node(two):
    refused(two, two.agent_token("na"), rh.AGENT_USER, "PATCH", "/api/v1/nodes/nb",
            {"spec": {"unschedulable": True}}, ctype=SMP, by="rbac")
    assert not two.node("nb")["spec"].get("unschedulable")


def test_agent_may_not_cordon_its_own_node(two):
    refused(two, two.agent_token("na"), rh.AGENT_USER, "PATCH", "/api/v1/nodes/na",
            {"spec": {"unschedulable": True}, "metadata": {"annotations": {
                "cpuzombie.io/cordoned": "x"}}}, ctype=SMP, by="rbac")
    n = two.node("na")
    assert not n["spec"].get("unschedulable")
    assert "cpuzombie.io/cordoned" not in n["metadata"].get("annotations", {})


@pytest.mark.parametrize("pod", ["pb", "pa"], ids=["other-node", "own-node"])
def test_agent_may_not_evict(two, pod):
    refused(two, two.agent_token("na"), rh.AGENT_USER, "POST",
            "/api/v1/namespaces/default/pods/%s/eviction" % pod, eviction(pod), by="rbac")
    assert [p["metadata"]["name"] for p in two.pods("nb" if pod == "pb" else "na")] == [pod]


def test_agent_may_not_delete_a_pod(two):
    refused(two, two.agent_token("na"), rh.AGENT_USER, "DELETE",
            "/api/v1/namespaces/default/pods/pa", by="rbac")
    assert [p["metadata"]["name"] for p in two.pods("na")] == ["pa"]


@pytest.mark.parametrize("ns", [kh.LEASE_NS, kh.AGENT_NS], ids=["budget", "leader"])
def test_agent_may_not_write_a_lease(two, ns):
    """Neither a budget slot for itself (what the old agent did) nor the remediator's leader
    Lease; nor update or delete one that exists."""
    tok = two.agent_token("na")
    name = "cpuzombie-slot-0" if ns == kh.LEASE_NS else rh.LEADER
    refused(two, tok, rh.AGENT_USER, "POST", LEASES % ns, lease(name, "na"), by="rbac")
    st, obj = two.cp.raw("POST", LEASES % ns, lease(name, "someone"))
    assert st == 201, obj
    try:
        obj["spec"]["holderIdentity"] = "na"
        refused(two, tok, rh.AGENT_USER, "PUT", LEASES % ns + "/" + name, obj, by="rbac")
        refused(two, tok, rh.AGENT_USER, "DELETE", LEASES % ns + "/" + name, by="rbac")
        assert two.get(LEASES % ns + "/" + name)["spec"]["holderIdentity"] == "someone"
    finally:
        two.cp.raw("DELETE", LEASES % ns + "/" + name)


# -- the remediator: what remediation calls, and no more -----------------------------------------

def test_remediator_may_not_delete_a_pod_without_allow_delete(two):
    refused(two, rh.remediator_token(two), rh.REM_USER, "DELETE",
            "/api/v1/namespaces/default/pods/pb", by="rbac")
    assert [p["metadata"]["name"] for p in two.pods("nb")] == ["pb"]


@pytest.mark.parametrize("where", ["default-ns", "other-name", "node-lease"])
def test_remediator_may_not_write_leases_outside_its_own(two, where):
    """Its Role: the budget slots cpuzombie-slot-N in lease_namespace and its leader Lease in
    the release namespace. Not a Lease in another namespace, not another Lease there (the
    kube-system Leases of kube-controller-manager and the like), not a kubelet's node Lease."""
    tok = rh.remediator_token(two)
    if where == "default-ns":
        refused(two, tok, rh.REM_USER, "POST", LEASES % "default",
                lease("cpuzombie-slot-0", "na"), by="rbac")
        return
    ns = kh.LEASE_NS if where == "other-name" else "kube-node-lease"
    name = "kube-controller-manager-test" if where == "other-name" else "nb"
    two.ensure_ns(ns)
    st, obj = two.cp.raw("POST", LEASES % ns, lease(name, "someone"))
    assert st == 201, obj
    try:
        obj["spec"]["holderIdentity"] = "na"
        refused(two, tok, rh.REM_USER, "PUT", LEASES % ns + "/" + name, obj, by="rbac")
        refused(two, tok, rh.REM_USER, "DELETE", LEASES % ns + "/" + name, by="rbac")
        assert two.get(LEASES % ns + "/" + name)["spec"]["holderIdentity"] == "someone"
    finally:
        two.cp.raw("DELETE", LEASES % ns + "/" + name)


@pytest.mark.parametrize("ns,name", [(kh.LEASE_NS, "kube-scheduler"),
                                     (kh.LEASE_NS, "cpuzombie-slot-x"),
                                     (kh.AGENT_NS, "cpuzombie-remediator-2")])
def test_remediator_may_not_create_leases_of_other_names(two, ns, name):
    """RBAC cannot limit a create by name: the admission policy cpuzombie-remediator-leases
    does (a Lease another component elects its leader with, absent for a moment, is not the
    remediator's to create)."""
    obj = refused(two, rh.remediator_token(two), rh.REM_USER, "POST", LEASES % ns,
                  lease(name, "na"), by="admission")
    assert "may only write its own Leases" in obj["message"]
    assert two.cp.raw("GET", LEASES % ns + "/" + name)[0] == 404


# -- a whole cycle, each side with its own rights ------------------------------------------------

def _cond(t, status, ltt="2024-01-01T00:00:00Z"):
    return {"type": t, "status": status, "reason": "R", "message": "m",
            "lastHeartbeatTime": ltt, "lastTransitionTime": ltt}


def test_whole_cycle_as_the_chart_runs_it_gets_no_403(kube, tmp_path):
    """The agent of n1 reports the condition (its own node: conditions, Event); the remediator
    takes a slot, cordons, drains and, after recovery, uncordons and releases; the agent then
    reports recovery. Nothing either does is refused, by the server's own audit record."""
    import test_kube_api as ka
    kube.add(kh.node_obj("n1"), kh.node_obj("n2"), kh.rs_obj("web"),
             kh.pod_obj("web-1", "n1", owner=("ReplicaSet", "web"), labels={"app": "web"}))
    mark = kube.cp.audit_mark()
    agent_cfg = ka.config(tmp_path, kube.kubeconfig(str(tmp_path / "kc-agent"), node="n1"),
                          "n1", mode="drain", set_conditions="true", remediate="false")
    sick = kh.agent_tree(tmp_path, "v1-zombies")
    r = ka.cycle(agent_cfg, sick)
    assert r.returncode == 0 and "by the remediator" in r.stdout, r.stdout + r.stderr
    assert ka.conds(kube.node("n1"))["MemcgZombieLeak"]["status"] == "True"
    rcfg = rh.config(tmp_path, rh.remediator_kubeconfig(kube, str(tmp_path / "kc-rem")),
                     mode="drain", **{"for": "0s"})
    try:
        r = rh.run_once(rcfg)
        assert r.returncode == 0 and "n1: drained" in r.stdout, r.stdout + r.stderr
        n = kube.node("n1")
        assert n["spec"]["unschedulable"] is True
        assert "cpuzombie.io/drained" in n["metadata"]["annotations"]
        assert kube.pods("n1") == []
        assert [l["spec"]["holderIdentity"] for l in kube.leases()] == ["n1"]
        assert "CpuzombieCordon" in [e["reason"] for e in kube.events("n1")]
        # recovery: the agent reports it, the remediator uncordons
        r = ka.cycle(agent_cfg, kh.agent_tree(tmp_path, "v1-healthy"))
        assert r.returncode == 0, r.stderr
        c = ka.conds(kube.node("n1"))
        assert [c[t]["status"] for t in ("MemcgZombieLeak", "CPUCoreSaturation",
                                         "ENADeviceReset")] == ["False"] * 3
        time.sleep(1.1)                                 # uncordon_after 1s of recovery
        r = rh.run_once(rcfg)
        assert "n1: uncordoned" in r.stdout, r.stdout + r.stderr
        assert not kube.node("n1")["spec"].get("unschedulable")
        assert kube.leases() == []
    finally:
        rh.drop_leader(kube)
    users = {e["user"]["username"] for e in kube.cp.audit(mark)[0] if "user" in e}
    assert {rh.AGENT_USER, rh.REM_USER} <= users
    rh.no_403(kube, mark, {rh.AGENT_USER, rh.REM_USER})


# -- two remediators: only the leader acts -------------------------------------------------------

def test_two_remediators_race_only_the_leader_acts(kube, tmp_path):
    nodes = ["r-%02d" % i for i in range(6)]
    kube.add(*[kh.node_obj(n, conditions=[_cond("MemcgZombieLeak", "True")]) for n in nodes])
    # 6 of 6 True is a storm by the default max_unhealthy (20% of more than 5): this test is
    # about which replica acts, so the storm guard is set aside (test_guards.py has it)
    cfg = rh.config(tmp_path, rh.remediator_kubeconfig(kube, str(tmp_path / "kc")),
                    max_unavailable="6", max_unhealthy='"100%"')
    try:
        ps = [rh.run_once(cfg, identity=i, popen=True) for i in ("rem-a", "rem-b")]
        outs = [p.communicate(timeout=120) for p in ps]
        assert all(p.returncode == 0 for p in ps), outs
        leaders = [o for o, _ in outs if "(leader)" in o]
        followers = [o for o, _ in outs if "not the leader" in o]
        assert len(leaders) == 1 and len(followers) == 1, outs
        who = "rem-a" if "rem-a (leader)" in leaders[0] else "rem-b"
        other = "rem-b" if who == "rem-a" else "rem-a"
        assert "%s holds" % who in followers[0] or "409" in followers[0], followers[0]
        held = [n for n in nodes if kube.node(n)["spec"].get("unschedulable")]
        assert held == nodes
        cordons = [e for e in kube.log() if e["method"] == "PATCH" and e.get("unschedulable")]
        assert len(cordons) == 6                       # each node once: one actor
        # the follower wrote nothing but (at most) its try at the leader Lease
        lease = kube.get(rh.LEADER_PATH)
        assert lease["spec"]["holderIdentity"] == who
        # while the leader's Lease is live, a third replica does nothing either
        kube.reset_log()
        r = rh.run_once(cfg, identity=other)
        assert "not the leader (%s holds" % who in r.stdout, r.stdout + r.stderr
        assert [e for e in kube.log() if e["method"] != "GET"] == []
        # an expired Lease is taken over (renewTime 31 s ago)
        lease["spec"]["renewTime"] = "2024-01-01T00:00:00.000000Z"
        st, obj = kube.cp.raw("PUT", rh.LEADER_PATH, lease)
        assert st == 200, obj
        r = rh.run_once(cfg, identity=other)
        assert "%s (leader)" % other in r.stdout, r.stdout + r.stderr
        got = kube.get(rh.LEADER_PATH)["spec"]
        assert got["holderIdentity"] == other and got["leaseTransitions"] == 1
    finally:
        rh.drop_leader(kube)

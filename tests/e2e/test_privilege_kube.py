# SPDX-License-Identifier: MIT
"""Least privilege on the real control plane, as the chart's
ServiceAccounts with the chart's RBAC and admission policies as rendered (kube_helpers.
CHART_VALUES, applied by the session fixture): the node agent's token (bound to its pod on its
node, as the DaemonSet's projected token is) sets its own node's cpuzombie conditions and
nothing else: not another condition of its node (Ready), not a status field (capacity,
addresses), not a label, annotation or taint of it; no pod is listed or read; Events only in
"default" and never updated. The remediator's token cordons and evicts. Each refusal is the
real server's (403, its audit record saying RBAC or admission), and the object is unchanged."""

import pytest

import kube_helpers as kh
import privilege_helpers as ph
import remediator_helpers as rh

SMP = "application/strategic-merge-patch+json"
OURS = ("MemcgZombieLeak", "CPUCoreSaturation", "ENADeviceReset")


@pytest.fixture
def two(kube):
    """Nodes na and nb (kwok: Ready, with capacity and addresses), a pod on each; tokens of the
    agent bound to its pod on na and on nb."""
    kube.add(kh.node_obj("na"), kh.node_obj("nb"), kh.pod_obj("pa", "na"),
             kh.pod_obj("pb", "nb", ns="team-b"))
    yield kube
    rh.drop_leader(kube)


def refused(kube, token, method, path, body=None, ctype="application/json", by=None,
            user=rh.AGENT_USER):
    return ph.refused(kube, token, user, method, path, body, ctype, by)


def cond(ctype, status="True", reason="R"):
    return {"type": ctype, "status": status, "reason": reason, "message": "m"}


def test_agent_sets_each_of_its_conditions_on_its_own_node(two):
    tok = two.agent_token("na")
    st, obj = two.call("PATCH", "/api/v1/nodes/na/status", {"status": {"conditions": [
        cond(t) for t in OURS]}}, ctype=SMP, token=tok)
    assert st == 200, obj
    got = {c["type"]: c["status"] for c in two.node("na")["status"]["conditions"]}
    assert all(got[t] == "True" for t in OURS), got
    # and back, as NPD does when the problem goes
    st, obj = two.call("PATCH", "/api/v1/nodes/na/status", {"status": {"conditions": [
        cond("MemcgZombieLeak", "False", "ZombieMemcgsNormal")]}}, ctype=SMP, token=tok)
    assert st == 200, obj


@pytest.mark.parametrize("what", ["Ready", "NewCondition", "capacity", "addresses",
                                  "labels", "annotations", "remove-Ready"])
def test_agent_may_not_change_other_fields_of_its_own_node(two, what):
    """Its own node, through the status subresource it may patch: only cpuzombie's conditions.
    The real server keeps a label or annotation sent through /status (measured on 1.37.2: the
    chart before took 'node-restriction.kubernetes.io/x' and 'evil' with 200), so the policy
    refuses those too."""
    before = two.node("nb")
    tok = two.agent_token("nb")
    body = {
        "Ready": {"status": {"conditions": [cond("Ready", "False", "KubeletDown")]}},
        "NewCondition": {"status": {"conditions": [cond("NetworkUnavailable")]}},
        "capacity": {"status": {"capacity": {"cpu": "512"}}},
        "addresses": {"status": {"addresses": [{"type": "InternalIP",
                                                "address": "10.66.66.66"}]}},
        "labels": {"metadata": {"labels": {"node-restriction.kubernetes.io/x": "y"}}},
        "annotations": {"metadata": {"annotations": {"evil": "1"}}},
        "remove-Ready": {"status": {"conditions": [{"type": "Ready", "$patch": "delete"}]}},
    }[what]
    mark = two.cp.audit_mark()
    st, obj = two.call("PATCH", "/api/v1/nodes/nb/status", body, ctype=SMP, token=tok)
    after = two.node("nb")
    assert st == 403, (what, st, obj)
    assert "ValidatingAdmissionPolicy" in obj["message"], obj["message"]
    evs = rh.audited(two, mark, rh.AGENT_USER, "patch", "/api/v1/nodes/nb/status")
    assert evs and rh.refused_by(evs[-1]) == "admission", evs
    assert ph.node_state(after) == ph.node_state(before), what


def test_second_nodes_agent_may_not_change_another_node(two):
    """nb's agent: na's cpuzombie conditions are not its own (the rest of na even less)."""
    before = two.node("na")
    tok = two.agent_token("nb")
    refused(two, tok, "PATCH", "/api/v1/nodes/na/status",
            {"status": {"conditions": [cond("MemcgZombieLeak")]}}, ctype=SMP, by="admission")
    refused(two, tok, "PATCH", "/api/v1/nodes/na", {"spec": {"unschedulable": True}},
            ctype=SMP, by="rbac")
    refused(two, tok, "PATCH", "/api/v1/nodes/na", {"metadata": {"labels": {"a": "b"}}},
            ctype=SMP, by="rbac")
    assert ph.node_state(two.node("na")) == ph.node_state(before)


@pytest.mark.parametrize("path", ["/api/v1/pods", "/api/v1/pods?fieldSelector=spec.nodeName%3Dnb",
                                  "/api/v1/namespaces/team-b/pods",
                                  "/api/v1/namespaces/team-b/pods/pb"])
def test_agent_may_not_read_pods(two, path):
    """Pod names come from the node's own pod log directories now (agent.podNames): no pod,
    not even of its own node, is listed or read through the API server."""
    tok = two.agent_token("nb")
    mark = two.cp.audit_mark()
    st, obj = two.call("GET", path, token=tok)
    assert st == 403, (path, st, obj)
    verb = "get" if path.endswith("/pb") else "list"
    evs = rh.audited(two, mark, rh.AGENT_USER, verb, path.split("?")[0])
    assert evs and rh.refused_by(evs[-1]) == "rbac", evs


def _event(node, ns="default", name=None):
    md = {"namespace": ns}
    md.update({"name": name} if name else {"generateName": node + "."})
    return {"apiVersion": "v1", "kind": "Event", "metadata": md,
            "involvedObject": {"kind": "Node", "name": node, "apiVersion": "v1"},
            "reason": "ZombieMemcgsHigh", "message": "m", "type": "Warning"}


@pytest.mark.parametrize("ns", ["kube-system", kh.AGENT_NS, "team-b"])
def test_agent_events_only_in_default(two, ns):
    """Events about its own node, in any namespace but "default": refused by RBAC (the
    Events Role lives in "default" only)."""
    tok = two.agent_token("nb")
    refused(two, tok, "POST", "/api/v1/namespaces/%s/events" % ns, _event("nb", ns), by="rbac")
    assert not [e for e in two.events("nb") if e["metadata"]["namespace"] == ns]


def test_agent_may_not_update_or_delete_events(two):
    """NPD's recorder creates and patches (a repeat's count); nothing of ours updates or
    deletes an Event: refused by RBAC, the Event unchanged."""
    tok = two.agent_token("nb")
    st, ev = two.call("POST", "/api/v1/namespaces/default/events", _event("nb", name="nb.priv"),
                      token=tok)
    assert st == 201, ev
    two.extra.append("/api/v1/namespaces/default/events/nb.priv")
    path = "/api/v1/namespaces/default/events/nb.priv"
    changed = dict(ev, message="rewritten")
    refused(two, tok, "PUT", path, changed, by="rbac")
    refused(two, tok, "DELETE", path, by="rbac")
    assert two.get(path)["message"] == "m"
    # the patch NPD's recorder sends for a repeat is kept (mode npd)
    st, obj = two.call("PATCH", path, {"count": 2}, ctype=SMP, token=tok)
    assert st == 200 and obj["count"] == 2, (st, obj)


@pytest.mark.parametrize("ns", [kh.AGENT_NS])
def test_second_nodes_agent_may_not_touch_a_lease(two, ns):
    """A Lease the remediator holds (a budget slot, the leader) is no agent's: nb's agent can
    neither read, write nor delete it, nor create one."""
    name = "cpuzombie-remediator" if ns == kh.AGENT_NS else "cpuzombie-slot-0"
    path = "/apis/coordination.k8s.io/v1/namespaces/%s/leases" % ns
    st, obj = two.call("POST", path, {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                                      "metadata": {"name": name},
                                      "spec": {"holderIdentity": "na"}})
    assert st == 201, obj
    tok = two.agent_token("nb")
    mark = two.cp.audit_mark()
    assert two.call("GET", path + "/" + name, token=tok)[0] == 403
    evs = rh.audited(two, mark, rh.AGENT_USER, "get", path + "/" + name)
    assert evs and rh.refused_by(evs[-1]) == "rbac", evs
    refused(two, tok, "PUT", path + "/" + name, dict(obj, spec={"holderIdentity": "nb"}),
            by="rbac")
    refused(two, tok, "DELETE", path + "/" + name, by="rbac")
    refused(two, tok, "POST", path, {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                                     "metadata": {"name": "cpuzombie-slot-7"}}, by="rbac")
    assert two.get(path + "/" + name)["spec"]["holderIdentity"] == "na"
    two.cp.raw("DELETE", path + "/" + name)


LEASES = "/apis/coordination.k8s.io/v1/namespaces/%s/leases"


def _lease(name, holder):
    return {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
            "metadata": {"name": name}, "spec": {"holderIdentity": holder}}


def _read_refused(kube, token, user, path, verb):
    """A GET (@verb get or list) as @token: the real server's 403, its audit record saying RBAC."""
    mark = kube.cp.audit_mark()
    st, obj = kube.call("GET", path, token=token)
    assert st == 403, (path, st, obj)
    evs = rh.audited(kube, mark, user, verb, path)
    assert evs and rh.refused_by(evs[-1]) == "rbac", evs


@pytest.fixture
def kcm_lease(kube):
    """kube-controller-manager's leader Lease in kube-system, as a real control plane has it
    (this one runs it with --leader-elect=false, so the admin makes it)."""
    path = LEASES % "kube-system" + "/kube-controller-manager"
    kube.cp.raw("DELETE", path)
    st, obj = kube.cp.raw("POST", LEASES % "kube-system",
                          _lease("kube-controller-manager", "cp-1_0f9e"))
    assert st == 201, obj
    yield path, obj
    kube.cp.raw("DELETE", path)


def test_remediator_may_not_touch_a_kube_system_lease(two, kcm_lease):
    """The budget lives in the release namespace (lease_namespace ""): the remediator's token
    cannot list, read, take over, delete or create a Lease in kube-system, neither
    kube-controller-manager's leader Lease nor a budget slot there. (The chart before put the
    budget Role in kube-system: list and create of any name there were granted.)"""
    path, obj = kcm_lease
    tok = rh.remediator_token(two)
    _read_refused(two, tok, rh.REM_USER, LEASES % "kube-system", "list")
    _read_refused(two, tok, rh.REM_USER, path, "get")
    refused(two, tok, "PUT", path, dict(obj, spec={"holderIdentity": "cpuzombie"}), by="rbac",
            user=rh.REM_USER)
    refused(two, tok, "DELETE", path, by="rbac", user=rh.REM_USER)
    for name in ("cpuzombie-slot-0", "kube-scheduler"):
        refused(two, tok, "POST", LEASES % "kube-system", _lease(name, "remediator-0"),
                by="rbac", user=rh.REM_USER)
    assert two.cp.raw("GET", path)[1]["spec"]["holderIdentity"] == "cp-1_0f9e"


def test_remediator_writes_only_its_slots_by_name_in_the_release_namespace(two):
    """In the release namespace: a budget slot is created, taken over at its resourceVersion and
    deleted (the session's max_unavailable 10: cpuzombie-slot-0..9); another name is refused on
    create (the admission policy: RBAC cannot name a create) and on update (RBAC's
    resourceNames), a slot beyond the budget too (created: the policy; updated: RBAC); the Lease
    of someone else there is unchanged."""
    ns = kh.LEASE_NS
    assert ns == kh.AGENT_NS
    tok = rh.remediator_token(two)
    st, other = two.cp.raw("POST", LEASES % ns, _lease("someone-else", "x"))
    assert st == 201, other
    try:
        st, slot = two.call("POST", LEASES % ns, _lease("cpuzombie-slot-0", "remediator-0"),
                            token=tok)
        assert st == 201, slot
        st, slot = two.call("PUT", LEASES % ns + "/cpuzombie-slot-0",
                            dict(slot, spec={"holderIdentity": "remediator-1"}), token=tok)
        assert st == 200 and slot["spec"]["holderIdentity"] == "remediator-1", slot
        for name in ("someone-else-2", "kube-scheduler"):
            refused(two, tok, "POST", LEASES % ns, _lease(name, "remediator-0"),
                    by="admission", user=rh.REM_USER)
        refused(two, tok, "PUT", LEASES % ns + "/someone-else",
                dict(other, spec={"holderIdentity": "remediator-0"}), by="rbac",
                user=rh.REM_USER)
        refused(two, tok, "DELETE", LEASES % ns + "/someone-else", by="rbac", user=rh.REM_USER)
        refused(two, tok, "POST", LEASES % ns, _lease("cpuzombie-slot-10", "remediator-0"),
                by="admission", user=rh.REM_USER)
        st, one = two.cp.raw("POST", LEASES % ns, _lease("cpuzombie-slot-10", "x"))
        assert st == 201, one
        refused(two, tok, "PUT", LEASES % ns + "/cpuzombie-slot-10",
                dict(one, spec={"holderIdentity": "remediator-0"}), by="rbac",
                user=rh.REM_USER)
        assert two.call("DELETE", LEASES % ns + "/cpuzombie-slot-0", token=tok)[0] == 200
        assert two.cp.raw("GET", LEASES % ns + "/someone-else")[1]["spec"] == other["spec"]
    finally:
        for name in ("someone-else", "cpuzombie-slot-0", "cpuzombie-slot-10"):
            two.cp.raw("DELETE", LEASES % ns + "/" + name)


@pytest.mark.parametrize("ns", [kh.AGENT_NS, "kube-system", "kube-node-lease", "default"])
def test_node_agent_may_not_touch_any_lease(two, ns):
    """A node agent takes no Lease anywhere (the remediator holds the budget): not listed in
    any namespace nor cluster-wide, not created, not read: not its own node's kubelet Lease in
    kube-node-lease either."""
    tok = two.agent_token("na")
    _read_refused(two, tok, rh.AGENT_USER, "/apis/coordination.k8s.io/v1/leases", "list")
    _read_refused(two, tok, rh.AGENT_USER, LEASES % ns, "list")
    _read_refused(two, tok, rh.AGENT_USER, LEASES % ns + "/na", "get")
    for name in ("cpuzombie-slot-0", "na"):
        refused(two, tok, "POST", LEASES % ns, _lease(name, "na"), by="rbac")


def test_remediator_cordons_and_evicts(two):
    """The remediator's token holds what a drain needs: cordon (patch the node), list the
    node's pods, evict; and an Event about what it did, in "default" only."""
    tok = rh.remediator_token(two)
    st, obj = two.call("PATCH", "/api/v1/nodes/nb", {"spec": {"unschedulable": True}},
                       ctype=SMP, token=tok)
    assert st == 200 and obj["spec"]["unschedulable"] is True, (st, obj)
    st, obj = two.call("GET", "/api/v1/pods?fieldSelector=spec.nodeName%3Dnb", token=tok)
    assert st == 200 and [p["metadata"]["name"] for p in obj["items"]] == ["pb"], obj
    st, obj = two.call("POST", "/api/v1/namespaces/team-b/pods/pb/eviction", {
        "apiVersion": "policy/v1", "kind": "Eviction",
        "metadata": {"name": "pb", "namespace": "team-b"}}, token=tok)
    assert st == 201, obj
    st, obj = two.call("POST", "/api/v1/namespaces/default/events", _event("nb"), token=tok)
    assert st == 201, obj
    refused(two, tok, "POST", "/api/v1/namespaces/kube-system/events",
            _event("nb", "kube-system"), by="rbac", user=rh.REM_USER)


def test_the_real_server_takes_the_pod_spec_and_its_recursive_read_only(kube):
    """The rendered DaemonSet (defaults) and Deployment (remediation on), created with dryRun
    by the admin: the real server validates the pod spec, recursiveReadOnly included (it wants
    readOnly and propagation None with it: the same mount made writable is refused, 422)."""
    import copy
    from deploy_helpers import find, render
    objs = render("remediation")[1]
    ds = find(objs, "DaemonSet")[0]
    dep = find(objs, "Deployment")[0]
    for o in (ds, dep):     # the harness's own DaemonSet "cpuzombie" exists (agent pods' owner)
        o["metadata"]["name"] = "cz-dryrun-" + o["metadata"]["name"]
    for o, path in ((ds, "/apis/apps/v1/namespaces/%s/daemonsets" % kh.AGENT_NS),
                    (dep, "/apis/apps/v1/namespaces/%s/deployments" % kh.AGENT_NS)):
        st, got = kube.call("POST", path + "?dryRun=All", o)
        assert st == 201, (o["kind"], st, got)
    mounts = [m for c in got_spec(ds)["containers"] for m in c["volumeMounts"]
              if m.get("recursiveReadOnly")]
    # "run": the host's /run/cpuzombie, read-only (recursive) in NPD's container only
    assert {m["name"] for m in mounts} == {"host-proc", "host-sys-fs-cgroup", "host-sys-class-net",
                                           "host-sys-devices", "pod-logs", "run"}, mounts
    assert [c["name"] for c in got_spec(ds)["containers"] for m in c["volumeMounts"]
            if m["name"] == "run" and m.get("recursiveReadOnly")] == ["node-problem-detector"]
    st, got = kube.call("POST", "/apis/apps/v1/namespaces/%s/daemonsets?dryRun=All"
                        % kh.AGENT_NS, ds)
    kept = [m for c in got["spec"]["template"]["spec"]["containers"] for m in c["volumeMounts"]
            if m.get("recursiveReadOnly") == "Enabled"]
    assert len(kept) == len(mounts), kept          # the server kept the field
    bad = copy.deepcopy(ds)
    for c in got_spec(bad)["containers"]:
        for m in c["volumeMounts"]:
            if m["name"] == "host-sys-fs-cgroup":
                m["readOnly"] = False
    st, got = kube.call("POST", "/apis/apps/v1/namespaces/%s/daemonsets?dryRun=All"
                        % kh.AGENT_NS, bad)
    assert st == 422 and "recursiveReadOnly" in got["message"], (st, got)


def got_spec(o):
    return o["spec"]["template"]["spec"]


def test_the_real_server_takes_the_non_root_node_pod(kube):
    """agent.profileBursts off: the DaemonSet whose node containers run as 65534 with the
    state-owner init container (uid 0, CAP_CHOWN alone) is a pod spec the real server takes
    (dryRun, as the admin), runAsNonRoot and the capabilities kept as rendered."""
    from deploy_helpers import find, render
    ds = find(render("default", ["--set", "agent.profileBursts=false"])[1], "DaemonSet")[0]
    ds["metadata"]["name"] = "cz-dryrun-nonroot"
    st, got = kube.call("POST", "/apis/apps/v1/namespaces/%s/daemonsets?dryRun=All"
                        % kh.AGENT_NS, ds)
    assert st == 201, (st, got)
    spec = got_spec(got)
    assert [c["name"] for c in spec["initContainers"]] == ["state-owner", "install-plugin"]
    assert spec["initContainers"][0]["securityContext"]["capabilities"] == {
        "drop": ["ALL"], "add": ["CHOWN"]}
    for c in spec["containers"]:
        sc = c["securityContext"]
        assert (sc["runAsUser"], sc["runAsNonRoot"]) == (65534, True), c["name"]

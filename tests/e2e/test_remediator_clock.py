# SPDX-License-Identifier: MIT
"""The remediator's own clock on the real control plane: `remediation.for` counts from when the
remediator first saw a listed condition True (its annotation cpuzombie.io/true-since), never
from the condition's lastTransitionTime, which the node writes. A node agent's token that
writes lastTransitionTime 2000-01-01 does not get its node drained in the first cycle; the
clock survives a restart of the remediator (it lives on the node); the node's own credentials
(system:node:*) and the agent's account cannot forge it (the chart's admission policies refuse
it), the remediator's own write passes. Recovery is timed the same way
(cpuzombie.io/recovered-since), and a slot held too long is marked cpuzombie.io/held-long."""

import calendar
import json
import ssl
import subprocess
import time

import pytest

import kube_helpers as kh
import remediator_helpers as rh

SMP = "application/strategic-merge-patch+json"
MERGE = "application/merge-patch+json"
TRUE_SINCE = "cpuzombie.io/true-since"
RECOVERED_SINCE = "cpuzombie.io/recovered-since"
HELD_LONG = "cpuzombie.io/held-long"
FORGED = "2000-01-01T00:00:00Z"


def _rfc3339(t):
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t))


def _epoch(s):
    return calendar.timegm(time.strptime(s, "%Y-%m-%dT%H:%M:%SZ"))


def _cond(status, ltt=FORGED):
    return {"type": "MemcgZombieLeak", "status": status, "reason": "ZombieMemcgsHigh",
            "message": "m", "lastHeartbeatTime": ltt, "lastTransitionTime": ltt}


def _ann(kube, node):
    return kube.node(node)["metadata"].get("annotations", {})


def _agent_forges(kube, node, status):
    """The node agent's pod-bound token writes the condition with lastTransitionTime
    2000-01-01 (its own node, its own condition: the policy lets it)."""
    st, obj = kube.call("PATCH", "/api/v1/nodes/%s/status" % node,
                        {"status": {"conditions": [_cond(status)]}}, ctype=SMP,
                        token=kube.agent_token(node))
    assert st == 200, obj
    got = [c for c in obj["status"]["conditions"] if c["type"] == "MemcgZombieLeak"]
    assert got[0]["lastTransitionTime"] == FORGED and got[0]["status"] == status


def _remediator_sets(kube, node, key, value):
    """As the remediator's own account (what the remediator may write), not the admin: moves
    its clock back, standing in for the wall time `for` would take."""
    st, obj = kube.call("PATCH", "/api/v1/nodes/" + node,
                        {"metadata": {"annotations": {key: value}}}, ctype=MERGE,
                        token=rh.remediator_token(kube))
    assert st == 200, obj


@pytest.fixture
def sick(kube, tmp_path):
    """Node clk-a with a ReplicaSet's pod; its agent's token writes MemcgZombieLeak True since
    2000-01-01; a remediator (drain, for 60s) with the chart's remediator account."""
    kube.add(kh.node_obj("clk-a"), kh.rs_obj("web"),
             kh.pod_obj("web-1", "clk-a", owner=("ReplicaSet", "web"), labels={"app": "web"}))
    _agent_forges(kube, "clk-a", "True")
    cfg = rh.config(tmp_path, rh.remediator_kubeconfig(kube, str(tmp_path / "kc-rem")),
                    mode="drain", uncordon_after="60s", **{"for": "60s"})
    yield kube, cfg
    rh.drop_leader(kube)


def test_forged_transition_is_not_drained_in_the_first_cycle(sick):
    """lastTransitionTime 2000-01-01 and `for: 60s`: the first cycle only starts the
    remediator's clock (one PATCH, its own account); a restarted remediator finds the clock and
    still waits; once its own clock has passed 60 s the node is drained."""
    kube, cfg = sick
    mark = kube.cp.audit_mark()
    before = time.time()
    r = rh.run_once(cfg)
    assert r.returncode == 0 and "clk-a: none" in r.stdout, r.stdout + r.stderr
    assert "by cpuzombie's clock (MemcgZombieLeak True, first seen" in r.stdout, r.stdout
    n = kube.node("clk-a")
    assert not n["spec"].get("unschedulable")
    assert [p["metadata"]["name"] for p in kube.pods("clk-a")] == ["web-1"]
    assert kube.leases() == []
    seen = n["metadata"]["annotations"][TRUE_SINCE]
    assert int(before) - 1 <= _epoch(seen) <= time.time() + 1, seen
    clock = [e for e in kube.cp.audit(mark)[0]
             if e.get("user", {}).get("username") == rh.REM_USER and e.get("verb") == "patch"]
    assert len(clock) == 1 and clock[0]["responseStatus"]["code"] == 200, clock
    # a restarted remediator (a new process, nothing in memory; the same pod name, so that it
    # leads at once): the same clock, still waiting
    r = rh.run_once(cfg)
    assert r.returncode == 0 and "clk-a: none" in r.stdout, r.stdout + r.stderr
    assert "first seen %s" % seen in r.stdout, r.stdout
    assert _ann(kube, "clk-a")[TRUE_SINCE] == seen
    assert not kube.node("clk-a")["spec"].get("unschedulable")
    # the remediator's clock, 61 s back (as its own account): `for` has passed by its clock
    _remediator_sets(kube, "clk-a", TRUE_SINCE, _rfc3339(time.time() - 61))
    r = rh.run_once(cfg)
    assert r.returncode == 0 and "clk-a: drained" in r.stdout, r.stdout + r.stderr
    assert kube.node("clk-a")["spec"]["unschedulable"] is True
    assert kube.pods("clk-a") == []
    rh.no_403(kube, mark, {rh.REM_USER})


def test_recovery_forged_old_is_not_uncordoned_at_once(sick):
    """The same for the way back: the agent writes False since 2000-01-01; with
    uncordon_after 60s the node stays cordoned until the remediator's own recovery clock
    (cpuzombie.io/recovered-since) has run 60 s; the uncordon removes all of its marks."""
    kube, cfg = sick
    _remediator_sets(kube, "clk-a", TRUE_SINCE, _rfc3339(time.time() - 61))
    r = rh.run_once(cfg)
    assert "clk-a: drained" in r.stdout, r.stdout + r.stderr
    _agent_forges(kube, "clk-a", "False")
    r = rh.run_once(cfg)
    assert r.returncode == 0 and "clk-a: waiting" in r.stdout, r.stdout + r.stderr
    ann = _ann(kube, "clk-a")
    assert kube.node("clk-a")["spec"]["unschedulable"] is True
    assert TRUE_SINCE not in ann and RECOVERED_SINCE in ann, ann
    assert [l["spec"]["holderIdentity"] for l in kube.leases()] == ["clk-a"]
    _remediator_sets(kube, "clk-a", RECOVERED_SINCE, _rfc3339(time.time() - 61))
    r = rh.run_once(cfg)
    assert "clk-a: uncordoned" in r.stdout, r.stdout + r.stderr
    n = kube.node("clk-a")
    assert not n["spec"].get("unschedulable")
    assert not [k for k in n["metadata"].get("annotations", {}) if k.startswith("cpuzombie.io/")
                and k != "cpuzombie.io/last-action"], n["metadata"]["annotations"]
    assert kube.leases() == []


def test_a_node_nothing_true_loses_the_clock(kube, tmp_path):
    """The clock lives while a listed condition is True: a node whose condition turned False
    before `for` gets its annotation removed (the next episode starts afresh)."""
    kube.add(kh.node_obj("clk-b"))
    _agent_forges(kube, "clk-b", "True")
    cfg = rh.config(tmp_path, rh.remediator_kubeconfig(kube, str(tmp_path / "kc-rem")),
                    **{"for": "60s"})
    try:
        r = rh.run_once(cfg)
        assert "clk-b: none" in r.stdout, r.stdout + r.stderr
        assert TRUE_SINCE in _ann(kube, "clk-b")
        _agent_forges(kube, "clk-b", "False")
        r = rh.run_once(cfg)
        assert r.returncode == 0 and "clk-b: none" in r.stdout, r.stdout + r.stderr
        assert TRUE_SINCE not in _ann(kube, "clk-b")
    finally:
        rh.drop_leader(kube)


def _node_ssl(kube, tmp_path, node):
    """A TLS context with the node's own client certificate (CN system:node:NODE, O
    system:nodes, signed by the cluster CA): the kubelet's credentials."""
    cert, key = kh.cluster.make_cert(kube.cp.pki, "node-%s-%d" % (node, int(time.time() * 1e6)),
                                     "system:node:" + node, org="system:nodes")
    ctx = ssl.create_default_context(cafile=kube.cp.ca)
    ctx.load_cert_chain(cert, key)
    return ctx


def _refused_as_node(kube, ctx, node, method, path, body, ctype):
    mark = kube.cp.audit_mark()
    st, obj = kh.cluster.call(kube.cp.url + path, ctx, method, body, ctype)
    evs = rh.audited(kube, mark, "system:node:" + node, "patch", path)
    assert evs and (st, evs[-1]["responseStatus"]["code"]) == (403, 403), (st, obj, evs)
    assert rh.refused_by(evs[-1]) == "admission", evs[-1].get("annotations")
    assert "ValidatingAdmissionPolicy" in obj["message"] and \
        "cpuzombie-node-marks" in obj["message"], obj["message"]
    return obj


@pytest.mark.parametrize("what", ["forge-clock", "forge-clock-status", "drop-clock",
                                  "forge-recovered", "forge-cordoned"])
def test_node_credentials_may_not_touch_the_remediators_marks(kube, tmp_path, what):
    """The kubelet's own credentials may change any annotation of their Node (RBAC's Node
    authorizer and NodeRestriction): not cpuzombie.io/ ones, by the policy
    cpuzombie-node-marks, through the node or its status. Its ordinary writes pass."""
    kube.add(kh.node_obj("clk-c"))
    _remediator_sets(kube, "clk-c", TRUE_SINCE, _rfc3339(time.time()))
    before = _ann(kube, "clk-c")
    ctx = _node_ssl(kube, tmp_path, "clk-c")
    path = "/api/v1/nodes/clk-c" + ("/status" if what == "forge-clock-status" else "")
    body = {"metadata": {"annotations": {
        "forge-clock": {TRUE_SINCE: FORGED}, "forge-clock-status": {TRUE_SINCE: FORGED},
        "drop-clock": {TRUE_SINCE: None}, "forge-recovered": {RECOVERED_SINCE: FORGED},
        "forge-cordoned": {"cpuzombie.io/cordoned": "x"}}[what]}}
    obj = _refused_as_node(kube, ctx, "clk-c", "PATCH", path, body, MERGE)
    assert "may not change cpuzombie.io/ annotations" in obj["message"]
    assert _ann(kube, "clk-c") == before
    # what a kubelet does still passes: its status, an annotation of its own
    st, obj = kh.cluster.call(kube.cp.url + "/api/v1/nodes/clk-c/status", ctx, "PATCH",
                              {"status": {"conditions": [{
                                  "type": "Ready", "status": "True", "reason": "KubeletReady",
                                  "message": "ok", "lastHeartbeatTime": _rfc3339(time.time()),
                                  "lastTransitionTime": FORGED}]}}, SMP)
    assert st == 200, obj
    st, obj = kh.cluster.call(kube.cp.url + "/api/v1/nodes/clk-c", ctx, "PATCH",
                              {"metadata": {"annotations": {"example.com/kubelet": "1"}}},
                              MERGE)
    assert st == 200 and obj["metadata"]["annotations"][TRUE_SINCE] == before[TRUE_SINCE], obj


def test_agent_account_may_not_forge_the_clock(kube):
    """The node agent's token (pod-bound, its own node) changes conditions only: the clock is
    refused, through the node (RBAC: no patch of nodes) or its status (the policy
    cpuzombie-own-node-only)."""
    kube.add(kh.node_obj("clk-d"))
    tok = kube.agent_token("clk-d")
    for path, by in (("/api/v1/nodes/clk-d", "rbac"), ("/api/v1/nodes/clk-d/status",
                                                        "admission")):
        mark = kube.cp.audit_mark()
        st, obj = kube.call("PATCH", path, {"metadata": {"annotations": {TRUE_SINCE: FORGED}}},
                            ctype=MERGE, token=tok)
        evs = [e for e in rh.audited(kube, mark, rh.AGENT_USER, "patch", path)
               if e["requestURI"].split("?")[0] == path]
        assert st == 403 and evs and evs[-1]["responseStatus"]["code"] == 403, (st, obj)
        assert rh.refused_by(evs[-1]) == by, (path, evs[-1].get("annotations"))
        if by == "admission":
            assert "cpuzombie-own-node-only" in obj["message"], obj["message"]
        assert TRUE_SINCE not in _ann(kube, "clk-d")


def test_held_long_is_marked_once(kube, tmp_path):
    """Cordoned by us longer than uncordon_after + drain_timeout with the condition still True:
    a Warning Event CpuzombieHeldLong and the annotation cpuzombie.io/held-long (what `cpuzombie
    fleet` and kube-state-metrics read), written once; both go at the uncordon."""
    kube.add(kh.node_obj("clk-e"))
    _agent_forges(kube, "clk-e", "True")
    cfg = rh.config(tmp_path, rh.remediator_kubeconfig(kube, str(tmp_path / "kc-rem")),
                    uncordon_after="1s", drain_timeout="1s", **{"for": "0s"})
    try:
        r = rh.run_once(cfg)
        assert "clk-e: cordoned" in r.stdout, r.stdout + r.stderr
        assert HELD_LONG not in _ann(kube, "clk-e")
        time.sleep(3.1)                         # > uncordon_after + drain_timeout since the cordon
        r = rh.run_once(cfg)
        assert "clk-e: waiting" in r.stdout and "longer than uncordon_after" in r.stdout, \
            r.stdout + r.stderr
        first = _ann(kube, "clk-e")[HELD_LONG]
        assert "CpuzombieHeldLong" in [e["reason"] for e in kube.events("clk-e")]
        f = subprocess.run([rh.BIN, "--config", cfg, "fleet"], capture_output=True, text=True,
                           timeout=60)
        assert "Held long: 1 node held past uncordon_after + drain_timeout" in f.stdout and \
            "clk-e" in f.stdout.split("Held long:")[1], f.stdout + f.stderr
        f = subprocess.run([rh.BIN, "--config", cfg, "fleet", "--json"], capture_output=True,
                           text=True, timeout=60)
        assert json.loads(f.stdout)["remediation"]["held_long"] == ["clk-e"], f.stdout
        kube.reset_log()
        r = rh.run_once(cfg)
        assert "longer than uncordon_after" in r.stdout, r.stdout + r.stderr
        assert _ann(kube, "clk-e")[HELD_LONG] == first
        patches = [e for e in kube.log() if e["method"] == "PATCH" and "/nodes/" in e["path"]]
        assert patches == [], patches
        # recovery: the remediator's clock, moved back as its own account; the uncordon
        # removes the mark
        _agent_forges(kube, "clk-e", "False")
        r = rh.run_once(cfg)
        _remediator_sets(kube, "clk-e", RECOVERED_SINCE, _rfc3339(time.time() - 5))
        r = rh.run_once(cfg)
        assert "clk-e: uncordoned" in r.stdout, r.stdout + r.stderr
        assert HELD_LONG not in _ann(kube, "clk-e")
    finally:
        rh.drop_leader(kube)


def test_node_marks_policy_offline_by_a_cel_evaluator():
    """cpuzombie-node-marks' expressions run by a standard CEL evaluator (test_deploy's) on
    sample requests, CREATE (no oldObject) included: a CEL slip shows here before the server
    refuses every kubelet's write."""
    import deploy_helpers as dh
    from test_deploy import CEL_SCRIPT, node_eval
    _, objs = dh.render("remediation", [])
    pol = [o["spec"] for o in objs if o["kind"] == "ValidatingAdmissionPolicy"
           and o["metadata"]["name"] == "cpuzombie-node-marks"][0]
    assert pol["failurePolicy"] == "Fail"

    def req(op, user, groups, old, new, sub=""):
        return {"request": {"operation": op, "name": "n", "subResource": sub,
                            "resource": {"group": "", "version": "v1", "resource": "nodes"},
                            "userInfo": {"username": user, "groups": groups, "extra": {}}},
                "object": new, "oldObject": old}

    def node(ann=None):
        n = {"metadata": {"name": "n", "labels": {"a": "b"}}, "spec": {},
             "status": {"conditions": [{"type": "Ready", "status": "True"}]}}
        if ann is not None:
            n["metadata"]["annotations"] = ann
        return n
    kubelet, g = "system:node:n", ["system:nodes", "system:authenticated"]
    ours = {"x": "1", TRUE_SINCE: "2024-01-01T00:00:00Z"}
    samples = [
        (req("UPDATE", kubelet, g, node(ours), node(ours)), True),             # a status write
        (req("UPDATE", kubelet, g, node(ours), node(dict(ours, x="2"))), True),  # not ours
        (req("UPDATE", kubelet, g, node(), node({"y": "1"})), True),           # none before
        (req("CREATE", kubelet, g, None, node({"y": "1"})), True),             # registering
        (req("CREATE", kubelet, g, None, node()), True),
        (req("UPDATE", kubelet, g, node(ours), node(dict(ours, **{TRUE_SINCE: FORGED}))),
         False),
        (req("UPDATE", kubelet, g, node(ours), node({"x": "1"})), False),      # dropped
        (req("UPDATE", kubelet, g, node(), node({RECOVERED_SINCE: FORGED})), False),
        (req("UPDATE", kubelet, g, node(ours), node(dict(ours, **{TRUE_SINCE: FORGED})),
             "status"), False),
        (req("CREATE", kubelet, g, None, node({TRUE_SINCE: FORGED})), False),
        (req("UPDATE", "system:node:n", [], node(), node({HELD_LONG: "x"})), False),
        (req("UPDATE", "someone", ["system:nodes"], node(), node({HELD_LONG: "x"})), False),
        (req("UPDATE", rh.REM_USER, [], node(), node({TRUE_SINCE: FORGED})), True),  # not matched
    ]
    got = node_eval(CEL_SCRIPT, {"policy": pol, "samples": [s for s, _ in samples]})
    assert got == [w for _, w in samples], got

# SPDX-License-Identifier: MIT
"""Helpers for the remediation guards' tests on the real control plane (test_guards*.py): the
chart's RBAC and admission policy as rendered with the guard keys that need more rights
(breaker_max: the Lease cpuzombie-guard), the objects a person makes to pause (the annotation,
the ConfigMap) and the documented reset of the breaker, all with real kubectl as the admin."""

import os
import time

import kube_helpers as kh
import remediator_helpers as rh

GUARD = "cpuzombie-guard"
GUARD_PATH = "/apis/coordination.k8s.io/v1/namespaces/%s/leases/%s" % (kh.LEASE_NS, GUARD)
PAUSE_CM = "cpuzombie-pause"
PAUSE_PATH = "/api/v1/namespaces/%s/configmaps/%s" % (kh.LEASE_NS, PAUSE_CM)
TRIPPED = "cpuzombie.io/breaker-tripped"
# docs/remediation.md's reset command, word for word (kubectl -n <lease_namespace> ...)
RESET = ["-n", kh.LEASE_NS, "annotate", "lease", GUARD, TRIPPED + "-"]
GUARD_VALUES = kh.CHART_VALUES + ("--set", "config.remediation.breaker_max=1")


def apply_guard_rbac(cp):
    """The chart's access objects rendered with breaker_max on (kubectl apply replaces the
    Role's rules and the policy's expression); waits until the admission policy lets the
    remediator create the guard Lease (a dry-run create)."""
    kh.apply_chart_rbac(cp, GUARD_VALUES)
    k = kh.Kube(cp, os.path.join(cp.dir, "guard-probe"))
    tok = cp.token(kh.AGENT_NS, rh.REM_SA, None, 600)
    body = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
            "metadata": {"name": GUARD}, "spec": {}}
    try:
        def allowed():
            st, obj = k.call("POST", "/apis/coordination.k8s.io/v1/namespaces/%s/leases"
                             "?dryRun=All" % kh.LEASE_NS, body, token=tok)
            assert st in (201, 403, 409, 422), (st, obj)
            return st in (201, 409)
        kh.wait_until(allowed, 60, "the admission policy to allow the guard Lease")
    finally:
        k.stop()


def restore_rbac(cp):
    kh.apply_chart_rbac(cp)


def admin_kubectl(kube, tmp, *args):
    """Real kubectl as the admin: what a person types."""
    kc = os.path.join(str(tmp), "admin-kubectl")
    if not os.path.exists(kc):
        kube.admin_kubeconfig(kc)
    return kh.kubectl(kc, *args)


def sick_nodes(names, sick=True):
    import drain_helpers as dh
    return [kh.node_obj(n, conditions=[dh.READY, dh.SICK if sick else dh.WELL]) for n in names]


def held(kube, names):
    return [n for n in names if kube.node(n)["spec"].get("unschedulable")]


def reasons(kube, node):
    return [e["reason"] for e in kube.events(node)]


CLOCK = {"cpuzombie.io/true-since", "cpuzombie.io/recovered-since"}


def clock_write(e):
    """Is log entry @e the remediator's clock, and nothing else: a PATCH of a node whose body
    is only our clock's annotations (set or removed), no spec, no other key?"""
    b = e.get("body")
    return e["method"] == "PATCH" and e["path"].startswith("/api/v1/nodes/") and \
        isinstance(b, dict) and list(b) == ["metadata"] and list(b["metadata"]) == \
        ["annotations"] and set(b["metadata"]["annotations"]) == CLOCK


def node_writes(log, user=rh.REM_USER):
    """What @user changed on nodes and pods (PATCH of a node, an eviction, a delete), the
    remediator's clock left out (clock_write: its bookkeeping of when it saw a condition True,
    which the guards do not hold; test_remediator_clock.py tests it)."""
    return [(e["method"], e["path"], e["status"]) for e in log if e["user"] == user and
            e["method"] in ("PATCH", "POST", "DELETE", "PUT") and not clock_write(e) and
            (e["path"].startswith("/api/v1/nodes") or "/pods/" in e["path"])]


def protected_pod(name, node, how):
    """A ReplicaSet pod that asks not to be evicted: @how "protect" (cpuzombie.io/protect) or
    "autoscaler" (cluster-autoscaler.kubernetes.io/safe-to-evict: "false")."""
    p = kh.pod_obj(name, node, owner=("ReplicaSet", "web"), labels={"app": "web"})
    p["metadata"]["annotations"] = ({"cpuzombie.io/protect": "true"} if how == "protect" else
                                    {"cluster-autoscaler.kubernetes.io/safe-to-evict": "false"})
    return p


def wait_for(pred, proc, seconds, what):
    """Waits until @pred() while @proc runs."""
    deadline = time.monotonic() + seconds
    while not pred():
        assert proc.poll() is None, (what, proc.communicate())
        assert time.monotonic() < deadline, "timed out waiting for " + what
        time.sleep(0.2)


# -- the hand-off with medik8s NodeHealthCheck ---------------------------------------------------

MEDIK8S_NS = "medik8s-leases"           # medik8s/common pkg/lease defaultLeaseNs
MEDIK8S_VALUES = kh.CHART_VALUES + ("--set",
                                    "config.remediation.medik8s_lease_namespace=" + MEDIK8S_NS)
MEDIK8S_LEASES = "/apis/coordination.k8s.io/v1/namespaces/%s/leases" % MEDIK8S_NS


def apply_medik8s_rbac(cp):
    """The chart's access objects with the medik8s hand-off on (its namespace must exist);
    waits until the admission policy lets the remediator create node-* Leases there."""
    kh.apply_chart_rbac(cp, MEDIK8S_VALUES)
    k = kh.Kube(cp, os.path.join(cp.dir, "medik8s-probe"))
    tok = cp.token(kh.AGENT_NS, rh.REM_SA, None, 600)
    body = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
            "metadata": {"name": "node-probe"}, "spec": {}}
    try:
        def allowed():
            st, obj = k.call("POST", MEDIK8S_LEASES + "?dryRun=All", body, token=tok)
            assert st in (201, 403, 409, 422), (st, obj)
            return st in (201, 409)
        kh.wait_until(allowed, 60, "the remediator's rights on medik8s' Leases")
    finally:
        k.stop()


def micro(t):
    return time.strftime("%Y-%m-%dT%H:%M:%S.000000Z", time.gmtime(t))


def medik8s_lease(node, holder, renewed, seconds=3600):
    """A Lease as medik8s/common's manager creates it (createLease): node-<name>, owned by the
    Node, holderIdentity, leaseDurationSeconds, acquire and renew times."""
    return {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
            "metadata": {"name": "node-" + node, "namespace": MEDIK8S_NS},
            "spec": {"holderIdentity": holder, "leaseDurationSeconds": seconds,
                     "acquireTime": micro(renewed), "renewTime": micro(renewed),
                     "leaseTransitions": 0}}


# -- the hand-off with kured ---------------------------------------------------------------------

KURED_DS = "kube-system/kured"          # kured's --ds-namespace/--ds-name defaults
KURED_VALUES = kh.CHART_VALUES + ("--set", "config.remediation.kured_daemonset=" + KURED_DS)
KURED_PATH = "/apis/apps/v1/namespaces/kube-system/daemonsets/kured"
KURED_LOCK = "weave.works/kured-node-lock"


def kured_lock(node, created, ttl_ns=0):
    """kured's lock annotation value as pkg/daemonsetlock marshals LockAnnotationValue."""
    import json
    return json.dumps({"nodeID": node, "metadata": {"unschedulable": False},
                       "created": time.strftime("%Y-%m-%dT%H:%M:%S.123456789Z",
                                                time.gmtime(created)),
                       "TTL": ttl_ns})

# SPDX-License-Identifier: MIT
"""Helpers for the remediator's tests on the real control plane (kube_helpers.Kube): the
chart's remediator ServiceAccount's credentials, `cpuzombie remediator --once` runs, the leader
Lease, and the server's own audit record of a refusal (who refused: RBAC or admission)."""

import os
import subprocess
import time

import kube_helpers as kh

BIN = os.environ.get("CZ_BIN", os.path.join(kh.ROOT, "build", "cpuzombie"))
REM_SA = "cpuzombie-remediator"     # the chart's remediator ServiceAccount
LEADER = "cpuzombie-remediator"     # its leader Lease, in the release namespace
LEADER_PATH = "/apis/coordination.k8s.io/v1/namespaces/%s/leases/%s" % (kh.AGENT_NS, LEADER)
REM_USER = "system:serviceaccount:%s:%s" % (kh.AGENT_NS, REM_SA)
AGENT_USER = "system:serviceaccount:%s:%s" % (kh.AGENT_NS, kh.AGENT_SA)


def remediator_token(kube, seconds=3600):
    """A token of the remediator's ServiceAccount (TokenRequest, not bound to a pod: the
    remediator is a Deployment's pod on any node, and nothing it may do depends on which)."""
    return kube.cp.token(kh.AGENT_NS, REM_SA, None, seconds)


def remediator_kubeconfig(kube, path, server=None):
    return kube.cp.kubeconfig(path, {"token": remediator_token(kube)},
                              server=server or kube.url)


def drop_leader(kube):
    """Removes the leader Lease (as the admin): each test starts with no leader."""
    kube.cp.raw("DELETE", LEADER_PATH)


def config(tmp, kc, name="rem", **rem):
    """A remediator's config (remediation: cordon, budget 1 unless @rem says else; `for` and
    `uncordon_after` 0s: the remediator acts in the cycle that starts its own clock,
    cpuzombie.io/true-since or recovered-since, as the node's lastTransitionTime does not
    count; test_remediator_clock.py tests both)."""
    r = dict(mode="cordon", **{"for": "0s"}, max_unavailable="1", drain_timeout="20s",
             uncordon_after="0s", lease_namespace=kh.LEASE_NS)
    r.update(rem)
    p = os.path.join(str(tmp), "rem-%s.yaml" % name)
    with open(p, "w") as f:
        f.write("kubernetes:\n  kubeconfig: %s\n  timeout: 5s\n" % kc)
        f.write("remediation:\n" + "".join("  %s: %s\n" % kv for kv in r.items()))
    return p


def run_once(cfg, identity="remediator-0", env=None, timeout=90, popen=False, args=()):
    """`cpuzombie remediator --once` with leader identity @identity ($POD_NAME)."""
    e = dict(os.environ, POD_NAME=identity, **(env or {}))
    e.setdefault("ASAN_OPTIONS", "detect_leaks=1:abort_on_error=0")
    cmd = [BIN, "--config", cfg, "remediator", "--once", *args]
    if popen:
        return subprocess.Popen(cmd, env=e, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True)
    r = subprocess.run(cmd, env=e, capture_output=True, text=True, timeout=timeout)
    assert "ERROR: AddressSanitizer" not in r.stderr and "runtime error:" not in r.stderr, \
        r.stderr
    return r


def audited(kube, mark, user, verb, uri_part, wait=10):
    """The server's audit events after @mark for @user's @verb on a URI containing @uri_part
    (the audit log is written asynchronously: waits up to @wait seconds for one)."""
    deadline = time.monotonic() + wait
    while True:
        evs = [e for e in kube.cp.audit(mark)[0]
               if e.get("user", {}).get("username") == user and e.get("verb") == verb
               and uri_part in e.get("requestURI", "")]
        if evs or time.monotonic() > deadline:
            return evs
        time.sleep(0.2)


def no_403(kube, mark, users):
    """No request of @users since @mark was refused (401, 403, 422), by the audit log."""
    bad = [(e["user"]["username"], e["verb"], e["requestURI"], e["responseStatus"]["code"])
           for e in kube.cp.audit(mark)[0]
           if e.get("user", {}).get("username") in users
           and e.get("responseStatus", {}).get("code") in (401, 403, 422)]
    assert bad == [], bad


def refused_by(ev):
    """Who refused an audited request: "rbac" (the authorizer said forbid), "admission" (RBAC
    allowed it and it still failed: admission, where a Deny policy leaves no annotation of its
    own at level Metadata; the caller checks the answer names the policy), or None."""
    ann = ev.get("annotations", {})
    decision = ann.get("authorization.k8s.io/decision")
    if decision == "forbid":
        return "rbac"
    if decision == "allow" and ev.get("responseStatus", {}).get("code", 0) >= 400:
        return "admission"
    return None

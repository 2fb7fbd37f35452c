# SPDX-License-Identifier: MIT
"""Helpers for comparing cpuzombie's drain with the real `kubectl drain` on the real control
plane (tests/e2e/test_drain_real.py, test_lease_race.py, tests/bench/bench_drain.py):

- which command remediates a node and with which credentials (remediate_args: the chart's
  remediator; agent_remediate_args: an agent remediating its own node, the plain install);
- a ServiceAccount for kubectl drain with exactly the rights it needs (kubectl_drain_user),
  and kubectl drain run as it (kubectl_drain);
- twin nodes with the same kinds of pods (twin_pods), and PDB status from the real disruption
  controller (wait_pdb)."""

import os
import subprocess
import time

import kube_helpers as kh

BIN = os.environ.get("CZ_BIN", os.path.join(kh.ROOT, "build", "cpuzombie"))
OLD = "2024-01-01T00:00:00Z"
AGENT_USER = "system:serviceaccount:%s:%s" % (kh.AGENT_NS, kh.AGENT_SA)
REMEDIATOR_USER = "system:serviceaccount:%s:cpuzombie-remediator" % kh.AGENT_NS
KUBECTL_NS = "cz-drain"
KUBECTL_SA = "kubectl-drain"
KUBECTL_USER = "system:serviceaccount:%s:%s" % (KUBECTL_NS, KUBECTL_SA)


def cond(t, status, ltt=OLD, reason="R"):
    return {"type": t, "status": status, "reason": reason, "message": "m",
            "lastHeartbeatTime": ltt, "lastTransitionTime": ltt}


READY = cond("Ready", "True", reason="KubeletReady")
SICK = cond("MemcgZombieLeak", "True")
WELL = cond("MemcgZombieLeak", "False")


def config(tmp, kc, node, **rem):
    """The agent's config for @node: remediation keys as given over test defaults (`for` and
    `uncordon_after` 0s: the cycle that starts the remediator's clock acts)."""
    r = dict(mode="drain", **{"for": "0s"}, max_unavailable="1", drain_timeout="60s",
             uncordon_after="0s", lease_namespace=kh.LEASE_NS)
    r.update(rem)
    p = os.path.join(str(tmp), "cz-%s.yaml" % node)
    with open(p, "w") as f:
        f.write(kh.AGENT_CPU)
        f.write("kubernetes:\n  node_name: %s\n  kubeconfig: %s\n  timeout: 5s\n" % (node, kc))
        f.write("agent:\n  set_conditions: false\n")
        f.write("remediation:\n" + "".join("  %s: %s\n" % kv for kv in r.items()))
    return p


def remediate_args(kube, tmp, node, server=None, **rem):
    """argv of one remediation cycle for @node, and the user it acts as: `cpuzombie
    remediator --once` as the chart's remediator ServiceAccount (the node agents only report),
    held to @node by remediation.node_selector (its kubernetes.io/hostname label) so that a
    twin node is left to kubectl. @server: another proxy's URL than the test's."""
    import remediator_helpers as remh
    tmp = str(tmp)
    kc = os.path.join(tmp, "kc-rem-%s" % (server or kube.url).rsplit(":", 1)[-1])
    if not os.path.exists(kc):
        remh.remediator_kubeconfig(kube, kc, server=server)
    r = dict(mode="drain", **{"for": "0s"}, max_unavailable="1", drain_timeout="60s",
             uncordon_after="0s", node_selector='"kubernetes.io/hostname=%s"' % node)
    r.update(rem)
    cfg = remh.config(tmp, kc, node, **r)
    return [BIN, "--config", cfg, "remediator", "--once"], REMEDIATOR_USER


def agent_remediate_args(kube, tmp, node, server=None, **rem):
    """argv of one `cpuzombie agent --once` that remediates its own node (agent.remediate, the
    plain install's way, without the chart's remediator), and the user it acts as: a
    ServiceAccount with the chart's remediator grants (rbac_helpers, no denial), its token
    bound to a pod on @node. The budget Leases are what keeps such agents within
    max_unavailable. @server: another proxy's URL than the test's."""
    import rbac_helpers as rh
    tmp = str(tmp)
    if not getattr(kube, "plain_agent_sa", None):
        import remediator_helpers as remh
        kube.plain_agent_sa = rh.restricted_sa(kube, name="cz-plain-agent", sa=remh.REM_SA)
    kc = os.path.join(tmp, "kc-%s-%s" % (node, (server or kube.url).rsplit(":", 1)[-1]))
    if not os.path.exists(kc):
        kube.plain_agent_sa.kubeconfig(kc, node=node, server=server)
    cfg = config(tmp, kc, node, **rem)
    return (kh.agent_once_args(BIN, cfg, kh.agent_tree(tmp, "v1-healthy"), tmp, node),
            kube.plain_agent_sa.user)


ENV = dict(os.environ, ASAN_OPTIONS="detect_leaks=1:abort_on_error=0",
           UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1")


def sanitizer_clean(err):
    """A sanitizer report (CZ_BIN from build-asan) is a failure, whatever the exit code."""
    for s in ("ERROR: AddressSanitizer", "runtime error:", "LeakSanitizer"):
        assert s not in err, err
    return True


def remediate(kube, tmp, node, popen=False, timeout=120, server=None, agent=False, **rem):
    """One remediation cycle for @node (by the remediator; by its own agent with @agent)."""
    args, _ = (agent_remediate_args if agent else remediate_args)(kube, tmp, node,
                                                                  server=server, **rem)
    if popen:
        return subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                env=ENV)
    r = subprocess.run(args, capture_output=True, text=True, timeout=timeout, env=ENV)
    sanitizer_clean(r.stderr)
    return r


# -- kubectl drain as a ServiceAccount of the test's own -----------------------------------------

# What kubectl drain (k8s.io/kubectl/pkg/drain) calls: the node (get, cordon by patch), the
# node's pods (list with a field selector; get while waiting for them to go), evictions, and
# the DaemonSet of a DaemonSet pod (get: --ignore-daemonsets only skips pods whose DaemonSet
# exists). No pod delete: with evictions kubectl never deletes.
KUBECTL_RULES = [
    {"apiGroups": [""], "resources": ["nodes"], "verbs": ["get", "list", "patch"]},
    {"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list"]},
    {"apiGroups": [""], "resources": ["pods/eviction"], "verbs": ["create"]},
    {"apiGroups": ["apps"], "resources": ["daemonsets"], "verbs": ["get"]},
]


def kubectl_drain_user(kube, path):
    """A kubeconfig (through the test's proxy) for ServiceAccount KUBECTL_NS/KUBECTL_SA bound
    to a ClusterRole of KUBECTL_RULES: kubectl drain as an operator's CI job would run it."""
    kube.add({"apiVersion": "v1", "kind": "ServiceAccount",
              "metadata": {"name": KUBECTL_SA, "namespace": KUBECTL_NS}})
    rbac = "/apis/rbac.authorization.k8s.io/v1/"
    name = "cz-test-kubectl-drain"
    for kind, plural, body in (
            ("ClusterRole", "clusterroles", {"rules": KUBECTL_RULES}),
            ("ClusterRoleBinding", "clusterrolebindings", {
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                            "name": name},
                "subjects": [{"kind": "ServiceAccount", "name": KUBECTL_SA,
                              "namespace": KUBECTL_NS}]})):
        obj = dict({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": kind,
                    "metadata": {"name": name}}, **body)
        kube.cp.raw("DELETE", rbac + plural + "/" + name)     # a previous run's, if any
        st, got = kube.call("POST", rbac + plural, obj)
        assert st == 201, (kind, st, got)
        kube.extra.append(rbac + plural + "/" + name)
    tok = kube.cp.token(KUBECTL_NS, KUBECTL_SA)
    return kube.cp.kubeconfig(path, {"token": tok}, server=kube.url)


def kubectl_drain_args(kc, node, *opts):
    return [kh.kubectl_path(), "--kubeconfig", kc, "drain", node, *opts]


def kubectl_drain(kc, node, *opts, popen=False, timeout=180):
    env = dict(os.environ, HOME=os.path.dirname(kc))       # no ~/.kube of the machine's
    args = kubectl_drain_args(kc, node, *opts)
    if popen:
        return subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                env=env)
    return subprocess.run(args, capture_output=True, text=True, timeout=timeout, env=env)


# -- fixtures ------------------------------------------------------------------------------------

def twin_pods(node, spare):
    """The pods of one twin node @node: two ReplicaSet pods, a DaemonSet pod, a static pod's
    mirror, a bare pod, an emptyDir pod (of a ReplicaSet), a finished pod (of a ReplicaSet), and
    a pod of ReplicaSet "db" under PodDisruptionBudget db-@node (minAvailable 1) whose second
    pod runs on @spare, so that the budget allows one disruption. The ReplicaSets "web" and
    "db", the DaemonSet "ds" must exist (twin_owners)."""
    p = kh.pod_obj
    return [p("web-%s-1" % node, node, owner=("ReplicaSet", "web"), labels={"app": "web"}),
            p("web-%s-2" % node, node, owner=("ReplicaSet", "web"), labels={"app": "web"}),
            p("ds-%s" % node, node, owner=("DaemonSet", "ds"), labels={"app": "ds"}),
            p("static-%s" % node, node, mirror=True),
            p("bare-%s" % node, node),
            p("scratch-%s" % node, node, owner=("ReplicaSet", "web"), emptydir=True,
              labels={"app": "scratch"}),
            p("done-%s" % node, node, owner=("ReplicaSet", "web"), phase="Succeeded",
              labels={"app": "done"}),
            p("db-%s-1" % node, node, owner=("ReplicaSet", "db"), labels={"app": "db-" + node}),
            p("db-%s-2" % node, spare, owner=("ReplicaSet", "db"), labels={"app": "db-" + node}),
            kh.pdb_obj("db-" + node, {"app": "db-" + node}, 1)]


def twin_owners():
    return [kh.rs_obj("web"), kh.rs_obj("db"), kh.ds_obj("ds")]


def wait_pdb(kube, name, allowed, healthy, ns="default", seconds=60):
    """Waits until the real disruption controller has computed PDB @name's status."""
    path = "/apis/policy/v1/namespaces/%s/poddisruptionbudgets/%s" % (ns, name)

    def ok():
        st = kube.get(path).get("status", {})
        return (st.get("disruptionsAllowed") == allowed and st.get("currentHealthy") == healthy
                and st.get("observedGeneration") is not None)
    kh.wait_until(ok, seconds, "PDB %s: disruptionsAllowed %d, currentHealthy %d"
                  % (name, allowed, healthy))
    return kube.get(path)["status"]


def names(pods):
    return sorted(p["metadata"]["name"] for p in pods)


def evictions(log, user):
    """(pod name, status) of every eviction @user asked for, in order."""
    return [(e["path"].split("/")[-2], e["status"]) for e in log
            if e["user"] == user and e["method"] == "POST" and e["path"].endswith("/eviction")]


def pod_deletes(log, user):
    return [e for e in log if e["user"] == user and e["method"] == "DELETE"
            and "/pods/" in e["path"]]


def wait_log(kube, pred, procs, seconds, what):
    """Waits until some proxy log entry satisfies @pred, while none of @procs has ended."""
    deadline = time.monotonic() + seconds
    while not any(pred(e) for e in kube.log()):
        for p in procs:
            assert p.poll() is None, (what, p.communicate())
        assert time.monotonic() < deadline, "timed out after %d s waiting for %s" % (seconds,
                                                                                      what)
        time.sleep(0.1)

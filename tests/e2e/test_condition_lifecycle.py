# SPDX-License-Identifier: MIT
"""Condition lifecycle on the real control plane (kube-apiserver, kwok nodes), as the chart's
ServiceAccounts: a restart of NPD (v0.8.20, v1.34.0 and v1.36.0, the shipped config) or of the
agent on a True node never shows False on the server (a watch sees every stored version of the node); the
shipped config without skip_initial_status does show False there (the watch can fail); a
condition clears only after recover_after (held True meanwhile, flaps counted in the metrics
file that promtool accepts); a condition turned off is removed (not False) and KernelReady /
NetworkingReady, types we do not own, are untouched; `helm uninstall` with the chart's pre-delete
hook leaves no condition, taint, annotation or Lease of ours."""

import json
import os
import shutil
import subprocess
import threading
import time

import pytest

import kube_helpers as kh
import npd_helpers as nh
from conftest import FIXTURES, is_root
from lifecycle_helpers import NodeWatch

BIN = os.environ.get("CZ_BIN", os.path.join(kh.ROOT, "build", "cpuzombie"))
ZOMBIES = os.path.join(FIXTURES, "memcg", "v1-zombies")
OURS = ("MemcgZombieLeak", "CPUCoreSaturation", "ENADeviceReset")
OLD = "2024-01-01T00:00:00Z"


def cond(t, status, reason="R", message="m"):
    return {"type": t, "status": status, "reason": reason, "message": message,
            "lastHeartbeatTime": OLD, "lastTransitionTime": OLD}


# The EKS node monitoring agent's condition types (theirs: never ours to touch)
THEIRS = [cond("KernelReady", "False", "KernelIsReady"), cond("NetworkingReady", "True",
          "IPAMDNotReady"), cond("StorageReady", "False", "DiskIsReady"),
          cond("ContainerRuntimeReady", "False", "ContainerRuntimeIsReady"),
          cond("AcceleratedHardwareReady", "False", "NvidiaXidErrorSuppressed")]


def check_binary():
    check = os.path.join(os.path.dirname(BIN), "cpuzombie-check")
    return check if os.access(check, os.X_OK) else BIN


def conds(kube, node):
    return {c["type"]: c for c in kube.node(node)["status"].get("conditions", [])}


# -- NPD restart --------------------------------------------------------------------------------

@pytest.mark.skipif(not is_root(), reason="needs root: NPD runs in a private mount namespace")
@pytest.mark.parametrize("skip", [True, False], ids=["shipped", "without-skip"])
@pytest.mark.parametrize("version", nh.VERSIONS)
def test_npd_restart_on_true_node(kube, tmp_path, version, skip):
    """NPD restarted on a node whose MemcgZombieLeak is True: with the shipped config
    (skip_initial_status) the server never holds False; without it, the restart publishes the
    default False before the first check (the complaint users file), which the watch sees."""
    binary = nh.npd_for(version)
    node = "lc-npd-%s-%s-%d" % (version.replace(".", "-"), "s" if skip else "n", os.getpid())
    kube.add(kh.node_obj(node))
    kc = kube.kubeconfig(str(tmp_path / "kubeconfig"), node=node)
    cfg = nh.rewrite(nh.shipped_config("cpuzombie-memcg"), check_binary(), ZOMBIES + "/proc",
                     ZOMBIES + "/sys")
    assert cfg["pluginConfig"]["skip_initial_status"] is True       # as shipped
    # NPD's condition manager syncs once a second, keeping only the newest status per type: a
    # first check quicker than that hides the initial False. A slow first check (check cpu
    # samples 3 s inline while the agent's sampler is not up yet, as after a node reboot) does
    # not: the rule runs our check 2 s late, in both variants.
    rule = cfg["rules"][0]
    rule["args"] = ["-c", 'sleep 2; exec "$0" "$@"', rule["path"]] + rule["args"]
    rule["path"] = "/bin/sh"
    if not skip:
        del cfg["pluginConfig"]["skip_initial_status"]
    first = nh.Npd(tmp_path / "npd1", {"cpuzombie-memcg": cfg}, node, kube.url, kc,
                   binary=binary).start()
    try:
        nh.wait_condition(kube, node, "MemcgZombieLeak", lambda c: c["status"] == "True")
    finally:
        first.stop()
    w = NodeWatch(kube.cp, node)
    second = nh.Npd(tmp_path / "npd2", {"cpuzombie-memcg": cfg}, node, kube.url, kc,
                    binary=binary)
    try:
        started = time.time()
        second.start()
        # its first check ran (the gauge) and reached the server: a version of the node whose
        # condition the new NPD wrote, True
        kh.wait_until(lambda: second.gauge("MemcgZombieLeak", "ZombieMemcgsHigh") == 1, 60,
                      "the restarted NPD's first check")
        kh.wait_until(lambda: any(v.get("MemcgZombieLeak", ("",))[0] == "True"
                                  for v in w.seen[1:]) or w.error, 30,
                      "the restarted NPD's True on the server")
        time.sleep(3)   # its condition manager syncs every second: anything after shows too
    finally:
        second.stop()
        w.stop()
    seen = w.statuses("MemcgZombieLeak")
    assert w.versions() >= 2, seen
    if skip:
        assert set(seen) == {"True"}, seen
    else:
        assert "False" in seen and seen[-1] == "True", seen
    reqs = nh.npd_requests(kube, version)
    assert {e["user"] for e in reqs} == {nh.SA_USER}
    del started


# -- the agent: restart, recover_after, a condition turned off ---------------------------------

def agent_config(tmp, kube, node, extra="", name="cz.yaml"):
    kc = kube.kubeconfig(os.path.join(str(tmp), "kc-" + node), node=node)
    p = os.path.join(str(tmp), name)
    with open(p, "w") as f:
        f.write(kh.AGENT_CPU)
        f.write("kubernetes:\n  node_name: %s\n  kubeconfig: %s\n  timeout: 5s\n" % (node, kc))
        f.write("agent:\n  set_conditions: true\n  remediate: false\n  metrics_textfile: %s\n"
                % prom_of(tmp, node))
        f.write(extra)
    return p


def once(cfg, tree, tmp, node):
    p = subprocess.run(kh.agent_once_args(BIN, cfg, tree, tmp, node), capture_output=True,
                       text=True, timeout=120)
    assert p.returncode == 0, p.stdout + p.stderr
    return p.stdout


def prom_of(tmp, node):
    """The textfile, in the node's state dir (kh.agent_once_args): a host file lies there."""
    d = os.path.join(str(tmp), "state-" + node)
    os.makedirs(d, exist_ok=True)
    return os.path.join(d, "cz.prom")


def metrics(tmp):
    import glob
    proms = glob.glob(os.path.join(str(tmp), "state-*", "cz.prom"))
    assert len(proms) == 1, proms
    text = open(proms[0]).read()
    if shutil.which("promtool"):
        p = subprocess.run(["promtool", "check", "metrics"], input=text, capture_output=True,
                           text=True, timeout=60)
        assert p.returncode == 0, p.stdout + p.stderr
    out = {}
    for line in text.splitlines():
        if line.startswith("cpuzombie_condition_") and 'condition="MemcgZombieLeak"' in line:
            out[line.split("{")[0]] = float(line.rsplit(" ", 1)[1])
    return out


def test_agent_restart_and_recover_after(kube, tmp_path):
    """The agent restarted on a True node keeps it True; the problem gone, memcg.recover_after
    holds it True (saying it is recovering) until that long of OK checks, across restarts; a
    problem back meanwhile is a flap counted in the metrics, never a False on the server."""
    node = "lc-agent-%d" % os.getpid()
    kube.add(kh.node_obj(node))
    sick, well = kh.agent_tree(tmp_path, "v1-zombies"), kh.agent_tree(tmp_path, "v1-healthy")
    hold = agent_config(tmp_path, kube, node, "memcg:\n  recover_after: 1h\n", "hold.yaml")
    once(hold, sick, tmp_path, node)
    assert conds(kube, node)["MemcgZombieLeak"]["status"] == "True"
    w = NodeWatch(kube.cp, node)
    try:
        once(hold, sick, tmp_path, node)                # a restart, problem still there
        once(hold, well, tmp_path, node)                # gone: held
        c = conds(kube, node)["MemcgZombieLeak"]
        assert c["status"] == "True" and c["message"].startswith("recovering: OK for "), c
        assert "of recover_after 1h; " in c["message"], c
        m = metrics(tmp_path)
        assert m["cpuzombie_condition_recovering"] == 1 and \
            m["cpuzombie_condition_flaps_total"] == 0, m
        once(hold, sick, tmp_path, node)                # back while held: a flap
        once(hold, well, tmp_path, node)
        m = metrics(tmp_path)
        assert m["cpuzombie_condition_flaps_total"] == 1, m
        assert m["cpuzombie_condition_clears_total"] == 0, m
        kh.wait_until(lambda: len(w.seen) >= 1, 10, "the watch")
        held = list(w.statuses("MemcgZombieLeak"))
        short = agent_config(tmp_path, kube, node, "memcg:\n  recover_after: 1s\n", "short.yaml")
        time.sleep(1.2)                                 # OK for longer than 1s now
        once(short, well, tmp_path, node)
        kh.wait_until(lambda: "False" in w.statuses("MemcgZombieLeak"), 10, "the clear")
    finally:
        w.stop()
    assert held and set(held) == {"True"}, held
    assert conds(kube, node)["MemcgZombieLeak"]["reason"] == "ZombieMemcgsNormal"
    m = metrics(tmp_path)
    assert m["cpuzombie_condition_clears_total"] == 1 and \
        m["cpuzombie_condition_recovering"] == 0, m


def test_condition_turned_off_is_removed_theirs_untouched(kube, tmp_path):
    """memcg.condition false: the agent removes MemcgZombieLeak (gone, not False); ours that
    stay on are still set; the EKS monitoring agent's types are exactly as they were."""
    node = "lc-off-%d" % os.getpid()
    kube.add(kh.node_obj(node))
    kube.set_conditions(node, *THEIRS)
    before = {t: c for t, c in conds(kube, node).items() if t not in OURS}
    tree = kh.agent_tree(tmp_path, "v1-zombies")
    once(agent_config(tmp_path, kube, node, name="on.yaml"), tree, tmp_path, node)
    assert conds(kube, node)["MemcgZombieLeak"]["status"] == "True"
    off = agent_config(tmp_path, kube, node, "memcg:\n  condition: false\n", "off.yaml")
    out = once(off, tree, tmp_path, node)
    assert "1 removed" in out, out
    now = conds(kube, node)
    assert "MemcgZombieLeak" not in now, now
    assert {"CPUCoreSaturation", "ENADeviceReset"} <= set(now)
    after = {t: c for t, c in now.items() if t not in OURS}
    assert {t: after[t] for t in before if t != "Ready"} == \
        {t: before[t] for t in before if t != "Ready"}           # kwok heartbeats Ready
    # the removal was a strategic-merge delete by type, as the chart's agent account
    patches = [e for e in kube.log() if e["method"] == "PATCH" and e["path"].endswith("/status")]
    assert patches and {e["user"] for e in patches} == {nh.SA_USER}
    deletes = [c for e in patches for c in (e.get("body") or {}).get("status", {})
               .get("conditions", []) if c.get("$patch") == "delete"]
    assert deletes == [{"type": "MemcgZombieLeak", "$patch": "delete"}], deletes
    out = once(off, tree, tmp_path, node)                        # nothing left to remove
    assert "removed" not in out, out


@pytest.mark.skipif(not is_root(), reason="needs root: NPD runs in a private mount namespace")
def test_npd_mode_check_turned_off_is_removed(kube, tmp_path):
    """NPD owns the conditions (agent.set_conditions false): the real NPD (the chart's version,
    the shipped memcg config) sets MemcgZombieLeak True; the check is then turned off (NPD no
    longer runs it, memcg.condition false), and NPD never removes a type. The agent, at its
    start, removes MemcgZombieLeak (gone, not False); CPUCoreSaturation, on, stays as NPD set
    it; KernelReady and the other EKS monitoring agent types are untouched; a second start
    finds nothing to remove and writes nothing."""
    node = "lc-npdoff-%d" % os.getpid()
    kube.add(kh.node_obj(node))
    kube.set_conditions(node, *THEIRS)
    kc = kube.kubeconfig(str(tmp_path / "kubeconfig"), node=node)
    cfg = nh.rewrite(nh.shipped_config("cpuzombie-memcg"), check_binary(), ZOMBIES + "/proc",
                     ZOMBIES + "/sys")
    npd = nh.Npd(tmp_path / "npd", {"cpuzombie-memcg": cfg}, node, kube.url, kc,
                 binary=nh.npd_for(nh.CURRENT)).start()
    try:
        nh.wait_condition(kube, node, "MemcgZombieLeak", lambda c: c["status"] == "True")
    finally:
        npd.stop()
    # a check that stays on, as NPD set it
    kube.set_conditions(node, cond("CPUCoreSaturation", "False", "NoCPUCoreSaturation"))
    before = {t: c for t, c in conds(kube, node).items()
              if t not in ("MemcgZombieLeak", "Ready")}
    p = os.path.join(str(tmp_path), "npd-off.yaml")
    with open(p, "w") as f:
        f.write(kh.AGENT_CPU)
        f.write("kubernetes:\n  node_name: %s\n  kubeconfig: %s\n  timeout: 5s\n" % (node, kc))
        f.write("agent:\n  set_conditions: false\n  remediate: false\n")
        f.write("memcg:\n  condition: false\n")
    tree = kh.agent_tree(tmp_path, "v1-zombies")
    mark = len(kube.log())
    r = subprocess.run(kh.agent_once_args(BIN, p, tree, tmp_path, node), capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "condition MemcgZombieLeak removed" in r.stderr, r.stderr
    now = conds(kube, node)
    assert "MemcgZombieLeak" not in now, now
    assert {t: c for t, c in now.items() if t != "Ready"} == before, now
    writes = [e for e in kube.log()[mark:] if e["method"] != "GET"]
    assert [(e["method"], e["path"], e["user"]) for e in writes] == \
        [("PATCH", "/api/v1/nodes/%s/status" % node, nh.SA_USER)], writes
    deletes = writes[0]["body"]["status"]["conditions"]
    assert deletes == [{"type": "MemcgZombieLeak", "$patch": "delete"}], deletes
    # started again (or reloaded): nothing of ours turned off is left, nothing written
    mark = len(kube.log())
    r = subprocess.run(kh.agent_once_args(BIN, p, tree, tmp_path, node), capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0 and "removed" not in r.stderr, r.stdout + r.stderr
    assert [e for e in kube.log()[mark:] if e["method"] != "GET"] == []
    assert {t: c for t, c in conds(kube, node).items() if t != "Ready"} == before


# -- helm uninstall -----------------------------------------------------------------------------

HOOK_NEEDS = {"ClusterRole": {("", "nodes", "list"), ("", "nodes", "get"), ("", "nodes", "patch"),
                              ("", "nodes/status", "patch")},
              "Role": {("coordination.k8s.io", "leases", "list"),
                       ("coordination.k8s.io", "leases", "delete")}}


def grants(role):
    return {(g, r, v) for rule in role["rules"] for g in rule["apiGroups"]
            for r in rule["resources"] for v in rule["verbs"]}


def hook_objects(ns):
    """The rendered pre-delete hook: its Job runs `cpuzombie cleanup` as cpuzombie-cleanup,
    whose rights are exactly cleanup.c's calls."""
    import deploy_helpers as dh
    _, objs = dh.render("remediation", ns_args=("-n", ns))
    hook = [o for o in objs if o["metadata"].get("name") == "cpuzombie-cleanup"]
    for o in hook:
        ann = o["metadata"]["annotations"]
        assert ann["helm.sh/hook"] == "pre-delete,post-delete", o["kind"]
        assert ann["helm.sh/hook-delete-policy"] == "before-hook-creation,hook-succeeded"
    kinds = sorted(o["kind"] for o in hook)
    # lease_namespace "" is the release namespace: one Role, one RoleBinding there
    assert kinds == ["ClusterRole", "ClusterRoleBinding", "ConfigMap", "Job", "Role",
                     "RoleBinding", "ServiceAccount"], kinds
    for o in hook:
        if o["kind"] in HOOK_NEEDS:
            assert grants(o) == HOOK_NEEDS[o["kind"]], o
            assert all("resourceNames" not in r for r in o["rules"])
        if o["kind"].endswith("Binding"):
            assert o["subjects"] == [{"kind": "ServiceAccount", "name": "cpuzombie-cleanup",
                                      "namespace": ns}]
    assert [o["metadata"]["namespace"] for o in hook if o["kind"] == "Role"] == [ns]
    job = next(o for o in hook if o["kind"] == "Job")
    spec = job["spec"]["template"]["spec"]
    assert spec["serviceAccountName"] == "cpuzombie-cleanup"
    assert spec["containers"][0]["command"][-1] == "cleanup"
    # with createNamespace the namespace is going away at post-delete: pre-delete only
    _, objs = dh.render("remediation", ("--set", "createNamespace=true"), ns_args=("-n", ns))
    assert {o["metadata"]["annotations"]["helm.sh/hook"] for o in objs
            if o["metadata"].get("name") == "cpuzombie-cleanup"} == {"pre-delete"}
    assert int(job["metadata"]["annotations"]["helm.sh/hook-weight"]) > max(
        int(o["metadata"]["annotations"]["helm.sh/hook-weight"]) for o in hook if o is not job)
    return hook


def our_marks(kube, nodes, release_ns):
    left = []
    for n in nodes:
        o = kube.node(n)
        left += [(n, c["type"]) for c in o["status"].get("conditions", []) if c["type"] in OURS]
        left += [(n, k) for k in o["metadata"].get("annotations", {})
                 if k.startswith("cpuzombie.io/")]
        left += [(n, t["key"]) for t in o["spec"].get("taints", [])
                 if t["key"].startswith("cpuzombie.io/")]
    for ns in (release_ns,):        # lease_namespace "": the budget is the release's too
        left += [(ns, l["metadata"]["name"]) for l in kube.get(
            "/apis/coordination.k8s.io/v1/namespaces/%s/leases" % ns)["items"]
            if l["metadata"]["name"].startswith("cpuzombie")]
    return left


def complete_job(kube, ns, name):
    """The Job cannot run here (kwok fakes pods; no job controller, no image): once its
    command has been run as its ServiceAccount, mark it Complete as the job controller would."""
    now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    st, obj = kube.cp.raw("PATCH", "/apis/batch/v1/namespaces/%s/jobs/%s/status" % (ns, name), {
        "status": {"startTime": now, "completionTime": now, "succeeded": 1, "conditions": [
            {"type": "SuccessCriteriaMet", "status": "True", "lastProbeTime": now,
             "lastTransitionTime": now},
            {"type": "Complete", "status": "True", "lastProbeTime": now,
             "lastTransitionTime": now}]}}, "application/merge-patch+json")
    assert st == 200, (st, obj)


def test_helm_uninstall_leaves_nothing_of_ours(kube, tmp_path):
    """Real helm install and uninstall against the test's control plane: the pre-delete hook's
    command, run as the hook's ServiceAccount with the config helm created for it, removes our
    condition types, cpuzombie.io/ annotations and taints from every node and our Leases; the
    EKS monitoring agent's types, others' annotations, taints and Leases stay; the hook's
    objects go when it succeeded."""
    import deploy_helpers as dh
    helm, _ = dh.kube_tools()
    hook_objects(kh.AGENT_NS)
    pid = os.getpid()
    # a release namespace of its own: the session's "cpuzombie" holds the harness's DaemonSet
    ns = "cz-lc-%d" % pid
    nodes = ["lc-un-a-%d" % pid, "lc-un-b-%d" % pid]
    kube.add(*[kh.node_obj(n) for n in nodes])
    for i, n in enumerate(nodes):
        kube.set_conditions(n, *THEIRS, cond("MemcgZombieLeak", "True", "ZombieMemcgsHigh"),
                            *([cond("CPUCoreSaturation", "False"), cond("ENADeviceReset", "True")]
                              if i == 0 else []))
        st, obj = kube.cp.raw("PATCH", "/api/v1/nodes/" + n, {
            "metadata": {"annotations": {"cpuzombie.io/cordoned": OLD, "cpuzombie.io/drained": OLD,
                                         "cpuzombie.io/last-action": "cordon",
                                         "weave.works/kured-node-lock": "theirs"}},
            "spec": {"taints": [{"key": "cpuzombie.io/unhealthy", "effect": "NoSchedule"},
                                {"key": "example.com/theirs", "effect": "NoExecute"}]}},
            "application/merge-patch+json")
        assert st == 200, (st, obj)
    lease = lambda ns, name, labels: {  # noqa: E731
        "kind": "Lease", "apiVersion": "coordination.k8s.io/v1",
        "metadata": {"name": name, "namespace": ns, "labels": labels},
        "spec": {"holderIdentity": nodes[0]}}
    ours = {"app.kubernetes.io/managed-by": "cpuzombie"}
    # lease_namespace "": the budget slots live in the release namespace beside the leader
    kube.add(lease(ns, "cpuzombie-slot-0", ours),
             lease(ns, "cpuzombie-remediator", {"app.kubernetes.io/name": "cpuzombie"}),
             lease(ns, "node-" + nodes[1], {}))                     # not ours
    # the hand-off locks: medik8s' node-<name> Leases (ours for node a, NodeHealthCheck's for
    # b) and kured's multi-lock (our entry for a, kured's own for another node)
    import guard_helpers as gh
    m8 = "cz-m8-%d" % pid
    kube.ensure_ns(m8)
    m8_leases = "/apis/coordination.k8s.io/v1/namespaces/%s/leases" % m8
    for n, holder in ((nodes[0], "cpuzombie"), (nodes[1], "NodeHealthCheck")):
        m = gh.medik8s_lease(n, holder, time.time() - 5)
        m["metadata"]["namespace"] = m8
        st, obj = kube.cp.raw("POST", m8_leases, m)
        assert st == 201, obj
    theirs_m8 = kube.get(m8_leases + "/node-" + nodes[1])
    kds = "kured-lc-%d" % pid
    kured_path = "/apis/apps/v1/namespaces/kube-system/daemonsets/" + kds
    st, obj = kube.cp.raw("POST", "/apis/apps/v1/namespaces/kube-system/daemonsets",
                          kh.ds_obj(kds, ns="kube-system"))
    assert st == 201, obj
    kured_theirs = json.loads(gh.kured_lock("lc-un-rebooting", time.time() - 60))
    kured_ours = dict(json.loads(gh.kured_lock(nodes[0], time.time() - 30, 3600 * 10**9)),
                      metadata={"unschedulable": True}, holder="cpuzombie")
    st, obj = kube.cp.raw("PATCH", kured_path, {"metadata": {"annotations": {
        gh.KURED_LOCK: json.dumps({"maxOwners": 2, "locks": [kured_theirs, kured_ours]})}}},
        "application/merge-patch+json")
    assert st == 200, obj
    before = {n: kube.node(n) for n in nodes}
    assert len(our_marks(kube, nodes, ns)) == 4 + 2 * 3 + 2 * 1 + 2, our_marks(kube, nodes, ns)
    admin = kube.admin_kubeconfig(str(tmp_path / "admin.kc"))
    try:
        p = subprocess.run([helm, "install", "cpuzombie", dh.CHART, "-n", ns,
                            "--kubeconfig", admin, "--take-ownership", "--set",
                            "config.remediation.mode=drain", "--set",
                            "config.remediation.medik8s_lease_namespace=" + m8, "--set",
                            "config.remediation.kured_daemonset=kube-system/" + kds],
                           capture_output=True, text=True, timeout=300)
        assert p.returncode == 0, p.stdout + p.stderr
        out = {}
        un = threading.Thread(target=lambda: out.setdefault("p", subprocess.run(
            [helm, "uninstall", "cpuzombie", "-n", ns, "--kubeconfig", admin,
             "--timeout", "180s"], capture_output=True, text=True, timeout=300)))
        un.start()
        job_path = "/apis/batch/v1/namespaces/%s/jobs/cpuzombie-cleanup" % ns

        def run_hook(what, after_uid=None):
            """Waits for the hook's Job (a new one: not @after_uid), runs its command as its
            ServiceAccount with the config helm made for it: (stdout, calls, the Job's uid)."""
            def made():
                st, o = kube.cp.raw("GET", job_path)
                return (st == 200 and o["metadata"]["uid"] != after_uid) or not un.is_alive()
            kh.wait_until(made, 120, "helm to create the %s hook's Job" % what)
            assert un.is_alive(), out["p"].stdout + out["p"].stderr
            job = kube.get(job_path)
            assert job["metadata"]["annotations"]["helm.sh/hook"] == "pre-delete,post-delete"
            spec = job["spec"]["template"]["spec"]
            sa = spec["serviceAccountName"]
            cmd = spec["containers"][0]["command"]
            assert cmd[0] == "/usr/local/bin/cpuzombie" and cmd[-1] == "cleanup", cmd
            cm = kube.get("/api/v1/namespaces/%s/configmaps/%s" % (
                ns, spec["volumes"][0]["configMap"]["name"]))
            kc = kube.cp.kubeconfig(str(tmp_path / ("hook-%s.kc" % what)),
                                    {"token": kube.cp.token(ns, sa)}, server=kube.url)
            cfg = tmp_path / ("cpuzombie-%s.yaml" % what)
            cfg.write_text(cm["data"]["cpuzombie.yaml"] + "kubernetes:\n  kubeconfig: %s\n" % kc)
            mark = len(kube.log())
            args = [BIN] + [str(cfg) if a == "/etc/cpuzombie/cpuzombie.yaml" else a
                            for a in cmd[1:]]
            r = subprocess.run(args, capture_output=True, text=True, timeout=120)
            assert r.returncode == 0, r.stdout + r.stderr
            calls = kube.log()[mark:]
            assert calls and {e["user"] for e in calls} == {
                "system:serviceaccount:%s:%s" % (ns, sa)}
            return r.stdout, calls, job["metadata"]["uid"]

        stdout, calls, uid = run_hook("pre-delete")
        assert "4 conditions" in stdout and "2 Leases deleted" in stdout, stdout
        assert "2 hand-off locks released" in stdout, stdout
        # refused nothing: a 409 is only a node changed under us (kwok heartbeats it), re-read
        # and patched again; each node's last patch was taken
        bad = [(e["method"], e["path"], e["status"]) for e in calls if e["status"] >= 300]
        assert all(m == "PATCH" and st == 409 for m, _, st in bad), bad
        for n in nodes:
            last = [e for e in calls if e["method"] == "PATCH" and e["path"] == "/api/v1/nodes/" + n]
            assert last and last[-1]["status"] == 200, last
        # the hand-off locks: ours released, the others' exactly as they were
        assert kube.cp.raw("GET", m8_leases + "/node-" + nodes[0])[0] == 404
        assert kube.get(m8_leases + "/node-" + nodes[1]) == theirs_m8
        lock = json.loads(kube.get(kured_path)["metadata"]["annotations"][gh.KURED_LOCK])
        assert lock == {"maxOwners": 2, "locks": [kured_theirs]}, lock
        # an agent still running after the pre-delete pass sets its condition again (the race
        # of a pre-delete hook): the post-delete pass, once the DaemonSet is gone, removes it
        kube.set_conditions(nodes[0], cond("MemcgZombieLeak", "True", "ZombieMemcgsHigh"))
        complete_job(kube, ns, "cpuzombie-cleanup")
        stdout, calls, _ = run_hook("post-delete", uid)
        assert "1 conditions" in stdout and "0 Leases deleted" in stdout, stdout
        assert "0 hand-off locks released" in stdout, stdout
        assert kube.cp.raw("GET", "/apis/apps/v1/namespaces/%s/daemonsets/cpuzombie" % ns)[0] \
            == 404      # helm deleted the release's objects before the post-delete hook
        complete_job(kube, ns, "cpuzombie-cleanup")
        un.join(240)
        assert not un.is_alive() and out["p"].returncode == 0, out["p"].stdout + out["p"].stderr
        # hook-succeeded: the hook's objects are gone (before the session's chart objects,
        # which render the hook too, are applied again below)
        for path in ("/api/v1/namespaces/%s/serviceaccounts/cpuzombie-cleanup" % ns,
                     "/apis/rbac.authorization.k8s.io/v1/clusterroles/cpuzombie-cleanup",
                     "/apis/batch/v1/namespaces/%s/jobs/cpuzombie-cleanup" % ns):
            kh.wait_until(lambda: kube.cp.raw("GET", path)[0] == 404, 30, path + " to go")
        # the hand-off locks: ours released, the others' exactly as they were
        assert kube.cp.raw("GET", m8_leases + "/node-" + nodes[0])[0] == 404
        assert kube.get(m8_leases + "/node-" + nodes[1]) == theirs_m8
        lock = json.loads(kube.get(kured_path)["metadata"]["annotations"][gh.KURED_LOCK])
        assert lock == {"maxOwners": 2, "locks": [kured_theirs]}, lock
    finally:
        kh.apply_chart_rbac(kube.cp)    # the session's chart objects, which helm had adopted
        kube.cp.raw("DELETE", kured_path)
    assert our_marks(kube, nodes, ns) == []
    for n in nodes:
        o = kube.node(n)
        c = {x["type"]: x for x in o["status"]["conditions"]}
        b = {x["type"]: x for x in before[n]["status"]["conditions"]}
        for t in THEIRS:
            assert c[t["type"]] == b[t["type"]], t["type"]
        assert o["metadata"]["annotations"]["weave.works/kured-node-lock"] == "theirs"
        assert [t["key"] for t in o["spec"]["taints"]] == ["example.com/theirs"]
    assert kube.cp.raw("GET", "/apis/coordination.k8s.io/v1/namespaces/%s/leases/node-%s"
                       % (ns, nodes[1]))[0] == 200

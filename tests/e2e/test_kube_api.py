# SPDX-License-Identifier: MIT
"""cpuzombie's Kubernetes side against the real control plane (kube-apiserver, etcd,
kube-controller-manager, kwok nodes; tests/tools/kube), as the chart's ServiceAccount with a
token bound to its pod on the node: conditions, remediation guards, drain with PDBs whose status
the real disruption controller computes, uncordon, the cluster-wide budget race on the real
coordination API, faults from the fault proxy in front of it, and authentication. Conditions and
authentication are driven through `cpuzombie agent --once` on fixture nodes
(kube_helpers.agent_tree) as the agent's ServiceAccount; remediation through `cpuzombie
remediator --once` as the remediator's (the chart's design: node agents only report), acting on
the conditions already on the node; the published conditions are what the checks find on the fixture
(12840 dying memcgs or a healthy node; no core saturated for the hour min_burst asks; an ENA
state that cannot be read when the state dir is unusable)."""

import concurrent.futures
import json
import os
import subprocess
import time

import pytest

import kube_helpers as kh
import remediator_helpers as rh

BIN = os.environ.get("CZ_BIN", os.path.join(kh.ROOT, "build", "cpuzombie"))
OLD = "2024-01-01T00:00:00Z"


def cond(t, status, ltt=OLD, reason="R"):
    return {"type": t, "status": status, "reason": reason, "message": "m",
            "lastHeartbeatTime": ltt, "lastTransitionTime": ltt}


READY = cond("Ready", "True", reason="KubeletReady")


def config(tmp, kc, node, **rem):
    # `for`, `uncordon_after` 0s: the cycle that starts the remediator's clock acts
    r = dict(mode="cordon", **{"for": "0s"}, max_unavailable="1", drain_timeout="20s",
             uncordon_after="0s", lease_namespace=kh.LEASE_NS)
    r.update(rem)
    set_cond = r.pop("set_conditions", "false")
    remediate = r.pop("remediate", "true")
    p = os.path.join(str(tmp), "cz-%s.yaml" % node)
    with open(p, "w") as f:
        f.write(kh.AGENT_CPU)
        f.write("kubernetes:\n  node_name: %s\n  kubeconfig: %s\n  timeout: 5s\n" % (node, kc))
        f.write("agent:\n  set_conditions: %s\n  remediate: %s\n" % (set_cond, remediate))
        f.write("remediation:\n" + "".join("  %s: %s\n" % kv for kv in r.items()))
    return p


def cycle(cfg, tree=None, env=None, timeout=60, state=None, popen=False):
    """One `agent --once` for the node of config @cfg (cz-NODE.yaml), on fixture @tree (default:
    a healthy node), with run and state dirs of its own."""
    tmp = os.path.dirname(cfg)
    node = os.path.basename(cfg)[len("cz-"):-len(".yaml")]
    args = kh.agent_once_args(BIN, cfg, tree or kh.agent_tree(tmp, "v1-healthy"), tmp, node,
                              state)
    if popen:
        return subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    return subprocess.run(args, env=dict(os.environ, **(env or {})), capture_output=True,
                          text=True, timeout=timeout)


def conds(node):
    return {c["type"]: c for c in node["status"]["conditions"]}


@pytest.fixture
def rem(kube, tmp_path):
    """The remediator's side of a test: rem(**remediation) is a config for `remediator --once`
    as the chart's remediator ServiceAccount (through the test's proxy); its leader Lease is
    removed afterwards."""
    kc = rh.remediator_kubeconfig(kube, str(tmp_path / "kc-remediator"))
    n = iter(range(1000))
    yield lambda **r: rh.config(tmp_path, kc, "c%d" % next(n), **r)
    rh.drop_leader(kube)


def rcycle(cfg, popen=False, identity="remediator-0"):
    """One `remediator --once` of config @cfg."""
    return rh.run_once(cfg, identity=identity, popen=popen)


def writes(kube):
    """What the test's clients changed, the remediator's leader Lease left out (its own
    bookkeeping: test_remediator.py tests it)."""
    return [e for e in kube.log() if e["method"] != "GET"
            and not e["path"].startswith("/apis/coordination.k8s.io/v1/namespaces/%s/leases"
                                         % kh.AGENT_NS)]


# -- conditions --------------------------------------------------------------------------------

def test_conditions_set_flip_keep_transition_time(kube, tmp_path):
    kube.add(kh.node_obj("n1", conditions=[READY, cond("KernelDeadlock", "False")]))
    kc = kube.kubeconfig(str(tmp_path / "kc"))
    cfg = config(tmp_path, kc, "n1", mode="off", set_conditions="true")
    sick, healthy = kh.agent_tree(tmp_path, "v1-zombies"), kh.agent_tree(tmp_path, "v1-healthy")
    no_state = kh.unusable_state_dir(tmp_path)     # the ena check: Unknown
    r = cycle(cfg, sick, state=no_state)
    assert r.returncode == 0, r.stderr
    c = conds(kube.node("n1"))
    assert c["MemcgZombieLeak"]["status"] == "True"
    assert c["MemcgZombieLeak"]["reason"] == "ZombieMemcgsHigh"
    assert c["MemcgZombieLeak"]["message"].startswith("12840 dying")
    assert c["CPUCoreSaturation"]["status"] == "False"
    assert c["CPUCoreSaturation"]["reason"] == "NoCoreSaturation"
    assert c["ENADeviceReset"]["status"] == "Unknown"
    assert c["Ready"] == READY and c["KernelDeadlock"]["status"] == "False"  # untouched
    t0 = c["MemcgZombieLeak"]["lastTransitionTime"]
    hb0 = c["MemcgZombieLeak"]["lastHeartbeatTime"]
    ev0 = [e for e in kube.log() if e["path"].endswith("/events") and e["method"] == "POST"]
    assert {e["body"]["reason"] for e in ev0} == {"ZombieMemcgsHigh", "NoCoreSaturation",
                                                  "NoENAResets"}
    time.sleep(1.1)
    kube.reset_log()
    cycle(cfg, sick, state=no_state)
    c = conds(kube.node("n1"))
    assert c["MemcgZombieLeak"]["lastTransitionTime"] == t0        # same status: kept
    assert c["MemcgZombieLeak"]["lastHeartbeatTime"] != hb0        # heartbeat refreshed
    assert not [e for e in kube.log() if e["path"].endswith("/events")]  # no flip, no event
    patch = [e for e in kube.log() if e["method"] == "PATCH"][0]
    assert patch["path"] == "/api/v1/nodes/n1/status"
    assert patch["ctype"] == "application/strategic-merge-patch+json"
    time.sleep(1.1)
    cycle(cfg, healthy, state=no_state)
    c = conds(kube.node("n1"))
    assert c["MemcgZombieLeak"]["status"] == "False"
    assert c["MemcgZombieLeak"]["lastTransitionTime"] != t0         # flipped: new time
    ev = [e["body"] for e in kube.log() if e["path"].endswith("/events")]
    assert [(e["reason"], e["type"]) for e in ev] == [("ZombieMemcgsNormal", "Normal")]
    assert ev[0]["involvedObject"]["uid"] == kube.node("n1")["metadata"]["uid"]


# -- remediation guards ------------------------------------------------------------------------

def test_cordon_once_with_event_and_annotation_then_uncordon(kube, rem, tmp_path):
    kube.add(kh.node_obj("n1", conditions=[READY, cond("MemcgZombieLeak", "True")]))
    cfg = rem()
    r = rcycle(cfg)
    assert r.returncode == 0 and "cordoned" in r.stdout, r.stdout + r.stderr
    n = kube.node("n1")
    assert n["spec"]["unschedulable"] is True
    assert "MemcgZombieLeak" in n["metadata"]["annotations"]["cpuzombie.io/cordoned"]
    rcycle(cfg)   # still True: nothing more
    cordons = [e for e in kube.log() if e["method"] == "PATCH" and e.get("unschedulable")]
    assert len(cordons) == 1
    evs = [e["body"]["reason"] for e in kube.log() if e["path"].endswith("/events")]
    assert evs == ["CpuzombieCordon"]
    leases = kube.leases()
    assert [l["spec"]["holderIdentity"] for l in leases] == ["n1"]
    # recovery: False for longer than uncordon_after -> uncordon, lease released
    kube.call("PATCH", "/api/v1/nodes/n1/status", {"status": {"conditions": [
        cond("MemcgZombieLeak", "False")]}}, ctype="application/strategic-merge-patch+json")
    r = rcycle(cfg)
    assert "uncordoned" in r.stdout, r.stdout + r.stderr
    n = kube.node("n1")
    assert not n["spec"].get("unschedulable")
    assert "cpuzombie.io/cordoned" not in n["metadata"].get("annotations", {})
    assert kube.leases() == []
    # kubectl agrees with what cpuzombie did (the person looking is the admin)
    if kh.kubectl_path():
        out = kh.kubectl(kube.admin_kubeconfig(str(tmp_path / "admin")), "describe", "node",
                         "n1").stdout
        assert "CpuzombieCordon" in out and "CpuzombieUncordon" in out


def test_guard_for_not_reached(kube, rem, tmp_path):
    now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    kube.add(kh.node_obj("n1", conditions=[READY, cond("MemcgZombieLeak", "True", ltt=now)]))
    cfg = rem(**{"for": "10m"})
    r = rcycle(cfg)
    assert r.returncode == 0 and "none" in r.stdout
    # the one write: the remediator's clock starts (the node's own transition time is not read)
    w = writes(kube)
    assert [(e["method"], e["path"]) for e in w] == [("PATCH", "/api/v1/nodes/n1")], w
    assert list(w[0]["body"]["metadata"]["annotations"]) == ["cpuzombie.io/true-since",
                                                             "cpuzombie.io/recovered-since"]
    assert "spec" not in w[0]["body"], w[0]["body"]
    kube.reset_log()
    r = rcycle(cfg)
    assert r.returncode == 0 and "none" in r.stdout and writes(kube) == []


def test_guard_unschedulable_by_someone_else_and_uncordon_only_ours(kube, rem, tmp_path):
    kube.add(kh.node_obj("n1", unschedulable=True,
                        conditions=[READY, cond("MemcgZombieLeak", "True")]))
    cfg = rem()
    r = rcycle(cfg)
    assert "skipped" in r.stdout and "someone else" in r.stdout
    kube.call("PATCH", "/api/v1/nodes/n1/status", {"status": {"conditions": [
        cond("MemcgZombieLeak", "False")]}}, ctype="application/strategic-merge-patch+json")
    rcycle(cfg)   # recovered, but we did not cordon it: it stays cordoned
    assert kube.node("n1")["spec"]["unschedulable"] is True
    assert writes(kube) == [e for e in writes(kube) if e["path"].endswith("/status")]


def test_guard_control_plane(kube, rem, tmp_path):
    kube.add(kh.node_obj("cp", labels={"node-role.kubernetes.io/control-plane": ""},
                        conditions=[READY, cond("MemcgZombieLeak", "True")]))
    r = rcycle(rem())
    assert "control-plane" in r.stdout and writes(kube) == []
    r = rcycle(rem(allow_control_plane="true"))
    assert "cordoned" in r.stdout


def test_dry_run_changes_nothing(kube, rem, tmp_path):
    kube.add(kh.node_obj("n1", conditions=[READY, cond("MemcgZombieLeak", "True")]),
            kh.pod_obj("p", "n1"))
    cfg = rem(mode="dry-run")
    before = kube.node("n1")
    for _ in range(2):
        r = rcycle(cfg)
        assert "dry-run" in r.stdout
    w = writes(kube)
    # dry-run keeps the remediator's clock (it judges `for` by it): that PATCH, once, and
    # otherwise only Events
    clock = [e for e in w if not e["path"].endswith("/events")]
    assert [(e["method"], e["path"]) for e in clock] == [("PATCH", "/api/v1/nodes/n1")], w
    assert "spec" not in clock[0]["body"] and list(clock[0]["body"]["metadata"]) == \
        ["annotations"], clock[0]["body"]
    assert [e["status"] for e in w if e["path"].endswith("/events")] == [201, 409]
    after = kube.node("n1")                             # one Event per episode, not per cycle
    assert after["spec"] == before["spec"] and after["metadata"]["labels"] == \
        before["metadata"]["labels"]
    assert {k: v for k, v in after["metadata"]["annotations"].items()
            if k != "cpuzombie.io/true-since"} == before["metadata"].get("annotations", {})
    assert len(kube.pods("n1")) == 1


# -- drain -------------------------------------------------------------------------------------

def test_drain_evicts_right_pods_and_waits_out_pdb(kube, rem, tmp_path):
    kube.add(kh.node_obj("n1", conditions=[READY, cond("MemcgZombieLeak", "True")]),
            kh.node_obj("n2"), kh.ds_obj("agent"), kh.rs_obj("web"),
            kh.pod_obj("web-1", "n1", owner=("ReplicaSet", "web"), labels={"app": "web"}),
            kh.pod_obj("web-2", "n2", owner=("ReplicaSet", "web"), labels={"app": "web"}),
            kh.pod_obj("agent-n1", "n1", owner=("DaemonSet", "agent"), labels={"app": "agent"}),
            kh.pod_obj("static-n1", "n1", mirror=True),
            kh.pod_obj("done", "n1", phase="Succeeded"),
            kh.pdb_obj("web", {"app": "web"}, 2))
    state = str(tmp_path / "state-agent")
    os.makedirs(state)
    sentinel = os.path.join(state, "reboot-required")     # a host file lies in the state dir
    cfg = rem(mode="drain", reboot_sentinel=sentinel)
    # the node's agent (remediation by the remediator) hands a drained node to kured
    agent_cfg = config(tmp_path, kube.kubeconfig(str(tmp_path / "kc"), node="n1"), "n1",
                       mode="drain", reboot_sentinel=sentinel, remediate="false")
    r = cycle(agent_cfg, state=state)
    assert r.returncode == 0 and "not drained" in r.stdout, r.stdout + r.stderr
    # the same config (its sentinel checked against the state dir it names)
    p = rh.run_once(cfg, popen=True, args=("--state-dir", state))
    # wait until the drain has met the PDB (a 429), however slow this shared machine is today
    deadline = time.time() + 30
    while not any(e["path"].endswith("/eviction") and e["status"] == 429 for e in kube.log()):
        assert p.poll() is None, p.communicate()
        assert time.time() < deadline, "no eviction refused by the PDB within 30 s"
        time.sleep(0.1)
    time.sleep(1)
    assert p.poll() is None                               # waiting out the PDB
    assert not os.path.exists(sentinel)
    kube.add(kh.pod_obj("web-3", "n2", owner=("ReplicaSet", "web"), labels={"app": "web"}))
    out, err = p.communicate(timeout=30)
    assert p.returncode == 0 and "drained" in out, out + err
    left = sorted(x["metadata"]["name"] for x in kube.pods("n1"))
    assert left == ["agent-n1", "done", "static-n1"]
    ev = [e for e in kube.log() if e["path"].endswith("/eviction")]
    assert {e["path"].split("/")[-2] for e in ev} == {"web-1"}
    assert ev[0]["status"] == 429 and ev[-1]["status"] == 201
    assert not any(e["method"] == "DELETE" and "/pods/" in e["path"] for e in kube.log())
    assert not os.path.exists(sentinel)              # the remediator is not on the node
    n = kube.node("n1")
    assert "cpuzombie.io/drained" in n["metadata"]["annotations"]
    r = cycle(agent_cfg, state=state)
    assert r.returncode == 0 and "sentinel written" in r.stdout, r.stdout + r.stderr
    assert os.path.exists(sentinel)
    # kured rebooted the node (the sentinel is on tmpfs, gone); the node is still annotated
    # drained until it is uncordoned: the same drain is not handed to kured twice
    os.unlink(sentinel)
    r = cycle(agent_cfg, state=state)
    assert "already handed" in r.stdout and not os.path.exists(sentinel), r.stdout


def test_drain_refuses_emptydir_unless_allowed(kube, rem, tmp_path):
    kube.add(kh.node_obj("n1", conditions=[READY, cond("MemcgZombieLeak", "True")]),
            kh.pod_obj("scratch", "n1", emptydir=True))
    r = rcycle(rem(mode="drain"))
    assert "emptyDir" in r.stdout and len(kube.pods("n1")) == 1
    r = rcycle(rem(mode="drain", delete_emptydir_data="true"))
    assert "drained" in r.stdout and kube.pods("n1") == []


# -- the budget race ---------------------------------------------------------------------------

def test_race_twenty_nodes_budget_two(kube, rem, tmp_path):
    nodes = ["node-%02d" % i for i in range(20)]
    kube.add(*[kh.node_obj(n, conditions=[READY, cond("MemcgZombieLeak", "True")])
              for n in nodes])
    # 20 remediator replicas at once, each its own identity: one leads, and the budget holds
    # (20 of 20 True is a storm by the default max_unhealthy: set aside here, test_guards.py)
    cfg = rem(max_unavailable="2", max_unhealthy='"100%"')
    with concurrent.futures.ThreadPoolExecutor(20) as ex:
        outs = list(ex.map(lambda n: rcycle(cfg, identity="rem-" + n), nodes))
    assert all(o.returncode == 0 for o in outs), [o.stderr for o in outs]
    assert len([o for o in outs if "(leader)" in o.stdout]) == 1, [o.stdout for o in outs]
    held = [n for n in nodes if kube.node(n)["spec"].get("unschedulable")]
    assert len(held) == 2, held

    def max_concurrent():
        cur, peak = set(), 0
        # replay node writes in the order the server applied them (resourceVersion), not the
        # order their log lines were appended
        writes_ = sorted((e for e in kube.log() if e["method"] == "PATCH" and "rv" in e
                          and not e["path"].endswith("/status")),
                         key=lambda e: e["rv"])
        for e in writes_:
            if "unschedulable" in e:
                name = e["path"].split("/")[-1]
                if e["unschedulable"] and "cpuzombie.io/cordoned" in e["annotations"]:
                    cur.add(name)
                else:
                    cur.discard(name)
                peak = max(peak, len(cur))
        return peak
    assert max_concurrent() == 2
    # the two recover; the others race again for the freed slots
    for n in held:
        kube.call("PATCH", "/api/v1/nodes/%s/status" % n, {"status": {"conditions": [
            cond("MemcgZombieLeak", "False")]}}, ctype="application/strategic-merge-patch+json")
    with concurrent.futures.ThreadPoolExecutor(20) as ex:
        list(ex.map(lambda n: rcycle(cfg, identity="rem-" + n), nodes))
    assert max_concurrent() <= 2
    now_held = [n for n in nodes if kube.node(n)["spec"].get("unschedulable")]
    assert len(now_held) <= 2 and not set(now_held) & set(held)


# -- faults ------------------------------------------------------------------------------------

def test_faults_retried_bounded_and_nothing_done_twice(kube, rem, tmp_path):
    kube.add(kh.node_obj("n1", conditions=[READY, cond("MemcgZombieLeak", "True")]))
    cfg = rem()
    # the remediator's clock already running (as its own account): the first PATCH of the cycle
    # is the cordon, whose answer is lost below
    st, obj = kube.call("PATCH", "/api/v1/nodes/n1", {"metadata": {"annotations": {
        "cpuzombie.io/true-since": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}}},
        ctype="application/merge-patch+json", token=rh.remediator_token(kube))
    assert st == 200, obj
    kube.reset_log()
    kube.faults({"method": "GET", "path": "^/api/v1/nodes/n1$", "status": 503, "count": 2},
               {"method": "POST", "path": "/%s/leases$" % kh.LEASE_NS, "status": 429,
                "count": 1},
               {"method": "PATCH", "path": "^/api/v1/nodes/n1$", "drop": True, "when": "after",
                "count": 1},
               {"method": "POST", "path": "events$", "delay_ms": 300, "count": 1})
    r = rcycle(cfg)
    assert "HTTP 503" in r.stderr and "retry" in r.stderr     # the log says what happened
    n = kube.node("n1")
    assert n["spec"]["unschedulable"] is True
    patches = [e for e in kube.log() if e["method"] == "PATCH"]
    assert len(patches) <= 2 and patches[0]["fault"] == "lost answer"
    leases = kube.leases()
    assert len(leases) == 1                                  # one slot taken, not two
    assert leases[0]["spec"]["holderIdentity"] == "n1"
    kube.reset_log()
    rcycle(cfg)                                               # already held: nothing repeated
    assert not [e for e in kube.log() if e["method"] == "PATCH"]
    assert not [e for e in kube.log() if e["path"].endswith("/events")]
    # retries stop at their bound: a server failing every request
    kube.reset_log()
    kube.faults({"path": "^/api/v1/nodes/n1$", "status": 500, "count": 1000})
    t0 = time.monotonic()
    r = rcycle(cfg)
    assert r.returncode != 0 and time.monotonic() - t0 < 30
    assert len([e for e in kube.log() if e["path"] == "/api/v1/nodes/n1"]) == 5


# -- auth --------------------------------------------------------------------------------------

SA_USER = "system:serviceaccount:%s:%s" % (kh.AGENT_NS, kh.AGENT_SA)


def auth_cycle(kube, tmp_path, user=None, **kw):
    kc = kube.kubeconfig(str(tmp_path / ("kc-%d" % time.monotonic_ns())), user=user, **kw)
    return cycle(config(tmp_path, kc, "n1", mode="dry-run"))


def bind_cert_user(kube, cn):
    """Grants the client-certificate user @cn the chart's condition role (what the agent's
    dry-run cycle calls), as an installer would for a node credential of its own."""
    st, obj = kube.call("POST", "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings", {
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
        "metadata": {"name": "cz-test-" + cn},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                    "name": "cpuzombie-conditions"},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": cn}]})
    assert st == 201, (st, obj)
    kube.extra.append("/apis/rbac.authorization.k8s.io/v1/clusterrolebindings/cz-test-" + cn)


def audited_users(kube, mark):
    return {e["user"]["username"] for e in kube.cp.audit(mark)[0]}


def test_auth_kubeconfig_variants_and_wrong_ca(kube, tmp_path, certs):
    kube.add(kh.node_obj("n1", conditions=[READY]))
    assert auth_cycle(kube, tmp_path).returncode == 0
    assert kube.log()[-1]["user"] == SA_USER
    # client certificates cannot pass the proxy: straight to the real server, whose audit log
    # names the user
    bind_cert_user(kube, "cert-agent")
    direct = kube.cp.url
    mark = kube.cp.audit_mark()
    r = auth_cycle(kube, tmp_path, user={"client-certificate": certs.client_cert,
                                        "client-key": certs.client_key}, ca_data=True,
                   server=direct)
    assert r.returncode == 0, r.stderr
    assert audited_users(kube, mark) == {"cert-agent"}
    import base64
    b64 = lambda p: base64.b64encode(open(p, "rb").read()).decode()
    mark = kube.cp.audit_mark()
    r = auth_cycle(kube, tmp_path, user={"client-certificate-data": b64(certs.client_cert),
                                        "client-key-data": b64(certs.client_key)},
                   server=direct)
    assert r.returncode == 0 and audited_users(kube, mark) == {"cert-agent"}, r.stderr
    n = len(kube.log())
    r = auth_cycle(kube, tmp_path, ca=certs.wrong_ca)
    assert r.returncode != 0 and len(kube.log()) == n          # refused before any request
    r = auth_cycle(kube, tmp_path, user={"token": "wrong"})
    assert r.returncode != 0 and "401" in r.stdout + r.stderr


def test_auth_exec_plugin(kube, tmp_path):
    kube.add(kh.node_obj("n1", conditions=[READY]))
    plugin = tmp_path / "get-token.sh"
    plugin.write_text("#!/bin/sh\ncase \"$KUBERNETES_EXEC_INFO\" in *ExecCredential*) ;; *) "
                      "exit 3;; esac\necho run >> %s/plugin-runs\n"
                      "printf '{\"apiVersion\":\"client.authentication.k8s.io/v1\","
                      "\"kind\":\"ExecCredential\",\"status\":{\"token\":\"%%s\"}}' \"$TOK\"\n"
                      % tmp_path)
    plugin.chmod(0o755)
    r = auth_cycle(kube, tmp_path, user={"exec": {
        "apiVersion": "client.authentication.k8s.io/v1", "command": str(plugin),
        "env": [{"name": "TOK", "value": kube.agent_token("n1")}],
        "interactiveMode": "Never"}})
    assert r.returncode == 0, r.stderr
    assert kube.log()[-1]["user"] == SA_USER
    assert (tmp_path / "plugin-runs").read_text().count("run") == 1   # cached within a run


def test_auth_in_cluster_token_rotation_and_ipv6_host(kube, tmp_path, certs):
    """The projected token as the kubelet rotates it: the agent reads the file again. The first
    token is bound to a pod that is then deleted, so the real server refuses it from then on:
    only a re-read token passes."""
    kube.add(kh.node_obj("n1", conditions=[READY]))
    old_pod = kube.agent_pod("n1")
    sa = tmp_path / "sa"
    sa.mkdir()
    (sa / "token").write_text(kube.agent_token("n1") + "\n")
    (sa / "ca.crt").write_bytes(open(certs.ca, "rb").read())
    cfg = config(tmp_path, "", "n1", mode="dry-run")
    env = {"KUBERNETES_SERVICE_HOST": "127.0.0.1", "KUBERNETES_SERVICE_PORT": str(kube.port),
           "CZ_SERVICEACCOUNT_DIR": str(sa)}
    r = cycle(cfg, env=env)
    assert r.returncode == 0, r.stderr
    assert kube.log()[-1]["user"] == SA_USER
    # the pod goes (its token with it); the new pod's token is written to the same file
    st, _ = kube.call("DELETE", "/api/v1/namespaces/%s/pods/%s?gracePeriodSeconds=0"
                      % (kh.AGENT_NS, old_pod["metadata"]["name"]))
    assert st == 200
    kh.wait_until(lambda: kube.call("GET", "/api/v1/namespaces/%s/pods/%s" % (
        kh.AGENT_NS, old_pod["metadata"]["name"]))[0] == 404, 30, "the old agent pod to go")
    kube._agent_pods.clear()
    old = (sa / "token").read_text().strip()
    # the server caches a good token's verdict for some seconds: until it notices
    kh.wait_until(lambda: kube.call("GET", "/api/v1/nodes/n1", token=old)[0] == 401, 60,
                  "the server to refuse the deleted pod's token")
    mark = len(kube.log())
    r = cycle(cfg, env=env)
    assert r.returncode != 0 and "401" in r.stdout + r.stderr      # the old token is dead
    (sa / "token").write_text(kube.agent_token("n1"))
    r = cycle(cfg, env=env)
    assert r.returncode == 0, r.stderr
    assert [e["status"] for e in kube.log()[mark:]][0] == 401
    assert kube.log()[-1]["user"] == SA_USER and kube.log()[-1]["status"] < 300
    # an IPv6 service host is bracketed in the URL, so the client connects to ::1 on the port
    # (the proxy listens on IPv4 only: refused)
    r = cycle(cfg, env=dict(env, KUBERNETES_SERVICE_HOST="::1"))
    assert r.returncode != 0
    assert "connect to ::1 port %d" % kube.port in r.stderr, r.stderr


def test_checks_never_load_libcurl(tmp_path):
    """A check is exec'd by NPD every interval: the check binary (static, no loader) never loads
    libcurl; the agent links it."""
    kc = tmp_path / "kc"
    kc.write_text(json.dumps({"current-context": "x", "clusters": [{"name": "c", "cluster": {
        "server": "https://127.0.0.1:1"}}], "contexts": [{"name": "x", "context": {
            "cluster": "c", "user": "u"}}], "users": [{"name": "u", "user": {"token": "t"}}]}))
    r = cycle(config(tmp_path, str(kc), "n1"), env={"LD_DEBUG": "files"}, timeout=60)
    assert "libcurl.so.4" in r.stderr        # the agent's Kubernetes side does load it
    check_bin = os.path.join(os.environ.get("CZ_BUILD", os.path.dirname(BIN)), "cpuzombie-check")
    if not os.path.exists(check_bin):
        pytest.skip("no %s: the static check binary is built by `make all`"
                    % check_bin)
    r = subprocess.run([check_bin, "check", "memcg"], env=dict(os.environ, LD_DEBUG="files"),
                       capture_output=True, text=True, timeout=30)
    assert "libcurl" not in r.stderr
    nm = subprocess.run(["nm", "-D", "--undefined-only", check_bin], capture_output=True,
                        text=True)
    assert "curl_" not in nm.stdout

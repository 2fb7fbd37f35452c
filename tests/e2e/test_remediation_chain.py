# SPDX-License-Identifier: MIT
"""The whole chain as the chart deploys it, one cycle per call: `cpuzombie agent --once` (the
agent's own checks read a node with thousands of zombie memcgs, a fixture tree whose /proc/stat
is the real one, so the sampler runs on this kernel) sets MemcgZombieLeak on the real API server
(tests/tools/kube, through the test's fault proxy; kwok runs the node's pods) as the chart's
agent ServiceAccount with a token bound to its pod on the node; `cpuzombie remediator --once`,
as the chart's remediator ServiceAccount (REMEDIATION_SA), cordons and drains once the
condition has been True for remediation.for, and uncordons after recovery. Finally real
kubectl, as the admin looking at the same server, agrees with what cpuzombie did."""
import os
import shutil
import subprocess
import time

import pytest

import kube_helpers as kh
import remediator_helpers as remh
from conftest import FIXTURES

BIN = os.environ.get("CZ_BIN", os.path.join(kh.ROOT, "build", "cpuzombie"))

# Who remediates, in one place: the chart's remediator ServiceAccount (the node agent only
# reports: the chart grants it no cordon, eviction or Lease).
REMEDIATION_SA = remh.REM_SA
REMEDIATION_USER = remh.REM_USER

# The agent's part in the chart: conditions, no remediation of its own.
AGENT_CFG = """kubernetes:
  node_name: n1
  kubeconfig: {kc}
  timeout: 5s
agent:
  set_conditions: true
  remediate: false
"""


def node_tree(tmp_path, case):
    """A fixture memcg tree with the real /proc/stat linked in for the sampler."""
    dst = tmp_path / ("tree-" + case)
    shutil.rmtree(dst, ignore_errors=True)
    shutil.copytree(os.path.join(FIXTURES, "memcg", case), dst, symlinks=True)
    os.symlink("/proc/stat", dst / "proc" / "stat")
    return dst


def agent_once(cfg, tree, state, run):
    return subprocess.run([BIN, "--config", cfg, "--proc-root", str(tree / "proc"),
                           "--sys-root", str(tree / "sys"), "--state-dir", str(state),
                           "--run-dir", str(run), "-v", "agent", "--once"],
                          capture_output=True, text=True, timeout=120)


def conds(node):
    return {c["type"]: c for c in node["status"]["conditions"]}


def test_agent_sets_condition_cordons_drains_and_uncordons(kube, tmp_path):
    ready = {"type": "Ready", "status": "True", "reason": "KubeletReady", "message": "ok",
             "lastHeartbeatTime": "2024-01-01T00:00:00Z",
             "lastTransitionTime": "2024-01-01T00:00:00Z"}
    kube.add(kh.node_obj("n1", conditions=[ready]), kh.rs_obj("web"), kh.ds_obj("npd"),
             kh.pod_obj("web-1", "n1", owner=("ReplicaSet", "web")),
             kh.pod_obj("npd-x", "n1", owner=("DaemonSet", "npd")))
    kc = kube.kubeconfig(str(tmp_path / "kc"), node="n1")
    cfg = tmp_path / "cz.yaml"
    # kh.AGENT_CPU: a second of sampling and an hour's min_burst, so CPUCoreSaturation is False
    # whatever this shared machine burns meanwhile (recovery needs every listed condition False)
    cfg.write_text(kh.AGENT_CPU + AGENT_CFG.format(kc=kc))
    remh.drop_leader(kube)
    rem = remh.config(tmp_path, remh.remediator_kubeconfig(kube, str(tmp_path / "kc-rem")),
                      mode="drain", **{"for": "2s"}, drain_timeout="20s", uncordon_after="2s")
    state, run = tmp_path / "state", tmp_path / "run"
    sick = node_tree(tmp_path, "v1-zombies")
    r = agent_once(str(cfg), sick, state, run)
    assert r.returncode == 0, r.stderr
    r = remh.run_once(rem)
    assert r.returncode == 0, r.stderr
    c = conds(kube.node("n1"))
    assert c["MemcgZombieLeak"]["status"] == "True"
    assert c["MemcgZombieLeak"]["reason"] == "ZombieMemcgsHigh"
    assert c["MemcgZombieLeak"]["message"].startswith("12840 dying memcgs vs 12 live")
    assert c["Ready"]["status"] == "True"  # untouched
    assert not kube.node("n1")["spec"].get("unschedulable")  # not True long enough yet
    time.sleep(2.5)
    r = agent_once(str(cfg), sick, state, run)
    assert r.returncode == 0, r.stderr
    r = remh.run_once(rem)
    assert r.returncode == 0, r.stderr
    n = kube.node("n1")
    assert n["spec"]["unschedulable"] is True
    assert "MemcgZombieLeak" in n["metadata"]["annotations"]["cpuzombie.io/cordoned"]
    pods = {p["metadata"]["name"] for p in kube.pods("n1")}
    assert pods == {"npd-x"}, pods  # evicted the ReplicaSet pod, kept the DaemonSet pod
    evictions = [e for e in kube.log() if e["path"].endswith("/eviction")]
    assert len(evictions) == 1
    assert evictions[0]["path"] == "/api/v1/namespaces/default/pods/web-1/eviction", evictions
    assert evictions[0]["status"] == 201 and evictions[0]["user"] == REMEDIATION_USER, evictions
    # recovery: the same node without zombies
    healthy = node_tree(tmp_path, "v1-healthy")
    r = agent_once(str(cfg), healthy, state, run)
    assert conds(kube.node("n1"))["MemcgZombieLeak"]["status"] == "False"
    # the remediator sees the recovery: its own clock starts (cpuzombie.io/recovered-since);
    # uncordon_after counts from there, not from the condition's lastTransitionTime
    r = remh.run_once(rem)
    assert r.returncode == 0 and "n1: waiting" in r.stdout, r.stdout + r.stderr
    assert kube.node("n1")["spec"]["unschedulable"] is True
    time.sleep(2.5)
    r = agent_once(str(cfg), healthy, state, run)
    assert r.returncode == 0, r.stderr
    r = remh.run_once(rem)
    assert r.returncode == 0, r.stderr
    n = kube.node("n1")
    assert not n["spec"].get("unschedulable"), (r.stdout, {t: (c["status"], c["lastTransitionTime"])
                                                          for t, c in conds(n).items()})
    assert "cpuzombie.io/cordoned" not in n["metadata"].get("annotations", {})
    cordons = [e for e in kube.log() if e["method"] == "PATCH" and e["path"] == "/api/v1/nodes/n1"
               and (e.get("body") or {}).get("spec", {}).get("unschedulable") is True]
    assert len(cordons) == 1, cordons  # exactly once
    assert cordons[0]["status"] == 200 and cordons[0]["user"] == REMEDIATION_USER, cordons
    if kh.kubectl_path():
        # the person looking is the admin (the agent's ServiceAccount may not list events)
        kc = kube.admin_kubeconfig(str(tmp_path / "admin"))
        out = kh.kubectl(kc, "describe", "node", "n1").stdout
        assert "MemcgZombieLeak" in out and "CpuzombieCordon" in out
        assert "CpuzombieUncordon" in out
        got = kh.kubectl(kc, "get", "node", "n1", "-o",
                         "jsonpath={.spec.unschedulable}").stdout
        assert got in ("", "false")


def test_drain_the_serviceaccount_may_not_evict_for(kube, tmp_path):
    """A real RBAC denial (rbac_helpers: a ServiceAccount of its own with the chart's
    remediator grants as applied on the server, minus create pods/eviction): the agent sets the
    condition, the remediator still cordons, each eviction is refused 403 by the server's RBAC,
    the pod stays, and the cycle says the drain failed at once (exit 2: no crash, no exit 1)."""
    import rbac_helpers as rh
    kube.add(kh.node_obj("n1"), kh.rs_obj("web"),
             kh.pod_obj("web-1", "n1", owner=("ReplicaSet", "web")))
    sa = rh.restricted_sa(kube, "create pods/eviction", node="n1", sa=REMEDIATION_SA)
    cfg = tmp_path / "cz.yaml"
    cfg.write_text(kh.AGENT_CPU + AGENT_CFG.format(
        kc=kube.kubeconfig(str(tmp_path / "kc-agent"), node="n1")))
    r = agent_once(str(cfg), node_tree(tmp_path, "v1-zombies"), tmp_path / "state",
                   tmp_path / "run")
    assert r.returncode == 0, r.stderr
    kube.reset_log()
    remh.drop_leader(kube)
    rem = remh.config(tmp_path, sa.kubeconfig(str(tmp_path / "kc"), node="n1"), mode="drain",
                      **{"for": "0s"}, drain_timeout="5s")
    r = remh.run_once(rem)
    # a refusal is final: the drain stops at the first 403 (no retries until drain_timeout, no
    # "PodDisruptionBudget?" guess), says so, and the cycle is our failure: exit 2, never 1
    assert r.returncode == 2, (r.returncode, r.stdout, r.stderr)
    assert "drain-incomplete" in r.stdout and "drain failed" in r.stdout, r.stdout
    assert "PodDisruptionBudget" not in r.stdout, r.stdout
    assert 'HTTP 403: pods "web-1" is forbidden: User "%s" cannot create resource ' \
        '"pods/eviction"' % sa.user in r.stderr, r.stderr
    log = kube.log()
    assert {e["user"] for e in log} == {sa.user}, log
    evictions = [e for e in log if e["path"].endswith("/eviction")]
    assert len(evictions) == 1 and evictions[0]["status"] == 403, evictions
    assert [p["metadata"]["name"] for p in kube.pods("n1")] == ["web-1"]
    n = kube.node("n1")
    assert n["spec"]["unschedulable"] is True                  # the cordon was granted
    assert conds(n)["MemcgZombieLeak"]["status"] == "True"
    # everything else the remediator asked was granted and admitted (the first look for its
    # leader Lease finds none: 404, then it creates it)
    first = log[0]
    assert (first["method"], first["status"]) == ("GET", 404) and \
        first["path"].endswith("/leases/" + remh.LEADER), first
    # (and the pause ConfigMap, absent: not paused, a 404 it reads before each round)
    pause = [e for e in log if e["path"].endswith("/configmaps/cpuzombie-pause")]
    assert pause and all((e["method"], e["status"]) == ("GET", 404) for e in pause), pause
    assert all(e["status"] in (200, 201) for e in log[1:] if e not in evictions + pause), \
        [(e["method"], e["path"], e["status"]) for e in log]

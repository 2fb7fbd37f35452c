# SPDX-License-Identifier: MIT
"""Fidelity of the API server emulator (tests/tools/kubeemu.py): a real kubectl drives it, and the
emulator's answers must be what kubectl expects from a real API server. If these pass, tests that
use the emulator to judge cpuzombie's client judge it against kubectl-compatible behaviour."""

import json
import os
import subprocess
import threading
import time

import pytest

import kube_helpers as kh

pytestmark = pytest.mark.skipif(kh.kubectl_path() is None,
                                reason="no kubectl (tests/tools/get-kube-tools.sh needs npm)")


@pytest.fixture
def kc(emu, tmp_path):
    return emu.kubeconfig(str(tmp_path / "kubeconfig"))


def seed_cluster(emu):
    emu.add(kh.node_obj("n1"), kh.node_obj("n2"), kh.ds_obj("agent"), kh.rs_obj("web"),
            kh.pod_obj("web-1", "n1", owner=("ReplicaSet", "web"), labels={"app": "web"}),
            kh.pod_obj("web-2", "n2", owner=("ReplicaSet", "web"), labels={"app": "web"}),
            kh.pod_obj("agent-n1", "n1", owner=("DaemonSet", "agent"), labels={"app": "agent"}),
            kh.pod_obj("static-n1", "n1", mirror=True),
            kh.pdb_obj("web", {"app": "web"}, 2))


def test_get_uses_server_side_tables(emu, kc):
    seed_cluster(emu)
    out = kh.kubectl(kc, "get", "nodes").stdout.splitlines()
    assert out[0].split() == ["NAME", "STATUS", "ROLES", "AGE", "VERSION"]
    assert [l.split()[:2] for l in out[1:]] == [["n1", "Ready"], ["n2", "Ready"]]
    pods = kh.kubectl(kc, "get", "pods", "-A", "--field-selector", "spec.nodeName=n1").stdout
    names = sorted(l.split()[1] for l in pods.splitlines()[1:])
    assert names == ["agent-n1", "static-n1", "web-1"]
    gets = [e for e in emu.log() if e["path"] == "/api/v1/nodes" and e["method"] == "GET"]
    assert gets, "kubectl get nodes did not list nodes"
    as_json = json.loads(kh.kubectl(kc, "get", "node", "n2", "-o", "json").stdout)
    assert as_json["kind"] == "Node" and as_json["metadata"]["name"] == "n2"


def test_describe_node_shows_conditions_pods_and_events(emu, kc):
    seed_cluster(emu)
    uid = emu.node("n1")["metadata"]["uid"]
    st, _ = emu.call("POST", "/api/v1/namespaces/default/events", {
        "metadata": {"generateName": "n1."}, "reason": "CpuzombieCordon", "type": "Warning",
        "message": "cordoned by test", "involvedObject": {"kind": "Node", "name": "n1", "uid": uid},
        "source": {"component": "cpuzombie"}, "count": 1,
        "firstTimestamp": "2024-01-01T00:00:00Z", "lastTimestamp": "2024-01-01T00:00:00Z"})
    assert st == 201
    out = kh.kubectl(kc, "describe", "node", "n1").stdout
    assert "KubeletReady" in out
    assert "web-1" in out and "agent-n1" in out and "web-2" not in out
    assert "CpuzombieCordon" in out and "cordoned by test" in out


def test_patch_status_merges_conditions_by_type(emu, kc):
    seed_cluster(emu)
    cond = {"type": "MemcgZombieLeak", "status": "True", "reason": "ZombieMemcgsHigh",
            "message": "12840 dying", "lastHeartbeatTime": "2024-01-01T00:00:00Z",
            "lastTransitionTime": "2024-01-01T00:00:00Z"}
    kh.kubectl(kc, "patch", "node", "n1", "--subresource=status", "-p",
               json.dumps({"status": {"conditions": [cond]}}))
    conds = {c["type"]: c for c in emu.node("n1")["status"]["conditions"]}
    assert set(conds) == {"Ready", "MemcgZombieLeak"}      # merged by type, Ready kept
    assert conds["MemcgZombieLeak"]["reason"] == "ZombieMemcgsHigh"
    # A JSON merge patch replaces the whole list, as on a real server.
    kh.kubectl(kc, "patch", "node", "n1", "--subresource=status", "--type=merge", "-p",
               json.dumps({"status": {"conditions": [dict(cond, status="False")]}}))
    assert [c["type"] for c in emu.node("n1")["status"]["conditions"]] == ["MemcgZombieLeak"]
    # A patch of the main resource cannot change status.
    kh.kubectl(kc, "patch", "node", "n1", "--type=merge", "-p",
               json.dumps({"status": {"conditions": []}, "metadata": {"labels": {"x": "y"}}}))
    n = emu.node("n1")
    assert n["metadata"]["labels"]["x"] == "y" and len(n["status"]["conditions"]) == 1
    patches = [e for e in emu.log() if e["method"] == "PATCH"]
    assert patches[0]["path"] == "/api/v1/nodes/n1/status"
    assert patches[0]["ctype"] == "application/strategic-merge-patch+json"
    assert patches[1]["ctype"] == "application/merge-patch+json"


def test_wait_uses_watch(emu, kc):
    seed_cluster(emu)

    def later():
        time.sleep(1.5)
        emu.call("PATCH", "/api/v1/nodes/n2/status", {"status": {"conditions": [
            {"type": "CPUCoreSaturation", "status": "True", "reason": "CoreSaturationBursts",
             "message": "m"}]}}, ctype="application/strategic-merge-patch+json")
    t = threading.Thread(target=later)
    t.start()
    t0 = time.monotonic()
    kh.kubectl(kc, "wait", "node/n2", "--for=condition=CPUCoreSaturation=True", "--timeout=20s")
    t.join()
    assert time.monotonic() - t0 < 15
    assert any("watch=true" in e["query"] for e in emu.log())


def test_cordon_uncordon(emu, kc):
    seed_cluster(emu)
    assert "cordoned" in kh.kubectl(kc, "cordon", "n1").stdout
    assert emu.node("n1")["spec"]["unschedulable"] is True
    assert "SchedulingDisabled" in kh.kubectl(kc, "get", "node", "n1").stdout
    kh.kubectl(kc, "uncordon", "n1")
    assert not emu.node("n1")["spec"].get("unschedulable")
    node_patches = [e for e in emu.log() if e["method"] == "PATCH" and e["path"] ==
                    "/api/v1/nodes/n1"]
    assert [e["unschedulable"] for e in node_patches] == [True, False]


def test_drain_evicts_waits_out_pdb_and_skips_daemonset_and_mirror(emu, kc):
    seed_cluster(emu)   # PDB web minAvailable 2 with 2 healthy pods: evicting web-1 is refused

    def scale_up():
        # once kubectl has met the PDB (a 429; it retries every 5 s), let the eviction through
        deadline = time.time() + 60
        while time.time() < deadline and not any(
                e["path"].endswith("/eviction") and e["status"] == 429 for e in emu.log()):
            time.sleep(0.1)
        emu.add(kh.pod_obj("web-3", "n2", owner=("ReplicaSet", "web"), labels={"app": "web"}))
    t = threading.Thread(target=scale_up)
    t.start()
    r = kh.kubectl(kc, "drain", "n1", "--ignore-daemonsets", "--timeout=40s", timeout=90)
    t.join()
    assert "node/n1 drained" in r.stdout, r.stdout + r.stderr
    names = sorted(p["metadata"]["name"] for p in emu.pods("n1"))
    assert names == ["agent-n1", "static-n1"]       # DaemonSet and mirror pods stay
    ev = [e for e in emu.log() if e["path"].endswith("/eviction")]
    assert {e["path"].split("/")[-2] for e in ev} == {"web-1"}
    assert ev[0]["status"] == 429 and ev[-1]["status"] == 201
    assert ev[0]["body"]["kind"] == "Eviction" and ev[0]["body"]["apiVersion"] == "policy/v1"
    assert not any(e["method"] == "DELETE" for e in emu.log()), "drain fell back to deletes"
    assert emu.node("n1")["spec"]["unschedulable"] is True


def test_auth_rbac_and_media_types(emu, kc, certs, tmp_path):
    seed_cluster(emu)
    st, body = emu.call("GET", "/api/v1/nodes", token=None)
    assert st == 401 and body["reason"] == "Unauthorized"
    st, _ = emu.call("GET", "/api/v1/nodes", token="wrong")
    assert st == 401
    emu.rbac_deny("patch nodes")
    r = kh.kubectl(kc, "cordon", "n1", check=False)
    # (kubectl cordon reports the error but exits 0 in 1.31: judge by the message and the node)
    assert 'cannot patch resource "nodes"' in r.stderr
    assert not emu.node("n1")["spec"].get("unschedulable")
    emu.rbac_deny()
    st, body = emu.call("PATCH", "/api/v1/nodes/n1", {"spec": {"unschedulable": True}})
    assert st == 415 and body["reason"] == "UnsupportedMediaType"
    # client certificates authenticate as their CN
    ckc = emu.kubeconfig(str(tmp_path / "kc-cert"), user={
        "client-certificate": certs.client_cert, "client-key": certs.client_key})
    kh.kubectl(ckc, "get", "nodes")
    assert emu.log()[-1]["user"] == "cert-admin"
    # a kubeconfig trusting another CA is refused by kubectl itself
    wkc = emu.kubeconfig(str(tmp_path / "kc-wrong"), ca=certs.wrong_ca)
    r = kh.kubectl(wkc, "get", "nodes", check=False)
    assert r.returncode != 0 and "certificate" in r.stderr


def test_leases_conflict_and_microtime(emu, kc):
    base = "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases"
    lease = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
             "metadata": {"name": "cpuzombie-slot-0"},
             "spec": {"holderIdentity": "n1", "leaseDurationSeconds": 60,
                      "acquireTime": "2024-01-01T00:00:00.000000Z",
                      "renewTime": "2024-01-01T00:00:00.000000Z"}}
    st, created = emu.call("POST", base, lease)
    assert st == 201
    st, _ = emu.call("POST", base, lease)
    assert st == 409                                   # AlreadyExists
    bad = json.loads(json.dumps(lease))
    bad["metadata"]["name"] = "x"
    bad["spec"]["renewTime"] = "2024-01-01T00:00:00Z"
    st, body = emu.call("POST", base, bad)
    assert st == 400 and "six fractional digits" in body["message"]
    a = json.loads(json.dumps(created))
    a["spec"]["holderIdentity"] = "n2"
    st, _ = emu.call("PUT", base + "/cpuzombie-slot-0", a)
    assert st == 200
    st, body = emu.call("PUT", base + "/cpuzombie-slot-0", created)   # stale resourceVersion
    assert st == 409 and body["reason"] == "Conflict"
    out = kh.kubectl(kc, "get", "leases", "-n", "kube-system").stdout
    assert "cpuzombie-slot-0" in out and "n2" in out


def test_fault_injection(emu, kc):
    seed_cluster(emu)
    emu.faults({"method": "GET", "path": "^/api/v1/nodes/n1$", "status": 503, "count": 2})
    assert emu.call("GET", "/api/v1/nodes/n1")[0] == 503
    assert emu.call("GET", "/api/v1/nodes/n1")[0] == 503
    assert emu.call("GET", "/api/v1/nodes/n1")[0] == 200
    emu.faults({"method": "PATCH", "path": "^/api/v1/nodes/n1$", "drop": True, "when": "after",
                "count": 1})
    with pytest.raises(Exception):
        emu.call("PATCH", "/api/v1/nodes/n1", {"spec": {"unschedulable": True}},
                 ctype="application/strategic-merge-patch+json")
    assert emu.node("n1")["spec"]["unschedulable"] is True   # applied, answer lost
    log = emu.log()
    assert [e["status"] for e in log if e["method"] == "PATCH"] == ["dropped-after"]
    emu.faults({"path": "^/api/v1/nodes$", "delay_ms": 1500, "count": 1})
    t0 = time.monotonic()
    kh.kubectl(kc, "get", "nodes")
    assert time.monotonic() - t0 >= 1.5

# SPDX-License-Identifier: MIT
"""`cpuzombie fleet` and `kubectl cpuzombie` against the API server emulator over TLS: a seeded
fleet whose True nodes concentrate in one zone and one OS image, read in pages (a node changing
between pages, a continue token expiring), nodes without our conditions, messages cut by NPD,
RBAC denied on Leases, a label selector, and a real kubectl running us as its plugin."""

import json
import os
import re
import subprocess
import time

import pytest

import kube_helpers as kh

ZONE = "us-east-1a"
IMAGE = "Deep Learning AMI GPU PyTorch 2.1 (Amazon Linux 2) 20240101"   # kubeemu_fleet IMAGES[2]
SEED = {"count": 400, "zombies": 60, "cpu": 9, "ena": 4, "held": 2, "bare": 0.1, "seed": 7,
        "leakers": ["ecs.service", "ecs.service", "nvidia-persistenced.service"]}


@pytest.fixture
def kc(emu, tmp_path):
    return emu.kubeconfig(str(tmp_path / "kubeconfig"))


def fleet(cz_bin, kc, *args, env=None, timeout=120):
    e = dict(os.environ, HOME="/nonexistent")
    e.pop("KUBECONFIG", None)
    e.update(env or {})
    return subprocess.run([cz_bin, "fleet", "--kubeconfig", kc, *args], env=e,
                          capture_output=True, text=True, timeout=timeout)


def fleet_json(cz_bin, kc, *args):
    r = fleet(cz_bin, kc, "--json", *args)
    assert r.returncode in (0, 1), r.stderr
    return json.loads(r.stdout)


def cond(doc, typ):
    return next(c for c in doc["conditions"] if c["type"] == typ)


def nodes_state(emu):
    return [o for o in emu.side("GET", "state")["objects"] if o["kind"] == "Node"]


def status_of(n, typ):
    for c in n["status"].get("conditions") or []:
        if c["type"] == typ:
            return c["status"]
    return None


def slot_lease(holder):
    return {"kind": "Lease", "apiVersion": "coordination.k8s.io/v1",
            "metadata": {"name": "cpuzombie-slot-0", "namespace": "kube-system",
                         "labels": {"app.kubernetes.io/managed-by": "cpuzombie"}},
            "spec": {"holderIdentity": holder, "leaseDurationSeconds": 600,
                     "renewTime": time.strftime("%Y-%m-%dT%H:%M:%S.000000Z", time.gmtime())}}


def test_names_the_zone_and_image_first(emu, kc, cz_bin):
    emu.side("POST", "seed-nodes", SEED)
    state = nodes_state(emu)
    emu.add(slot_lease(state[0]["metadata"]["name"]))
    r = fleet(cz_bin, kc, "--chunk-size", "50")
    assert r.returncode == 1, r.stderr          # some node is True
    lines = r.stdout.splitlines()
    head = lines.index(next(l for l in lines if l.startswith("MemcgZombieLeak:")))
    assert lines[head].startswith("MemcgZombieLeak: True on 60 of "), lines[head]
    first_two = lines[head + 2:head + 4]
    assert any(" zone " in l and ZONE in l for l in first_two), r.stdout
    assert any(" osImage " in l and IMAGE in l for l in first_two), r.stdout
    leak = next(l for l in lines[head:] if l.strip().startswith("leakers:"))
    assert leak.strip().startswith("leakers: ecs.service on 40 nodes"), leak
    assert "nvidia-persistenced.service on 20 nodes" in leak
    # the JSON has the same content, counted against the emulator's own objects
    doc = fleet_json(cz_bin, kc, "--chunk-size", "50")
    m = cond(doc, "MemcgZombieLeak")
    assert {d["name"]: d["value"] for d in m["dimensions"][:2]} == {"zone": ZONE,
                                                                       "osImage": IMAGE}
    assert all(d["score"] <= m["dimensions"][0]["score"] for d in m["dimensions"])
    assert m["true"] == sum(status_of(n, "MemcgZombieLeak") == "True" for n in state)
    assert m["false"] == sum(status_of(n, "MemcgZombieLeak") == "False" for n in state)
    assert m["absent"] == sum(status_of(n, "MemcgZombieLeak") is None for n in state) > 0
    assert doc["nodes"] == 400 and doc["duplicates"] == 0
    assert (m["true_since_first"], m["true_since_latest"]) == ("2024-05-01T00:00:00Z",
                                                               "2024-05-01T00:59:00Z")
    assert "True since (lastTransitionTime): first 2024-05-01T00:00:00Z, latest " \
        "2024-05-01T00:59:00Z" in r.stdout
    assert cond(doc, "CPUCoreSaturation")["true"] == 9
    assert cond(doc, "CPUCoreSaturation")["top"][0]["name"] == "kubelet"
    assert cond(doc, "ENADeviceReset")["top"][0]["name"] == "poll starvation"
    rem = doc["remediation"]
    assert len(rem["held"]) == 2 and rem["drained"] == 2 and rem["leases"]["readable"] is True
    assert rem["leases"]["holders"] == [state[0]["metadata"]["name"]]
    # pages of 50: 8 requests, each with limit, all but the first continuing
    gets = [e for e in emu.log() if e["path"] == "/api/v1/nodes" and e["method"] == "GET"]
    assert len(gets) == 16          # two runs
    assert all("limit=50" in e["query"] for e in gets)
    assert sum("continue=" in e["query"] for e in gets) == 14


def test_a_node_changing_between_pages_is_counted_once(emu, kc, cz_bin):
    emu.side("POST", "seed-nodes", SEED)
    before = fleet_json(cz_bin, kc, "--chunk-size", "7")
    names = sorted(n["metadata"]["name"] for n in nodes_state(emu))
    late, gone = names[-3], names[-2]
    # after the second page: a late node turns True in another zone, another is deleted
    emu.side("POST", "page-hooks", {"hooks": [
        {"after_page": 2, "patch_node": late, "merge": {
            "metadata": {"labels": {"topology.kubernetes.io/zone": "us-west-2z"}}}},
        {"after_page": 2, "delete_node": gone}]})
    during = fleet_json(cz_bin, kc, "--chunk-size", "7")
    assert len(nodes_state(emu)) == 399
    # the list is the snapshot of its first page: as before the change, each node once
    assert during["nodes"] == before["nodes"] == 400
    assert during["duplicates"] == 0
    assert cond(during, "MemcgZombieLeak") == cond(before, "MemcgZombieLeak")
    # a fresh list sees the change
    after = fleet_json(cz_bin, kc, "--chunk-size", "7")
    assert after["nodes"] == 399


def test_an_expired_continue_token_starts_the_list_over(emu, kc, cz_bin):
    emu.side("POST", "seed-nodes", SEED)
    emu.side("POST", "page-hooks", {"hooks": [{"after_page": 3, "expire": True}]})
    emu.reset_log()
    r = fleet(cz_bin, kc, "--json", "--chunk-size", "25")
    assert r.returncode == 1, r.stderr
    doc = json.loads(r.stdout)
    assert doc["nodes"] == 400 and doc["duplicates"] == 0
    assert cond(doc, "MemcgZombieLeak")["true"] == 60
    assert "410" in r.stderr and "again" in r.stderr
    st = [e["status"] for e in emu.log() if e["path"] == "/api/v1/nodes"]
    assert st.count(410) == 1 and st[:3] == [200, 200, 200] and st[3] == 410


def test_messages_cut_by_npd_never_give_a_wrong_leaker(emu, kc, cz_bin):
    emu.side("POST", "seed-nodes", dict(SEED, cut=[80, 256, 120]))
    doc = fleet_json(cz_bin, kc)
    expect = {}
    for n in nodes_state(emu):
        msg = next((c["message"] for c in n["status"]["conditions"]
                    if c["type"] == "MemcgZombieLeak" and c["status"] == "True"), None)
        if msg is None:
            continue
        m = re.search(r"top restarts: ([a-z.-]+)=(\d+)", msg)
        # a number at the very end of a message NPD cut (80 or 256 bytes) may itself be cut
        if m and not (m.end() == len(msg) and len(msg) in (80, 256)):
            u = expect.setdefault(m.group(1), [0, 0])
            u[0] += 1
            u[1] = max(u[1], int(m.group(2)))
    got = {t["name"]: [t["nodes"], t["max"]] for t in cond(doc, "MemcgZombieLeak")["top"]}
    assert got == expect
    assert 0 < sum(v[0] for v in got.values()) < 60      # some were cut away, some kept
    assert cond(doc, "MemcgZombieLeak")["true"] == 60
    assert cond(doc, "MemcgZombieLeak")["dying_max"] > 1000


def test_rbac_denied_on_leases_says_so_and_prints_the_rest(emu, kc, cz_bin):
    emu.side("POST", "seed-nodes", SEED)
    emu.rbac_deny("list leases")
    r = fleet(cz_bin, kc)
    assert r.returncode == 1, r.stderr
    assert "MemcgZombieLeak: True on 60 of" in r.stdout
    line = next(l for l in r.stdout.splitlines() if l.startswith("Leases:"))
    assert "cannot read the remediation budget" in line and "403" in line and \
        "forbidden" in line, line
    assert "Remediation: 2 nodes held by cpuzombie" in r.stdout
    doc = fleet_json(cz_bin, kc)
    assert doc["remediation"]["leases"]["readable"] is False
    # denied on nodes: nothing to show, a clear error, exit 2
    emu.rbac_deny("list nodes")
    r = fleet(cz_bin, kc)
    assert r.returncode == 2 and r.stdout == ""
    assert "Failed to list the nodes" in r.stderr and "403" in r.stderr


def test_label_selector_and_group_by(emu, kc, cz_bin):
    emu.side("POST", "seed-nodes", SEED)
    want = [n for n in nodes_state(emu)
            if n["metadata"]["labels"]["topology.kubernetes.io/zone"] == ZONE]
    doc = fleet_json(cz_bin, kc, "-l", "topology.kubernetes.io/zone=" + ZONE, "--group-by",
                     "eks.amazonaws.com/nodegroup", "--nodes")
    assert doc["nodes"] == len(want)
    gets = [e for e in emu.log() if e["path"] == "/api/v1/nodes"]
    assert "labelSelector=topology.kubernetes.io%2Fzone%3D" + ZONE in gets[-1]["query"]
    m = cond(doc, "MemcgZombieLeak")
    assert "eks.amazonaws.com/nodegroup" in [d["name"] for d in m["dimensions"]]
    img = next(d for d in m["dimensions"] if d["name"] == "osImage")
    assert sorted(img["nodes"]) == sorted(
        n["metadata"]["name"] for n in want if status_of(n, "MemcgZombieLeak") == "True")


def test_bad_credentials_and_no_server(emu, kc, cz_bin, tmp_path):
    bad = emu.kubeconfig(str(tmp_path / "bad"), user={"token": "wrong"})
    r = fleet(cz_bin, bad)
    assert r.returncode == 2 and r.stdout == "" and "401" in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1
    emu.stop()
    r = fleet(cz_bin, kc)
    assert r.returncode == 2 and r.stdout == "" and "Failed to list the nodes" in r.stderr
    emu.start()


@pytest.mark.skipif(kh.kubectl_path() is None,
                    reason="no kubectl (tests/tools/get-kube-tools.sh needs npm)")
def test_kubectl_cpuzombie_plugin(emu, kc, cz_bin, tmp_path):
    emu.side("POST", "seed-nodes", SEED)
    plugins = tmp_path / "plugins"
    plugins.mkdir()
    os.symlink(cz_bin, plugins / "kubectl-cpuzombie")
    env = dict(os.environ, KUBECONFIG=kc, HOME=str(tmp_path),
               PATH="%s:%s" % (plugins, os.environ.get("PATH", "/usr/bin:/bin")))
    r = subprocess.run([kh.kubectl_path(), "plugin", "list"], env=env, capture_output=True,
                       text=True, timeout=60)
    assert str(plugins / "kubectl-cpuzombie") in r.stdout, r.stdout + r.stderr
    r = subprocess.run([kh.kubectl_path(), "cpuzombie", "--chunk-size", "100"], env=env,
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 1, r.stderr
    lines = r.stdout.splitlines()
    head = next(i for i, l in enumerate(lines) if l.startswith("MemcgZombieLeak:"))
    assert any(" zone " in l and ZONE in l for l in lines[head + 2:head + 4]), r.stdout
    assert any(" osImage " in l and IMAGE in l for l in lines[head + 2:head + 4]), r.stdout
    assert "leakers: ecs.service on 40 nodes" in r.stdout
    # the emulator saw our client, not kubectl's, list the nodes in pages
    gets = [e for e in emu.log() if e["path"] == "/api/v1/nodes"]
    assert len(gets) == 4 and all("limit=100" in e["query"] for e in gets)
    assert all(e["agent"].startswith("cpuzombie/") for e in gets)

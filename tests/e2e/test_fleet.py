# SPDX-License-Identifier: MIT
"""`cpuzombie fleet` and `kubectl cpuzombie` against the real control plane (tests/tools/kube:
kube-apiserver 1.37 on etcd), through a fault proxy of each test's own, as a person's
ServiceAccount (fleet_helpers: list nodes and the remediation Leases; one without Leases; one
with nothing). 1,000 real Node objects seeded once for the module, whose True nodes concentrate
in one zone and one OS image, read in pages with the real server's limit/continue: a node
changing between two pages (a page hook of the proxy), a real 410 after an etcd compaction
between pages, nodes without our conditions, messages cut by NPD, RBAC denied on Leases, a label
selector, terminal escapes a node carries, and a real kubectl running us as its plugin. The
answers no real server gives (a repeated continue token, pages for ever, bytes that are not
UTF-8) come from a tiny local HTTPS server (fleet_helpers.HostileApi)."""

import json
import os
import re
import subprocess

import pytest

import fleet_helpers as fh
import kube_helpers as kh

ZONE = "us-east-1a"
IMAGE = fh.IMAGES[2][0]
SEED = {"count": 1000, "zombies": 150, "cpu": 9, "ena": 4, "held": 2, "bare": 0.1, "seed": 7,
        "leakers": ["ecs.service", "ecs.service", "nvidia-persistenced.service"],
        "tag": "main"}
ECS, NVIDIA = 100, 50          # the leakers of the 150 True nodes, in turn ecs, ecs, nvidia
NODES = "/api/v1/nodes"


@pytest.fixture(scope="module")
def seeded(control_plane):
    """The module's 1,000 nodes, removed at the end."""
    fl = fh.Fleet(control_plane)
    fl.objs = {o["metadata"]["name"]: o for o in fh.seed_nodes(SEED)}
    fh.ensure_viewers(control_plane)
    try:
        fl.create(list(fl.objs.values()))
        yield fl
    finally:
        fl.delete()


@pytest.fixture
def kc(seeded, kube, tmp_path):
    return fh.viewer_kubeconfig(kube.cp, str(tmp_path / "kubeconfig"), kube.url)


def fleet(cz_bin, kc, *args, env=None, timeout=180, text=True):
    e = dict(os.environ, HOME="/nonexistent")
    e.pop("KUBECONFIG", None)
    e.update(env or {})
    return subprocess.run([cz_bin, "fleet", "--kubeconfig", kc, *args], env=e,
                          capture_output=True, text=text, timeout=timeout)


def fleet_json(cz_bin, kc, *args):
    r = fleet(cz_bin, kc, "--json", *args)
    assert r.returncode in (0, 1), r.stderr
    return json.loads(r.stdout)


def cond(doc, typ):
    return next(c for c in doc["conditions"] if c["type"] == typ)


def gets(kube, since=0):
    return [e for e in kube.log(since) if e["path"] == NODES and e["method"] == "GET"]


def count(nodes, typ, status):
    return sum(fh.status_of(n, typ) == status for n in nodes)


def test_names_the_zone_and_image_first(seeded, kube, kc, cz_bin):
    holder = sorted(seeded.objs)[0]
    kube.add(fh.slot_lease(holder))                # a remediation slot (kube removes it)
    r = fleet(cz_bin, kc, "--chunk-size", "100")
    assert r.returncode == 1, r.stderr          # some node is True
    lines = r.stdout.splitlines()
    head = lines.index(next(l for l in lines if l.startswith("MemcgZombieLeak:")))
    assert lines[head].startswith("MemcgZombieLeak: True on 150 of "), lines[head]
    first_two = lines[head + 2:head + 4]
    assert any(" zone " in l and ZONE in l for l in first_two), r.stdout
    assert any(" osImage " in l and IMAGE in l for l in first_two), r.stdout
    leak = next(l for l in lines[head:] if l.strip().startswith("leakers:"))
    assert leak.strip().startswith("leakers: ecs.service on %d nodes" % ECS), leak
    assert "nvidia-persistenced.service on %d nodes" % NVIDIA in leak
    # the JSON has the same content, counted against the server's own objects
    doc = fleet_json(cz_bin, kc, "--chunk-size", "100")
    state = seeded.listed()
    m = cond(doc, "MemcgZombieLeak")
    assert {d["name"]: d["value"] for d in m["dimensions"][:2]} == {"zone": ZONE,
                                                                       "osImage": IMAGE}
    assert all(d["score"] <= m["dimensions"][0]["score"] for d in m["dimensions"])
    assert m["true"] == count(state, "MemcgZombieLeak", "True") == 150
    assert m["false"] == count(state, "MemcgZombieLeak", "False")
    assert m["absent"] == count(state, "MemcgZombieLeak", None) > 0
    assert doc["nodes"] == len(state) >= 1000 and doc["duplicates"] == 0
    assert (m["true_since_first"], m["true_since_latest"]) == ("2024-05-01T00:00:00Z",
                                                               "2024-05-01T02:29:00Z")
    assert "True since (lastTransitionTime): first 2024-05-01T00:00:00Z, latest " \
        "2024-05-01T02:29:00Z" in r.stdout
    assert cond(doc, "CPUCoreSaturation")["true"] == 9
    assert cond(doc, "CPUCoreSaturation")["top"][0]["name"] == "kubelet"
    assert cond(doc, "ENADeviceReset")["top"][0]["name"] == "poll starvation"
    rem = doc["remediation"]
    assert len(rem["held"]) == 2 and rem["drained"] == 2 and rem["leases"]["readable"] is True
    assert rem["leases"]["holders"] == [holder] and rem["leases"]["in_use"] == 1
    # pages of 100 with the real server's continue tokens: 10 requests a run, each with the
    # limit, all but the first continuing, each as the viewer
    g = gets(kube)
    pages = -(-len(state) // 100)
    assert len(g) == 2 * pages
    assert all("limit=100" in e["query"] and e["status"] == 200 for e in g)
    assert sum("continue=" in e["query"] for e in g) == 2 * (pages - 1)
    assert {e["user"] for e in g} == {"system:serviceaccount:%s:%s" % (fh.VIEWER_NS, fh.VIEWER)}


def test_a_node_changing_between_pages_is_counted_once(seeded, kube, kc, cz_bin):
    before = fleet_json(cz_bin, kc, "--chunk-size", "50")
    state = {n["metadata"]["name"]: n for n in seeded.listed()}
    ours = sorted(seeded.objs)
    late = [n for n in ours if fh.status_of(state[n], "MemcgZombieLeak") == "True"][-1]
    gone = [n for n in ours if fh.status_of(state[n], "MemcgZombieLeak") == "False"][-1]
    assert ours.index(late) > 100 and ours.index(gone) > 100      # after the second page
    zone = state[late]["metadata"]["labels"]["topology.kubernetes.io/zone"]
    cp = kube.cp

    def change():      # after the second page: a late True node moves zone, another goes
        st, _ = cp.raw("PATCH", NODES + "/" + late, {"metadata": {"labels": {
            "topology.kubernetes.io/zone": "us-west-2z"}}}, "application/merge-patch+json")
        assert st == 200
        assert cp.raw("DELETE", NODES + "/" + gone)[0] == 200
    kube.proxy.add_page_hook(2, change)
    try:
        during = fleet_json(cz_bin, kc, "--chunk-size", "50")
        assert len(seeded.listed()) == len(state) - 1
        # the real server answers every continued page from the list's first revision (etcd):
        # as before the change, each node once
        assert during["nodes"] == before["nodes"] == len(state)
        assert during["duplicates"] == 0
        assert cond(during, "MemcgZombieLeak") == cond(before, "MemcgZombieLeak")
        # a fresh list sees the change
        after = fleet_json(cz_bin, kc, "--chunk-size", "50")
        assert after["nodes"] == len(state) - 1
        z = next(d for d in cond(after, "MemcgZombieLeak")["dimensions"] if d["name"] == "zone")
        assert (z["value"], z["true_here"]) == (ZONE, 149)
        assert {"value": "us-west-2z", "true_here": 1, "nodes_here": 1} in z["also"]
    finally:
        cp.raw("PATCH", NODES + "/" + late, {"metadata": {"labels": {
            "topology.kubernetes.io/zone": zone}}}, "application/merge-patch+json")
        if cp.raw("GET", NODES + "/" + gone)[0] == 404:
            seeded.create([seeded.objs[gone]])


def test_an_expired_continue_token_starts_the_list_over(seeded, kube, kc, cz_bin):
    """A real 410: etcd compacted between the third and fourth page (the control plane runs
    with ListFromCacheSnapshot off, so continued pages are read from etcd: cluster.py)."""
    cp = kube.cp
    touched = sorted(seeded.objs)[0]

    def compact():     # a write after the list's revision, then compaction past it
        st, _ = cp.raw("PATCH", NODES + "/" + touched, {"metadata": {"annotations": {
            "cpuzombie.test/touched": "1"}}}, "application/merge-patch+json")
        assert st == 200
        cp.compact_etcd()
    kube.proxy.add_page_hook(3, compact)
    r = fleet(cz_bin, kc, "--json", "--chunk-size", "100")
    assert r.returncode == 1, r.stderr
    doc = json.loads(r.stdout)
    n = len(seeded.listed())
    assert doc["nodes"] == n and doc["duplicates"] == 0
    assert cond(doc, "MemcgZombieLeak")["true"] == 150
    assert "410" in r.stderr and "again" in r.stderr
    st = [e["status"] for e in gets(kube)]
    assert st[:4] == [200, 200, 200, 410] and st.count(410) == 1
    assert len(st) == 4 + -(-n // 100)          # the whole list once more, from its start
    assert "continue=" not in gets(kube)[4]["query"]


def test_messages_cut_by_npd_never_give_a_wrong_leaker(seeded, kube, kc, cz_bin):
    cut = fh.Fleet(kube.cp)
    cut.create(fh.seed_nodes(dict(SEED, count=200, zombies=60, prefix="cut-", tag="cut",
                                  cut=[80, 256, 120])))
    try:
        doc = fleet_json(cz_bin, kc, "-l", fh.FLEET_LABEL + "=cut")
        state = cut.listed(fh.FLEET_LABEL + "=cut")
    finally:
        cut.delete()
    assert doc["nodes"] == len(state) == 200
    expect = {}
    for n in state:
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


def test_rbac_denied_on_leases_says_so_and_prints_the_rest(seeded, kube, cz_bin, tmp_path):
    kc = fh.viewer_kubeconfig(kube.cp, str(tmp_path / "kc-no-leases"), kube.url, fh.NO_LEASES)
    r = fleet(cz_bin, kc)
    assert r.returncode == 1, r.stderr
    assert "MemcgZombieLeak: True on 150 of" in r.stdout
    line = next(l for l in r.stdout.splitlines() if l.startswith("Leases:"))
    assert "cannot read the remediation budget" in line and "403" in line and \
        "forbidden" in line, line
    assert "Remediation: 2 nodes held by cpuzombie" in r.stdout
    doc = fleet_json(cz_bin, kc)
    assert doc["remediation"]["leases"]["readable"] is False
    assert "403" in doc["remediation"]["leases"]["error"]
    leases = [e for e in kube.log() if e["path"].endswith("/leases")]
    assert leases and {e["status"] for e in leases} == {403}
    # denied on nodes: nothing to show, a clear error, exit 2
    kc = fh.viewer_kubeconfig(kube.cp, str(tmp_path / "kc-nobody"), kube.url, fh.NOBODY)
    r = fleet(cz_bin, kc)
    assert r.returncode == 2 and r.stdout == ""
    assert "Failed to list the nodes" in r.stderr and "403" in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1, r.stderr


def test_label_selector_and_group_by(seeded, kube, kc, cz_bin):
    want = seeded.listed("topology.kubernetes.io/zone=" + ZONE)
    doc = fleet_json(cz_bin, kc, "-l", "topology.kubernetes.io/zone=" + ZONE, "--group-by",
                     "eks.amazonaws.com/nodegroup", "--nodes")
    assert doc["nodes"] == len(want) > 0
    assert "labelSelector=topology.kubernetes.io%2Fzone%3D" + ZONE in gets(kube)[-1]["query"]
    m = cond(doc, "MemcgZombieLeak")
    assert "eks.amazonaws.com/nodegroup" in [d["name"] for d in m["dimensions"]]
    img = next(d for d in m["dimensions"] if d["name"] == "osImage")
    assert sorted(img["nodes"]) == sorted(
        n["metadata"]["name"] for n in want if fh.status_of(n, "MemcgZombieLeak") == "True")


def test_terminal_escapes_a_node_carries_are_shown_harmless(seeded, kube, kc, cz_bin):
    """What the real server keeps as it is: control characters in an OS image and a message."""
    odd = fh.seed_nodes(dict(SEED, count=6, zombies=3, bare=0, prefix="esc-", tag="esc"))
    for o in odd:
        if fh.status_of(o, "MemcgZombieLeak") == "True":
            o["status"]["nodeInfo"]["osImage"] = "Evil\x1b]0;owned\x07\x1b[2J OS"
            for c in o["status"]["conditions"]:
                if c["type"] == "MemcgZombieLeak":
                    c["message"] = c["message"].replace("top restarts: ",
                                                        "top restarts: \x1b[31m")
    esc = fh.Fleet(kube.cp)
    esc.create(odd)
    try:
        r = fleet(cz_bin, kc, "-l", fh.FLEET_LABEL + "=esc", "--nodes", text=False)
        j = fleet(cz_bin, kc, "-l", fh.FLEET_LABEL + "=esc", "--json", "--nodes", text=False)
    finally:
        esc.delete()
    assert r.returncode == 1 and j.returncode == 1, (r.stderr, j.stderr)
    assert not re.search(rb"[\x00-\x09\x0b-\x1f\x7f]", r.stdout), r.stdout
    assert b"Evil?]0;owned??[2J OS" in r.stdout
    doc = json.loads(j.stdout.decode("utf-8"))          # strict UTF-8
    img = next(d for d in cond(doc, "MemcgZombieLeak")["dimensions"] if d["name"] == "osImage")
    assert "\x1b" not in img["value"] and img["value"].startswith("Evil\\e]0;owned")


def test_bad_credentials_and_no_server(kube, cz_bin, tmp_path):
    bad = kube.cp.kubeconfig(str(tmp_path / "bad"), {"token": "wrong"}, server=kube.url)
    r = fleet(cz_bin, bad)
    assert r.returncode == 2 and r.stdout == "" and "401" in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1
    assert [e["status"] for e in gets(kube)] == [401]
    none = kube.cp.kubeconfig(str(tmp_path / "none"), {"token": "x"},
                              server="https://127.0.0.1:%d" % kh.cluster.free_port())
    r = fleet(cz_bin, none)
    assert r.returncode == 2 and r.stdout == "" and "Failed to list the nodes" in r.stderr
    # (the transport logs each retry of the connection first: kube/kube.c's)
    assert r.stderr.strip().splitlines()[-1].startswith("cpuzombie: Failed to list the nodes")


@pytest.mark.skipif(kh.kubectl_path() is None,
                    reason="no kubectl (tests/tools/get-kube-tools.sh)")
def test_kubectl_cpuzombie_plugin(seeded, kube, kc, cz_bin, tmp_path):
    plugins = tmp_path / "plugins"
    plugins.mkdir()
    os.symlink(cz_bin, plugins / "kubectl-cpuzombie")
    env = dict(os.environ, KUBECONFIG=kc, HOME=str(tmp_path),
               PATH="%s:%s" % (plugins, os.environ.get("PATH", "/usr/bin:/bin")))
    r = subprocess.run([kh.kubectl_path(), "plugin", "list"], env=env, capture_output=True,
                       text=True, timeout=60)
    assert str(plugins / "kubectl-cpuzombie") in r.stdout, r.stdout + r.stderr
    r = subprocess.run([kh.kubectl_path(), "cpuzombie", "--chunk-size", "250"], env=env,
                       capture_output=True, text=True, timeout=180)
    assert r.returncode == 1, r.stderr
    lines = r.stdout.splitlines()
    head = next(i for i, l in enumerate(lines) if l.startswith("MemcgZombieLeak:"))
    assert any(" zone " in l and ZONE in l for l in lines[head + 2:head + 4]), r.stdout
    assert any(" osImage " in l and IMAGE in l for l in lines[head + 2:head + 4]), r.stdout
    assert "leakers: ecs.service on %d nodes" % ECS in r.stdout
    # the server saw our client, not kubectl's, list the nodes in pages
    g = gets(kube)
    assert len(g) == -(-len(seeded.listed()) // 250)
    assert all("limit=250" in e["query"] for e in g)
    assert all(e["agent"].startswith("cpuzombie/") for e in g)


# -- answers no real server gives ---------------------------------------------------------------

def hostile_node(i, name=None):
    return {"metadata": {"name": name or "inv-%07d" % i,
                         "labels": {"topology.kubernetes.io/zone": "z%d" % (i % 4)}},
            "status": {"conditions": [{"type": "Ready", "status": "True"}]}}


@pytest.fixture
def hostile(control_plane, tmp_path):
    made = []

    def start(pages):
        api = fh.HostileApi(control_plane.proxy_cert, control_plane.proxy_key, pages)
        made.append(api)
        api.kc = control_plane.kubeconfig(str(tmp_path / ("kc-%d" % len(made))),
                                          {"token": "x"}, server=api.url)
        return api
    yield start
    for api in made:
        api.stop()


def one_line_error(r, what):
    assert r.returncode == 2, (r.returncode, r.stderr[-2000:])
    assert r.stdout in ("", b"")
    err = r.stderr.strip().splitlines()
    assert len(err) == 1 and "Failed to list the nodes" in err[0] and what in err[0], err


def test_a_repeated_continue_token_stops_at_once(hostile, cz_bin):
    api = hostile(lambda n, q: ([hostile_node(n)], "the-same-token"))
    r = fleet(cz_bin, api.kc, "--chunk-size", "1", timeout=90)
    one_line_error(r, "repeated a continue token")
    assert len(api.node_requests()) == 2          # the first page, and the one that repeated
    # a loop over two tokens is a repeat too
    api = hostile(lambda n, q: ([hostile_node(n)], "tok-%d" % (n % 2)))
    r = fleet(cz_bin, api.kc, "--chunk-size", "1", timeout=90)
    one_line_error(r, "repeated a continue token")
    assert len(api.node_requests()) == 3


def test_pages_for_ever_stop_at_the_cap(hostile, cz_bin):
    # empty pages, a new token each time: the page cap (100,000 nodes' worth of 500, + 10)
    api = hostile(lambda n, q: ([], "new-%d" % n))
    r = fleet(cz_bin, api.kc, "--chunk-size", "500", timeout=90)
    one_line_error(r, "kept sending pages")
    assert len(api.node_requests()) == 100000 // 500 + 10
    # full pages of invented nodes (more than the limit asked): the node cap
    api = hostile(lambda n, q: ([hostile_node(n * 5000 + i) for i in range(5000)],
                                "more-%d" % n))
    r = fleet(cz_bin, api.kc, "--chunk-size", "500", timeout=90)
    one_line_error(r, "more than 100000 nodes")
    assert len(api.node_requests()) == 21


def test_json_is_utf8_whatever_bytes_the_server_sends(hostile, cz_bin):
    page = json.dumps({"kind": "NodeList", "apiVersion": "v1", "metadata": {}, "items": [
        {"metadata": {"name": "NAME1", "labels": {"topology.kubernetes.io/zone": "ZONE"}},
         "status": {"nodeInfo": {"osImage": "IMAGE"}, "conditions": [
             {"type": "Ready", "status": "True"},
             {"type": "MemcgZombieLeak", "status": "True",
              "message": "12840 dying memcgs vs 241 live (x53 >= x10); top restarts: "
                         "UNIT=42"}]}},
        {"metadata": {"name": "plain", "labels": {"topology.kubernetes.io/zone": "b"}},
         "status": {"conditions": [{"type": "MemcgZombieLeak", "status": "False",
                                    "message": "3 dying memcgs vs 241 live"}]}}]}).encode()
    page = page.replace(b"NAME1", b"bad\xff\xfe-node").replace(b"ZONE", b"zone\xc3") \
        .replace(b"IMAGE", b"img\xed\xa0\x80") .replace(b"UNIT", b"ecs\xc0.service")
    api = hostile(lambda n, q: page)
    r = fleet(cz_bin, api.kc, "--json", "--nodes", text=False)
    assert r.returncode == 1, r.stderr
    doc = json.loads(r.stdout.decode("utf-8"))          # strict: raises on a bad byte
    m = cond(doc, "MemcgZombieLeak")
    vals = {d["name"]: d for d in m["dimensions"]}
    assert vals["zone"]["value"] == "zone\ufffd"
    assert vals["zone"]["nodes"] == ["bad\ufffd\ufffd-node"]
    assert vals["osImage"]["value"] == "img\ufffd\ufffd\ufffd"
    # the text view: printable ASCII only
    r = fleet(cz_bin, api.kc, "--nodes", text=False)
    assert r.returncode == 1
    assert not re.search(rb"[^\x20-\x7e\n]", r.stdout), r.stdout
    assert b"bad??-node" in r.stdout

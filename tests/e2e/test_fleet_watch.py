# SPDX-License-Identifier: MIT
"""`cpuzombie fleet --watch` on the real control plane, as a viewer ServiceAccount that may
get, list and watch nodes and Leases: the summary comes from one LIST of the nodes and then
WATCHes (the proxy's log), and is printed again (not a terminal: whole, ended by "--") after a
node's condition turns True, with the new count. Without the watch right the view still starts
from its LIST and says nothing false."""

import os
import re

import pytest

import fleet_helpers as fh
import kube_helpers as kh
import proc_helpers

pytestmark = pytest.mark.kube

WATCHER = "fleet-watcher"
SEED = {"count": 40, "zombies": 5, "seed": 3, "prefix": "fw-", "tag": "fw", "bare": 0}
NODES = "/api/v1/nodes"


def _watcher_kubeconfig(cp, path, server):
    """A ServiceAccount allowed get, list and watch on nodes, and on Leases in the Lease
    namespace (made as the admin: a fixture)."""
    fh.ensure_viewers(cp)
    rbac = "/apis/rbac.authorization.k8s.io/v1"

    def make(p, obj):
        st, got = cp.raw("POST", p, obj)
        assert st in (201, 409), (p, st, got)
    make("/api/v1/namespaces/%s/serviceaccounts" % fh.VIEWER_NS,
         {"apiVersion": "v1", "kind": "ServiceAccount",
          "metadata": {"name": WATCHER, "namespace": fh.VIEWER_NS}})
    make(rbac + "/clusterroles", {
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
        "metadata": {"name": "cz-fleet-watch"},
        "rules": [{"apiGroups": [""], "resources": ["nodes"], "verbs": ["get", "list", "watch"]},
                  {"apiGroups": ["coordination.k8s.io"], "resources": ["leases"],
                   "verbs": ["get", "list", "watch"]}]})
    make(rbac + "/clusterrolebindings", {
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
        "metadata": {"name": "cz-fleet-watch-" + WATCHER},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                    "name": "cz-fleet-watch"},
        "subjects": [{"kind": "ServiceAccount", "name": WATCHER, "namespace": fh.VIEWER_NS}]})
    kh.wait_until(lambda: cp.raw("GET", "/api/v1/namespaces/%s/serviceaccounts/%s"
                                 % (fh.VIEWER_NS, WATCHER))[0] == 200, 30, "the watcher SA")
    return cp.kubeconfig(path, {"token": cp.token(fh.VIEWER_NS, WATCHER)}, server=server)


@pytest.fixture
def seeded(kube):
    fl = fh.Fleet(kube.cp)
    objs = fh.seed_nodes(SEED)
    fl.create(objs)
    try:
        yield objs
    finally:
        fl.delete()


def _views(path):
    """The summaries printed so far (each ended by a line "--")."""
    text = open(path, encoding="utf-8", errors="replace").read()
    return [v for v in text.split("\n--\n")[:-1]]


def _true(view):
    m = re.search(r"MemcgZombieLeak: True on (\d+) of (\d+) nodes", view)
    return (int(m.group(1)), int(m.group(2))) if m else None


def _start(cz_bin, kc, tmp_path):
    env = dict(os.environ, HOME="/nonexistent", CZ_WATCH_TIMEOUT="3")
    env.pop("KUBECONFIG", None)
    env.setdefault("ASAN_OPTIONS", "detect_leaks=1:abort_on_error=0")
    return proc_helpers.Proc("fleet-watch", [cz_bin, "fleet", "--kubeconfig", kc, "--watch", "-l",
                                             fh.FLEET_LABEL + "=fw"], str(tmp_path), env=env)


def test_watch_redraws_on_change_from_one_list(seeded, kube, cz_bin, tmp_path):
    kc = _watcher_kubeconfig(kube.cp, str(tmp_path / "kc"), kube.url)
    healthy = [o["metadata"]["name"] for o in seeded
               if fh.status_of(o, "MemcgZombieLeak") == "False"]
    p = _start(cz_bin, kc, tmp_path)
    try:
        kh.wait_until(lambda: p.check() or _views(p.log), 120, "the first summary")
        assert _true(_views(p.log)[0]) == (5, 40), _views(p.log)[0]
        kh.wait_until(lambda: len([e for e in kube.log() if e["path"] == NODES
                                   and "watch=1" in e["query"]]) >= 2, 60,
                      "a second watch (reconnect after timeoutSeconds)")
        kube.set_conditions(healthy[0], {"type": "MemcgZombieLeak", "status": "True",
                                         "reason": "ZombieMemcgsHigh", "message": "m",
                                         "lastHeartbeatTime": "2024-01-01T00:00:00Z",
                                         "lastTransitionTime": "2024-01-01T00:00:00Z"})
        kh.wait_until(lambda: p.check() or _true(_views(p.log)[-1]) == (6, 40), 60,
                      "a summary with the node turned True")
    finally:
        rc = p.stop(timeout=20)
    text = open(p.log, encoding="utf-8", errors="replace").read()
    assert "ERROR: AddressSanitizer" not in text and "runtime error:" not in text, text[-3000:]
    assert rc == 0, text[-3000:]
    reqs = [e for e in kube.log() if e["path"] == NODES and e["method"] == "GET"]
    lists = [e for e in reqs if "watch=1" not in e["query"]]
    watches = [e for e in reqs if "watch=1" in e["query"]]
    assert len(lists) == 1, [e["query"] for e in lists]
    assert len(watches) >= 2
    assert all("labelSelector=" in e["query"] for e in reqs)
    # nothing printed that the cluster did not say: every summary counts 40 nodes
    assert all(_true(v) and _true(v)[1] == 40 for v in _views(p.log))
    assert "\033" not in text          # not a terminal: no escape


def test_watch_refused_keeps_the_listed_view(seeded, kube, cz_bin, tmp_path):
    """The plain viewer may list but not watch: the view from its LIST is printed once, the
    refused watches are logged and retried with backoff, the view never changes to a guess."""
    kc = fh.viewer_kubeconfig(kube.cp, str(tmp_path / "kc"), kube.url)
    p = _start(cz_bin, kc, tmp_path)
    try:
        kh.wait_until(lambda: p.check() or _views(p.log), 120, "the first summary")
        kh.wait_until(lambda: p.check() or "HTTP 403" in open(p.log).read(), 60,
                      "the refused watch, logged")
    finally:
        rc = p.stop(timeout=20)
    text = open(p.log, encoding="utf-8", errors="replace").read()
    assert rc == 0, text[-3000:]
    assert "ERROR: AddressSanitizer" not in text and "runtime error:" not in text
    assert [_true(v) for v in _views(p.log)] == [(5, 40)], _views(p.log)

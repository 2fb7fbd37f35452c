# SPDX-License-Identifier: MIT
"""The remediator as a controller, on the real control plane as the chart's remediator
ServiceAccount: its nodes and budget Leases come from one LIST each and then WATCHes resumed
from the last resourceVersion (remediator/informer.c), and it still cordons a node whose
condition turns True. The server's audit record of a steady state shows one LIST of the nodes
and then only WATCHes; the fault proxy (tests/tools/kube/faultproxy.py) cuts a watch mid-event,
answers one with a 410 Gone, holds one open with no byte, and the API server itself is
restarted: each time the node that turned True in the meantime is cordoned, and the relists
happen only where a resourceVersion cannot be resumed (410)."""

import json
import os
import re

import pytest

import kube_helpers as kh
import proc_helpers
import remediator_helpers as rh

pytestmark = pytest.mark.kube

NODES = "/api/v1/nodes"
WATCH_S = 3     # timeoutSeconds of each watch ($CZ_WATCH_TIMEOUT): several reconnects a test


def _cond(t, status, ltt="2024-01-01T00:00:00Z"):
    return {"type": t, "status": status, "reason": "R", "message": "m",
            "lastHeartbeatTime": ltt, "lastTransitionTime": ltt}


def _fleet(kube, prefix, n=4):
    names = ["%s-%d" % (prefix, i) for i in range(n)]
    kube.add(*[kh.node_obj(x, labels={"cz-watch": prefix}) for x in names])
    return names


def _config(tmp, kube, prefix):
    """cordon, `for` 0s, one slot, the nodes labelled cz-watch=@prefix, a cycle every 2 s."""
    kc = rh.remediator_kubeconfig(kube, str(tmp / "kc-rem"))
    p = str(tmp / "rem.yaml")
    with open(p, "w") as f:
        f.write("kubernetes:\n  kubeconfig: %s\n  timeout: 5s\n" % kc)
        f.write("agent:\n  check_interval: 2s\n")
        f.write("remediation:\n  mode: cordon\n  for: 0s\n  max_unavailable: \"1\"\n"
                "  uncordon_after: 1h\n  lease_namespace: %s\n  node_selector: cz-watch=%s\n"
                % (kh.LEASE_NS, prefix))
    return p


def _start(tmp, cfg, name="remediator"):
    env = dict(os.environ, POD_NAME="rem-watch", CZ_WATCH_TIMEOUT=str(WATCH_S))
    env.setdefault("ASAN_OPTIONS", "detect_leaks=1:abort_on_error=0")
    return proc_helpers.Proc(name, [rh.BIN, "--config", cfg, "remediator"], str(tmp), env=env)


def _stop(p):
    rc = p.stop(timeout=20)
    text = open(p.log).read()
    assert "ERROR: AddressSanitizer" not in text and "runtime error:" not in text, text[-3000:]
    assert rc == 0, text[-3000:]
    return text


def _wait(ok, p, seconds, what):
    def check():
        p.check()
        return ok()
    kh.wait_until(check, seconds, what)


def _reqs(kube, path, watch):
    """The remediator's requests through the proxy on list path @path: watches or lists."""
    return [e for e in kube.log() if e["user"] == rh.REM_USER and e["method"] == "GET"
            and e["path"] == path and (("watch=1" in e["query"]) == watch)]


def _cordoned(kube, name):
    return bool(kube.node(name)["spec"].get("unschedulable"))


def _turn_true(kube, name):
    kube.set_conditions(name, _cond("MemcgZombieLeak", "True"))


def _stats(text, strict=True):
    """The last cycle's watch counters from the remediator's summary lines."""
    m = re.findall(r"watch: (\d+) lists, (\d+) watches \((\d+) ended by 410 Gone, (\d+) stalled, "
                   r"(\d+) broken\)", text)
    if not m and not strict:
        return {}
    assert m, text[-3000:]
    return dict(zip(("lists", "watches", "gone", "stalls", "broken"), map(int, m[-1])))


@pytest.fixture
def fleet(kube):
    yield kube
    rh.drop_leader(kube)


def _audited(kube, mark, until=None):
    """The remediator's finished requests on nodes and Leases in the server's audit log from
    byte offset @mark (to offset @until, when given)."""
    with open(kube.cp.audit_log, "rb") as f:
        f.seek(mark)
        data = f.read() if until is None else f.read(until - mark)
    data = data[:data.rfind(b"\n") + 1]
    evs = [json.loads(line) for line in data.splitlines() if line.strip()]
    return [e for e in evs if e.get("user", {}).get("username") == rh.REM_USER
            and e.get("objectRef", {}).get("resource") in ("nodes", "leases")
            and e.get("stage") == "ResponseComplete"]


def _of(evs, verb, resource):
    return [e for e in evs if e["verb"] == verb and e["objectRef"]["resource"] == resource]


def test_steady_state_is_one_list_then_watches(fleet, tmp_path):
    """The server's audit record: in a steady state of several watch timeouts the remediator
    lists the nodes once and the budget Leases once, then only watches them (each reconnect a
    new WATCH resuming at a resourceVersion); a node turning True is then cordoned from the
    watch, with no new LIST of the nodes."""
    kube = fleet
    names = _fleet(kube, "steady")
    mark = kube.cp.audit_mark()
    p = _start(tmp_path, _config(tmp_path, kube, "steady"))
    try:
        _wait(lambda: len(_reqs(kube, NODES, True)) >= 3, p, 60,
              "three watches of the nodes (reconnects after timeoutSeconds)")
        steady = kube.cp.audit_mark()
        _turn_true(kube, names[1])
        _wait(lambda: _cordoned(kube, names[1]), p, 60, "the cordon of %s" % names[1])
    finally:
        text = _stop(p)
    quiet = _audited(kube, mark, steady)        # before the node turned True
    evs = _audited(kube, mark)
    node_lists = _of(quiet, "list", "nodes")
    lease_lists = [e for e in _of(quiet, "list", "leases") if "labelSelector" in e["requestURI"]]
    assert len(node_lists) == 1, [e["requestURI"] for e in node_lists]
    assert len(lease_lists) == 1, [e["requestURI"] for e in lease_lists]
    assert _of(quiet, "get", "nodes") == [], "nodes read one by one in a steady state"
    node_watches = _of(evs, "watch", "nodes")
    assert len(node_watches) >= 2, [e["requestURI"] for e in evs]
    assert _of(evs, "watch", "leases"), "the budget Leases are not watched"
    for w in node_watches:
        assert "allowWatchBookmarks=true" in w["requestURI"]
        assert re.search(r"resourceVersion=\d+", w["requestURI"]), w["requestURI"]
        assert "timeoutSeconds=%d" % WATCH_S in w["requestURI"]
    # the first watch starts after the list, at its resourceVersion
    assert node_lists[0]["stageTimestamp"] <= min(w["requestReceivedTimestamp"]
                                                   for w in node_watches)
    # after the node turned True: still one LIST of the nodes; one node read (its remediation)
    assert len(_of(evs, "list", "nodes")) == 1
    assert {e["requestURI"] for e in _of(evs, "get", "nodes")} <= {"/api/v1/nodes/" + names[1]}
    assert [n for n in names if _cordoned(kube, n)] == [names[1]]
    st = _stats(text)
    assert st["lists"] == 2 and st["gone"] == 0 and st["broken"] == 0, st
    assert st["watches"] >= 3, st


@pytest.mark.parametrize("fault", ["cut", "gone", "stall"])
def test_watch_fault_misses_no_node(fleet, tmp_path, fault):
    """A node watch cut mid-event (RST), answered with a 410 Gone, or held open with no byte
    past its time: the node that turned True while the watch was down is cordoned. A cut or a
    stall resumes from the last resourceVersion (one LIST in all); a 410 lists again."""
    kube = fleet
    prefix = "wf-" + fault
    names = _fleet(kube, prefix)
    rule = {"method": "GET", "path": "^/api/v1/nodes$", "query": "watch=1"}
    rule.update({"cut": {"cut_after_ms": 1500}, "gone": {"watch_error": 410},
                 "stall": {"hold_ms": 20000}}[fault])
    kube.proxy.faults(rule)
    p = _start(tmp_path, _config(tmp_path, kube, prefix))
    try:
        _wait(lambda: any(e["fault"] for e in _reqs(kube, NODES, True)), p, 60,
              "the fault on a node watch")
        _turn_true(kube, names[2])        # while that watch is broken or silent
        _wait(lambda: _cordoned(kube, names[2]), p, 90, "the cordon of %s" % names[2])
        counter = {"cut": "broken", "gone": "gone", "stall": "stalls"}[fault]
        _wait(lambda: _stats(open(p.log).read(), strict=False).get(counter, 0) >= 1, p, 30,
              "a cycle's summary counting the %s" % fault)
    finally:
        text = _stop(p)
    lists = _reqs(kube, NODES, False)
    watches = _reqs(kube, NODES, True)
    st = _stats(text)
    faulted = [w for w in watches if w["fault"]]
    assert len(faulted) == 1, [(w["query"], w["fault"]) for w in watches]
    later = [w for w in watches if w["seq"] > faulted[0]["seq"]]
    assert later, "no watch after the fault"
    if fault == "gone":
        assert len(lists) == 2, [e["query"] for e in lists]       # the relist
        assert st["gone"] == 1, st
        assert any(e["seq"] > faulted[0]["seq"] for e in lists)
    else:
        assert len(lists) == 1, [e["query"] for e in lists]       # resumed, not relisted
        rv = re.search(r"resourceVersion=(\d+)", faulted[0]["query"]).group(1)
        # the next watch resumes at (or after) where the broken one began
        nxt = int(re.search(r"resourceVersion=(\d+)", later[0]["query"]).group(1))
        assert nxt >= int(rv), (rv, nxt)
        assert st["stalls" if fault == "stall" else "broken"] >= 1, st
    assert [n for n in names if _cordoned(kube, n)] == [names[2]]


def test_api_server_restart_misses_no_node(fleet, control_plane, tmp_path):
    """kube-apiserver stopped and started again (etcd keeps the data): every watch ends, and the
    remediator reconnects (backing off while the server is down); a node turned True right after
    the restart is cordoned."""
    kube = fleet
    names = _fleet(kube, "restart")
    p = _start(tmp_path, _config(tmp_path, kube, "restart"))
    try:
        _wait(lambda: len(_reqs(kube, NODES, True)) >= 1, p, 60, "a node watch")
        before = len(_reqs(kube, NODES, True))
        control_plane.restart_apiserver()
        _turn_true(kube, names[0])
        _wait(lambda: _cordoned(kube, names[0]), p, 120, "the cordon of %s" % names[0])
        _wait(lambda: len(_reqs(kube, NODES, True)) > before, p, 60, "a watch after the restart")
    finally:
        text = _stop(p)
    assert "remediator rem-watch (leader)" in text
    assert [n for n in names if _cordoned(kube, n)] == [names[0]]

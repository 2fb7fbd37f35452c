# SPDX-License-Identifier: MIT
"""What the agent (agent.set_conditions) asks of the real kube-apiserver over a steady window,
by the server's own audit log: it writes its node's conditions only when one changes and once
per agent.heartbeat (here 20 s at a 2 s cycle, so the test stays short), reads its node only at
the start and after a refused (409) or failed write, writes a change at once, and the Events of
a flapping condition are aggregated (one Event whose count rises). The node is a fixture tree
whose memcg capture the test swaps (v1-healthy / v1-zombies) to make a condition change."""
import os
import shutil
import time

import pytest

import kube_helpers as kh
from proc_helpers import Proc

BIN = os.environ.get("CZ_BIN", os.path.join(kh.ROOT, "build", "cpuzombie"))
HEARTBEAT, CYCLE = 20, 2
AGENT_USER = "system:serviceaccount:%s:%s" % (kh.AGENT_NS, kh.AGENT_SA)

pytestmark = pytest.mark.kube


def tree_of(tmp):
    """A fixture node of the test's own (healthy to begin with) whose /proc/cgroups set_sick()
    swaps: the memcg check's dying-memcg count, hence MemcgZombieLeak."""
    src = kh.agent_tree(tmp, "v1-healthy")
    dst = os.path.join(str(tmp), "node")
    shutil.copytree(src, dst, symlinks=True)
    return dst


def set_sick(tree, sick):
    case = "v1-zombies" if sick else "v1-healthy"
    src = os.path.join(kh.ROOT, "tests", "fixtures", "memcg", case, "proc", "cgroups")
    part = os.path.join(tree, "proc", "cgroups.part")
    shutil.copyfile(src, part)
    os.rename(part, os.path.join(tree, "proc", "cgroups"))   # whole, never half-written


def start(kube, tmp, node, tree):
    kc = kube.kubeconfig(str(tmp / "kc"), node=node)
    cfg = tmp / "cz.yaml"
    cfg.write_text(kh.AGENT_CPU +
                   "kubernetes:\n  node_name: %s\n  kubeconfig: %s\n  timeout: 5s\n"
                   "agent:\n  set_conditions: true\n  remediate: false\n  kmsg: \"\"\n"
                   "  check_interval: %ds\n  heartbeat: %ds\nremediation:\n  mode: \"off\"\n"
                   % (node, kc, CYCLE, HEARTBEAT))
    return Proc("agent", [BIN, "--config", str(cfg), "--proc-root", os.path.join(tree, "proc"),
                          "--sys-root", os.path.join(tree, "sys"),
                          "--state-dir", str(tmp / "state"), "--run-dir", str(tmp / "run"),
                          "agent"], str(tmp))


def node_calls(kube, mark, node):
    """The agent's calls on its node since audit offset @mark, in order: (verb, subresource,
    code, time as seconds since the epoch), from the server's audit log."""
    out = []
    for e in kube.cp.audit(mark)[0]:
        ref = e.get("objectRef") or {}
        if (e.get("user", {}).get("username") != AGENT_USER or ref.get("resource") != "nodes"
                or ref.get("name") != node):
            continue
        ts = e["requestReceivedTimestamp"]
        t = time.mktime(time.strptime(ts[:19], "%Y-%m-%dT%H:%M:%S")) - time.timezone
        frac = ts[19:].rstrip("Z")
        out.append((e["verb"], ref.get("subresource", ""), e["responseStatus"]["code"],
                    t + (float(frac) if frac else 0.0)))
    return out


def cond(kube, node, typ):
    for c in kube.node(node)["status"].get("conditions", []):
        if c["type"] == typ:
            return c
    return None


def wait_cond(kube, node, typ, status, proc, seconds=30):
    deadline = time.time() + seconds
    while time.time() < deadline:
        proc.check()
        c = cond(kube, node, typ)
        if c and c["status"] == status:
            return c
        time.sleep(0.2)
    raise AssertionError("%s never %s: %s\n%s" % (typ, status, cond(kube, node, typ),
                                                   proc.tail()))


def patches(calls):
    return [c for c in calls if c[0] == "patch" and c[1] == "status"]


def gets(calls):
    return [c for c in calls if c[0] == "get" and c[1] == ""]


def test_steady_node_written_at_heartbeats_read_once_change_at_once(kube, tmp_path):
    """Three heartbeats of a steady node: one GET (the start), a PATCH at the start (the node
    had none of our conditions: a change) and then one per heartbeat, never one per cycle; the
    conditions' lastHeartbeatTime moves only at those writes. Then a condition that changes is
    written at once, between two heartbeats, with no read."""
    node = "aw-steady"
    kube.add(kh.node_obj(node))
    tree = tree_of(tmp_path)
    mark = kube.cp.audit_mark()
    agent = start(kube, tmp_path, node, tree)
    try:
        wait_cond(kube, node, "MemcgZombieLeak", "False", agent)
        hb = set()
        t_end = time.time() + 3.5 * HEARTBEAT     # ends between two heartbeats
        while time.time() < t_end:   # every lastHeartbeatTime the node shows meanwhile
            agent.check()
            hb.add(cond(kube, node, "MemcgZombieLeak")["lastHeartbeatTime"])
            time.sleep(0.5)
        steady = node_calls(kube, mark, node)
        set_sick(tree, True)
        sick = wait_cond(kube, node, "MemcgZombieLeak", "True", agent, seconds=4 * CYCLE + 5)
        after = node_calls(kube, mark, node)
    finally:
        agent.stop()
    p = patches(steady)
    assert all(c[2] == 200 for c in p), p
    # ~35 cycles: a PATCH at the start and one per heartbeat
    assert len(p) == 4, (p, agent.tail())
    gaps = [b[3] - a[3] for a, b in zip(p, p[1:])]
    assert all(g >= HEARTBEAT - CYCLE - 1 for g in gaps), gaps
    assert len(hb) <= len(p), (hb, p)       # lastHeartbeatTime moved only at a write
    assert len(gets(steady)) == 1 and gets(steady)[0][3] <= p[0][3], steady
    assert [c for c in steady if c not in gets(steady) + p] == [], steady
    # the change: one more PATCH, sooner after the last than any heartbeat, and no GET
    new = after[len(steady):]
    assert [c[:3] for c in new] == [("patch", "status", 200)], new
    assert new[0][3] - p[-1][3] < HEARTBEAT - CYCLE - 1, (new, p)
    assert sick["reason"] == "ZombieMemcgsHigh" and sick["message"].startswith("12840 dying")


def test_flapping_condition_events_aggregated(kube, tmp_path):
    """MemcgZombieLeak flapping True/False (memcg.recover_after 0: at once) four times: each
    flip is written at once, and its Events are two series (one per status) whose count says
    how often, not an Event per flip: the repeats PATCH the Event first posted."""
    node = "aw-flap"
    kube.add(kh.node_obj(node))
    tree = tree_of(tmp_path)
    agent = start(kube, tmp_path, node, tree)
    flips = 4
    try:
        wait_cond(kube, node, "MemcgZombieLeak", "False", agent)
        for _ in range(flips):
            set_sick(tree, True)
            wait_cond(kube, node, "MemcgZombieLeak", "True", agent)
            set_sick(tree, False)
            wait_cond(kube, node, "MemcgZombieLeak", "False", agent)
    finally:
        agent.stop()
    evs = kube.events(node)
    high = [e for e in evs if e["reason"] == "ZombieMemcgsHigh"]
    back = [e for e in evs if e["reason"] == "ZombieMemcgsNormal"
            and "(was True)" in e["message"]]
    assert len(high) == 1 and high[0]["count"] == flips, high
    assert len(back) == 1 and back[0]["count"] == flips, back
    assert high[0]["lastTimestamp"] >= high[0]["firstTimestamp"]
    log = kube.log()
    creates = [e for e in log if e["method"] == "POST" and e["path"].endswith("/events")]
    counts = [e for e in log if e["method"] == "PATCH" and "/events/" in e["path"]]
    # one Event created per status of the flaps (beside the first one of each condition set:
    # "was unset"), and the repeats counted on them
    flap = [e for e in creates if e["body"]["message"].startswith("MemcgZombieLeak")
            and "(was unset)" not in e["body"]["message"]]
    assert len(flap) == 2, [(e["body"]["reason"], e["body"]["message"]) for e in creates]
    assert len(counts) == 2 * (flips - 1) and all(e["status"] == 200 for e in counts), counts
    assert all(e["user"] == AGENT_USER for e in creates + counts)


def test_conflict_and_failed_write_read_the_node_again(kube, tmp_path):
    """A write answered 409 Conflict: the agent reads its node again and writes at once; a
    write that fails (every attempt answered 503): the next cycle reads the node, then writes.
    No other GET of the node than these and the start's."""
    node = "aw-fault"
    kube.add(kh.node_obj(node))
    tree = tree_of(tmp_path)
    agent = start(kube, tmp_path, node, tree)
    status = "^/api/v1/nodes/%s/status$" % node
    try:
        wait_cond(kube, node, "MemcgZombieLeak", "False", agent)
        kube.reset_log()
        kube.faults({"method": "PATCH", "path": status, "status": 409})
        set_sick(tree, True)
        wait_cond(kube, node, "MemcgZombieLeak", "True", agent)
        conflict = kube.log()
        kube.reset_log()
        kube.faults({"method": "PATCH", "path": status, "status": 503, "count": 5})
        set_sick(tree, False)
        wait_cond(kube, node, "MemcgZombieLeak", "False", agent, seconds=60)
        failed = kube.log()
    finally:
        agent.stop()

    def calls(log):
        return [(e["method"], e["status"] or int(e["fault"].split()[1]))
                for e in log if e["path"] in ("/api/v1/nodes/" + node,
                                              "/api/v1/nodes/%s/status" % node)]
    assert calls(conflict) == [("PATCH", 409), ("GET", 200), ("PATCH", 200)], conflict
    # five attempts refused (the client's retries), then the next cycle: a read, the write
    assert calls(failed) == [("PATCH", 503)] * 5 + [("GET", 200), ("PATCH", 200)], failed
    assert "HTTP 409" in open(agent.log).read()

# SPDX-License-Identifier: MIT
"""The cluster-wide remediation budget (max_unavailable: 1) on the real coordination API: agents
that remediate their own node (agent.remediate, a plain install without the chart's remediator)
on several nodes, each through a fault proxy of its own (its own request log), race for the one
slot; the real kube-apiserver's optimistic concurrency decides (a PUT at a stale
resourceVersion is a 409 Conflict, a second create of the same Lease a 409 AlreadyExists).
The losers wait and say so, changing nothing; once the holder recovers (its condition False for
longer than uncordon_after) its cycle uncordons it and deletes its Lease, and a loser's next
cycle takes the slot and cordons."""

import concurrent.futures
import subprocess
import time

import pytest

import drain_helpers as dh
import guard_helpers as gh
import kube_helpers as kh

NODES = ["lr-1", "lr-2", "lr-3"]
SLOT = "cpuzombie-slot-0"
LEASES = "/apis/coordination.k8s.io/v1/namespaces/%s/leases" % kh.LEASE_NS


@pytest.fixture
def proxies(kube):
    """A fault proxy per node in front of the real server: whose requests are whose."""
    ps = {n: kh.faultproxy.Proxy(kube.cp.url, kube.cp.ca, kube.cp.proxy_cert,
                                 kube.cp.proxy_key).start() for n in NODES}
    yield ps
    for p in ps.values():
        p.stop()


def micro(t):
    return time.strftime("%Y-%m-%dT%H:%M:%S.000000Z", time.gmtime(t))


def race(kube, tmp_path, proxies, nodes):
    """One cycle on each of @nodes at once (cordon mode); {node: stdout}."""
    # credentials first, one by one (the fixtures' admin calls are not for threads)
    args = {n: dh.agent_remediate_args(kube, tmp_path, n, server=proxies[n].url,
                                       mode="cordon")[0] for n in nodes}

    def one(n):
        r = subprocess.run(args[n], capture_output=True, text=True, timeout=120, env=dh.ENV)
        dh.sanitizer_clean(r.stderr)
        assert r.returncode == 0, (n, r.stdout, r.stderr)
        return r.stdout
    with concurrent.futures.ThreadPoolExecutor(len(nodes)) as ex:
        return dict(zip(nodes, ex.map(one, nodes)))


def held(kube):
    return [n for n in NODES if kube.node(n)["spec"].get("unschedulable")]


def holder(kube):
    return [l["spec"]["holderIdentity"] for l in kube.leases()]


def changes(proxy, since=0):
    """What a node's agent wrote (not GETs), as (method, path, status)."""
    return [(e["method"], e["path"], e["status"]) for e in proxy.log(since)
            if e["method"] != "GET"]


def test_lease_race_loser_waits_then_takes_the_freed_slot(kube, tmp_path, proxies):
    kube.add(*[kh.node_obj(n, conditions=[dh.READY, dh.SICK]) for n in NODES])
    # The slot's Lease is left by a node that is gone (its instance terminated while it held
    # the slot, long ago): every agent sees it expired, finds its holder gone (404) and takes
    # it over with a PUT at the resourceVersion it listed. The PUTs are held back 2 s by the
    # proxies so that every agent has listed before the first lands: the server must refuse
    # all but one (409 Conflict).
    kube.add({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
              "metadata": {"name": SLOT, "namespace": kh.LEASE_NS,
                           "labels": {"app.kubernetes.io/managed-by": "cpuzombie"}},
              "spec": {"holderIdentity": "lr-gone", "leaseDurationSeconds": 600,
                       "acquireTime": micro(time.time() - 7200),
                       "renewTime": micro(time.time() - 3600)}})
    for p in proxies.values():
        p.faults({"method": "PUT", "path": "/leases/" + SLOT + "$", "delay_ms": 2000})
    out = race(kube, tmp_path, proxies, NODES)
    winners = held(kube)
    assert len(winners) == 1, (winners, out)
    win = winners[0]
    losers = [n for n in NODES if n != win]
    assert holder(kube) == [win]
    assert "cordoned by cpuzombie" in out[win], out[win]
    puts = {n: [(m, st) for m, path, st in changes(proxies[n]) if m == "PUT"] for n in NODES}
    assert puts[win] == [("PUT", 200)], puts
    conflicts = [n for n in losers if ("PUT", 409) in puts[n]]
    assert conflicts, ("no 409 Conflict from the real server", puts)
    for n in losers:
        # a loser only says so: its lost PUT (or none, if it listed after the winner's landed)
        # and nothing else written but the remediator's clock (when it first saw it True);
        # its node untouched
        assert "remediation budget full" in out[n], out[n]
        assert [(e["method"], e["path"], e["status"]) for e in proxies[n].log()
                if e["method"] not in ("GET", "PUT") and not gh.clock_write(e)] == [], \
            changes(proxies[n])
        assert all(st == 409 for _, st in puts[n]), puts[n]
        node = kube.node(n)
        assert not node["spec"].get("unschedulable")
        assert "cpuzombie.io/cordoned" not in node["metadata"].get("annotations", {})

    # the losers try again while the holder is still sick: still waiting, nothing written
    marks = {n: proxies[n].seq for n in losers}
    again = race(kube, tmp_path, proxies, losers)
    for n in losers:
        assert "remediation budget full" in again[n], again[n]
        assert changes(proxies[n], marks[n]) == []
    assert held(kube) == [win] and holder(kube) == [win]

    # the holder recovers: False since now; while uncordon_after has not passed (here: 1 h)
    # its cycle keeps holding; once it has (1 s), it uncordons and deletes its Lease
    recovered = time.time()
    kube.set_conditions(win, dh.cond("MemcgZombieLeak", "False", ltt=time.strftime(
        "%Y-%m-%dT%H:%M:%SZ", time.gmtime(recovered))))
    r = dh.remediate(kube, tmp_path, win, server=proxies[win].url, agent=True, mode="cordon",
                     uncordon_after="1h")
    assert r.returncode == 0, r.stdout + r.stderr
    assert held(kube) == [win] and holder(kube) == [win], r.stdout
    kh.wait_until(lambda: time.time() > recovered + 2.5, 5, "uncordon_after to pass")
    mark = proxies[win].seq
    r = dh.remediate(kube, tmp_path, win, server=proxies[win].url, agent=True, mode="cordon")
    assert r.returncode == 0 and "uncordoned by cpuzombie" in r.stdout, r.stdout + r.stderr
    assert ("DELETE", LEASES + "/" + SLOT, 200) in changes(proxies[win], mark)
    assert kube.leases() == [] and held(kube) == []
    assert not kube.node(win)["spec"].get("unschedulable")

    # the losers' next cycle: the slot is free again, exactly one of them takes it (a create
    # race: the second create of the same Lease is a 409 from the server) and cordons
    marks = {n: proxies[n].seq for n in losers}
    for n in losers:
        proxies[n].faults({"method": "POST", "path": "/leases$", "delay_ms": 1500})
    out = race(kube, tmp_path, proxies, losers)
    now_held = held(kube)
    assert len(now_held) == 1 and now_held[0] in losers, (now_held, out)
    taker = now_held[0]
    assert holder(kube) == [taker]
    assert "cordoned by cpuzombie" in out[taker], out[taker]
    posts = {n: [st for m, p, st in changes(proxies[n], marks[n]) if m == "POST"
                 and p == LEASES] for n in losers}
    assert posts[taker] == [201], posts
    for n in losers:
        if n != taker:
            assert "remediation budget full" in out[n], out[n]
            assert all(st == 409 for st in posts[n]), posts
            assert not kube.node(n)["spec"].get("unschedulable")
    assert not kube.node(win)["spec"].get("unschedulable")   # the old holder stays uncordoned

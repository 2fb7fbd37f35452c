# SPDX-License-Identifier: MIT
"""The remediation guards (plugin/remediator/guard.h, decided by the pure plan) on the real control
plane (tests/tools/kube): `cpuzombie remediator --once` as the chart's remediator
ServiceAccount, with the chart's RBAC and admission policy; what a person does (pause, reset
the breaker) with real kubectl as the admin. Each guard: it holds, it says why where a person
looks (the summary, the log, Events on the node, `cpuzombie fleet`), and it lets go."""

import datetime
import zoneinfo

import pytest

import drain_helpers as dh
import guard_helpers as gh
import kube_helpers as kh
import remediator_helpers as rh


def sel(name):
    return '"guards=%s"' % name


def nodes(kube, prefix, n, sick):
    names = ["%s-%02d" % (prefix, i) for i in range(n)]
    objs = gh.sick_nodes(names[:sick]) + gh.sick_nodes(names[sick:], sick=False)
    for o in objs:
        o["metadata"]["labels"]["guards"] = prefix
    kube.add(*objs)
    return names


@pytest.fixture
def rem(kube, tmp_path):
    """A remediator config maker (its kubeconfig through the test's proxy); the leader Lease is
    dropped afterwards."""
    kc = rh.remediator_kubeconfig(kube, str(tmp_path / "kc-rem"))

    def make(name, **r):
        return rh.config(tmp_path, kc, name, **r)
    yield make
    rh.drop_leader(kube)


@pytest.fixture
def guard_rbac(control_plane):
    """The chart rendered with breaker_max on: the remediator may read and update its guard
    Lease. Put back as the session had it afterwards."""
    gh.apply_guard_rbac(control_plane)
    yield
    gh.restore_rbac(control_plane)


def fleet_lines(kube, tmp_path, cfg, selector):
    import subprocess
    kc = str(tmp_path / "kc-admin-fleet")
    kube.admin_kubeconfig(kc)
    r = subprocess.run([rh.BIN, "--config", cfg, "fleet", "--kubeconfig", kc, "-l", selector],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode in (0, 1), r.stderr
    return [l for l in r.stdout.splitlines() if l.startswith("Guards:")]


# -- storm guard ---------------------------------------------------------------------------------

def test_storm_guard_10_nodes_4_true_nothing_drained(kube, rem, tmp_path):
    """4 of 10 nodes True for MemcgZombieLeak: more than the default 20% of a group of more than
    5 (EKS auto repair's rule). Nothing is cordoned or evicted; the reason is in the summary,
    in one log line, in one Event per held node (also after another cycle) and in `cpuzombie
    fleet`. Once two recover (2 of 10), the guard lets go and the rest are drained."""
    names = nodes(kube, "storm", 10, 4)
    kube.add(kh.rs_obj("web"))
    for n in names[:4]:
        kube.add(kh.pod_obj("web-" + n, n, owner=("ReplicaSet", "web"), labels={"app": "web"}))
    cfg = rem("storm", mode="drain", max_unavailable="10", node_selector=sel("storm"))
    for attempt in range(2):
        r = rh.run_once(cfg)
        assert r.returncode == 0, r.stdout + r.stderr
        for n in names[:4]:
            assert "%s: held" % n in r.stdout, r.stdout
        assert "storm guard: MemcgZombieLeak is True on 4 of 10 nodes, more than " \
               "remediation.max_unhealthy 20% (2)" in r.stdout, r.stdout
        logged = [l for l in r.stderr.splitlines() if "storm guard" in l]
        assert len(logged) == 1, r.stderr              # said once, not once per node
        assert gh.held(kube, names) == []
        assert gh.node_writes(kube.log()) == []
        assert sorted(p["metadata"]["name"] for p in kube.pods()
                      if p["metadata"]["name"].startswith("web-storm")) == \
            ["web-" + n for n in names[:4]]
        for n in names[:4]:
            assert gh.reasons(kube, n) == ["CpuzombieStormGuard"], (attempt, kube.events(n))
        for n in names[4:]:
            assert kube.events(n) == []
    msg = kube.events(names[0])[0]["message"]
    assert "4 of 10 nodes" in msg and "remediating nothing" in msg, msg
    assert any("storm guard: MemcgZombieLeak is True on 4 of 10 nodes" in l
               for l in fleet_lines(kube, tmp_path, cfg, "guards=storm")), \
        fleet_lines(kube, tmp_path, cfg, "guards=storm")
    # two recover: 2 of 10 is not more than 20%: the others are remediated again
    for n in names[2:4]:
        kube.set_conditions(n, dh.WELL)
    r = rh.run_once(cfg)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "%s: drained" % names[0] in r.stdout and "%s: drained" % names[1] in r.stdout, \
        r.stdout
    assert gh.held(kube, names) == names[:2]
    assert any("clear" in l for l in fleet_lines(kube, tmp_path, cfg, "guards=storm"))


# -- circuit breaker -----------------------------------------------------------------------------

def test_breaker_trips_survives_a_restart_and_resets(kube, rem, tmp_path, guard_rbac):
    """breaker_max 1 in 1 h: the first remediation goes, the second trips the breaker (the
    guard Lease in the cluster), the third is held. A new remediator process (a restart) finds
    it tripped and does nothing; the documented kubectl command resets it, and the next
    remediation goes (and the one after trips it again)."""
    names = nodes(kube, "brk", 3, 3)
    cfg = rem("brk", mode="cordon", max_unavailable="3", breaker_max="1",
              node_selector=sel("brk"))
    r = rh.run_once(cfg)
    assert r.returncode == 0, r.stdout + r.stderr
    assert gh.held(kube, names) == names[:1], r.stdout
    assert "%s: cordoned" % names[0] in r.stdout
    assert "%s: held" % names[1] in r.stdout and "%s: held" % names[2] in r.stdout, r.stdout
    assert "CpuzombieBreakerTripped" in gh.reasons(kube, names[1])
    assert gh.reasons(kube, names[2]) == ["CpuzombieBreakerOpen"]
    assert "circuit breaker tripped" in r.stderr, r.stderr
    lease = kube.get(gh.GUARD_PATH)
    assert "1 remediations within 1h" in lease["metadata"]["annotations"][gh.TRIPPED]
    # a restart: a new process reads the breaker from the cluster
    kube.reset_log()
    r = rh.run_once(cfg)
    assert r.returncode == 0, r.stdout + r.stderr
    assert gh.held(kube, names) == names[:1]
    assert gh.node_writes(kube.log()) == []
    assert "circuit breaker tripped (" in r.stdout and "annotate lease cpuzombie-guard " \
           "cpuzombie.io/breaker-tripped-" in r.stdout, r.stdout
    assert any("circuit breaker TRIPPED" in l
               for l in fleet_lines(kube, tmp_path, cfg, "guards=brk"))
    # the documented reset (docs/remediation.md, cpuzombie.yaml.5), by a person
    gh.admin_kubectl(kube, tmp_path, *gh.RESET)
    assert gh.TRIPPED not in kube.get(gh.GUARD_PATH)["metadata"].get("annotations", {})
    r = rh.run_once(cfg)
    assert r.returncode == 0, r.stdout + r.stderr
    assert gh.held(kube, names) == names[:2], r.stdout
    assert gh.TRIPPED in kube.get(gh.GUARD_PATH)["metadata"]["annotations"]   # the 3rd again


# -- pause, honoured mid-drain -------------------------------------------------------------------

@pytest.mark.parametrize("how", ["node", "cluster"])
def test_pause_mid_drain_stops_where_it_is(kube, rem, tmp_path, how):
    """A PodDisruptionBudget keeps the drain going (429 for db-1); a person pauses (the node's
    annotation, or the ConfigMap for all): the drain stops at the next round, the node stays
    cordoned with db-1 on it. While paused, a recovered node is not uncordoned behind the
    person's back; unpaused, it is."""
    names = nodes(kube, "pause-" + how[0], 1, 1)
    n = names[0]
    kube.add(kh.rs_obj("web"), kh.rs_obj("db"),
             kh.pod_obj("web-1", n, owner=("ReplicaSet", "web"), labels={"app": "web"}),
             kh.pod_obj("db-1", n, owner=("ReplicaSet", "db"), labels={"app": "db"}),
             kh.pdb_obj("db", {"app": "db"}, 1))
    dh.wait_pdb(kube, "db", 0, 1)
    cfg = rem("pause", mode="drain", drain_timeout="120s", node_selector=sel("pause-" + how[0]))
    p = rh.run_once(cfg, popen=True)
    try:
        gh.wait_for(lambda: ("db-1", 429) in dh.evictions(kube.log(), rh.REM_USER), p, 60,
                    "the PDB's 429 for db-1")
        if how == "node":
            gh.admin_kubectl(kube, tmp_path, "annotate", "node", n, "cpuzombie.io/pause=true")
        else:
            gh.admin_kubectl(kube, tmp_path, "-n", kh.LEASE_NS, "create", "configmap",
                             gh.PAUSE_CM, "--from-literal=reason=kernel rollout")
        out, err = p.communicate(timeout=60)
    finally:
        if p.poll() is None:
            p.kill()
            p.communicate()
    try:
        assert p.returncode == 0, out + err
        assert "%s: paused" % n in out and "paused mid-drain" in out, out
        node = kube.node(n)
        assert node["spec"]["unschedulable"] is True
        assert "cpuzombie.io/drained" not in node["metadata"]["annotations"]
        assert "db-1" in [q["metadata"]["name"] for q in kube.pods(n)]
        assert ("web-1", 201) in dh.evictions(kube.log(), rh.REM_USER)
        assert "CpuzombiePaused" in gh.reasons(kube, n)
        # recovered (uncordon_after 0s): still held while paused, its recovery clock unwritten
        kube.set_conditions(n, dh.WELL)
        kube.reset_log()
        r = rh.run_once(cfg)
        assert r.returncode == 0 and "%s: paused" % n in r.stdout, r.stdout + r.stderr
        assert gh.node_writes(kube.log()) == []
        assert kube.node(n)["spec"]["unschedulable"] is True
    finally:
        if how == "node":
            gh.admin_kubectl(kube, tmp_path, "annotate", "node", n, "cpuzombie.io/pause-")
        else:
            gh.admin_kubectl(kube, tmp_path, "-n", kh.LEASE_NS, "delete", "configmap",
                             gh.PAUSE_CM)
    r = rh.run_once(cfg)
    assert "%s: uncordoned" % n in r.stdout, r.stdout + r.stderr
    assert not kube.node(n)["spec"].get("unschedulable")


# -- protected pods ------------------------------------------------------------------------------

@pytest.mark.parametrize("how", ["protect", "autoscaler"])
def test_protected_pod_blocks_the_drain(kube, rem, how):
    """cpuzombie.io/protect "true", or the cluster autoscaler's safe-to-evict "false": the node
    is cordoned, nothing at all is evicted, an Event names the pod."""
    n = nodes(kube, "prot-" + how[0], 1, 1)[0]
    kube.add(kh.rs_obj("web"),
             kh.pod_obj("web-1", n, owner=("ReplicaSet", "web"), labels={"app": "web"}),
             gh.protected_pod("web-2", n, how))
    cfg = rem("prot", mode="drain", drain_timeout="20s", node_selector=sel("prot-" + how[0]))
    r = rh.run_once(cfg)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "%s: drain-incomplete" % n in r.stdout, r.stdout
    assert "pod default/web-2 is protected" in r.stdout, r.stdout
    assert kube.node(n)["spec"]["unschedulable"] is True
    assert dh.evictions(kube.log(), rh.REM_USER) == []
    assert dh.names(kube.pods(n)) == ["web-1", "web-2"]
    ev = [e for e in kube.events(n) if e["reason"] == "CpuzombieDrainProtected"]
    assert len(ev) == 1 and "default/web-2" in ev[0]["message"], kube.events(n)
    # the next cycle: still blocked, the same Event (once per cordon), still nothing evicted
    r = rh.run_once(cfg)
    assert "pod default/web-2 is protected" in r.stdout, r.stdout
    assert dh.evictions(kube.log(), rh.REM_USER) == []
    assert len([e for e in kube.events(n) if e["reason"] == "CpuzombieDrainProtected"]) == 1


# -- dry-run ---------------------------------------------------------------------------------------

def test_dry_run_says_which_guard_would_hold(kube, rem, tmp_path):
    """dry-run runs the same guards, read-only, and says which would hold and why: the storm
    (4 of 10 True), a protected pod (the drain would stop), the cluster-wide pause; with none,
    "would cordon". Nothing is written but the dry-run Events: no node, pod, Lease or
    ConfigMap change by the remediator."""
    names = nodes(kube, "dry", 10, 4)
    kube.add(kh.rs_obj("web"), gh.protected_pod("web-2", names[0], "protect"))
    storm = rem("dry-storm", mode="dry-run", node_selector=sel("dry"))
    r = rh.run_once(storm)
    assert r.returncode == 0, r.stdout + r.stderr
    for n in names[:4]:
        assert "%s: dry-run: dry-run: would hold: storm guard" % n in r.stdout, r.stdout
        assert gh.reasons(kube, n) == ["CpuzombieDryRun"], kube.events(n)
    one = lambda n: rem("dry-" + n, mode="dry-run",  # noqa: E731
                        node_selector='"kubernetes.io/hostname=%s"' % n)
    r = rh.run_once(one(names[0]))
    assert "%s: dry-run" % names[0] in r.stdout and \
        "a drain would be held: pod default/web-2 is protected" in r.stdout, r.stdout
    free = one(names[1])
    r = rh.run_once(free)
    assert "%s: dry-run: dry-run: would cordon: MemcgZombieLeak has been True" % names[1] in \
        r.stdout and "no guard holds" in r.stdout, r.stdout
    gh.admin_kubectl(kube, tmp_path, "-n", kh.LEASE_NS, "create", "configmap", gh.PAUSE_CM,
                     "--from-literal=reason=kernel rollout")
    try:
        r = rh.run_once(free)
        assert "%s: dry-run: dry-run: would hold: paused cluster-wide" % names[1] in r.stdout, \
            r.stdout
    finally:
        gh.admin_kubectl(kube, tmp_path, "-n", kh.LEASE_NS, "delete", "configmap", gh.PAUSE_CM)
    assert gh.held(kube, names) == [] and kube.leases() == []
    assert gh.node_writes(kube.log()) == []
    # the remediator's writes: Events, its own leader Lease, and its clock (dry-run judges
    # `for` by it: cpuzombie.io/true-since on each True node it saw, nothing else)
    clock = [e for e in kube.log() if e["user"] == rh.REM_USER and gh.clock_write(e)]
    assert sorted({e["path"].rsplit("/", 1)[1] for e in clock}) == sorted(names[:4]), clock
    writes = {(e["method"], e["path"]) for e in kube.log()
              if e["user"] == rh.REM_USER and e["method"] != "GET" and not gh.clock_write(e)}
    assert writes <= {("POST", "/api/v1/namespaces/default/events"),
                      ("POST", rh.LEADER_PATH.rsplit("/", 1)[0]), ("PUT", rh.LEADER_PATH)}, \
        writes


# -- pacing and windows --------------------------------------------------------------------------

def test_drain_gap_spaces_remediations_out(kube, rem, guard_rbac):
    """drain_gap 10m: two sick nodes and room in the budget, one remediation starts; the other
    waits for the gap, which is kept in the cluster (a second process sees it too)."""
    names = nodes(kube, "gap", 2, 2)
    cfg = rem("gap", mode="cordon", max_unavailable="2", drain_gap="10m",
              node_selector=sel("gap"))
    for _ in range(2):
        r = rh.run_once(cfg)
        assert r.returncode == 0, r.stdout + r.stderr
        assert gh.held(kube, names) == names[:1], r.stdout
        assert "%s: held" % names[1] in r.stdout and "drain gap: the last remediation (%s)" \
            % names[0] in r.stdout, r.stdout
    assert names[0] in kube.get(gh.GUARD_PATH)["metadata"]["annotations"][
        "cpuzombie.io/last-remediation"]


def _window_around_now(zone):
    now = datetime.datetime.now(zoneinfo.ZoneInfo(zone))
    a, b = now - datetime.timedelta(minutes=10), now + datetime.timedelta(minutes=20)
    return a.strftime("%H:%M"), b.strftime("%H:%M")


def test_maintenance_window_in_a_time_zone(kube, rem):
    """A window of the next half hour in Asia/Tokyo (UTC+9, no DST): open there now, so the
    node is cordoned; the same hours in UTC are closed now, so the other config only does a
    dry-run (an Event, nothing changed). The zone comes from the TZ database via the C
    library."""
    names = nodes(kube, "win", 2, 2)
    start, end = _window_around_now("Asia/Tokyo")
    utc = rem("win-utc", mode="cordon", window_start='"%s"' % start, window_end='"%s"' % end,
              window_timezone="UTC", node_selector='"kubernetes.io/hostname=%s"' % names[1])
    r = rh.run_once(utc)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "%s: dry-run" % names[1] in r.stdout and "outside the maintenance window" in r.stdout
    assert gh.held(kube, names) == []
    assert gh.reasons(kube, names[1]) == ["CpuzombieDryRun"]
    tokyo = rem("win-tokyo", mode="cordon", window_start='"%s"' % start,
                window_end='"%s"' % end, window_timezone="Asia/Tokyo",
                node_selector='"kubernetes.io/hostname=%s"' % names[0])
    r = rh.run_once(tokyo)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "%s: cordoned" % names[0] in r.stdout, r.stdout + r.stderr
    assert gh.held(kube, names) == names[:1]


def test_unknown_time_zone_is_refused(kube, rem):
    cfg = rem("badtz", mode="cordon", window_start='"02:00"', window_timezone="Mars/Olympus")
    r = rh.run_once(cfg)
    assert r.returncode == 2, r.stdout + r.stderr
    assert "window_timezone 'Mars/Olympus': not in the TZ database" in r.stderr
    assert len([l for l in r.stderr.splitlines() if l.strip()]) == 1, r.stderr

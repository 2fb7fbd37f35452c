# SPDX-License-Identifier: MIT
"""The real node-problem-detector, v0.8.20 (../shared/bin), v1.34.0 and v1.36.0 (the current
release, the chart's; v1.34.0 and v1.36.0 built by tests/tools/kube/build.sh), each test once per version, running our shipped
config/npd/*.json, with only the plugin path and the host roots rewritten, on this host: what
NPD makes of our OK, problem, Unknown and an over-long message (problem_gauge, problem_counter,
node conditions, events), checked against docs/design.md ("The NPD plugin protocol"). Its
Kubernetes exporter talks to
the real control plane (kube-apiserver through the test's fault proxy) as the chart's
ServiceAccount with a token bound to the agent's pod on a kwok node, never as the admin; the
chart's admission policy holds it to that node; a real `kubectl describe node` (the admin's
kubeconfig: a person looking) shows our conditions and messages; real dying memcgs turn
MemcgZombieLeak True with our message, and their release turns it back. The chart's own NPD
command line (helm template) runs unchanged but for paths, with the in-cluster credentials a
pod has."""

import contextlib
import os
import re
import subprocess

import pytest

import kube_helpers as kh
import npd_helpers as nh
from conftest import FIXTURES, is_root
from memcg_helpers import DyingMemcgs

pytestmark = [
    pytest.mark.skipif(not is_root(), reason="needs root: NPD runs in a private mount namespace "
                       "so the checks' default state and run dirs are the test's"),
]
ZOMBIES = os.path.join(FIXTURES, "memcg", "v1-zombies")
MISSING = "/nonexistent-cpuzombie-root"
MEMCG_MSG = re.compile(r"^(\d+) dying memcgs vs (\d+) live")


def direct(cz_bin, cfg, tmp_path):
    """Runs the rule of a rewritten config the way NPD does (same path and args, private
    state) and returns (exit code, stdout line)."""
    rule = cfg["rules"][0]
    st = tmp_path / ("direct-" + rule["reason"])
    # --state-dir first: main's option parser takes common options before the command
    p = subprocess.run([rule["path"], "--state-dir", str(st), "--run-dir", str(st / "run")] +
                       rule["args"], capture_output=True, text=True, timeout=60)
    return p.returncode, p.stdout.strip()


@pytest.fixture
def cz_bin(cz_bin):
    """What NPD execs: the check binary (the image's /opt/cpuzombie/bin/cpuzombie) beside the
    binary under test, when the build makes one."""
    check = os.path.join(os.path.dirname(cz_bin), "cpuzombie-check")
    return check if os.access(check, os.X_OK) else cz_bin


@pytest.fixture(params=nh.version_params())
def npd(request):
    """(version, binary) of the NPD under test."""
    return request.param, nh.npd_for(request.param)


def node_name(version):
    return "npd-real-%s-%d" % (version.replace(".", "-"), os.getpid())


@pytest.fixture
def cluster(kube, npd, tmp_path):
    """A kwok node of this test's and the kubeconfig NPD uses: the chart's ServiceAccount,
    a token bound to the agent's pod on that node, the test's fault proxy as the server."""
    node = node_name(npd[0])
    kube.add(kh.node_obj(node))
    return kube, node, kube.kubeconfig(str(tmp_path / "kubeconfig"), node=node)


def start_npd(cluster, npd, tmp_path, cfgs, **kw):
    kube, node, kc = cluster
    return nh.Npd(tmp_path / "npd", cfgs, node, kube.url, kc, binary=npd[1], **kw).start()


def check_npd_requests(kube, version):
    """Every request NPD made was the chart's ServiceAccount's, and the server took it."""
    reqs = nh.npd_requests(kube, version)
    assert reqs
    assert {e["user"] for e in reqs} == {nh.SA_USER}, {e["user"] for e in reqs}
    bad = [(e["method"], e["path"], e["status"]) for e in reqs if e["status"] >= 300]
    assert not bad, bad
    return reqs


def test_ok_problem_unknown_as_npd_sees_them(cz_bin, cluster, npd, tmp_path):
    """memcg on a fixture leak (problem), cpu on a missing root (Unknown), ena on this host
    (OK): conditions, gauges, counters and events as docs/design.md says, and kubectl shows
    them."""
    kube, node, kc = cluster
    version = npd[0]
    cfgs = {
        "cpuzombie-memcg": nh.rewrite(nh.shipped_config("cpuzombie-memcg"), cz_bin,
                                      ZOMBIES + "/proc", ZOMBIES + "/sys"),
        "cpuzombie-cpu": nh.rewrite(nh.shipped_config("cpuzombie-cpu"), cz_bin,
                                    MISSING + "/proc", MISSING + "/sys"),
        "cpuzombie-ena": nh.rewrite(nh.shipped_config("cpuzombie-ena"), cz_bin, "/proc", "/sys"),
    }
    want = {n: direct(cz_bin, c, tmp_path) for n, c in cfgs.items()}
    assert want["cpuzombie-memcg"][0] == 1 and MEMCG_MSG.match(want["cpuzombie-memcg"][1])
    assert want["cpuzombie-cpu"][0] == 2, want
    if want["cpuzombie-ena"][0] != 0:
        pytest.skip("this host's ENA check is not OK (%r): the OK case needs a healthy host"
                    % (want["cpuzombie-ena"],))
    for rc, line in want.values():
        assert 0 < len(line.encode()) <= 256     # --max-output 256 = max_output_length

    npd = start_npd(cluster, npd, tmp_path, cfgs)
    try:
        # problem -> True, the rule's reason, our message
        memcg = nh.wait_condition(kube, node, "MemcgZombieLeak", lambda c: c["status"] == "True")
        assert memcg["reason"] == "ZombieMemcgsHigh"
        assert memcg["message"] == want["cpuzombie-memcg"][1]
        # Unknown (exit 2) -> Unknown, the *default* reason, our message
        cpu = nh.wait_condition(kube, node, "CPUCoreSaturation",
                                lambda c: c["status"] == "Unknown")
        assert cpu["reason"] == "NoCoreSaturation"
        assert cpu["message"] == want["cpuzombie-cpu"][1]
        # OK -> False, default reason and default message (our line is not shown)
        ena = nh.wait_condition(kube, node, "ENADeviceReset", lambda c: c["status"] == "False")
        default = nh.shipped_config("cpuzombie-ena")["conditions"][0]
        assert (ena["reason"], ena["message"]) == (default["reason"], default["message"])

        # problem_gauge is 1 only while True; Unknown looks like False
        assert npd.gauges("MemcgZombieLeak") == {"ZombieMemcgsHigh": 1}
        assert npd.gauges("CPUCoreSaturation") == {"CoreSaturationBursts": 0,
                                                   "NoCoreSaturation": 0}
        assert npd.gauges("ENADeviceReset") == {"ENAResetsDetected": 0, "NoENAResets": 0}
        # problem_counter counts the rule's reason once per event (the transition to True)
        assert npd.counter("ZombieMemcgsHigh") == 1
        assert npd.counter("CoreSaturationBursts") == 0

        # every condition change is an event on the node: a Warning for True, Normal otherwise,
        # POSTed as protobuf by client-go's recorder (stored by the real server)
        evs = nh.wait_events(kube, node, lambda evs: {"ZombieMemcgsHigh", "NoCoreSaturation"}
                             <= {e["reason"] for e in evs})
        by_reason = {e["reason"]: e for e in evs}
        ev = by_reason["ZombieMemcgsHigh"]
        assert ev["type"] == "Warning" and ev["source"]["component"] == "cpuzombie-memcg"
        assert want["cpuzombie-memcg"][1] in ev["message"]
        assert "is now: True" in ev["message"]
        ev = by_reason["NoCoreSaturation"]
        assert ev["type"] == "Normal" and "is now: Unknown" in ev["message"]
        assert "ENAResetsDetected" not in by_reason      # OK at start: no change, no event
        assert all(e["involvedObject"]["kind"] == "Node" for e in evs)
        reqs = check_npd_requests(kube, version)
        posts = [e for e in reqs if e["method"] == "POST" and e["path"].endswith("/events")]
        assert posts and all(e["ctype"] == "application/vnd.kubernetes.protobuf" for e in posts)
        patches = [e for e in reqs if e["method"] == "PATCH"]
        assert patches and all(e["path"] == "/api/v1/nodes/%s/status" % node and
                               e["ctype"] == "application/strategic-merge-patch+json"
                               for e in patches)

        # a real kubectl describe node shows the three conditions with our messages
        admin = kube.admin_kubeconfig(str(tmp_path / "admin.kubeconfig"))
        out = kh.kubectl(admin, "describe", "node", node).stdout
        table = nh.describe_conditions(out)
        assert table["MemcgZombieLeak"] == ("True", "ZombieMemcgsHigh",
                                            want["cpuzombie-memcg"][1])
        assert table["CPUCoreSaturation"] == ("Unknown", "NoCoreSaturation",
                                              want["cpuzombie-cpu"][1])
        assert table["ENADeviceReset"] == ("False", default["reason"], default["message"])
        if version == "v1.36.0":
            # v1.36.0's recorder names the node without a UID (problem_client.go: nodeRef
            # lost UID: nodeName, gained APIVersion v1), and kubectl describe node lists the
            # Events whose involvedObject.uid is the node's UID or its name: ours are in the
            # API (above) but not under Events: there
            assert all(not e["involvedObject"].get("uid") for e in evs), evs
            assert "ZombieMemcgsHigh" not in out.split("Events:")[1]
        else:
            assert all(e["involvedObject"].get("uid") == node for e in evs), evs
            assert "ZombieMemcgsHigh" in out.split("Events:")[1]
    finally:
        npd.stop()
    # the plugin's default state dir was NPD's private /var/lib, not the host's
    assert os.path.exists(os.path.join(npd.varlib, "cpuzombie", "memcg"))


def test_overlong_message_is_cut_at_max_output_length_bytes(cz_bin, cluster, npd, tmp_path):
    """NPD trims stdout, then cuts it to max_output_length bytes. The shipped configs pair
    max_output_length 256 with --max-output 256, so our line is never cut (checked above);
    here the memcg config's max_output_length alone is lowered to 40 to see NPD's cut."""
    kube, node, kc = cluster
    cfg = nh.rewrite(nh.shipped_config("cpuzombie-memcg"), cz_bin, ZOMBIES + "/proc",
                     ZOMBIES + "/sys")
    rc, line = direct(cz_bin, cfg, tmp_path)
    assert rc == 1 and len(line) > 40
    cfg["pluginConfig"]["max_output_length"] = 40
    version = npd[0]
    npd = start_npd(cluster, npd, tmp_path, {"cpuzombie-memcg": cfg})
    try:
        c = nh.wait_condition(kube, node, "MemcgZombieLeak", lambda c: c["status"] == "True")
        # trimmed first, then cut: a cut after a space leaves it at the end
        assert c["message"] == line.encode()[:40].decode()
        assert c["message"] != line
        check_npd_requests(kube, version)
    finally:
        npd.stop()


@pytest.mark.skipif(not is_root(), reason="needs root: makes real dying memcgs")
def test_real_dying_memcgs_turn_the_condition_true_then_false(cz_bin, cluster, npd, tmp_path):
    """All four shipped configs on this host's real /proc and /sys. 2000 real dying memcgs
    turn MemcgZombieLeak True with our message (the default thresholds, 1000 dying and x10,
    are met on a host with fewer than 200 live memcgs); releasing them turns it False with the
    default message. Only the memcg rule's invoke_interval is lowered (60s -> 5s) so the test
    does not wait minutes; thresholds are the shipped defaults."""
    kube, node, kc = cluster
    cfgs = {n: nh.rewrite(nh.shipped_config(n), cz_bin, "/proc", "/sys")
            for n in nh.NPD_CONFIGS}
    cfgs["cpuzombie-memcg"]["pluginConfig"]["invoke_interval"] = "5s"
    rc, line = direct(cz_bin, cfgs["cpuzombie-memcg"], tmp_path)
    if rc != 0:
        pytest.skip("this host already has a memcg problem (%r)" % line)
    live = int(MEMCG_MSG.match(line).group(2))
    if live * 10 > 2000:
        pytest.skip("%d live memcgs: 2000 dying are below the default x10 ratio" % live)
    admin = kube.admin_kubeconfig(str(tmp_path / "admin.kubeconfig"))
    version = npd[0]
    npd = start_npd(cluster, npd, tmp_path, cfgs)
    try:
        nh.wait_condition(kube, node, "MemcgZombieLeak", lambda c: c["status"] == "False")
        # made while NPD is paused: a check that ran while they were being made (seen with
        # 1244 of them, over the 1000 threshold already) would set True with that count, and
        # True -> True with only a new message is no update (docs/design.md)
        with contextlib.ExitStack() as made:
            with npd.paused():
                d = made.enter_context(DyingMemcgs(2000, tmp_path))
            c = nh.wait_condition(kube, node, "MemcgZombieLeak",
                                  lambda c: c["status"] == "True")
            m = MEMCG_MSG.match(c["message"])
            assert m and int(m.group(1)) >= 2000, c
            assert c["reason"] == "ZombieMemcgsHigh"
            table = nh.describe_conditions(kh.kubectl(admin, "describe", "node", node).stdout)
            assert table["MemcgZombieLeak"][:2] == ("True", "ZombieMemcgsHigh")
            assert MEMCG_MSG.match(table["MemcgZombieLeak"][2])
            for t in ("CPUCoreSaturation", "ENADeviceReset"):
                assert t in table
            assert npd.gauge("MemcgZombieLeak", "ZombieMemcgsHigh") == 1
            d.release()
            default = cfgs["cpuzombie-memcg"]["conditions"][0]
            c = nh.wait_condition(kube, node, "MemcgZombieLeak",
                                  lambda c: c["status"] == "False")
            assert (c["reason"], c["message"]) == (default["reason"], default["message"])
            assert npd.gauge("MemcgZombieLeak", "ZombieMemcgsHigh") == 0
        check_npd_requests(kube, version)
    finally:
        npd.stop()


def test_npd_may_report_only_on_its_own_node(cz_bin, kube, npd, tmp_path):
    """The chart's admission policy holds NPD, not only the agent, to the node its token is
    bound to: NPD with a token of the agent's pod on node A, told it is node B, may read B
    (RBAC: get nodes) but its condition PATCH and its Events about B are refused by the real
    server with 403 (the policy's reason: Forbidden), and B gets none of our conditions. NPD keeps running."""
    version, binary = npd
    a, b = node_name(version) + "-a", node_name(version) + "-b"
    kube.add(kh.node_obj(a), kh.node_obj(b))
    token = kube.agent_token(a)
    kc = kube.kubeconfig(str(tmp_path / "kubeconfig"), user={"token": token})
    nh.wait_policy_in_force(kube, token, b)
    kube.reset_log()
    cfg = nh.rewrite(nh.shipped_config("cpuzombie-memcg"), cz_bin, ZOMBIES + "/proc",
                     ZOMBIES + "/sys")
    n = nh.Npd(tmp_path / "npd", {"cpuzombie-memcg": cfg}, b, kube.url, kc,
               binary=binary).start()
    try:
        def refused():
            reqs = nh.npd_requests(kube, version)
            return {(e["method"], e["path"].rsplit("/", 1)[-1] if "events" in e["path"]
                     else e["path"]) for e in reqs if e["status"] == 403}
        want = {("PATCH", "/api/v1/nodes/%s/status" % b), ("POST", "events")}
        kh.wait_until(lambda: want <= refused(), 60, "NPD's writes about %s refused" % b)
        reqs = nh.npd_requests(kube, version)
        assert {e["user"] for e in reqs} == {nh.SA_USER}
        assert ("GET", "/api/v1/nodes/" + b, 200) in {(e["method"], e["path"], e["status"])
                                                     for e in reqs}
        # nothing it wrote was taken
        assert not [e for e in reqs if e["method"] != "GET" and e["status"] < 300], reqs
        for node in (a, b):
            types = {c["type"] for c in kube.node(node)["status"].get("conditions", [])}
            assert "MemcgZombieLeak" not in types, (node, types)
            assert not kube.events(node), node
        # and NPD says why (its log follows the answer the proxy logged)
        for why in ("may not change node " + b, "may only record events about its own node"):
            kh.wait_until(lambda: why in n.logtail(200000), 30, "NPD's log: " + why)
        assert n.proc.poll() is None, n.logtail()
    finally:
        n.stop()


@pytest.fixture(scope="module")
def helm():
    if kh.kubectl_path() is None:
        pytest.skip("no kubectl/helm (tests/tools/get-kube-tools.sh)")
    return os.path.join(kh.ROOT, "build", "tools", "bin", "helm")


def chart_npd_container(helm, *sets):
    import pod_helpers as ph
    args = []
    for s in sets:
        args += ["--set", s]
    objs = ph.render_chart(helm, os.path.join(kh.ROOT, "charts", "cpuzombie"), *args)
    ds = next(o for o in objs if o["kind"] == "DaemonSet")
    return next(c for c in ds["spec"]["template"]["spec"]["containers"]
                if c["name"] == "node-problem-detector")


def test_the_charts_npd_command_line_runs_in_cluster(cz_bin, cluster, npd, helm, tmp_path):
    """The NPD container of the chart (helm template, every check on) as its command line says,
    under the version that image tag names or the other: only the binary's path, the config
    paths (the same files, rewritten for this host's plugin path and roots), the Prometheus
    address and port (0.0.0.0:20257 would collide here), and NPD's own status port are the
    test's. No --apiserver-override: NPD finds its credentials as in a pod (in-cluster: the
    ServiceAccount token bound to the agent's pod on the node at /var/run/secrets/..., and
    KUBERNETES_SERVICE_HOST/PORT), its node name from NODE_NAME (the chart's env), and sets our
    conditions on the real server with every flag of the chart accepted."""
    kube, node, _ = cluster
    version, binary = npd
    c = chart_npd_container(helm)
    cmd = c["command"] + c.get("args", [])
    assert cmd[0] == "/node-problem-detector", cmd
    # NODE_NAME, and POD_NAMESPACE (the Leases' namespace is the pod's own), both
    # from the downward API
    assert [(e["name"], e["valueFrom"]["fieldRef"]["fieldPath"]) for e in c["env"]] == \
        [("NODE_NAME", "spec.nodeName"), ("POD_NAMESPACE", "metadata.namespace")], c["env"]
    flag = {a.split("=", 1)[0]: a.split("=", 1)[1] if "=" in a else None for a in cmd[1:]}
    files = flag["--config.custom-plugin-monitor"].split(",")
    assert [os.path.basename(f)[:-5] for f in files] == sorted(nh.NPD_CONFIGS), files
    assert "--apiserver-override" not in flag and "--enable-k8s-exporter" not in flag
    cfgs = {n: nh.rewrite(nh.shipped_config(n), cz_bin, ZOMBIES + "/proc", ZOMBIES + "/sys")
            for n in nh.NPD_CONFIGS}
    status_port = nh.free_port()

    def command(paths, prom_port):
        by_name = {os.path.basename(p): p for p in paths}
        out = [binary]
        for a in cmd[1:]:
            name = a.split("=", 1)[0]
            if name == "--config.custom-plugin-monitor":
                a = name + "=" + ",".join(by_name[os.path.basename(f)] for f in files)
            elif name == "--prometheus-address":
                a = name + "=127.0.0.1"
            elif name == "--prometheus-port":
                a = name + "=%d" % prom_port
            out.append(a)
        return out + ["--port=%d" % status_port]
    n = nh.Npd(tmp_path / "npd", cfgs, node, command=command,
               env={"NODE_NAME": node, "POD_NAMESPACE": kh.AGENT_NS})
    assert "--hostname-override" not in " ".join(n.args), n.args
    n.env.update(nh.in_cluster_credentials(n, kube, kube.agent_token(node)))
    n.start()
    try:
        memcg = nh.wait_condition(kube, node, "MemcgZombieLeak", lambda c: c["status"] == "True")
        assert memcg["reason"] == "ZombieMemcgsHigh" and MEMCG_MSG.match(memcg["message"])
        for t in ("CPUCoreSaturation", "ENADeviceReset"):
            nh.wait_condition(kube, node, t, lambda c: c["status"] in ("True", "False",
                                                                        "Unknown"))
        reqs = check_npd_requests(kube, version)
        assert any(e["method"] == "PATCH" and e["path"] == "/api/v1/nodes/%s/status" % node
                   for e in reqs)
        assert n.gauge("MemcgZombieLeak", "ZombieMemcgsHigh") == 1
        assert n.proc.poll() is None
    finally:
        n.stop()

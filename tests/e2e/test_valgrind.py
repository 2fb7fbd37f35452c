# SPDX-License-Identifier: MIT
"""valgrind memcheck over end-to-end runs of every subcommand, good and error paths: no memory
error and no definite leak (tests/tools/valgrind-run.sh: --error-exitcode=99, --leak-check=full,
--errors-for-leak-kinds=definite). ASan+UBSan cover the same suite in the sanitizer pass; valgrind
runs on the plain build only (it cannot run an ASan binary), so that pass skips this file."""
import json
import os
import shutil
import subprocess
import types

import pytest

import fleet_helpers as fh
import hardening_helpers as hh
import kube_helpers as kh

VG = os.path.join(hh.ROOT, "tests", "tools", "valgrind-run.sh")
MEMCG = os.path.join(hh.FIXTURES, "memcg", "this-vm-hybrid")
ZOMBIES = os.path.join(hh.FIXTURES, "memcg", "v1-zombies")
ENA = os.path.join(hh.FIXTURES, "ena")
FX01 = os.path.join(ENA, "01-ethq15-ena-1.2.0k-ethtool-i-and-S.txt")
FX02 = os.path.join(ENA, "02-sliderule518-ens34-ena-2.14-2.15-allowance-exceeded.txt")

pytestmark = [
    pytest.mark.skipif(not shutil.which("valgrind"), reason="valgrind not installed"),
    pytest.mark.skipif("asan" in os.path.basename(os.environ.get("CZ_BUILD", "")),
                       reason="valgrind cannot run the ASan+UBSan build; the plain pass runs it"),
]


def vg(tmp_path, *args, rcs=(0,), env=None, timeout=120):
    log = str(tmp_path / ("vg-%d.log" % len(os.listdir(tmp_path))))
    e = dict(os.environ, **(env or {}))
    cmd = [VG, log, hh.bin_path(), "--state-dir", str(tmp_path / "st"), "--run-dir",
           str(tmp_path / "run"), *args]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=e)
    report = open(log).read() if os.path.exists(log) else ""
    assert p.returncode != 99, "valgrind: %s\n%s" % (" ".join(args), report)
    assert "definitely lost" not in report and "Invalid" not in report, report
    assert p.returncode in rcs, (args, p.returncode, p.stdout, p.stderr)
    return p


def tree(path):
    return ["--proc-root", path + "/proc", "--sys-root", path + "/sys"]


def test_check_memcg(tmp_path):
    vg(tmp_path, *tree(ZOMBIES), "check", "memcg", rcs=(1,))      # problem, history written
    vg(tmp_path, *tree(ZOMBIES), "check", "memcg", rcs=(1,))      # history read back
    vg(tmp_path, *tree(MEMCG), "check", "memcg", rcs=(0,))
    vg(tmp_path, *tree(str(tmp_path / "none")), "check", "memcg", rcs=(2,))
    bad = tmp_path / "bad.yaml"
    bad.write_text("memcg:\n  min_dying: lots\n  nonesuch: 1\n")
    vg(tmp_path, "--config", str(bad), *tree(MEMCG), "check", "memcg", rcs=(2,))
    st = tmp_path / "st"
    (st / "memcg").write_text("cpuzombie-state 1 memcg\ngarbage\nend 00000000\n")
    vg(tmp_path, *tree(ZOMBIES), "check", "memcg", rcs=(1,))      # corrupt state moved aside


def test_agent_once_and_check_cpu(tmp_path):
    cfg = tmp_path / "cz.yaml"
    cfg.write_text("cpu:\n  inline_window: 2s\n  min_burst: 2s\n")
    vg(tmp_path, "--config", str(cfg), "agent", "--once", timeout=180)
    assert (tmp_path / "run" / "cpu-heartbeat").exists()
    vg(tmp_path, "--config", str(cfg), "check", "cpu", rcs=(0, 1))   # from the agent's files
    (tmp_path / "run" / "cpu-bursts").write_bytes(os.urandom(300))
    vg(tmp_path, "--config", str(cfg), "check", "cpu", rcs=(0, 1, 2))
    shutil.rmtree(tmp_path / "run")     # no sampler: inline sampling on a bad proc root
    vg(tmp_path, "--proc-root", str(tmp_path), "check", "cpu", rcs=(2,))


def test_check_ena_and_allowance(tmp_path):
    vg(tmp_path, "check", "ena", rcs=(0,))        # this machine's NICs (no ENA: OK)
    vg(tmp_path, "check", "ena-allowance", rcs=(0,))
    (tmp_path / "st" / "ena").write_text("cpuzombie-state 1 ena\nnot a state\nend 00000000\n")
    vg(tmp_path, "check", "ena", rcs=(0,))
    cfg = tmp_path / "cz.yaml"
    cfg.write_text("ena:\n  interfaces: [nonesuch0]\n")
    vg(tmp_path, "--config", str(cfg), "check", "ena", rcs=(0, 2))


def test_config_check_and_ena_diff(tmp_path):
    vg(tmp_path, "config", "check", "--config", os.path.join(hh.ROOT, "config", "cpuzombie.yaml"))
    vg(tmp_path, "-v", "config", "check")
    bad = tmp_path / "bad.yaml"
    bad.write_text("cpu: [\n")
    vg(tmp_path, "config", "check", "--config", str(bad), rcs=(2,))
    vg(tmp_path, "ena-diff", FX01, FX01, rcs=(0,))
    after = tmp_path / "after.txt"
    after.write_text(open(FX01).read().replace("tx_timeout: 0", "tx_timeout: 3"))
    vg(tmp_path, "ena-diff", FX01, str(after), rcs=(1,))
    vg(tmp_path, "ena-diff", FX02, FX02, rcs=(0,))
    (tmp_path / "junk.txt").write_bytes(os.urandom(1000))
    vg(tmp_path, "ena-diff", FX01, str(tmp_path / "junk.txt"), rcs=(2,))
    vg(tmp_path, "--version")
    vg(tmp_path, "--help")
    vg(tmp_path, "frobnicate", rcs=(2,))


def test_agent_once_kube_on_the_real_control_plane(kube, tmp_path):
    """The Kubernetes cycles against the real API server, as the chart deploys them: the agent,
    as the chart's agent ServiceAccount, sets the conditions (agent.remediate false); the
    remediator, as its own ServiceAccount, cordons and drains; then the agent is refused by
    real RBAC (a ServiceAccount bound to nothing: 403), then finds no server at all."""
    import remediator_helpers as remh
    kube.add(kh.node_obj("vg-n1", conditions=[
        {"type": "Ready", "status": "True", "reason": "KubeletReady", "message": "ok",
         "lastHeartbeatTime": "2024-01-01T00:00:00Z",
         "lastTransitionTime": "2024-01-01T00:00:00Z"},
        {"type": "MemcgZombieLeak", "status": "True", "reason": "R", "message": "m",
         "lastHeartbeatTime": "2024-01-01T00:00:00Z",
         "lastTransitionTime": "2024-01-01T00:00:00Z"}]),
        kh.rs_obj("rs"), kh.pod_obj("web", "vg-n1", owner=("ReplicaSet", "rs")))

    def config(kc):
        cfg = tmp_path / "cz.yaml"
        cfg.write_text(kh.AGENT_CPU +
                       "kubernetes:\n  node_name: vg-n1\n  kubeconfig: %s\n  timeout: 10s\n"
                       "agent:\n  set_conditions: true\n  remediate: false\n" % kc)
        return str(cfg)
    node = tree(kh.agent_tree(tmp_path, "v1-zombies"))
    cfg = config(kube.kubeconfig(str(tmp_path / "kc"), node="vg-n1"))
    p = vg(tmp_path, "--config", cfg, *node, "agent", "--once", timeout=240)
    assert "conditions: 3 set" in p.stdout, p.stdout
    remh.drop_leader(kube)
    rem = remh.config(tmp_path, remh.remediator_kubeconfig(kube, str(tmp_path / "kc-rem")),
                      mode="drain", **{"for": "0s"}, drain_timeout="20s")  # acts at once
    p = vg(tmp_path, "--config", rem, "remediator", "--once", timeout=240,
           env={"POD_NAME": "remediator-vg"})
    assert "drained" in p.stdout, p.stdout
    assert kube.node("vg-n1")["spec"].get("unschedulable") is True
    assert [x["metadata"]["name"] for x in kube.pods("vg-n1")] == []
    # error paths: the API refuses (real RBAC), then is gone
    denied = fh.viewer_kubeconfig(kube.cp, str(tmp_path / "kc-nobody"), kube.url, fh.NOBODY)
    vg(tmp_path, "--config", config(denied), *node, "agent", "--once", rcs=(2,), timeout=240)
    assert {e["status"] for e in kube.log() if e["user"].endswith(":" + fh.NOBODY)} == {403}
    gone = kube.cp.kubeconfig(str(tmp_path / "kc-gone"), {"token": "x"},
                              server="https://127.0.0.1:%d" % kh.cluster.free_port())
    vg(tmp_path, "--config", config(gone), *node, "agent", "--once", rcs=(2,), timeout=240)


def test_agent_once_kube_on_garbage_answers(control_plane, tmp_path):
    # a serving certificate for 127.0.0.1 from the control plane's CA (kube_helpers.Certs no
    # longer makes one)
    serving = types.SimpleNamespace(server_cert=control_plane.proxy_cert,
                                    server_key=control_plane.proxy_key)
    srv = hh.RawApi(serving, lambda m, p, b: hh.Reply(body=b'{"items": 5, "kind": "Node", "status"'))
    try:
        kc = hh.kubeconfig(str(tmp_path / "kc"), srv.url, control_plane.ca)
        cfg = tmp_path / "cz.yaml"
        cfg.write_text(kh.AGENT_CPU +
                       "kubernetes:\n  node_name: n1\n  kubeconfig: %s\n  timeout: 2s\n"
                       "agent:\n  set_conditions: true\nremediation:\n  mode: cordon\n  lease_namespace: cpuzombie\n" % kc)
        vg(tmp_path, "--config", str(cfg), *tree(kh.agent_tree(tmp_path, "v1-zombies")),
           "agent", "--once", rcs=(2,), timeout=240)
    finally:
        srv.stop()


def test_report(tmp_path):
    vg(tmp_path, "report", rcs=(0, 1))
    p = vg(tmp_path, "report", "--json", rcs=(0, 1))
    json.loads(p.stdout)
    vg(tmp_path, "report", "--svg", str(tmp_path / "h.svg"), rcs=(0, 1))
    vg(tmp_path, *tree(ZOMBIES), "report", rcs=(1,))
    # error paths: nothing readable, a corrupt run dir, an unwritable SVG, a bad option
    vg(tmp_path, *tree(str(tmp_path / "none")), "report", "--json", rcs=(0, 1))
    run = tmp_path / "run"
    run.mkdir(exist_ok=True)
    for f in ("cpu-history", "cpu-bursts", "cpu-heartbeat"):
        (run / f).write_bytes(os.urandom(700))
    vg(tmp_path, "report", "--svg", str(tmp_path / "h2.svg"), rcs=(0, 1))
    vg(tmp_path, "report", "--svg", "/nonexistent/h.svg", rcs=(2,))
    vg(tmp_path, "report", "--bogus", rcs=(2,))


def test_report_html_and_flame(tmp_path):
    """The page and the flame graph of a burst with a profile and its times (hostile names),
    and their error paths."""
    from test_flame_page import hostile_run
    _, _, cfg, burst_id, _ = hostile_run(tmp_path)
    vg(tmp_path, "--config", cfg, "report", "--html", str(tmp_path / "p.html"), rcs=(0, 1))
    vg(tmp_path, "--config", cfg, "flame", burst_id, "--out", str(tmp_path / "f.svg"))
    vg(tmp_path, "--config", cfg, "flame", burst_id, rcs=(0,))
    vg(tmp_path, "--config", cfg, "flame", "1-99", rcs=(2,))
    vg(tmp_path, "--config", cfg, "flame", burst_id, "--out", "/nonexistent/f.svg", rcs=(2,))
    vg(tmp_path, "--config", cfg, "report", "--html", "/nonexistent/p.html", rcs=(2,))


def test_fleet_on_the_real_control_plane(kube, tmp_path):
    """`fleet` over 120 real nodes in pages of the real server, cut messages, a real 410 (etcd
    compacted between two pages) and the restart, Leases denied by real RBAC, a bad
    kubeconfig."""
    fl = fh.Fleet(kube.cp)
    fl.create(fh.seed_nodes({"count": 120, "zombies": 20, "cpu": 3, "ena": 2, "held": 1,
                             "bare": 0.1, "cut": [80, 256], "prefix": "vg-", "tag": "vg"}))
    try:
        sel = ("-l", fh.FLEET_LABEL + "=vg")
        env = {"HOME": str(tmp_path)}
        kc = fh.viewer_kubeconfig(kube.cp, str(tmp_path / "kc"), kube.url)
        vg(tmp_path, "fleet", "--kubeconfig", kc, *sel, "--chunk-size", "25", "--nodes",
           "--group-by", "eks.amazonaws.com/nodegroup", rcs=(1,), env=env)

        def compact():
            st, _ = kube.cp.raw("PATCH", "/api/v1/nodes/" + fl.names[0], {"metadata": {
                "annotations": {"cpuzombie.test/touched": "1"}}}, "application/merge-patch+json")
            assert st == 200
            kube.cp.compact_etcd()
        kube.proxy.add_page_hook(2, compact)
        denied = fh.viewer_kubeconfig(kube.cp, str(tmp_path / "kc-no-leases"), kube.url,
                                      fh.NO_LEASES)
        since = kube.log()[-1]["seq"]
        p = vg(tmp_path, "fleet", "--kubeconfig", denied, *sel, "--chunk-size", "25", "--json",
               rcs=(1,), env=env)
        doc = json.loads(p.stdout)
        assert doc["nodes"] == 120 and doc["remediation"]["leases"]["readable"] is False
        assert [e["status"] for e in kube.log(since)].count(410) == 1
        vg(tmp_path, "fleet", "--kubeconfig", str(tmp_path / "none"), rcs=(2,), env=env)
    finally:
        fl.delete()

# SPDX-License-Identifier: MIT
"""Condition lifecycle on the real control plane (kube-apiserver, kwok nodes), as the chart's
ServiceAccounts: a restart of NPD (v0.8.20 and v1.34.0, the shipped config) or of the agent on a
True node never shows False on the server (a watch sees every stored version of the node); the
shipped config without skip_initial_status does show False there (the watch can fail); a
condition clears only after recover_after (held True meanwhile, flaps counted in the metrics
file that promtool accepts); a condition turned off is removed (not False) and KernelReady /
NetworkingReady, types we do not own, are untouched; `helm uninstall` with the chart's pre-delete
hook leaves no condition, taint, annotation or Lease of ours."""

import json
import os
import shutil
import subprocess
import threading
import time

import pytest

import kube_helpers as kh
import npd_helpers as nh
from conftest import FIXTURES, is_root
from lifecycle_helpers import NodeWatch

BIN = os.environ.get("CZ_BIN", os.path.join(kh.ROOT, "build", "cpuzombie"))
ZOMBIES = os.path.join(FIXTURES, "memcg", "v1-zombies")
OURS = ("MemcgZombieLeak", "CPUCoreSaturation", "ENADeviceReset")
OLD = "2024-01-01T00:00:00Z"


def cond(t, status, reason="R", message="m"):
    return {"type": t, "status": status, "reason": reason, "message": message,
            "lastHeartbeatTime": OLD, "lastTransitionTime": OLD}


# The EKS node monitoring agent's condition types (theirs: never ours to touch)
THEIRS = [cond("KernelReady", "False", "KernelIsReady"), cond("NetworkingReady", "True",
          "IPAMDNotReady"), cond("StorageReady", "False", "DiskIsReady"),
          cond("ContainerRuntimeReady", "False", "ContainerRuntimeIsReady"),
          cond("AcceleratedHardwareReady", "False", "NvidiaXidErrorSuppressed")]


def check_binary():
    check = os.path.join(os.path.dirname(BIN), "cpuzombie-check")
    return check if os.access(check, os.X_OK) else BIN


def conds(kube, node):
    return {c["type"]: c for c in kube.node(node)["status"].get("conditions", [])}


# -- NPD restart --------------------------------------------------------------------------------

@pytest.mark.skipif(not is_root(), reason="needs root: NPD runs in a private mount namespace")
@pytest.mark.parametrize("skip", [True, False], ids=["shipped", "without-skip"])
@pytest.mark.parametrize("version", nh.VERSIONS)
def test_npd_restart_on_true_node(kube, tmp_path, version, skip):
    """NPD restarted on a node whose MemcgZombieLeak is True: with the shipped config
    (skip_initial_status) the server never holds False; without it, the restart publishes the
    default False before the first check (the complaint users file), which the watch sees."""
    binary = nh.npd_for(version)
    node = "lc-npd-%s-%s-%d" % (version.replace(".", "-"), "s" if skip else "n", os.getpid())
    kube.add(kh.node_obj(node))
    kc = kube.kubeconfig(str(tmp_path / "kubeconfig"), node=node)
    cfg = nh.rewrite(nh.shipped_config("cpuzombie-memcg"), check_binary(), ZOMBIES + "/proc",
                     ZOMBIES + "/sys")
    assert cfg["pluginConfig"]["skip_initial_status"] is True       # as shipped
    # NPD's condition manager syncs once a second, keeping only the newest status per type: a
    # first check quicker than that hides the initial False. A slow first check (check cpu
    # samples 3 s inline while the agent's sampler is not up yet, as after a node reboot) does
    # not: the rule runs our check 2 s late, in both variants.
    rule = cfg["rules"][0]
    rule["args"] = ["-c", 'sleep 2; exec "$0" "$@"', rule["path"]] + rule["args"]
    rule["path"] = "/bin/sh"
    if not skip:
        del cfg["pluginConfig"]["skip_initial_status"]
    first = nh.Npd(tmp_path / "npd1", {"cpuzombie-memcg": cfg}, node, kube.url, kc,
                   binary=binary).start()
    try:
        nh.wait_condition(kube, node, "MemcgZombieLeak", lambda c: c["status"] == "True")
    finally:
        first.stop()
    w = NodeWatch(kube.cp, node)
    second = nh.Npd(tmp_path / "npd2", {"cpuzombie-memcg": cfg}, node, kube.url, kc,
                    binary=binary)
    try:
        started = time.time()
        second.start()
        # its first check ran (the gauge) and reached the server: a version of the node whose
        # condition the new NPD wrote, True
        kh.wait_until(lambda: second.gauge("MemcgZombieLeak", "ZombieMemcgsHigh") == 1, 60,
                      "the restarted NPD's first check")
        kh.wait_until(lambda: any(v.get("MemcgZombieLeak", ("",))[0] == "True"
                                  for v in w.seen[1:]) or w.error, 30,
                      "the restarted NPD's True on the server")
        time.sleep(3)   # its condition manager syncs every second: anything after shows too
    finally:
        second.stop()
        w.stop()
    seen = w.statuses("MemcgZombieLeak")
    assert w.versions() >= 2, seen
    if skip:
        assert set(seen) == {"True"}, seen
    else:
        assert "False" in seen and seen[-1] == "True", seen
    reqs = nh.npd_requests(kube, version)
    assert {e["user"] for e in reqs} == {nh.SA_USER}
    del started


# -- the agent: restart, recover_after, a condition turned off ---------------------------------

def agent_config(tmp, kube, node, extra="", name="cz.yaml"):
    kc = kube.kubeconfig(os.path.join(str(tmp), "kc-" + node), node=node)
    p = os.path.join(str(tmp), name)
    with open(p, "w") as f:
        f.write(kh.AGENT_CPU)
        f.write("kubernetes:\n  node_name: %s\n  kubeconfig: %s\n  timeout: 5s\n" % (node, kc))
        f.write("agent:\n  set_conditions: true\n  remediate: false\n  metrics_textfile: %s\n"
                % os.path.join(str(tmp), "cz.prom"))
        f.write(extra)
    return p


def once(cfg, tree, tmp, node):
    p = subprocess.run(kh.agent_once_args(BIN, cfg, tree, tmp, node), capture_output=True,
                       text=True, timeout=120)
    assert p.returncode == 0, p.stdout + p.stderr
    return p.stdout


def metrics(tmp):
    text = open(os.path.join(str(tmp), "cz.prom")).read()
    if shutil.which("promtool"):
        p = subprocess.run(["promtool", "check", "metrics"], input=text, capture_output=True,
                           text=True, timeout=60)
        assert p.returncode == 0, p.stdout + p.stderr
    out = {}
    for line in text.splitlines():
        if line.startswith("cpuzombie_condition_") and 'condition="MemcgZombieLeak"' in line:
            out[line.split("{")[0]] = float(line.rsplit(" ", 1)[1])
    return out


def test_agent_restart_and_recover_after(kube, tmp_path):
    """The agent restarted on a True node keeps it True; the problem gone, memcg.recover_after
    holds it True (saying it is recovering) until that long of OK checks, across restarts; a
    problem back meanwhile is a flap counted in the metrics, never a False on the server."""
    node = "lc-agent-%d" % os.getpid()
    kube.add(kh.node_obj(node))
    sick, well = kh.agent_tree(tmp_path, "v1-zombies"), kh.agent_tree(tmp_path, "v1-healthy")
    hold = agent_config(tmp_path, kube, node, "memcg:\n  recover_after: 1h\n", "hold.yaml")
    once(hold, sick, tmp_path, node)
    assert conds(kube, node)["MemcgZombieLeak"]["status"] == "True"
    w = NodeWatch(kube.cp, node)
    try:
        once(hold, sick, tmp_path, node)                # a restart, problem still there
        once(hold, well, tmp_path, node)                # gone: held
        c = conds(kube, node)["MemcgZombieLeak"]
        assert c["status"] == "True" and c["message"].startswith("recovering: OK for "), c
        assert "of recover_after 1h; " in c["message"], c
        m = metrics(tmp_path)
        assert m["cpuzombie_condition_recovering"] == 1 and \
            m["cpuzombie_condition_flaps_total"] == 0, m
        once(hold, sick, tmp_path, node)                # back while held: a flap
        once(hold, well, tmp_path, node)
        m = metrics(tmp_path)
        assert m["cpuzombie_condition_flaps_total"] == 1, m
        assert m["cpuzombie_condition_clears_total"] == 0, m
        kh.wait_until(lambda: len(w.seen) >= 1, 10, "the watch")
        held = list(w.statuses("MemcgZombieLeak"))
        short = agent_config(tmp_path, kube, node, "memcg:\n  recover_after: 1s\n", "short.yaml")
        time.sleep(1.2)                                 # OK for longer than 1s now
        once(short, well, tmp_path, node)
        kh.wait_until(lambda: "False" in w.statuses("MemcgZombieLeak"), 10, "the clear")
    finally:
        w.stop()
    assert held and set(held) == {"True"}, held
    assert conds(kube, node)["MemcgZombieLeak"]["reason"] == "ZombieMemcgsNormal"
    m = metrics(tmp_path)
    assert m["cpuzombie_condition_clears_total"] == 1 and \
        m["cpuzombie_condition_recovering"] == 0, m


def test_condition_turned_off_is_removed_theirs_untouched(kube, tmp_path):
    """memcg.condition false: the agent removes MemcgZombieLeak (gone, not False); ours that
    stay on are still set; the EKS monitoring agent's types are exactly as they were."""
    node = "lc-off-%d" % os.getpid()
    kube.add(kh.node_obj(node))
    kube.set_conditions(node, *THEIRS)
    before = {t: c for t, c in conds(kube, node).items() if t not in OURS}
    tree = kh.agent_tree(tmp_path, "v1-zombies")
    once(agent_config(tmp_path, kube, node, name="on.yaml"), tree, tmp_path, node)
    assert conds(kube, node)["MemcgZombieLeak"]["status"] == "True"
    off = agent_config(tmp_path, kube, node, "memcg:\n  condition: false\n", "off.yaml")
    out = once(off, tree, tmp_path, node)
    assert "1 removed" in out, out
    now = conds(kube, node)
    assert "MemcgZombieLeak" not in now, now
    assert {"CPUCoreSaturation", "ENADeviceReset"} <= set(now)
    after = {t: c for t, c in now.items() if t not in OURS}
    assert {t: after[t] for t in before if t != "Ready"} == \
        {t: before[t] for t in before if t != "Ready"}           # kwok heartbeats Ready
    # the removal was a strategic-merge delete by type, as the chart's agent account
    patches = [e for e in kube.log() if e["method"] == "PATCH" and e["path"].endswith("/status")]
    assert patches and {e["user"] for e in patches} == {nh.SA_USER}
    deletes = [c for e in patches for c in (e.get("body") or {}).get("status", {})
               .get("conditions", []) if c.get("$patch") == "delete"]
    assert deletes == [{"type": "MemcgZombieLeak", "$patch": "delete"}], deletes
    out = once(off, tree, tmp_path, node)                        # nothing left to remove
    assert "removed" not in out, out

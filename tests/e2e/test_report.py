"""`cpuzombie report` on this real machine with the whole chain present: real dying memcgs
(memcg_helpers.DyingMemcgs), a crash-looping unit in a real systemd --user manager
(report_helpers.UserManager), and a real pinned system-time burst caught by the running agent.
The report (text, --json and --svg) must name all of them: the zombie ratio, the unit, the burst
on the right core with its top task and the NIC IRQs that core serves, and a profiler hand-off."""
import json
import os
import re
import subprocess
import time

import pytest

from cpu_helpers import burn

from memcg_helpers import DyingMemcgs
from proc_helpers import stop
from report_helpers import UserManager, can_run_manager

pytestmark = [
    pytest.mark.skipif(not can_run_manager(), reason="needs root, systemd and unshare: "
                       "creates memcgs, a systemd --user manager and reads other tasks' /proc"),
    pytest.mark.skipif(os.cpu_count() < 2, reason="needs 2 CPUs: one to burn"),
]


def cpus(cpulist):
    out = set()
    for part in filter(None, cpulist.strip().split(",")):
        lo, _, hi = part.partition("-")
        out.update(range(int(lo), int(hi or lo) + 1))
    return out


@pytest.fixture(scope="module")
def node(tmp_path_factory, cz_bin):
    """The chain on this node, then report, report --json and report --svg run once."""
    tmp = tmp_path_factory.mktemp("report")
    hot = os.cpu_count() - 1
    with UserManager(tmp) as mgr, DyingMemcgs(300, tmp):
        mgr.wait_restarts(3)
        cfg = tmp / "cz.yaml"
        cfg.write_text("memcg:\n  min_dying: 200\n  max_ratio: 2\n  latency_canary: 1s\n"
                       "systemd:\n  bus: %s\n" % mgr.address)
        base = [cz_bin, "--config", str(cfg), "--state-dir", str(tmp / "state"), "--run-dir",
                str(tmp / "run")]
        agent = subprocess.Popen(base + ["agent"], stdout=subprocess.DEVNULL,
                                 stderr=subprocess.DEVNULL)
        try:
            deadline = time.time() + 10
            while not (tmp / "run" / "cpu-heartbeat").exists():
                assert agent.poll() is None and time.time() < deadline, "agent did not start"
                time.sleep(0.05)
            time.sleep(1)
            burn(hot, 4)  # the default cpu config: >= 90% sys for >= 2 s
            time.sleep(1.5)  # the burst ends at the next sample and is logged
            out = {}
            for name, args in (("text", []), ("json", ["--json"]),
                               ("svg", ["--svg", str(tmp / "heat.svg")])):
                out[name] = subprocess.run(base + ["report"] + args, capture_output=True,
                                           text=True, timeout=60)
        finally:
            stop(agent, 10, strict=True)
        yield dict(out=out, hot=hot, unit=mgr.unit, svg=(tmp / "heat.svg"))


def test_text_report_names_zombies_unit_and_burst(node):
    p = node["out"]["text"]
    assert p.returncode == 1, p  # conditions are True
    t = p.stdout
    assert re.search(r"MemcgZombieLeak\s+True\s+ZombieMemcgsHigh", t), t
    assert re.search(r"CPUCoreSaturation\s+True\s+CoreSaturationBursts", t), t
    m = re.search(r"dying\s+(\d+)\s+ratio x([\d.]+)", t)
    assert m and int(m.group(1)) >= 200 and float(m.group(2)) >= 2, t
    assert re.search(r"restarts   %s=\d+" % re.escape(node["unit"]), t), t
    assert re.search(r"canary     fs/cgroup/\S+ read in [\d.]+ ms", t), t
    hot = node["hot"]
    m = re.search(r"^  cpu%d\s+\d\d:\d\d:\d\d\s+([\d.]+)s.*dd\[\d+\]" % hot, t, re.M)
    assert m and float(m.group(1)) >= 1.0, t
    assert "perf record -C %d -g -- sleep " % hot in t, t
    # the terminal heatmap shows the hot core at the top of the scale
    row = re.search(r"^  cpu%d\s+\|(.*)\|$" % hot, t, re.M)
    assert row and re.search(r"[*#%@]", row.group(1)), t


def test_json_report_is_the_same_document(node):
    p = node["out"]["json"]
    assert p.returncode == 1, p
    d = json.loads(p.stdout)
    conds = {c["type"]: c for c in d["conditions"]}
    assert conds["MemcgZombieLeak"]["status"] == "True"
    assert conds["MemcgZombieLeak"]["reason"] == "ZombieMemcgsHigh"
    assert conds["CPUCoreSaturation"]["status"] == "True"
    assert d["memcg"]["dying"] >= 200 and d["memcg"]["ratio"] >= 2
    assert d["memcg"]["restarts"]["units"][0]["unit"] == node["unit"]
    assert d["memcg"]["canary"]["read_seconds"] >= 0
    hot = node["hot"]
    bursts = [b for b in d["cores"]["bursts"] if b["cpu"] == hot]
    assert bursts, d["cores"]
    b = bursts[-1]
    assert b["seconds"] >= 1.0 and b["peak_pct"] >= 60
    assert b["tasks"] and b["tasks"][0]["comm"] == "dd", b
    assert b["profile"]["cpu"] == hot and b["profile"]["node"] == d["node"]
    assert b["profile"]["command"].startswith("perf record -C %d -g -- sleep " % hot)
    # the NIC IRQs the burst names are exactly those the IRQ map delivers to that core
    served = sorted(i["name"] or "irq%d" % i["irq"] for n in d["nics"] for i in n["irqs"]
                    if hot in cpus(i["cpus"]))
    assert sorted(b["nic_irqs"]) == served, (b["nic_irqs"], served)


def test_svg_draws_every_core_and_the_burst(node):
    p = node["out"]["svg"]
    assert p.returncode == 1, p
    s = node["svg"].read_text()
    assert len(re.findall(r'<g class="core" id="core-\d+"', s)) == os.cpu_count()
    marks = re.findall(r'<g class="marker burst" id="burst-\d+" data-cpu="(\d+)"', s)
    assert str(node["hot"]) in marks, marks

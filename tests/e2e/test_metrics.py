"""Prometheus: the agent's node_exporter textfile passes `promtool check metrics`, is replaced
atomically (no temporary file left), carries the real values of this node; the alert rules pass
`promtool check rules`; the Grafana dashboard JSON loads and every metric its queries (and the
rules) name is one the agent really exports."""
import json
import os
import re
import shutil
import subprocess
import time
import zlib

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PROM = os.path.join(ROOT, "manifests", "prometheus")
needs_promtool = pytest.mark.skipif(not shutil.which("promtool"),
                                    reason="needs promtool (Debian prometheus)")


def state_file(path, name, payload):
    """A state file in plugin/base/state.h's envelope."""
    data = payload.encode()
    with open(path, "wb") as f:
        f.write(b"cpuzombie-state 1 %s\n" % name.encode() + data +
                b"end %08x\n" % (zlib.crc32(data) & 0xffffffff))


@pytest.fixture
def textfile(cz_bin, tmp_path):
    state = tmp_path / "state"
    state.mkdir()
    now = int(time.time() * 1000)
    # an hour of memcg history, so the growth metric is there too
    state_file(state / "memcg", "memcg", "s %d 0\n" % (now - 3600 * 1000))
    prom = state / "textfile" / "cpuzombie.prom"      # a host file lies in the state dir
    prom.parent.mkdir()
    cfg = tmp_path / "cz.yaml"
    cfg.write_text("agent:\n  metrics_textfile: %s\ncpu:\n  inline_window: 1s\n"
                   "  min_burst: 1s\n" % prom)
    p = subprocess.run([cz_bin, "--config", str(cfg), "--state-dir", str(state), "--run-dir",
                        str(tmp_path / "run"), "--node-name", "node-a", "agent", "--once"],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p
    return prom


def exported(text):
    return set(re.findall(r"^# TYPE (cpuzombie_\w+) ", text, re.M))


@needs_promtool
def test_textfile_passes_promtool_and_is_atomic(textfile):
    text = textfile.read_text()
    p = subprocess.run(["promtool", "check", "metrics"], input=text, capture_output=True,
                       text=True, timeout=30)
    assert p.returncode == 0, p.stdout + p.stderr
    assert os.listdir(textfile.parent) == ["cpuzombie.prom"]  # no temporary file left
    assert 'cpuzombie_agent_info{version="' in text and 'node="node-a"} 1' in text
    for c in range(os.cpu_count()):
        assert re.search(r'^cpuzombie_cpu_bursts\{cpu="%d"\} \d+$' % c, text, re.M), text
    assert re.search(r'^cpuzombie_check_status\{check="memcg",condition="MemcgZombieLeak"\} '
                     r'[012]$', text, re.M), text
    assert re.search(r"^cpuzombie_memcg_dying_growth_per_hour -?[\d.e+-]+$", text, re.M), text


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root: reads the real memory hierarchy")
def test_textfile_values_match_the_kernel(textfile):
    from memcg_helpers import memory_v1_root, v1_counts
    if not memory_v1_root():
        pytest.skip("cgroup v2 node: the v1 counts below do not apply")
    text = textfile.read_text()
    live, dying = v1_counts()
    got_live = int(re.search(r"^cpuzombie_memcg_live (\d+)$", text, re.M).group(1))
    got_dying = int(re.search(r"^cpuzombie_memcg_dying (\d+)$", text, re.M).group(1))
    assert abs(got_live - live) <= 3 and abs(got_dying - dying) <= 10, (text, live, dying)


@needs_promtool
def test_alert_rules_pass_promtool():
    p = subprocess.run(["promtool", "check", "rules", os.path.join(PROM, "cpuzombie-rules.yaml")],
                       capture_output=True, text=True, timeout=30)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "SUCCESS" in p.stdout


def test_dashboard_and_rules_name_only_exported_metrics(textfile):
    names = exported(textfile.read_text())
    dash = json.load(open(os.path.join(PROM, "cpuzombie-dashboard.json")))
    exprs = [t["expr"] for pnl in dash["panels"] for t in pnl.get("targets", [])]
    exprs += [v["query"] for v in dash["templating"]["list"] if v["type"] == "query"]
    assert len(dash["panels"]) >= 8 and exprs
    rules = open(os.path.join(PROM, "cpuzombie-rules.yaml")).read()
    used = set()
    for e in exprs + [rules]:
        used |= set(re.findall(r"\bcpuzombie_\w+", e))
    assert used, exprs
    assert used <= names, sorted(used - names)

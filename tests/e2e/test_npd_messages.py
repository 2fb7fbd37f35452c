"""NPD shows a condition's default message (config/npd/*.json, "conditions"[].message) until the
first check runs, and `kubectl describe node` shows it to a person: it must say the shipped
thresholds in words, not name configuration keys, and stay in step with the defaults the binary
really has (`config check -v` of an empty configuration). The chart ships the same files."""
import filecmp
import glob
import json
import os
import re
import subprocess

from conftest import ROOT

NPD = os.path.join(ROOT, "config", "npd")
CHART = os.path.join(ROOT, "charts", "cpuzombie", "files", "npd")


def defaults(cz_bin, tmp_path):
    empty = tmp_path / "empty.yaml"
    empty.write_text("")
    p = subprocess.run([cz_bin, "--config", str(empty), "config", "check", "-v"],
                       capture_output=True, text=True, timeout=30)
    assert p.returncode == 0, p
    out, section = {}, None
    for line in p.stdout.splitlines():
        m = re.match(r"^(\w+):$", line)
        if m:
            section = m.group(1)
        m = re.match(r"^  (\w+): (.*)$", line)
        if m and section:
            out[section + "." + m.group(1)] = m.group(2).strip('"')
    return out


def messages():
    out = {}
    for f in sorted(glob.glob(os.path.join(NPD, "*.json"))):
        for c in json.load(open(f))["conditions"]:
            out[c["type"]] = c["message"]
    return out


def seconds(d):
    m = re.fullmatch(r"(\d+)(ms|s|m|h)", d)
    assert m, d
    return int(m.group(1)) * {"ms": 0.001, "s": 1, "m": 60, "h": 3600}[m.group(2)]


def test_default_messages_say_the_shipped_thresholds(cz_bin, tmp_path):
    d, msg = defaults(cz_bin, tmp_path), messages()
    assert set(msg) == {"MemcgZombieLeak", "CPUCoreSaturation", "ENADeviceReset"}, msg
    for text in msg.values():
        assert text.isascii() and not re.search(r"\b(cpu|memcg|ena)\.\w", text), text
    cpu = msg["CPUCoreSaturation"]
    assert "%s%% or more" % d["cpu.threshold_pct"] in cpu, (cpu, d)
    assert "%s time" % d["cpu.metric"] in cpu, (cpu, d)
    assert "%g seconds or longer" % seconds(d["cpu.min_burst"]) in cpu, (cpu, d)
    assert "last %g minutes" % (seconds(d["cpu.lookback"]) / 60) in cpu, (cpu, d)
    mem = msg["MemcgZombieLeak"]
    assert "fewer than %s," % d["memcg.min_dying"] in mem, (mem, d)
    assert "fewer than %s per live one" % d["memcg.max_ratio"] in mem, (mem, d)
    assert seconds(d["ena.window"]) == 3600 and "last hour" in msg["ENADeviceReset"], d


def test_chart_ships_the_same_npd_files():
    names = sorted(os.listdir(NPD))
    assert names == sorted(os.listdir(CHART))
    for n in names:
        assert filecmp.cmp(os.path.join(NPD, n), os.path.join(CHART, n), shallow=False), n


def test_chart_deploys_the_npd_version_the_tests_run():
    """The chart's NPD image is the current release the Kubernetes tests run (npd_helpers
    .CURRENT, built from NPD_VERSION of tests/tools/kube/versions.sh), from upstream's
    registry, at /node-problem-detector as upstream's image has it."""
    import yaml
    import npd_helpers as nh
    values = yaml.safe_load(open(os.path.join(ROOT, "charts", "cpuzombie", "values.yaml")))
    img = values["npd"]["image"]
    assert img["repository"] == "registry.k8s.io/node-problem-detector/node-problem-detector"
    assert img["tag"] == nh.CURRENT, img
    pins = open(os.path.join(ROOT, "tests", "tools", "kube", "versions.sh")).read()
    assert re.search(r'^: "\$\{NPD_VERSION:=%s\}"$' % re.escape(nh.CURRENT), pins, re.M), pins
    manifest = open(os.path.join(ROOT, "manifests", "cpuzombie.yaml")).read()
    assert "image: %s:%s\n" % (img["repository"], nh.CURRENT) in manifest

"""Command line, configuration errors and the NPD protocol as seen from outside the binary."""
import glob
import json
import os
import re

from conftest import ROOT, FIXTURES

CFG = os.path.join(FIXTURES, "config")
ZOMBIES = os.path.join(FIXTURES, "memcg", "v1-zombies")
TREE = ["--proc-root", ZOMBIES + "/proc", "--sys-root", ZOMBIES + "/sys"]


def test_version_and_help(cz):
    r = cz("--version", check=0)
    assert re.match(r"^cpuzombie \d+\.\d+\.\d+$", r.line)
    top = cz("--help", check=0).out
    for sub in re.findall(r"^cpuzombie (\S+)", top, re.M):
        h = cz(sub, "--help", check=0).out
        assert h.startswith("Usage: cpuzombie") and f"cpuzombie {sub}" in h


def test_shipped_config_checks_ok(cz):
    r = cz("config", "check", "--config", os.path.join(ROOT, "config", "cpuzombie.yaml"), check=0)
    assert r.line.startswith("configuration OK")
    r = cz("-v", "config", "check", "--config", os.path.join(ROOT, "config", "cpuzombie.yaml"),
           check=0)
    assert "  min_dying: 1000" in r.out


def test_every_bad_config_exits_2_naming_the_key(cz):
    bad = sorted(glob.glob(os.path.join(CFG, "bad-*.yaml")))
    assert len(bad) >= 8
    for f in bad:
        golden = open(f[:-5] + ".golden").read().splitlines()
        first = golden[0].split(":", 1)[1]  # drop the file name (the binary shows the full path)
        r = cz("config", "check", "--config", f, check=2)
        assert r.out == "", r
        assert [l.split(":", 1)[1] for l in r.err.splitlines()] == \
            [l.split(":", 1)[1] for l in golden], r
        # a check answers NPD with one line on stdout naming file, line and key
        r = cz("--config", f, *TREE, "check", "memcg", check=2)
        assert r.line.startswith("bad config: " + f + ":" + first), r
        assert len(r.out.splitlines()) == 1


def test_missing_config_file(cz):
    r = cz("--config", "/nonexistent/cpuzombie.yaml", "check", "memcg", check=2)
    assert r.line == "bad config: /nonexistent/cpuzombie.yaml: cannot read: No such file or directory"


def test_check_line_protocol(cz):
    r = cz(*TREE, "check", "memcg", check=1)
    assert r.out.endswith("\n") and r.out.count("\n") == 1
    assert all(32 <= ord(ch) < 127 for ch in r.line)
    r = cz(*TREE, "--max-output", "40", "check", "memcg", check=1)
    assert len(r.line) <= 40 and r.line.startswith("12840 dying memcgs")
    # options after the subcommand work too
    assert cz("check", "memcg", *TREE, check=1).line.startswith("12840 dying")


def test_bad_usage_is_unknown_not_problem(cz):
    assert cz("check", "nonesuch", check=2).line == "unknown check 'nonesuch'"
    assert cz("check", check=2).line.startswith("usage: cpuzombie check")
    assert cz("check", "memcg", "--max-output", "0", check=2).line == "--max-output: expected 1..1023, got '0'"
    assert cz("check", "memcg", "--bogus", check=2).line == "unknown or incomplete option '--bogus'"
    assert cz("frobnicate", check=2).rc == 2
    r = cz("--proc-root", "/nonexistent", "--sys-root", "/nonexistent", "check", "memcg", check=2)
    assert r.line == "cannot read /nonexistent/cgroups: No such file or directory"


def test_npd_configs_match_the_binary():
    """Every NPD config: valid JSON, one rule per condition, timeouts within the global one,
    max_output_length equal to the --max-output it passes."""
    files = sorted(glob.glob(os.path.join(ROOT, "config", "npd", "*.json")))
    assert files
    for f in files:
        c = json.load(open(f))
        assert c["plugin"] == "custom"
        pc = c["pluginConfig"]
        gto = pc["timeout"]
        conds = {x["type"] for x in c.get("conditions", [])}
        seen = set()
        for rule in c["rules"]:
            assert rule["path"].endswith("/cpuzombie")
            args = rule["args"]
            assert "check" in args
            assert args[args.index("--max-output") + 1] == str(pc["max_output_length"])
            assert _dur(rule.get("timeout", gto)) <= _dur(gto)
            if rule["type"] == "permanent":
                assert rule["condition"] in conds
                assert rule["condition"] not in seen, "two permanent rules on one condition flap"
                seen.add(rule["condition"])
            else:
                assert rule["type"] == "temporary"


def _dur(s):
    m = re.fullmatch(r"(\d+)(ms|s|m)", s)
    assert m, s
    return int(m.group(1)) * {"ms": 1, "s": 1000, "m": 60000}[m.group(2)]


def test_install_and_man_pages_mirror_usage(cz, tmp_path):
    """make install puts binary, config, NPD configs, units and man pages under DESTDIR; the man
    page documents every command and common option --help lists."""
    import subprocess
    dest = tmp_path / "dest"
    subprocess.run(["make", "-s", "-C", ROOT, "install", f"DESTDIR={dest}", "PREFIX=/usr"],
                   check=True, capture_output=True, timeout=300)
    for f in ("usr/bin/cpuzombie", "etc/cpuzombie/cpuzombie.yaml",
              "usr/share/cpuzombie/npd/cpuzombie-memcg.json", "usr/share/man/man8/cpuzombie.8",
              "usr/share/man/man5/cpuzombie.yaml.5", "usr/lib/systemd/system/cpuzombie-agent.service"):
        assert (dest / f).exists(), f
    man = open(os.path.join(ROOT, "config", "man", "cpuzombie.8")).read().replace("\\-", "-")
    top = cz("--help", check=0).out
    for sub in re.findall(r"^cpuzombie (\S+)", top, re.M):
        assert f"B {sub}" in man or f"fB{sub}" in man, sub
    for opt in re.findall(r"^  (--[a-z-]+)", top, re.M):
        assert opt in man, opt
    yaml5 = open(os.path.join(ROOT, "config", "man", "cpuzombie.yaml.5")).read()
    for section in re.findall(r"^([a-z]+):$", open(os.path.join(ROOT, "config", "cpuzombie.yaml")).read(), re.M):
        assert f".B {section}" in yaml5, section

# SPDX-License-Identifier: MIT
"""Every subcommand given an input it cannot judge: exit 2 (NPD's Unknown; our own failure is
never 1 and never 0), with one line naming what was wrong - on stdout for a check (NPD reads
it), on stderr for the other commands - and nothing else. Exit 0 would say "all is well" about
something never looked at; exit 1 is a false problem. One row per subcommand of `cpuzombie
--help`; test_every_subcommand_is_walked keeps the table complete."""
import os
import re
import subprocess

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ENA02 = os.path.join(ROOT, "tests", "fixtures", "ena",
                     "02-sliderule518-ens34-ena-2.14-2.15-allowance-exceeded.txt")


def cz_bin():
    return os.environ.get("CZ_BIN") or os.path.join(ROOT, "build", "cpuzombie")


def reload_pair(tmp):
    """Two dumps with a driver reload between them and nothing moving after it."""
    text = open(ENA02).read()
    before, after = tmp / "before.txt", tmp / "after.txt"
    before.write_text(re.sub(r"(\n\s+interface_up: )\d+", r"\g<1>3", text))
    after.write_text(text)
    return [str(before), str(after)]


def write(tmp, name, text):
    (tmp / name).write_text(text)
    return str(tmp / name)


# subcommand -> (args after the common ones, where the line goes, words it names)
CASES = {
    "check memcg": (lambda t: ["--proc-root", str(t / "empty"), "check", "memcg"], "out",
                    "cgroups"),
    "check cpu": (lambda t: ["--proc-root", str(t / "empty"), "check", "cpu"], "out", "stat"),
    "check ena": (lambda t: ["--state-dir", write(t, "not-a-dir", ""), "check", "ena"], "out",
                  "state"),
    "config check": (lambda t: ["config", "check", "--config", str(t / "absent.yaml")], "err",
                     "absent.yaml"),
    "ena-diff": (lambda t: ["ena-diff", *reload_pair(t)], "err", "no verdict"),
    "explain": (lambda t: ["explain", str(t / "empty")], "err", "empty"),
    "flame": (lambda t: ["flame", "1-123"], "err", "no burst 1-123"),
    "top": (lambda t: ["--proc-root", str(t / "empty"), "top", "--once"], "err", "stat"),
    "agent": (lambda t: ["--proc-root", str(t / "empty"), "agent", "--once"], "err", "stat"),
    "remediator": (lambda t: ["--config", write(t, "rem.yaml", "remediation:\n  mode: cordon\n"),
                              "remediator", "--once"], "err", "lease_namespace"),
    "install-plugin": (lambda t: ["install-plugin", str(t / "empty"), "--from",
                                  str(t / "absent")], "err", "absent"),
    "own-state": (lambda t: ["own-state", "65534", str(t / "absent")], "err", "absent"),
    "report": (lambda t: ["report", "--since", "1h", "--until", "2h"], "err", "--until"),
}
# The API commands: the kubeconfig loader logs its reason, then the command its own line.
API = {
    "fleet": (lambda t: ["--kubeconfig", str(t / "absent.kc"), "fleet"], "absent.kc"),
    "cleanup": (lambda t: ["--kubeconfig", str(t / "absent.kc"), "cleanup"], "absent.kc"),
}


def run(tmp_path, args):
    (tmp_path / "empty").mkdir(exist_ok=True)
    base = [cz_bin(), "--run-dir", str(tmp_path / "run"), "--sys-root", str(tmp_path / "empty")]
    if "--state-dir" not in args:
        base += ["--state-dir", str(tmp_path / "state")]
    p = subprocess.run(base + args, capture_output=True, text=True, timeout=120, env=dict(
        os.environ, KUBECONFIG="", HOME=str(tmp_path)))
    assert "Sanitizer" not in p.stderr and "runtime error" not in p.stderr, p.stderr
    return p


@pytest.mark.parametrize("name", sorted(CASES))
def test_cannot_tell_is_exit_2_with_one_line(tmp_path, name):
    build, where, words = CASES[name]
    p = run(tmp_path, build(tmp_path))
    assert p.returncode == 2, (name, p)
    line, other = (p.stdout, p.stderr) if where == "out" else (p.stderr, p.stdout)
    assert line.count("\n") == 1 and line.endswith("\n") and other == "", (name, p)
    assert words in line, (name, line)


@pytest.mark.parametrize("name", sorted(API))
def test_api_commands_that_cannot_reach_exit_2(tmp_path, name):
    build, words = API[name]
    p = run(tmp_path, build(tmp_path))
    assert p.returncode == 2 and p.stdout == "", (name, p)
    lines = p.stderr.splitlines()
    assert 1 <= len(lines) <= 2 and all(words in l for l in lines), (name, p.stderr)


def test_every_subcommand_is_walked():
    p = subprocess.run([cz_bin(), "--help"], capture_output=True, text=True, timeout=30)
    names = set(re.findall(r"^cpuzombie ([a-z][a-z-]+)", p.stdout, re.M))
    walked = {n.split()[0] for n in list(CASES) + list(API)}
    assert len(names) >= 13 and names <= walked, (sorted(names - walked), p.stdout)

# SPDX-License-Identifier: MIT
"""The pure cgroup v2 VM (tests/tools/vm/census-v2-vm.sh) from a test: boot it once with a guest
script and its parameters, and read back the "CZVM <tag> <text>" lines of its serial console.
Used by test_census_v2.py and test_reclaim_v2.py."""
import os
import subprocess
import time

import pytest

from conftest import ROOT

SCRIPT = os.path.join(ROOT, "tests", "tools", "vm", "census-v2-vm.sh")


class Guest:
    def __init__(self, console, accel, seconds):
        self.console = console
        self.accel = accel
        self.seconds = seconds
        self.lines = {}
        for ln in console.splitlines():
            ln = ln.rstrip("\r")
            if not ln.startswith("CZVM "):
                continue
            tag, _, text = ln[5:].partition(" ")
            self.lines.setdefault(tag, []).append(text)

    def one(self, tag):
        v = self.lines.get(tag)
        assert v and len(v) == 1, (tag, v, self.console[-4000:])
        return v[0]

    def all(self, tag):
        return self.lines.get(tag, [])

    def stat(self, tag):
        return {k: int(v) for k, v in (x.split() for x in self.all(tag))}


def boot(cz_bin, out, env, what):
    """Runs the VM harness with @env (CZVM_* variables) into directory @out; skips the caller
    (with the harness's reason) when it cannot run here, fails when the guest did not finish
    or said "CZVM fail". Returns the Guest; @what names it in the timing line it prints."""
    t0 = time.monotonic()
    p = subprocess.run(["bash", SCRIPT, cz_bin, out], capture_output=True, text=True,
                       env=dict(os.environ, **env), timeout=1800)
    seconds = time.monotonic() - t0
    if p.returncode == 77:
        pytest.skip(p.stdout.strip().splitlines()[-1].removeprefix("SKIP: "))
    assert p.returncode == 0, (p.stdout, p.stderr)
    console = open(os.path.join(out, "console.log"), errors="replace").read()
    accel = open(os.path.join(out, "accel")).read().strip()
    g = Guest(console, accel, seconds)
    print("%s VM: %s, %s, %.1f s in all (%s)"
          % (what, g.one("begin"), accel, seconds, p.stderr.strip().replace("\n", " ")[:200]))
    assert "end" in g.lines, ("the guest did not finish its script", console[-4000:])
    assert "fail" not in g.lines, (g.lines["fail"], console[-4000:])
    return g


def no_sanitizer_reports(g, *tags):
    """A sanitizer report in the guest fails as on the host."""
    for tag in tags:
        err = "\n".join(g.all(tag))
        assert "runtime error:" not in err and "Sanitizer" not in err, (tag, err)

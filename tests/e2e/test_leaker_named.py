# SPDX-License-Identifier: MIT
"""The leaker named inside the cluster: a crash-looping unit under a private systemd manager
with its own bus (report_helpers.UserManager), real dying memcgs; the agent (which has
libsystemd and the bus) publishes the top restarting units in the run dir; then `check memcg`
runs the way NPD's container runs it -- the init container's copy (the static check binary), chrooted into
a tree holding only what that container mounts (no libsystemd, no bus socket, the run dir
shared with the agent) -- and its line names the unit.

The dying memcgs come from memcg_helpers, not from the unit's restarts: on this hybrid host the
user manager's units get no v1 memory cgroups of their own."""

import os
import re
import subprocess

import pytest

from conftest import ROOT
from memcg_helpers import DyingMemcgs
from report_helpers import UserManager, can_run_manager

pytestmark = pytest.mark.skipif(not can_run_manager(), reason="needs root, systemd and unshare: "
                                "starts a systemd --user manager in a private mount namespace")

PLUGIN = "/opt/cpuzombie/bin/cpuzombie"
MEMCG_RULE = ["--proc-root", "/host/proc", "--sys-root", "/host/sys", "--max-output", "256",
              "check", "memcg"]


def static_check_bin(cz_bin):
    """The static check binary beside the binary under test (what the image puts in /opt), or
    None when the build makes none static (ASan+UBSan links dynamically)."""
    path = os.path.join(os.path.dirname(cz_bin), "cpuzombie-check")
    if not os.access(path, os.X_OK):
        return None
    p = subprocess.run(["readelf", "-lW", path], capture_output=True, text=True, check=True)
    d = subprocess.run(["readelf", "-dW", path], capture_output=True, text=True, check=True)
    return path if "INTERP" not in p.stdout and "(NEEDED)" not in d.stdout else None


def npd_copy(check_bin, root):
    """/opt/cpuzombie as the image's init container hands it over: one static file."""
    os.makedirs(os.path.join(root, "opt/cpuzombie/bin"))
    subprocess.run(["install", "-m", "0755", check_bin, os.path.join(root, PLUGIN[1:])],
                   check=True)


def check_in_npd_layout(root, run_dir, env):
    """`check memcg` exactly as the NPD rule runs it, chrooted into @root: /host/proc and
    /host/sys are the host's, /run/cpuzombie is @run_dir (the emptyDir the agent writes),
    and nothing else is there (no /usr, no /run/dbus)."""
    for d in ("host/proc", "host/sys", "proc", "dev", "etc/cpuzombie", "var/lib/cpuzombie",
              "run/cpuzombie"):
        os.makedirs(os.path.join(root, d), exist_ok=True)
    script = "\n".join([
        "set -e", "mount --make-rprivate /",
        "mount --rbind /proc %s/host/proc" % root, "mount --rbind /sys %s/host/sys" % root,
        "mount --rbind /proc %s/proc" % root, "mount --rbind /dev %s/dev" % root,
        "mount --bind %s %s/run/cpuzombie" % (run_dir, root),
        "exec chroot %s %s %s" % (root, PLUGIN, " ".join(MEMCG_RULE))])
    return subprocess.run(["unshare", "--mount", "sh", "-c", script], capture_output=True,
                          text=True, timeout=60, env=env)


def test_check_in_npds_container_names_the_crash_looping_unit(cz_bin, tmp_path):
    check_bin = static_check_bin(cz_bin)
    if check_bin is None:
        pytest.skip("no static cpuzombie-check beside %s (an ASan+UBSan build links "
                    "dynamically): the plain run tests the copy NPD runs" % cz_bin)
    run = tmp_path / "run"
    with UserManager(tmp_path) as mgr:
        mgr.wait_restarts(3)
        with DyingMemcgs(2000, tmp_path):
            # the agent, on the host side, with the manager's bus: one period publishes
            cfg = tmp_path / "agent.yaml"
            cfg.write_text("systemd:\n  bus: %s\ncpu:\n  inline_window: 1s\n" % mgr.address)
            p = subprocess.run([cz_bin, "--config", str(cfg), "--state-dir",
                                str(tmp_path / "state"), "--run-dir", str(run), "agent",
                                "--once"], capture_output=True, text=True, timeout=60)
            assert p.returncode == 0, p
            published = (run / "systemd-units").read_text()
            assert re.search(r"^u \d+ \S+ %s$" % re.escape(mgr.unit), published, re.M), \
                published
            # the check, where NPD runs it: the default config (bus "system": there is none)
            root = str(tmp_path / "npd")
            npd_copy(check_bin, root)
            assert not [f for f in os.listdir(root) if f != "opt"]   # nothing else in there
            env = {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin",
                   "ASAN_OPTIONS": "detect_leaks=1:abort_on_error=0"}
            r = check_in_npd_layout(root, str(run), env)
            assert r.returncode == 1, r
            line = r.stdout.strip()
            m = re.search(r"top restarts: %s=(\d+)" % re.escape(mgr.unit), line)
            assert m and int(m.group(1)) >= 3, line
            assert re.match(r"^\d+ dying memcgs vs \d+ live", line), line
            assert len(line.encode()) <= 256
            # no loader, no shared object, no bus: nothing of systemd's in reach
            assert "libsystemd" not in r.stderr
            assert not os.path.exists(os.path.join(root, "run", "dbus"))

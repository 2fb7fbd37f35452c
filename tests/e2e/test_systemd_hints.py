"""`check memcg`'s restart hint against a real systemd: a `systemd --user` manager this test
starts in its own mount namespace (report_helpers.UserManager), with a crash-looping unit. The
agent asks systemd and publishes the units in the run dir (agent --once: one period); the check
and the report read them from there and never talk to systemd. The hint names the unit with a
rising count; an unavailable bus leaves the hint out (the check still answers and says why);
an OK check never loads libsystemd."""
import os
import re
import subprocess

import pytest

from memcg_helpers import DyingMemcgs
from report_helpers import UserManager, can_run_manager

pytestmark = pytest.mark.skipif(not can_run_manager(), reason="needs root, systemd and unshare: "
                                "starts a systemd --user manager in a private mount namespace")


def cz(cz_bin, tmp_path, config, *args):
    cfg = tmp_path / "cz.yaml"
    cfg.write_text(config)
    return subprocess.run([cz_bin, "--config", str(cfg), "--state-dir", str(tmp_path / "state"),
                           "--run-dir", str(tmp_path / "run"), *args],
                          capture_output=True, text=True, timeout=60)


def publish(cz_bin, tmp_path, config):
    """One agent period: it asks systemd over the bus and publishes the units in the run dir."""
    p = cz(cz_bin, tmp_path, config + "cpu:\n  inline_window: 1s\n", "agent", "--once")
    assert p.returncode == 0, p
    return p


def test_hint_names_crash_looping_unit_with_rising_count(cz_bin, tmp_path):
    with UserManager(tmp_path) as mgr, DyingMemcgs(300, tmp_path):
        mgr.wait_restarts(3)
        conf = ("memcg:\n  min_dying: 200\n  max_ratio: 2\nsystemd:\n  bus: %s\n"
                % mgr.address)
        publish(cz_bin, tmp_path, conf)
        p1 = cz(cz_bin, tmp_path, conf, "check", "memcg")
        assert p1.returncode == 1, p1
        m1 = re.search(r"top restarts: %s=(\d+)" % re.escape(mgr.unit), p1.stdout)
        assert m1, p1.stdout
        before = mgr.nrestarts()
        mgr.wait_restarts(before + 5)
        publish(cz_bin, tmp_path, conf)
        p2 = cz(cz_bin, tmp_path, conf, "check", "memcg")
        m2 = re.search(r"top restarts: %s=(\d+)" % re.escape(mgr.unit), p2.stdout)
        assert m2, p2.stdout
        assert int(m2.group(1)) > int(m1.group(1)) >= 3, (p1.stdout, p2.stdout)
        # the state file keeps the baseline the growth is measured against
        st = (tmp_path / "state" / "systemd-restarts").read_text()
        assert "u %s %s\n" % (m1.group(1), mgr.unit) in st, st
        # the report shows the same unit
        rep = cz(cz_bin, tmp_path, conf + "cpu:\n  inline_window: 0\n", "report")
        assert re.search(r"restarts   %s=\d+" % re.escape(mgr.unit), rep.stdout), rep.stdout


def test_unavailable_bus_leaves_hint_out_and_check_works(cz_bin, tmp_path):
    with DyingMemcgs(300, tmp_path):
        conf = ("memcg:\n  min_dying: 200\n  max_ratio: 2\nsystemd:\n  bus: "
                "unix:path=%s/nothing/systemd/private\n" % tmp_path)
        publish(cz_bin, tmp_path, conf)
        p = cz(cz_bin, tmp_path, conf, "check", "memcg")
        assert p.returncode == 1, p
        assert "dying memcgs" in p.stdout and "top restarts" not in p.stdout, p.stdout
        assert "no restart hint: cannot connect to bus" in p.stderr, p.stderr
        assert "; agent cannot ask systemd" in p.stdout, p.stdout
        # with nothing published at all, the check says so in a few words
        os.unlink(tmp_path / "run" / "systemd-units")
        p = cz(cz_bin, tmp_path, conf, "check", "memcg")
        assert p.returncode == 1 and "; no unit data from the agent" in p.stdout, p


def test_ok_check_never_loads_libsystemd(cz_bin, tmp_path):
    # a healthy verdict must not pay for libsystemd: ltrace-free proof via /proc/PID/maps is
    # racy, so ask the dynamic loader to report every object it opens. NPD runs the check
    # binary (the full one links libsystemd for the agent); built static, it has no loader to
    # ask, and test_hardening proves it has no shared object at all.
    check_bin = os.path.join(os.environ.get("CZ_BUILD") or os.path.dirname(cz_bin),
                             "cpuzombie-check")
    conf = "memcg:\n  min_dying: 100000000\n"
    env = dict(os.environ, LD_DEBUG="files")
    cfg = tmp_path / "cz.yaml"
    cfg.write_text(conf)
    p = subprocess.run([check_bin, "--config", str(cfg), "--state-dir", str(tmp_path / "state"),
                        "check", "memcg"], capture_output=True, text=True, timeout=30, env=env)
    assert p.returncode == 0, p
    assert "libsystemd" not in p.stderr, [l for l in p.stderr.splitlines() if "libsystemd" in l]
    d = subprocess.run(["readelf", "-d", check_bin], capture_output=True, text=True).stdout
    assert "libsystemd" not in d, d


def test_report_by_hand_asks_systemd_when_no_agent_published(cz_bin, tmp_path):
    """`make run` is `report` on a host with no agent: the full binary asks systemd itself, so
    the one-command answer still names the leaker (the static check binary never does)."""
    with UserManager(tmp_path) as mgr, DyingMemcgs(300, tmp_path):
        mgr.wait_restarts(3)
        conf = ("memcg:\n  min_dying: 200\n  max_ratio: 2\nsystemd:\n  bus: %s\n"
                "cpu:\n  inline_window: 0\n" % mgr.address)
        assert not (tmp_path / "run" / "systemd-units").exists()
        rep = cz(cz_bin, tmp_path, conf, "report")
        assert re.search(r"restarts   %s=\d+" % re.escape(mgr.unit), rep.stdout), rep.stdout
        check_bin = os.path.join(os.path.dirname(cz_bin), "cpuzombie-check")
        if os.path.exists(check_bin):
            rep = cz(check_bin, tmp_path, conf, "report")
            assert "restarts   unavailable: no unit data from the agent" in rep.stdout, rep.stdout
            assert mgr.unit not in rep.stdout

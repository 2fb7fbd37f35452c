# SPDX-License-Identifier: MIT
"""tests/tools/install-deps.sh: make run asks only for what building and running the report
need; no apt-get call may start or enable a service, and the machine's own policy-rc.d is put
back. apt-get and dpkg-query are stand-ins on PATH here (nothing is installed), the policy-rc.d
and the systemd unit directory are the test's."""

import os
import re
import subprocess

import pytest

from conftest import ROOT, is_root

SCRIPT = os.path.join(ROOT, "tests", "tools", "install-deps.sh")


def listed(*groups):
    p = subprocess.run([SCRIPT, "--list", *groups], capture_output=True, text=True, check=True)
    return p.stdout.split()


def make_target_groups(target):
    """The install-deps.sh groups the Makefile's @target prerequisite passes."""
    mk = open(os.path.join(ROOT, "Makefile")).read()
    m = re.search(r"^%s:(.*)$" % re.escape(target), mk, re.M)
    assert m, target
    deps = m.group(1).split()
    dep = next(d for d in deps if d.startswith("deps"))
    m = re.search(r"^%s:\n\t@tests/tools/install-deps.sh (.*)$" % re.escape(dep), mk, re.M)
    assert m, dep
    return m.group(1).split()


def test_make_run_installs_only_the_build():
    pkgs = listed(*make_target_groups("run"))
    assert "gcc" in pkgs and "libsystemd-dev" in pkgs and "libjson-c-dev" in pkgs
    for heavy in ("chromium", "prometheus", "valgrind", "hyperfine", "clang", "podman",
                  "prometheus-node-exporter", "python3-pytest"):
        assert heavy not in pkgs, heavy
    # make bench brings its own list, not the tests'
    assert "chromium" not in listed(*make_target_groups("bench"))
    # make test still gets its extras
    test = listed(*make_target_groups("test"))
    for extra in ("chromium", "prometheus", "valgrind", "podman", "debootstrap", "runc",
                  "python3-pytest-xdist", "libseccomp-dev"):
        assert extra in test, extra


FAKE_APT = r'''#!/bin/sh
# records the policy in force during each call, then "installs": a postinst enables a unit
{ echo "call $*"; "$CZ_POLICY_RC_D" x start; echo "policy-rc $?"; } >>"$FAKE_LOG"
case "$1" in install)
	mkdir -p "$CZ_SYSTEMD_ETC/multi-user.target.wants"
	ln -sf /lib/systemd/system/fake-daemon.service \
		"$CZ_SYSTEMD_ETC/multi-user.target.wants/fake-daemon.service" ;;
esac
exit 0
'''

FAKE_DPKG_QUERY = "#!/bin/sh\nexit 1\n"   # nothing installed


@pytest.mark.skipif(not is_root(), reason="install-deps.sh installs only as root")
@pytest.mark.parametrize("own_policy", [True, False])
def test_every_apt_call_starts_and_enables_nothing(tmp_path, own_policy):
    bindir = tmp_path / "bin"
    bindir.mkdir()
    for name, text in (("apt-get", FAKE_APT), ("dpkg-query", FAKE_DPKG_QUERY)):
        (bindir / name).write_text(text)
        (bindir / name).chmod(0o755)
    policy = tmp_path / "sbin" / "policy-rc.d"
    policy.parent.mkdir()
    own = "#!/bin/sh\n# the machine's own\nexit 0\n"
    if own_policy:
        policy.write_text(own)
        policy.chmod(0o755)
    units = tmp_path / "systemd"
    (units / "multi-user.target.wants").mkdir(parents=True)
    kept = units / "multi-user.target.wants" / "admin-enabled.service"
    kept.symlink_to("/lib/systemd/system/admin-enabled.service")
    log = tmp_path / "apt.log"
    env = dict(os.environ, PATH="%s:%s" % (bindir, os.environ["PATH"]), FAKE_LOG=str(log),
               CZ_POLICY_RC_D=str(policy), CZ_SYSTEMD_ETC=str(units))
    p = subprocess.run([SCRIPT, "hello-cpuzombie-pkg"], env=env, capture_output=True, text=True,
                       timeout=60)
    assert p.returncode == 0, p.stderr
    calls = log.read_text().splitlines()
    assert [c for c in calls if c.startswith("call ")] == [
        "call update -qq", "call install -y -qq --no-install-recommends hello-cpuzombie-pkg"]
    assert [c for c in calls if c.startswith("policy-rc ")] == ["policy-rc 101"] * 2
    # the unit the "postinst" enabled is disabled again; the admin's stays
    assert not (units / "multi-user.target.wants" / "fake-daemon.service").exists()
    assert "disabling fake-daemon.service" in p.stderr
    assert kept.is_symlink()
    # the machine's own policy is back (or none, as before)
    if own_policy:
        assert policy.read_text() == own
    else:
        assert not policy.exists()
    assert not [f for f in os.listdir(policy.parent) if f != "policy-rc.d"]

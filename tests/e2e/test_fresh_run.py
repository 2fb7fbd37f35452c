# SPDX-License-Identifier: MIT
"""`make run` on a fresh Debian bookworm (a container of the debootstrap base, the repository
copied in, only `make` added, as a user who types `make run` has it): it installs what building
and running the report need and nothing else -- no browser, no Prometheus, no valgrind, no
hyperfine -- leaves no policy-rc.d behind and enables no unit, and prints the report."""

import os
import re
import shutil
import subprocess

import pytest

import pod_helpers as ph
from conftest import ROOT, is_root

pytestmark = [
    pytest.mark.skipif(not is_root(), reason="needs root: runs rootful podman"),
    pytest.mark.skipif(shutil.which("podman") is None,
                       reason="podman is not installed (make deps installs it)"),
    pytest.mark.skipif("build-asan" in os.environ.get("CZ_BIN", ""),
                       reason="builds from the sources in a container, not the binary under "
                              "test: tested in the plain run"),
]

SCRIPT = r'''set -e
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq >/dev/null
apt-get install -y -qq --no-install-recommends make >/dev/null
dpkg-query -W -f='${Package}\n' | sort >/tmp/before
find /etc/systemd/system -type l | sort >/tmp/wants-before
mkdir /w && cd /src && tar -c --exclude=./build --exclude='./build-*' --exclude=./.git . |
	tar -x -C /w
cd /w
set +e
make run >/tmp/out 2>&1
echo "rc=$?"
set -e
echo "--- out"; cat /tmp/out
echo "--- new"; dpkg-query -W -f='${Package}\n' | sort | comm -13 /tmp/before -
echo "--- policy"; ls /usr/sbin/policy-rc.d 2>&1 || true
echo "--- wants"; find /etc/systemd/system -type l | sort | comm -13 /tmp/wants-before -
'''


def test_make_run_on_a_fresh_machine_installs_only_the_build():
    p = subprocess.run([os.path.join(ROOT, "tests", "tools", "podman", "bases.sh")],
                       env=ph.podman_env(), capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stderr
    p = ph.podman("run", "--rm", "--network", "host", "--pull=never",
                  "-v", "%s:/src:ro" % ROOT, "docker.io/library/debian:bookworm",
                  "sh", "-c", SCRIPT, timeout=1200)
    out = p.stdout
    sections = dict(re.findall(r"^--- (\w+)\n(.*?)(?=^--- |\Z)", out, re.M | re.S))
    assert "rc=0\n" in out, out[-3000:]
    report = sections["out"]
    # the report, not a wall of installer output before it
    assert "cpuzombie report" in report or "memcg" in report, report[-2000:]
    lines_before = report.split("cpuzombie report")[0].count("\n")
    assert lines_before <= 5, report[:3000]
    new = set(sections["new"].split())
    for pkg in ("gcc", "libc6-dev", "make", "pkg-config", "libjson-c-dev", "libyaml-dev",
                "libcurl4-openssl-dev", "libsystemd-dev"):
        assert pkg in new or pkg == "make", (pkg, sorted(new))
    for heavy in ("chromium", "prometheus", "valgrind", "hyperfine", "clang", "podman",
                  "prometheus-node-exporter", "python3-pytest", "nodejs"):
        assert heavy not in new, (heavy, sorted(new))
    assert "No such file" in sections["policy"], sections["policy"]   # none before, none after
    assert not sections["wants"].split(), sections["wants"]     # no unit enabled

"""Shared pytest fixtures for cpuzombie's end-to-end tests.

CZ_BIN is the binary under test (plain or ASan+UBSan build); CZ_BUILD its build directory.
"""
import os
import subprocess

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FIXTURES = os.path.join(ROOT, "tests", "fixtures")


def _bin():
    b = os.environ.get("CZ_BIN") or os.path.join(ROOT, "build", "cpuzombie")
    if not os.access(b, os.X_OK):
        pytest.exit(f"cpuzombie binary not found at {b}: run make first", returncode=2)
    return b


@pytest.fixture(scope="session")
def cz_bin():
    return _bin()


def is_root():
    return os.geteuid() == 0


needs_root = pytest.mark.skipif(not is_root(), reason="needs root: creates kernel objects "
                                "(cgroups, namespaces) on the real kernel")


class Result:
    def __init__(self, p):
        self.rc = p.returncode
        self.out = p.stdout
        self.err = p.stderr
        self.line = p.stdout.rstrip("\n")

    def __repr__(self):
        return f"rc={self.rc} out={self.out!r} err={self.err!r}"


@pytest.fixture
def cz(cz_bin, tmp_path):
    """Run cpuzombie with private state and run dirs; returns a Result."""
    state = tmp_path / "state"
    run = tmp_path / "run"

    def run_cz(*args, timeout=60, env=None, state_dir=None, check=None, **kw):
        cmd = [cz_bin, "--state-dir", str(state_dir or state), "--run-dir", str(run), *args]
        e = dict(os.environ)
        # ASan: leaks are errors; keep its report on stderr
        e.setdefault("ASAN_OPTIONS", "detect_leaks=1:abort_on_error=0")
        e.setdefault("UBSAN_OPTIONS", "print_stacktrace=1:halt_on_error=1")
        if env:
            e.update(env)
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=e, **kw)
        r = Result(p)
        # A sanitizer report is always a failure, whatever the exit code.
        assert "ERROR: AddressSanitizer" not in r.err, r.err
        assert "runtime error:" not in r.err, r.err
        assert "LeakSanitizer" not in r.err, r.err
        if check is not None:
            assert r.rc == check, r
        return r

    run_cz.state = state
    run_cz.run = run
    return run_cz


# -- the real control plane (tests/tools/kube), shared by the Kubernetes tests -----------------

@pytest.fixture(scope="session")
def control_plane(tmp_path_factory):
    """etcd, kube-apiserver, kube-controller-manager and kwok on 127.0.0.1, built from source
    on first use (tests/tools/kube/build.sh), with the chart's ServiceAccounts, RBAC and
    admission policy applied as rendered (chart_rbac); stopped by PID at the end."""
    import kube_helpers as kh
    cp = kh.cluster.ControlPlane(str(tmp_path_factory.mktemp("control-plane")))
    cp.start()
    try:
        kh.apply_chart_rbac(cp)
        yield cp
    finally:
        cp.stop()


@pytest.fixture
def certs(control_plane, tmp_path):
    """Client certificates signed by the control plane's CA, and a wrong CA."""
    import kube_helpers as kh
    return kh.Certs(str(tmp_path / "certs"), control_plane)


@pytest.fixture
def kube(control_plane, tmp_path):
    """One test's view of the real control plane: a fault proxy of its own, and everything
    the test made removed afterwards."""
    import kube_helpers as kh
    k = kh.Kube(control_plane, str(tmp_path))
    yield k
    k.stop()


def reachable_tmp(prefix):
    """A fresh directory that nobody (65534) can traverse, for tests that run the binary as
    nobody: pytest's own /tmp/pytest-of-root is reset to 0700 whenever another pytest session
    starts on the machine, which made such tests fail under a concurrent run. Outside it, made
    0711 here, removed afterwards. Use as a module's own `tmp_path` fixture (yield from)."""
    import pathlib
    import shutil
    import tempfile
    d = tempfile.mkdtemp(prefix=prefix, dir="/tmp")
    os.chmod(d, 0o711)
    try:
        yield pathlib.Path(d)
    finally:
        subprocess.run(["umount", "-R", "-q", d], stderr=subprocess.DEVNULL, check=False)
        shutil.rmtree(d, ignore_errors=True)

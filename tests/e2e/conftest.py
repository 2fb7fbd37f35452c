"""Shared pytest fixtures for cpuzombie's end-to-end tests.

CZ_BIN is the binary under test (plain or ASan+UBSan build); CZ_BUILD its build directory.
"""
import contextlib
import os
import subprocess
import time

import pytest

import hostlock

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


# -- stages of make test (tests/tools/stages.py) ------------------------------------------------

# `make check`: the inner loop, one fast test per room of plugin/ (and the Kubernetes rooms on
# the real control plane), marked `check`. make test runs them with everything else.
CHECK = {
    "test_cli.py::test_check_line_protocol": "cmd/, check/: the NPD line and exit codes",
    "test_cli.py::test_every_bad_config_exits_2_naming_the_key": "base/: config errors",
    "test_census.py::test_census_lists_real_zombies_by_name_with_pinned_bytes":
        "memcg/, agent/: real dying memcgs, the BPF census",
    "test_cpu.py::test_inline_window_catches_burst_without_agent": "cpu/, host/: a real burst",
    "test_ena.py::test_live_counters_equal_ethtool": "ena/, host/: a veth through the ioctl",
    "test_explain.py::test_incident_signature_dmesg": "klog/: pasted kernel text",
    "test_kmsg.py::test_fifo_reset_to_check_ena": "klog/, ena/: the kernel-event log",
    "test_report.py::test_json_report_is_the_same_document": "node/, view/: the report",
    "test_metrics.py::test_textfile_passes_promtool_and_is_atomic": "agent/: metrics",
    "test_bad_inputs.py::test_bad_input[run-heartbeat-garbage]": "hostile run files",
    "test_kube_api.py::test_conditions_set_flip_keep_transition_time":
        "kube/, condition/, agent/: conditions on the real server",
    "test_remediator.py::test_whole_cycle_as_the_chart_runs_it_gets_no_403":
        "remediator/: a whole cycle as the chart's ServiceAccount",
    "test_fleet.py::test_names_the_zone_and_image_first": "fleet/: the fleet view",
    "test_flame_page.py::test_hostile_names_stay_text":
        "view/: the --html page and flame SVG, hostile names, in the browser and jsdom",
}

# The ASan+UBSan e2e pass runs the tests that drive C through input (parsers, run-dir and state
# files, API answers, config, the kernel log, the CLI). These modules are left to the plain pass
# (marked `no_asan`): each says why it reaches no C input handling that an ASan test does not
# already reach. The unit tests and the fuzzers run every parser under the sanitizers as well.
NO_ASAN = {
    "test_valgrind.py": "runs the plain build under valgrind's memcheck: a memory checker of its own",
    "test_image.py": "builds the image from the sources and runs it; skips itself under ASan",
    "test_fresh_run.py": "builds a fresh clone with make run; skips itself under ASan",
    "test_install_deps.py": "tests the installer script (shell), no C",
    "test_symlink_safe_opens.py": "reads the C sources (which opens use the helper), runs no C",
    "test_stages.py": "tests make test's stage runner (Python), no C",
    "test_control_plane.py": "tests the harness (the control plane, the fault proxy), no C",
    "test_privilege_kube.py": "the chart's RBAC and admission policy, requests made by the test "
                              "itself with each ServiceAccount's token; no C",
    "test_guards_examples.py": "validates the documented YAML examples against the real server",
    "test_privilege_admission.py": "the chart's admission policies, requests made by the test "
                                   "itself with each ServiceAccount's token; no C",
    "test_privilege_ptrace.py": "the kernel's /proc access rule between processes the test "
                                "starts with setpriv (sleep, python); no C",
    "test_svg_chromium.py": "a browser draws the SVG; the same `report --svg` over real and "
                            "hostile run dirs runs under ASan in test_report, test_bad_inputs "
                            "and unit/test_svg",
    "test_agent_crash.py": "SIGKILL during writes: atomicity is rename(2)'s, not memory's; the "
                           "readers of torn and hostile files run under ASan in "
                           "test_bad_inputs_state",
    "test_state_crash.py": "SIGKILL during state writes: as test_agent_crash.py; the state "
                           "readers run under ASan in test_bad_inputs_state and test_memcg",
    "test_lease_race.py": "twenty agents race for Leases: the same Lease answers the ASan "
                          "remediation tests parse (test_kube_api's race, test_remediator)",
    "test_drain_real.py": "our drain beside kubectl drain: the drain's API answers run under "
                          "ASan in test_kube_api (drain, PDB) and test_guards",
    "test_census_v2.py": "a pure cgroup v2 VM guest: the v2 parsers run under ASan in the unit "
                         "tests on v2 fixture trees and in the fuzzers",
    "test_reclaim_v2.py": "as test_census_v2.py: the v2 reclaim plan is pure and unit-tested "
                          "under ASan",
    "test_npd_kernel_monitor.py": "NPD's own log monitor on our JSON config; no C of ours",
    "test_npd_messages.py": "NPD's cut of our messages: the same check lines test_cli checks "
                            "under ASan",
    "test_real_node.py": "runs the image built from the sources on a real kubelet; skips "
                         "itself under ASan",
    "test_npd_real.py": "NPD execs the check binary on the host's files, the input `check` gets "
                        "under ASan in test_cli, test_memcg, test_cpu, test_ena; what is new "
                        "here is NPD's side",
}


# Modules that change or measure the whole host (real bursts, real dying memcgs, a netns, the
# kernel log, systemd units, the real /proc without a fixture tree) take the host lock for their
# whole run: make test runs two pytest sessions at once (the Kubernetes e2e and the ASan e2e,
# tests/tools/stages.py), and their host tests must not overlap. The rest of both runs against
# fixture trees and a control plane of each session's own, and overlaps freely.
HOST = {
    "test_remediation_chain.py", "test_bad_inputs.py", "test_bad_inputs_state.py", "test_census.py",
    "test_cpu.py", "test_ena.py", "test_explain.py", "test_history_tiers.py",
    "test_image.py", "test_kmsg.py", "test_leaker_named.py", "test_memcg.py",
    "test_memcg_where.py", "test_metrics.py", "test_midburst.py", "test_npd_kernel_monitor.py",
    "test_npd_real.py", "test_privilege_chart.py", "test_privileges.py", "test_profile.py",
    "test_reclaim.py", "test_report.py", "test_svg_chromium.py",
    "test_systemd_hints.py", "test_top.py", "test_valgrind.py", "test_hardening.py",
    "test_bad_inputs_bounds.py", "test_state_crash.py", "test_agent_crash.py",
    "test_flame_page.py", "test_real_node.py", "test_agent_dropcaps.py",
}
# Not HOST: test_census_v2.py and test_reclaim_v2.py, whose dying memcgs and reclaim are a qemu
# guest's, under a kernel of its own (the host sees one process using a core, as beside any
# build). Nor, though it reads this machine, test_fresh_run.py, whose `make run` exits 0
# whatever the report's verdict (tests/tools/run-node.sh) and whose container changes nothing
# of the host's; most of its time is a build.
HOST_LOCK = hostlock.path()

# The tests of HOST modules that touch nothing of the host (fixture trees with their own
# /proc and /sys, a fake API server on 127.0.0.1, the command line, config files): they run
# first in their module and without the host lock, so the other session's host modules go on
# meanwhile. By test function; after it, the parameter ids that do read the host (a report with
# no fixture tree reads this machine's memcgs and cores).
HOST_FREE = {
    "test_bad_inputs.py": {
        # the run-dir cases: check cpu on a bad file reads the real /proc (a bad heartbeat
        # samples it inline), where another session's burst is a real 100% (32 MiB reads)
        "test_bad_input": ("report-svg-unwritable", "report-svg-is-directory",
                           "report-corrupt-run-files", "run-heartbeat-garbage",
                           "run-bursts-torn", "run-bursts-bad-payload", "run-bursts-huge",
                           "run-history-garbage"),
        "test_check_usage_line_names_the_option": (),
        "test_bad_api_answer": (),
        "test_failed_stdout_write_is_exit_2": (),
        # a UTS namespace of its own; the reports it makes of this machine accept 0 and 1
        "test_hostile_hostname": (),
    },
    # fixture trees, config and ethtool texts, the control plane; the reports of this machine
    # accept 0 and 1 (the ENA check, which the kernel log tests can turn, and the real agent
    # keep the lock)
    "test_valgrind.py": {
        "test_check_memcg": (),
        "test_config_check_and_ena_diff": (),
        "test_agent_once_kube_on_the_real_control_plane": (),
        "test_agent_once_kube_on_garbage_answers": (),
        "test_report": (),
        "test_report_html_and_flame": (),
        "test_fleet_on_the_real_control_plane": (),
    },
}


# HOST modules most of whose tests touch nothing of the host, the other way round: the tests
# that do (the rest are host-free, as in HOST_FREE).
HOST_ONLY = {
    # helm template renderings and `config check` on files of the test's own; these two run the
    # checks over the real /proc and /sys (the narrowed /sys compares two runs' verdicts: another
    # session's burst between them would change one)
    "test_privilege_chart.py": {"test_checks_read_the_same_through_the_narrowed_sys",
                                "test_the_checks_and_the_agent_work_as_nobody"},
}


def host_free(item):
    mod = os.path.basename(str(item.fspath))
    name = getattr(item, "originalname", item.name)
    if mod in HOST_ONLY:
        return name not in HOST_ONLY[mod]
    free = HOST_FREE.get(mod, {})
    if name not in free:
        return False
    cs = getattr(item, "callspec", None)
    return not (cs and any(cs.id == x or cs.id.startswith(x + "-") for x in free[name]))


# Sessions on the run's longest path (make test's Kubernetes e2e: they start when the control
# plane is built, late on a fresh machine) take the host lock before the others: such a session
# leaves HOST_LOCK.first.PID while it waits, and the others wait while one is there. Only at a
# module's start: a module that holds the lock keeps it to its end.
FIRST_ENV = "CZ_HOST_LOCK_FIRST"
# And its holder runs CZ_HOST_LOCK_BOOST below the session's nice (root only), what it starts
# meanwhile too: the lock is the run's narrowest resource (its holds add up to most of a cold
# run's wall time), and a host test slowed by the builds beside it holds it longer. make test's
# noise spinners run at the same nice (stages.py), so they compete with it as with any test.
BOOST_ENV = "CZ_HOST_LOCK_BOOST"


def _start_time(pid):
    """Process @pid's start time (clock ticks since boot, /proc/PID/stat field 22): with the PID,
    a name no later process has. Read as bytes: the command name before it may be anything (a
    marker's PID reused by a process whose name is a UTF-8 character cut in two)."""
    try:
        with open("/proc/%d/stat" % pid, "rb") as f:
            return f.read().rsplit(b")", 1)[1].split()[19].decode()
    except (OSError, IndexError):
        return ""


def _firsts():
    """Whether a live session that goes first waits for the host lock; a marker its process
    left when it died (SIGKILL) is removed."""
    d, base = os.path.split(HOST_LOCK)
    found = False
    for name in os.listdir(d or "."):
        if not name.startswith(base + ".first."):
            continue
        path = os.path.join(d, name)
        try:
            pid = int(name.rsplit(".", 1)[1])
            with open(path) as f:
                want = f.read()
        except (ValueError, OSError):
            continue
        if want and _start_time(pid) == want:
            found = True
        elif want or not os.path.exists("/proc/%d" % pid):
            try:
                os.unlink(path)
            except OSError:
                pass
    return found


class HostLock:
    """The host lock (flock, exclusive; released by the kernel if this process dies) and its
    account: per module, the time spent waiting for it and holding it. With CZ_HOST_LOCK_LOG set
    (make test: build/stages/host-lock-STAGE.log) each module appends "module waited held"
    (seconds) when it ends: the sessions' host modules run one at a time, so their held times
    add up to a floor under the run's wall time."""

    def __init__(self):
        self.fd, self.since, self.mod = None, None, None
        self.waited = self.held = 0.0
        self.nice = None        # the nice to go back to when the lock is let go

    def enter(self, mod):
        """The tests of @mod run now: the module before it is over."""
        if self.mod != mod:
            self.end()
            self.mod = mod

    def acquire(self, mod):
        import fcntl
        self.enter(mod)
        if self.since is not None:
            return
        if self.fd is None:
            self.fd = os.open(HOST_LOCK, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        t0 = time.monotonic()
        first = os.environ.get(FIRST_ENV) == "1"
        mark = "%s.first.%d" % (HOST_LOCK, os.getpid()) if first else None
        if mark:
            with open(mark, "w") as f:
                f.write(_start_time(os.getpid()))
        try:
            while True:
                while not first and _firsts():
                    time.sleep(0.2)
                fcntl.flock(self.fd, fcntl.LOCK_EX)
                if first or not _firsts():
                    break
                # one that goes first asked meanwhile (flock wakes every waiter): it has it
                fcntl.flock(self.fd, fcntl.LOCK_UN)
        finally:
            if mark:
                os.unlink(mark)
        self.since = time.monotonic()
        self.waited += self.since - t0
        boost = int(os.environ.get(BOOST_ENV) or 0)
        if boost > 0 and os.geteuid() == 0:
            self.nice = os.getpriority(os.PRIO_PROCESS, 0)
            os.setpriority(os.PRIO_PROCESS, 0, max(self.nice - boost, -20))

    def release(self):
        if self.since is not None:
            self.held += time.monotonic() - self.since
            self.since = None
        if self.nice is not None:
            os.setpriority(os.PRIO_PROCESS, 0, self.nice)
            self.nice = None
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None

    def end(self):
        """The module is over: release, and log its account."""
        self.release()
        log = os.environ.get("CZ_HOST_LOCK_LOG")
        if self.mod and log:
            with open(log, "a") as f:
                f.write("%s %.1f %.1f\n" % (self.mod, self.waited, self.held))
        self.mod, self.waited, self.held = None, 0.0, 0.0


_HOST = HostLock()


@contextlib.contextmanager
def host_lock_let_go():
    """For a host test waiting on something slow that is not the host's (a component's build:
    cluster.WHILE_BUILDING): the lock is let go meanwhile and taken again after."""
    mod, held = _HOST.mod, _HOST.since is not None
    if held:
        _HOST.release()
    try:
        yield
    finally:
        if held:
            _HOST.acquire(mod)


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item):
    """Before any fixture of @item is set up (a module's own, e.g. one that burns a core, too):
    the lock taken for a HOST module's test, let go for a host-free one (HOST_FREE, HOST_ONLY)
    and after the last host module's teardown."""
    mod = os.path.basename(str(item.fspath))
    if mod in HOST and not host_free(item):
        _HOST.acquire(mod)
    elif mod in HOST:
        _HOST.enter(mod)
        _HOST.release()
    elif _HOST.mod:
        _HOST.end()


def pytest_sessionfinish(session):
    _HOST.end()


# Modules that need a component make test builds in a stage of its own (NPD's releases: the npd
# stage; the real node: the node-runtime and node stages; tests/tools/stages.py) beside or after
# the control plane's: on a fresh machine they run last in their session, when that build is
# done or nearly, instead of waiting for it in the middle (a cold run measured
# test_npd_kernel_monitor waiting 9 min there, the whole session with it). By module: the
# build script (tests/tools/<dir>/build.sh) and its components.
LATE_UNBUILT = {
    "test_npd_kernel_monitor.py": (("kube", ("npd", "npd-old")),),
    "test_npd_real.py": (("kube", ("npd", "npd-old")),),
    "test_condition_lifecycle.py": (("kube", ("npd", "npd-old")),),
    "test_real_node.py": (("kube", ("npd",)), ("node", ("all",))),
}
LATE_ENV = "CZ_LATE_UNBUILT"


def _late_modules():
    """The LATE_UNBUILT modules whose components are not all built now."""
    import cluster     # tests/tools/kube, on sys.path from pytest_configure
    tools = os.path.join(ROOT, "tests", "tools")
    return sorted(m for m, needs in LATE_UNBUILT.items()
                  if not all(cluster.is_built(comps, os.path.join(tools, d, "build.sh"))
                             for d, comps in needs))


def pytest_configure(config):
    config.addinivalue_line("markers", "kube: needs the real control plane (set on every test "
                            "that uses the control_plane fixture, directly or through kube/certs)")
    config.addinivalue_line("markers", "check: in make check's fast subset (CHECK above)")
    config.addinivalue_line("markers", "no_asan: left to the plain pass (NO_ASAN above)")
    # a component's build that is still running lets the host lock go (cluster.WHILE_BUILDING)
    import sys
    kube_tools = os.path.join(ROOT, "tests", "tools", "kube")
    if kube_tools not in sys.path:
        sys.path.insert(0, kube_tools)
    import cluster
    cluster.WHILE_BUILDING = host_lock_let_go
    # Asked once, by the session (or xdist's controller, before its workers start: they
    # inherit it), so that every worker collects the same order even when a build ends
    # between their collections (xdist refuses workers whose collections differ)
    if not hasattr(config, "workerinput"):
        os.environ[LATE_ENV] = ",".join(_late_modules())


def pytest_collection_modifyitems(config, items):
    here = os.path.dirname(os.path.abspath(__file__))
    for name in sorted(HOST | set(NO_ASAN) | {c.split("::")[0] for c in CHECK}):
        if not os.path.exists(os.path.join(here, name)):
            raise pytest.UsageError("tests/e2e/conftest.py names %s, which is not a test file "
                                    "(renamed? update HOST, NO_ASAN or CHECK)" % name)
    # a HOST module's host-free tests (HOST_FREE, HOST_ONLY) first (stable otherwise), so they
    # run as one stretch without the host lock; a module whose components are not built yet
    # last (LATE_UNBUILT)
    first = {}
    for i, it in enumerate(items):
        first.setdefault(str(it.fspath), i)
    late = set(os.environ.get(LATE_ENV, "").split(","))
    items[:] = sorted(items, key=lambda it: (
        os.path.basename(str(it.fspath)) in late, first[str(it.fspath)],
        os.path.basename(str(it.fspath)) in HOST and not host_free(it)))
    for it in items:
        mod = os.path.basename(str(it.fspath))
        if "control_plane" in getattr(it, "fixturenames", ()):
            it.add_marker(pytest.mark.kube)
        if mod + "::" + it.name in CHECK:
            it.add_marker(pytest.mark.check)
        if mod in NO_ASAN:
            it.add_marker(pytest.mark.no_asan)

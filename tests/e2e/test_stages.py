# SPDX-License-Identifier: MIT
"""make test's stage runner (tests/tools/stages.py): a failing stage hides no other. A stage
that only has to come after another (an order that spares the CPU) runs whatever that one
ended with; one that needs another's result is reported as not run, and counts as failed."""

import os
import re
import shlex
import subprocess
import sys
import threading
import time

import pytest

from conftest import ROOT

sys.path.insert(0, os.path.join(ROOT, "tests", "tools"))
import stages  # noqa: E402


# A shell's own nice (/proc/PID/stat field 19, after the command name)
NICE_SH = "sed 's/.*) //' /proc/$$/stat | cut -d' ' -f17"


def run_all(plan):
    by = {s.name: s for s in plan}
    ts = [threading.Thread(target=s.run, args=(by,)) for s in plan]
    for t in ts:
        t.start()
    for t in ts:
        t.join(60)
    return by


def test_after_runs_past_a_failure_needs_does_not(tmp_path, monkeypatch):
    monkeypatch.setattr(stages, "LOGDIR", str(tmp_path))
    by = run_all([stages.Stage("unit", ["sh", "-c", "echo '1 passed, 1 failed'; exit 1"]),
                  stages.Stage("asan-build", ["sh", "-c", "echo built"], after=("unit",)),
                  stages.Stage("needs-unit", ["true"], needs=("unit",))])
    assert by["unit"].rc == 1 and by["unit"].counts == "1 passed, 1 failed"
    assert by["asan-build"].rc == 0, by["asan-build"].note
    assert open(os.path.join(str(tmp_path), "asan-build.log")).read() == "built\n"
    assert by["needs-unit"].rc == 1 and by["needs-unit"].note == "not run: unit failed"


def test_stages_lines_never_run_together(tmp_path, monkeypatch, capfd):
    """The stages' threads share stdout: every line is a stage's start or end, or one of its
    lines behind its name, whole (two threads' lines once ran together in a CI log)."""
    monkeypatch.setattr(stages, "LOGDIR", str(tmp_path))
    burst = "for i in $(seq 1000); do echo line-$i; done"
    run_all([stages.Stage("s%d" % k, ["sh", "-c", burst]) for k in range(8)])
    lines = capfd.readouterr().out.splitlines()
    whole = re.compile(r"^(\[s\d\] line-\d+|stages: s\d (started: sh -c .*|passed in \d+m\d\ds))$")
    assert len(lines) == 8 * 1002, len(lines)
    assert [ln for ln in lines if not whole.match(ln)] == []


def gone(pid):
    """Whether @pid has exited (no such process, or a zombie its parent has not reaped)."""
    fields = stages.stat_fields(pid)
    return not fields or fields[0] == b"Z"


def test_descendants_reads_any_name():
    """A process below the runner may be named anything: a name that is a UTF-8 character cut
    in two (the kernel cuts names at 15 bytes) is listed too, and does not stop the sweep."""
    child = subprocess.Popen([sys.executable, "-c", "import sys, time\n"
                              "open('/proc/self/comm', 'wb').write(b'cz\\xe2\\x82')\n"
                              "print(flush=True)\ntime.sleep(60)"], stdout=subprocess.PIPE)
    try:
        child.stdout.readline()
        assert open("/proc/%d/comm" % child.pid, "rb").read() == b"cz\xe2\x82\n"
        assert child.pid in stages.descendants(os.getpid())
    finally:
        child.kill()
        child.wait()


def test_an_interrupted_run_leaves_no_process(tmp_path):
    """A stage's process that ignores SIGINT and started a server in a session of its own (as a
    pytest-xdist worker starts a control plane): an interrupted run (stop_all, what SIGTERM or
    SIGINT to stages.py calls) ends the stage's group and then the server, by PID."""
    pidfile = tmp_path / "server.pid"
    stage = subprocess.Popen(["sh", "-c", "trap '' INT; setsid sleep 300 & echo $! > %s; wait"
                              % shlex.quote(str(pidfile))], start_new_session=True)
    server = None
    try:
        deadline = time.monotonic() + 10
        while not (pidfile.exists() and pidfile.read_text().strip()):
            assert time.monotonic() < deadline, "the stage did not start its server"
            time.sleep(0.05)
        server = int(pidfile.read_text())
        # the shell writes $! as it forks: the child calls setsid() a moment later
        while os.getsid(server) != server:
            assert time.monotonic() < deadline, "the stage's server took no session of its own"
            time.sleep(0.05)
        assert os.getpgid(server) != os.getpgid(stage.pid)   # in none of the groups
        stages.stop_all([stage.pid], 1, stage.pid)
        assert stage.wait(10) == -9      # SIGINT ignored: the group's SIGKILL after the grace
        deadline = time.monotonic() + 10
        while not gone(server):
            assert time.monotonic() < deadline, "the stage's server outlived the run"
            time.sleep(0.05)
        server = None
    finally:
        if server:
            os.kill(server, 9)
        if stage.poll() is None:
            os.killpg(stage.pid, 9)
            stage.wait()


def test_make_test_needs_only_what_it_uses():
    """In make test's plan a stage needs another's success only where it runs what that one
    built (the binaries, the control plane); the rest is order. A failed unit stage or node e2e
    leaves the ASan stages and the fuzzers to run."""
    plan = {s.name: s for s in stages.plan("test")}
    needs = {n: set(s.needs) for n, s in plan.items()}
    assert needs == {
        "control-plane": set(), "npd": set(), "node-runtime": set(), "node": set(),
        "build": set(), "unit": {"build"},
        "e2e-node": {"build"}, "e2e-kube": {"build", "control-plane"},
        "e2e-real-node": {"build", "control-plane", "node"}, "asan-build": set(),
        "asan-unit": {"asan-build"}, "asan-e2e-node": {"asan-build"},
        "asan-e2e-kube": {"asan-build", "control-plane"},
        "fuzz": set()}, needs
    assert plan["asan-build"].after == ("unit",) and plan["fuzz"].after == ("asan-e2e-node",)
    assert plan["node"].after == ("control-plane",)
    # the real node's module in its own session only
    assert plan["e2e-real-node"].cmd[-1] == stages.REAL_NODE
    assert stages.REAL_NODE in plan["e2e-kube"].cmd and os.path.exists(
        os.path.join(ROOT, stages.REAL_NODE))
    # the other builds beside the control plane's only on idle cores
    assert {n for n, s in plan.items() if s.nice_until == "control-plane"} == {
        "npd", "node-runtime"}
    # the C build first (no test runs meanwhile); the sessions after the control plane take
    # the host lock first, the ASan one in two workers too
    assert {n for n, s in plan.items() if s.boost} == {"build"}
    assert {n for n, s in plan.items() if s.env.get("CZ_HOST_LOCK_FIRST")} == {
        "e2e-kube", "asan-e2e-kube", "e2e-real-node"}
    assert "-n" in plan["asan-e2e-kube"].cmd


def test_a_boosted_stage_runs_below_the_runners_nice(tmp_path, monkeypatch):
    """boost=N: the stage and what it starts run N below this process's nice (root only)."""
    if os.geteuid() != 0:
        pytest.skip("a nice below one's own needs root (CAP_SYS_NICE); not root")
    monkeypatch.setattr(stages, "LOGDIR", str(tmp_path))
    st = stages.Stage("control-plane", ["sh", "-c", "sh -c %s" % shlex.quote(NICE_SH)], boost=5)
    st.run({"control-plane": st})
    mine = os.getpriority(os.PRIO_PROCESS, 0)
    assert st.rc == 0 and (tmp_path / "control-plane.log").read_text().split() == [
        str(max(mine - 5, -20))], (tmp_path / "control-plane.log").read_text()


def test_nice_until_a_stage_is_over(tmp_path, monkeypatch):
    """A stage with nice_until runs at nice 19 while that stage runs, its children too, and at
    this process's nice after it: what it started before and what it starts later."""
    if os.geteuid() != 0:
        pytest.skip("lowering a nice value back needs root (CAP_SYS_NICE); not root")
    monkeypatch.setattr(stages, "LOGDIR", str(tmp_path))
    go = tmp_path / "go"
    # the stage's shell starts a child before the first stage ends and reads both nices after
    body = ("sleep 30 & c=$!; cat /proc/$$/stat /proc/$c/stat | sed 's/.*) //' | cut -d' ' -f17;"
            " while [ ! -e %s ]; do sleep 0.05; done; sleep 0.3;"
            " cat /proc/$$/stat /proc/$c/stat | sed 's/.*) //' | cut -d' ' -f17;"
            " sh -c 'sed \"s/.*) //\" /proc/$$/stat | cut -d\" \" -f17'; kill $c" % go)
    first = stages.Stage("control-plane", ["sh", "-c", "while [ ! -e %s ]; do sleep 0.05; done"
                                           % (tmp_path / "ready")])
    niced = stages.Stage("npd", ["sh", "-c", body], nice_until="control-plane")
    by = {"control-plane": first, "npd": niced}
    ts = [threading.Thread(target=s.run, args=(by,)) for s in by.values()]
    for t in ts:
        t.start()
    log = tmp_path / "npd.log"
    for _ in range(200):
        if log.exists() and len(log.read_text().split()) >= 2:
            break
        time.sleep(0.05)
    (tmp_path / "ready").touch()
    first.done.wait(30)
    go.touch()
    for t in ts:
        t.join(60)
    mine = os.getpriority(os.PRIO_PROCESS, 0)
    assert niced.rc == 0 and log.read_text().split() == [
        str(min(mine + 19, 19))] * 2 + [str(mine)] * 3, log.read_text()


def test_a_failed_stage_says_why_at_the_end(tmp_path, monkeypatch):
    """The summary names what failed in each failed stage's own words (a CI log shows its
    tail): libFuzzer's and the sanitizer's SUMMARY, pytest's FAILED lines, a note."""
    monkeypatch.setattr(stages, "LOGDIR", str(tmp_path))
    out = "\n".join(["fuzz: fuzz_a clean for 4s (3 log lines)", "fuzz: fuzz_b FAILED, see x",
                      "SUMMARY: AddressSanitizer: heap-buffer-overflow x.c:12 in f",
                      "fuzz: 1 passed, 1 failed"])
    by = run_all([stages.Stage("fuzz", ["sh", "-c", "printf '%s\\n' \"$0\"; exit 1", out]),
                  stages.Stage("e2e", ["sh", "-c", "echo 'FAILED tests/e2e/t.py::test_x - "
                                       "assert 0'; echo '1 failed'; exit 1"]),
                  stages.Stage("asan-e2e", ["true"], needs=("e2e",))])
    assert stages.why_failed(by["fuzz"]) == [
        "fuzz: fuzz_b FAILED, see x",
        "SUMMARY: AddressSanitizer: heap-buffer-overflow x.c:12 in f"]
    assert stages.why_failed(by["e2e"]) == ["FAILED tests/e2e/t.py::test_x - assert 0"]
    assert stages.why_failed(by["asan-e2e"]) == ["not run: e2e failed"]


def test_a_stage_counts_the_cpu_of_what_it_ran(tmp_path, monkeypatch):
    """The CPU a stage used, its children's included (wait4): a stage that burns a core's
    second in a child shows at least most of it; one that sleeps shows next to none."""
    monkeypatch.setattr(stages, "LOGDIR", str(tmp_path))
    burn = "import time; t = time.process_time(); exec('while time.process_time() - t < 1: pass')"
    by = run_all([stages.Stage("burn", ["sh", "-c", "%s -c \"%s\"; true" % (sys.executable, burn)]),
                  stages.Stage("wait", ["sleep", "1"])])
    assert by["burn"].rc == 0 and by["burn"].cpu >= 0.9, by["burn"].cpu
    assert by["wait"].rc == 0 and by["wait"].cpu < 0.2, by["wait"].cpu
    assert by["wait"].secs >= 1.0


def host_session(tmp_path, mod, **env):
    """A pytest session of its own on @mod with tests/e2e/conftest.py loaded (the real host lock
    handling) and the lock at tmp_path/host.lock; @env added to its environment."""
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           "--rootdir", str(tmp_path), "--confcutdir", str(tmp_path),
                           "-p", "conftest", str(mod)],
                          cwd=os.path.join(ROOT, "tests", "e2e"), capture_output=True,
                          text=True, timeout=300,
                          env=dict(os.environ, CZ_HOST_LOCK=str(tmp_path / "host.lock"),
                                   PYTHONPATH=os.path.join(ROOT, "tests", "e2e"),
                                   **dict({"CZ_HOST_LOCK_LOG": "", "CZ_HOST_LOCK_FIRST": "",
                                           "CZ_HOST_LOCK_BOOST": ""},
                                          **env)))


def test_host_lock_account(tmp_path, monkeypatch):
    """A pytest session with CZ_HOST_LOCK_LOG set logs each host module's wait and hold (the
    real fixture, on a module of its own taking the real lock), and the run's summary adds them
    up per stage and names the longest holders."""
    monkeypatch.setattr(stages, "LOGDIR", str(tmp_path))
    log = stages.host_lock_log("e2e-node")
    mod = tmp_path / "test_cpu.py"   # a HOST name: the conftest takes the lock for it
    mod.write_text("import time\n\ndef test_hold():\n    time.sleep(0.3)\n")
    p = host_session(tmp_path, mod, CZ_HOST_LOCK_LOG=log)
    assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-2000:]
    (name, waited, held), = [l.split() for l in open(log).read().splitlines()]
    assert name == "test_cpu.py" and float(waited) >= 0 and 0.3 <= float(held) < 60, (waited, held)
    with open(stages.host_lock_log("asan-e2e"), "w") as f:
        f.write("test_census.py 12.0 95.5\ntest_ena.py 1.0 61.0\n")
    lines = stages.host_lock_lines(["e2e-node", "e2e-kube", "asan-e2e"], longest=2)
    assert re.match(r"host lock: e2e-node held 0m0\ds over 1 modules, waited 0m\d\ds; "
                    r"asan-e2e held 2m36s over 2 modules, waited 0m13s; held total "
                    + stages.mmss(156.5 + float(held)) + "$", lines[0]), lines
    assert lines[1] == "host lock: longest held: test_census.py 1m35s (asan-e2e), " \
        "test_ena.py 1m01s (asan-e2e)", lines
    assert stages.host_lock_lines(["e2e-kube"]) == []


def test_a_session_that_goes_first_takes_the_host_lock_first(tmp_path):
    """Two sessions wait for the host lock, the one with CZ_HOST_LOCK_FIRST (make test's
    Kubernetes e2e) after the other: when the lock is free it runs its host module first,
    whichever of them the kernel wakes; its marker is gone after."""
    import fcntl
    lock = tmp_path / "host.lock"
    order = tmp_path / "order"
    fd = os.open(str(lock), os.O_RDWR | os.O_CREAT, 0o600)
    fcntl.flock(fd, fcntl.LOCK_EX)
    procs, done = [], {}
    try:
        for name, first in (("plain", "0"), ("first", "1")):
            d = tmp_path / name
            d.mkdir()
            mod = d / "test_cpu.py"   # a HOST name
            mod.write_text("import time\n\ndef test_hold():\n"
                           "    open(%r, 'a').write(%r)\n    time.sleep(0.3)\n"
                           % (str(order), name + "\n"))
            t = threading.Thread(target=lambda m=mod, f=first: done.setdefault(
                f, host_session(tmp_path, m, CZ_HOST_LOCK_FIRST=f)))
            procs.append(t)
            procs[-1].start()
            deadline = time.monotonic() + 60
            # each waits on the lock before the next starts: the plain one in flock, the first
            # one with its marker left
            while time.monotonic() < deadline and not (
                    first == "1" and list(tmp_path.glob("host.lock.first.*"))
                    or first == "0" and waits_on(str(lock))):
                time.sleep(0.1)
        assert list(tmp_path.glob("host.lock.first.*")), "the first session left no marker"
    finally:
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)
        for t in procs:
            t.join(120)
    for p in done.values():
        assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-2000:]
    assert len(done) == 2
    assert order.read_text().split() == ["first", "plain"]
    assert not list(tmp_path.glob("host.lock.first.*"))


def test_the_host_lock_holder_runs_boosted(tmp_path):
    """CZ_HOST_LOCK_BOOST=N: a HOST module's test (and what it starts) runs N below the
    session's nice while it holds the host lock, a module without the lock at the session's."""
    if os.geteuid() != 0:
        pytest.skip("a nice below one's own needs root (CAP_SYS_NICE); not root")
    out = tmp_path / "nices"
    body = ("import subprocess\n\ndef test_nice():\n    open(%r, 'a').write(subprocess.run("
            "['sh', '-c', %r], capture_output=True, text=True).stdout)\n" % (str(out), NICE_SH))
    (tmp_path / "test_cpu.py").write_text(body)          # a HOST name
    (tmp_path / "test_zz_plain.py").write_text(body)     # no HOST name, after it
    p = host_session(tmp_path, tmp_path, CZ_HOST_LOCK_BOOST="3")
    assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-2000:]
    mine = os.getpriority(os.PRIO_PROCESS, 0)
    assert out.read_text().split() == [str(max(mine - 3, -20)), str(mine)], out.read_text()


def waits_on(lock):
    """Whether some process waits for a flock on @lock (/proc/locks lists waiters with ->)."""
    ino = os.stat(lock).st_ino
    return any("->" in l and l.split()[-3].endswith(":%d" % ino)
               for l in open("/proc/locks").read().splitlines())


def test_a_slow_build_lets_the_host_lock_go(tmp_path):
    """A host module's test that waits on a component build still running (make test's node
    stage) lets the host lock go while it waits, and holds it again after: another process
    can take the lock during the build, not before it nor after."""
    lock = tmp_path / "host.lock"
    build = tmp_path / "build.sh"
    build.write_text("#!/bin/sh\nsleep 4\necho npd=/x\n")
    os.chmod(build, 0o755)
    mod = tmp_path / "test_cpu.py"   # a HOST name
    mod.write_text(
        "import fcntl, os, sys, threading, time\n"
        "import cluster\n\n"
        "def free():\n"
        "    fd = os.open(%r, os.O_RDWR)\n"
        "    try:\n"
        "        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)\n"
        "        return True\n"
        "    except OSError:\n"
        "        return False\n"
        "    finally:\n"
        "        os.close(fd)\n\n"
        "def test_build():\n"
        "    assert not free()\n"
        "    seen = []\n"
        "    t = threading.Thread(target=lambda: (time.sleep(3), seen.append(free())))\n"
        "    t.start()\n"
        "    assert cluster.build(('npd',), script=%r) == {'npd': '/x'}\n"
        "    t.join()\n"
        "    assert seen == [True]\n"
        "    assert not free()\n" % (str(lock), str(build)))
    p = host_session(tmp_path, mod)
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-2000:]


def collected(*mods, **env):
    """The node IDs `pytest --collect-only` lists for @mods (tests/e2e's conftest loaded)."""
    p = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q",
                        "-p", "no:cacheprovider", *mods], cwd=os.path.join(ROOT, "tests", "e2e"),
                       capture_output=True, text=True, timeout=300, env=dict(os.environ, **env))
    assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-2000:]
    return [l.split("::")[0] for l in p.stdout.splitlines() if "::" in l]


def test_a_module_whose_components_are_unbuilt_runs_last(tmp_path):
    """On a fresh machine (an empty component cache: NPD's releases not built) the node e2e's
    NPD module runs after the others, whatever its place on the command line; with them built
    it keeps its place."""
    mods = ("test_npd_kernel_monitor.py", "test_memcg.py")
    order = collected(*mods, CZ_KUBE_CACHE=str(tmp_path / "empty-cache"))
    assert order and order == sorted(order, key=lambda m: m != "test_memcg.py"), order
    assert not (tmp_path / "empty-cache").exists()      # asked, nothing built
    sys.path.insert(0, os.path.join(ROOT, "tests", "tools", "kube"))
    import cluster
    if cluster.is_built(("npd", "npd-old")):              # this machine's cache, as on CI
        order = collected(*mods)
        assert order == sorted(order, key=lambda m: m != mods[0]), order

#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""The stages of `make test` and `make check`, run so that a failing stage hides no other.

    stages.py test    what CI runs: build checks, unit, e2e on the node and on the real control
                      plane, the ASan+UBSan build's unit tests and e2e on input, fuzz smoke
    stages.py check   the inner loop (a few minutes): build checks, unit, a fast e2e subset
                      that touches every room once (tests marked `check`)

Every stage runs even when an earlier one failed (a stage that needs a failed one, e.g. the
Kubernetes e2e after a failed control-plane build, is reported as not run and counts as a
failure); the run closes with one summary line per stage (its counts and time) and a total
line, and exits 1 if any stage failed.

What runs at the same time, and why: the control plane's cold build (Go, tests/tools/kube:
etcd, kube-apiserver, kube-controller-manager, kwok, the three side by side) is started first,
in the background, because with the Kubernetes e2e after it it is the longest path on a fresh
machine and needs nothing of ours; the C build, the unit tests, the node e2e, the ASan build
and the ASan node e2e run beside it. The Kubernetes e2e and the ASan Kubernetes e2e start when
it is built. NPD's releases (the npd stage) and the node's runtime (runc, CNI, containerd: the
node-runtime stage) start at once too, but at nice 19 until the control plane is built; the
kubelet, kube-proxy and the scheduler after it (the node stage), from its build cache, and the
real node's module in a session of its own when they are built (e2e-real-node). A test
that gets to a component first waits on its lock; a module whose components are not built yet
runs last in its session (LATE_UNBUILT in tests/e2e/conftest.py).
The test sessions run beside each other: most of their time is spent waiting on timers and
servers, and every test holds with other work on the machine (CZ_TEST_NOISE). The pytest
sessions keep apart: each has a control plane of its own on ports of its own, and the tests of
the modules that change or measure the whole host (real bursts, dying memcgs, a netns, the
kernel log) hold the host lock (HOST and HOST_FREE in tests/e2e/conftest.py), so no two of them
overlap; the summary gives the lock's account. The fuzzers start
when the ASan node e2e is done, in the plain node e2e's tail.

CZ_TEST_NOISE=N starts N CPU spinners at 40% of a core each beside the whole run
(tests/tools/noise.py): the suite must pass with them.
"""

import os
import re
import signal
import subprocess
import sys
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PY = os.environ.get("PYTHON", "/usr/bin/python3")
MAKE = ["make", "--no-print-directory"]
LOGDIR = os.path.join(ROOT, "build", "stages")
REAL_NODE = "tests/e2e/test_real_node.py"     # a stage of its own (plan)
RUNNING = set()      # the stages' process groups, ended with this process (SIGTERM, SIGINT)
# The sessions that start when the control plane is built take the host lock before the node
# e2e's (tests/e2e/conftest.py, FIRST_ENV): on a fresh machine they are the run's longest path
FIRST = {"CZ_HOST_LOCK_FIRST": "1"}
# The host lock's holder runs this far below the tests' nice (tests/e2e/conftest.py, BOOST_ENV),
# and so do the noise spinners (CZ_TEST_NOISE): the noise competes with the host tests as before
HOST_BOOST = 10
# The stages' threads share stdout: one line is one write under this lock (print writes the text
# and its newline apart, and two threads' lines ran together: "...kube-schedulerstages: ...")
OUT = threading.Lock()


def say(line):
    with OUT:
        sys.stdout.write(line + "\n")
        sys.stdout.flush()


class Stage:
    def __init__(self, name, cmd, env=None, needs=(), after=(), log=True, nice_until=None,
                 boost=0):
        # needs: stages that must pass first; after: stages that must only be over (an order
        # that spares the CPU, not a dependency: their failure hides nothing); nice_until: a
        # stage until whose end this one runs at nice 19 (on the cores only when they would
        # be idle), then at the nice it was started with; boost: how far below the runner's
        # nice this one runs (a build every test waits for, with none beside it; root only)
        self.name, self.cmd, self.env, self.needs, self.after = name, cmd, env or {}, needs, after
        self.nice_until, self.boost = nice_until, boost
        self.rc = None
        self.secs = 0.0
        self.cpu = 0.0
        self.counts = ""
        self.note = ""
        self.log = os.path.join(LOGDIR, name + ".log") if log else None
        self.done = threading.Event()

    def run(self, stages):
        for n in self.after:
            stages[n].done.wait()
        for n in self.needs:
            dep = stages[n]
            dep.done.wait()
            if dep.rc != 0:
                self.rc, self.note = 1, "not run: %s failed" % n
                self.done.set()
                return
        t0 = time.monotonic()
        env = dict(os.environ, **self.env)
        say("stages: %s started: %s" % (self.name, " ".join(self.cmd)))
        with open(self.log, "w") as out:
            niced = bool(self.nice_until) and not stages[self.nice_until].done.is_set()
            cmd = ["nice", "-n", "19"] + self.cmd if niced else self.cmd
            if self.boost and os.geteuid() == 0:
                cmd = ["nice", "-n", str(-self.boost)] + cmd
            p = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE,
                                 stderr=subprocess.STDOUT, text=True, errors="replace",
                                 start_new_session=True)
            RUNNING.add(p.pid)
            if niced:
                threading.Thread(target=unnice_after, daemon=True,
                                 args=(stages[self.nice_until], p.pid)).start()
            for line in p.stdout:
                out.write(line)
                out.flush()
                say("[%s] %s" % (self.name, line.rstrip("\n")))
            # wait4: the CPU the stage used, its waited-for children (servers, builds) included:
            # a stage that used far less than its wall time waits on timers, not on the CPU
            _, status, ru = os.wait4(p.pid, 0)
            p.returncode = self.rc = os.waitstatus_to_exitcode(status)
            self.cpu = ru.ru_utime + ru.ru_stime
            RUNNING.discard(p.pid)
        self.secs = time.monotonic() - t0
        self.counts = counts_of(open(self.log, errors="replace").read())
        say("stages: %s %s in %s" % (self.name, "passed" if self.rc == 0 else
                                     "FAILED (exit %d)" % self.rc, mmss(self.secs)))
        self.done.set()


def unnice_after(stage, pgid):
    """Gives process group @pgid (a stage started at nice 19) this process's nice when @stage
    is over: every process of the group at that moment, and so whatever they start later.
    Lowering a nice value needs root (CAP_SYS_NICE); without it the stage stays at 19."""
    stage.done.wait()
    try:
        os.setpriority(os.PRIO_PGRP, pgid, os.getpriority(os.PRIO_PROCESS, 0))
    except OSError:
        pass


def alive(pgid):
    """Whether any process of the group @pgid is left."""
    try:
        os.killpg(pgid, 0)
        return True
    except (ProcessLookupError, PermissionError):
        return False


def stat_fields(pid):
    """/proc/PID/stat's fields after the command name ([0] state, [1] ppid, [19] start time), as
    bytes: a name may be anything, a UTF-8 character cut in two too. None when @pid is gone."""
    try:
        with open("/proc/%s/stat" % pid, "rb") as f:
            st = f.read()
        return st[st.rindex(b")") + 2:].split()
    except (OSError, ValueError):
        return None


def descendants(root):
    """{PID: start time} of every process below @root (its children, theirs...), from /proc;
    the start time tells a process from a later one given the same PID."""
    kids = {}
    for d in os.listdir("/proc"):
        fields = stat_fields(d) if d.isdigit() else None
        if fields and len(fields) > 19:
            kids.setdefault(int(fields[1]), []).append((int(d), fields[19]))
    out, pending = {}, [root]
    while pending:
        for pid, start in kids.get(pending.pop(), ()):
            if pid not in out:
                out[pid] = start
                pending.append(pid)
    return out


def stop_all(groups, grace, root):
    """End a run: SIGINT to each of @groups first (pytest takes it as Ctrl-C and still runs its
    teardowns: what a test made is removed, its servers stopped), SIGKILL to what is left of
    them after @grace seconds; then SIGKILL, by PID, to every process that was below @root when
    this began and still is that process. A server a test starts in a session of its own (a
    pytest-xdist worker's control plane) is in none of the groups, and outlived them when its
    worker died before its teardown."""
    below = descendants(root)
    for sig, wait in ((signal.SIGINT, grace), (signal.SIGKILL, 0)):
        for pgid in groups:
            try:
                os.killpg(pgid, sig)
            except (ProcessLookupError, PermissionError):
                pass
        deadline = time.monotonic() + wait
        while wait and time.monotonic() < deadline and any(alive(g) for g in groups):
            time.sleep(0.2)
    for pid, start in below.items():
        if (stat_fields(pid) or [])[19:20] == [start]:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


def mmss(s):
    return "%dm%02ds" % (int(s) // 60, int(s) % 60)


def counts_of(text):
    """The stage's own closing line: pytest's, or a plain 'NAME: N passed, N failed'."""
    found = None
    for m in re.finditer(r"^.*\b(\d+) (passed|failed)\b.*$", text, re.M):
        found = m.group(0)
    if not found:
        return ""
    p = re.search(r"(\d+) passed", found)
    f = re.search(r"(\d+) failed", found)
    s = re.search(r"(\d+) skipped", found)
    e = re.search(r"(\d+) errors?\b", found)
    return "%s passed, %s failed%s%s" % (p.group(1) if p else 0, f.group(1) if f else 0,
                                          ", %s skipped" % s.group(1) if s else "",
                                          ", %s errors" % e.group(1) if e else "")


def why_failed(st, most=8):
    """A failed stage's own words, for the end of the run where a CI log's tail shows them:
    pytest's FAILED/ERROR summary lines, a sanitizer's or libFuzzer's SUMMARY, a target or
    test binary that says FAILED, make's error line."""
    if st.note:
        return [st.note]
    try:
        text = open(st.log, errors="replace").read()
    except OSError as e:
        return ["no log: %s" % e]
    pat = re.compile(r"^(FAILED |ERROR |SUMMARY: |fuzz: .*FAILED|FAILED: |make: \*\*\*|"
                     r".*\berror: )")
    lines = [ln.strip()[:6000] for ln in text.splitlines() if pat.match(ln.strip())]
    return lines[-most:] or ["exit %s; see %s" % (st.rc, st.log)]


def pytest(name, marker, build, extra=(), paths=("tests/e2e",)):
    b = os.path.join(ROOT, build)
    # --durations: the slowest tests close each log, where a stage's time goes
    return ([PY, "-m", "pytest", "-q", "-rfEs", "-p", "no:cacheprovider", "--durations=25",
             "-m", marker, *extra, *paths],
            {"CZ_BIN": os.path.join(b, "cpuzombie"), "CZ_BUILD": b,
             "CZ_HOST_LOCK_LOG": host_lock_log(name), "CZ_HOST_LOCK_BOOST": str(HOST_BOOST)})


def host_lock_log(name):
    """Where stage @name's sessions log each host module's wait for the host lock and its hold
    (tests/e2e/conftest.py: HostLock)."""
    return os.path.join(LOGDIR, "host-lock-%s.log" % name)


def host_lock_lines(names, longest=5):
    """The host lock's account: each stage's hold and wait, and the modules that held it
    longest. The held times of all stages add up to a floor under the wall time."""
    rows, out = [], []
    for n in names:
        try:
            text = open(host_lock_log(n)).read()
        except OSError:
            continue
        mods = []
        for line in text.splitlines():
            f = line.split()
            if len(f) == 3:
                mods.append((f[0], float(f[1]), float(f[2])))
        rows += [(held, mod, n) for mod, _, held in mods]
        out.append("%s held %s over %d modules, waited %s" % (
            n, mmss(sum(m[2] for m in mods)), len(mods), mmss(sum(m[1] for m in mods))))
    if not out:
        return []
    top = ", ".join("%s %s (%s)" % (mod, mmss(held), n)
                    for held, mod, n in sorted(rows, reverse=True)[:longest])
    return ["host lock: " + "; ".join(out) + "; held total %s"
            % mmss(sum(r[0] for r in rows)), "host lock: longest held: " + top]


def plan(which):
    """The stages and what each waits for. Without its needs a stage starts at once."""
    s = []
    add = lambda *a, **k: s.append(Stage(*a, **k))  # noqa: E731
    # At the tests' nice, not boosted: the tests run beside it, and boosted it starves them
    # (docs/testing.md has the cold run that measured it)
    add("control-plane", ["tests/tools/kube/build.sh", "all"])
    if which == "test":
        # On a fresh machine the control plane's build and the Kubernetes e2e after it are the
        # longest path: what else is built (NPD's releases, the node's runtime) starts at once
        # but at nice 19 until the control plane is built, so that it takes only idle cores
        # (beside it at nice 0, a cold run's control plane took 29 min instead of 24.5); the
        # tests that need them run last in their sessions (LATE_UNBUILT in conftest.py)
        add("npd", ["tests/tools/kube/build.sh", "npd", "npd-old"], nice_until="control-plane")
        add("node-runtime", ["tests/tools/node/build.sh", "runc", "cni", "containerd"],
            nice_until="control-plane")
        # the kubelet's, kube-proxy's and the scheduler's packages are mostly the control
        # plane's: after it, from its build cache (test_real_node.py waits for them)
        add("node", ["tests/tools/node/build.sh", "kubelet", "kube-scheduler"],
            after=("control-plane",))
    # boost: every test session waits for it, and no test runs beside it
    add("build", MAKE + ["-j2", "all", "hdr-check", "check-layers", "format-check", "kube-tools"],
        boost=5)
    add("unit", MAKE + ["-j2", "test-unit"], needs=("build",))
    if which == "check":
        cmd, env = pytest("e2e-check", "check", "build")
        add("e2e-check", cmd, env=env, needs=("build", "control-plane"))
        return s
    cmd, env = pytest("e2e-node", "not kube", "build")
    add("e2e-node", cmd, env=env, needs=("build",))
    # Two workers (pytest-xdist, a module to a worker, each with a control plane of its own):
    # the Kubernetes tests wait on servers and timers far more than on the CPU
    cmd, env = pytest("e2e-kube", "kube", "build", ("-n", "2", "--dist", "loadfile",
                                                    "--ignore", REAL_NODE))
    add("e2e-kube", cmd, env=dict(env, **FIRST), needs=("build", "control-plane"))
    # The real node in a session of its own, from when its parts are built: in the Kubernetes
    # e2e it came last (its parts were not built when that one started) and a cold run waited
    # for it there, 10 minutes after they were
    cmd, env = pytest("e2e-real-node", "kube", "build", paths=(REAL_NODE,))
    add("e2e-real-node", cmd, env=dict(env, **FIRST), needs=("build", "control-plane", "node"))
    add("asan-build", MAKE + ["-j2", "SANITIZE=1", "all", "unit-bins"], after=("unit",))
    add("asan-unit", MAKE + ["SANITIZE=1", "test-unit"], needs=("asan-build",))
    # The ASan e2e in two sessions: its node tests need no control plane, so on a fresh machine
    # they run while it is still being built; its Kubernetes tests start when it is there
    cmd, env = pytest("asan-e2e-node", "not no_asan and not kube", "build-asan")
    add("asan-e2e-node", cmd, env=env, needs=("asan-build",))
    # in two workers as the plain one: it waits on servers and timers (4m25s of CPU in 16m47s
    # on a fresh machine), and it ended that run
    cmd, env = pytest("asan-e2e-kube", "not no_asan and kube", "build-asan",
                      ("-n", "2", "--dist", "loadfile"))
    add("asan-e2e-kube", cmd, env=dict(env, **FIRST), needs=("asan-build", "control-plane"))
    # The fuzzers (about one core for 3.5 min) in the node e2e's tail rather than after it:
    # that longest stage spends its last minutes on the host lock, not on the cores
    add("fuzz", MAKE + ["fuzz-smoke"], after=("asan-e2e-node",))
    return s


def main():
    which = sys.argv[1] if len(sys.argv) > 1 else "test"
    if which not in ("test", "check"):
        sys.exit("usage: stages.py test|check")
    os.makedirs(LOGDIR, exist_ok=True)
    for f in os.listdir(LOGDIR):
        if f.startswith("host-lock-"):
            os.unlink(os.path.join(LOGDIR, f))
    noise = None
    n = int(os.environ.get("CZ_TEST_NOISE", "0") or 0)
    if n > 0:
        boost = ["nice", "-n", str(-HOST_BOOST)] if os.geteuid() == 0 else []
        noise = subprocess.Popen(boost + [PY, os.path.join(ROOT, "tests/tools/noise.py"), str(n)],
                                 start_new_session=True)
        print("stages: CZ_TEST_NOISE=%d: %d spinners at 40%% beside the run (pid %d)"
              % (n, n, noise.pid), flush=True)
    def end(signum, _frame):
        stop_all(list(RUNNING) + ([noise.pid] if noise else []), 30, os.getpid())
        os._exit(128 + signum)

    signal.signal(signal.SIGTERM, end)
    signal.signal(signal.SIGINT, end)
    t0 = time.monotonic()
    stages = {st.name: st for st in plan(which)}
    threads = [threading.Thread(target=st.run, args=(stages,)) for st in stages.values()]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if noise:
        noise.terminate()
        noise.wait()
    total = time.monotonic() - t0
    print("\n== make %s: one line per stage (logs in build/stages/) ==" % which)
    bad = 0
    npass = nfail = nskip = 0
    for st in stages.values():
        ok = st.rc == 0
        bad += not ok
        print("stage %-14s %-6s %8s  cpu %8s  %s%s" % (
            st.name, "ok" if ok else "FAILED", mmss(st.secs), mmss(st.cpu), st.counts or "-",
            "  (%s)" % st.note if st.note else ""))
        for k, v in re.findall(r"(\d+) (passed|failed|skipped)", st.counts):
            if v == "passed":
                npass += int(k)
            elif v == "failed":
                nfail += int(k)
            else:
                nskip += int(k)
        if not ok and not st.counts:
            nfail += 1
    for st in stages.values():
        if st.rc != 0:
            for line in why_failed(st):
                print("stage %s: %s" % (st.name, line))
    for line in host_lock_lines(stages):
        print(line)
    print("stages: %d of %d failed; wall time %s" % (bad, len(stages), mmss(total)))
    # against what the cores could give in that time: near 100% the run waits on the CPU
    cpu = sum(st.cpu for st in stages.values())
    print("cpu: %s used by the stages (and what they waited for), %d%% of %d cores' %s"
          % (mmss(cpu), 100 * cpu / max(total * (os.cpu_count() or 1), 1), os.cpu_count() or 1,
             mmss(total)))
    print("total: %d passed, %d failed, %d skipped" % (npass, nfail, nskip))
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()

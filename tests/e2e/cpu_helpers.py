"""A real one-core system-time burst for the end-to-end tests (test_cpu, test_report).

dd reading /dev/zero in 32 MiB blocks, pinned to one CPU, spends ~100% of that core in the kernel
(clear_user), like the kubelet memcg walk it stands for. Not 1 MiB: on a paravirtualized guest
(PVM, as the CI machines are) each syscall's entry and exit is counted partly as user time, and
dd with 1 MiB blocks measured 89-90% sys, with single 250 ms samples from 80% to 100%, so a 90%
threshold caught it in one run and not the next; 32 MiB blocks measured 100% (utime 1 of 301
ticks), also with four busy loops beside it. This machine is shared with other work
(compiles, fuzzers), and neither nice -20 nor a cgroup of its own kept dd above 90% there (the
EEVDF scheduler lets waking tasks in: measured 76-83% sys). So dd runs SCHED_FIFO from the root
cpu cgroup (with the v1 cpu controller, RT tasks are only allowed where cpu.rt_runtime_us > 0),
with RT throttling off for the few seconds of the burn: throttling takes the core away 50 ms of
every second, which cuts one 250 ms sample in four to ~80% and so splits the burst. The other
core stays free for everything else (the tests that burn need 2 CPUs); the sysctl is restored
afterwards.
"""
import contextlib
import socket
import subprocess
import time

from proc_helpers import stop

RT_RUNTIME = "/proc/sys/kernel/sched_rt_runtime_us"


def _cpu_v1_root():
    for line in open("/proc/self/mountinfo"):
        pre, _, post = line.partition(" - ")
        f = post.split()
        if len(f) >= 3 and f[0] == "cgroup" and "cpu" in f[2].split(","):
            return pre.split()[4]
    return None


DD = "dd if=/dev/zero of=/dev/null bs=32M"


def burner(cpu, prog=DD):
    """The burn command: @prog (a shell word list, dd by default) pinned to @cpu, SCHED_FIFO
    from the root cpu cgroup; falls back to plain pinned where RT is not permitted."""
    root = _cpu_v1_root()
    move = f"echo $$ > {root}/cgroup.procs 2>/dev/null; " if root else ""
    cmd = f"taskset -c {cpu} {prog}"
    return ["sh", "-c", f"{move}chrt -f 10 true 2>/dev/null && exec chrt -f 10 {cmd}; exec {cmd}"]


@contextlib.contextmanager
def _burn_lock(timeout=120):
    """One burn at a time on this machine (other checkouts' test runs burn the same core and
    save/restore the same sysctl): an abstract unix socket name is the lock, so nothing is left
    on disk and the kernel releases it if the holder dies."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    deadline = time.time() + timeout
    while True:
        try:
            s.bind("\0cpuzombie-test-burn")
            break
        except OSError:
            if time.time() > deadline:
                s.close()
                raise
            time.sleep(0.2)
    try:
        yield
    finally:
        s.close()


@contextlib.contextmanager
def burning(cpu):
    """Yields the running dd (its PID is the burner's); stops it and restores the sysctl."""
    with _burn_lock():
        with _burning(cpu) as p:
            yield p


@contextlib.contextmanager
def _burning(cpu, prog=DD):
    saved = None
    try:
        saved = open(RT_RUNTIME).read().strip()
        with open(RT_RUNTIME, "w") as f:
            f.write("-1")
    except OSError:
        saved = None  # not root, or no RT group scheduling: run throttled
    p = subprocess.Popen(burner(cpu, prog), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        yield p
    finally:
        stop(p, 5)
        if saved is not None:
            with open(RT_RUNTIME, "w") as f:
                f.write(saved)


def burn_lock():
    """The machine-wide burn lock, for a test that must own the core for longer than one burn
    (use burning_locked() inside it)."""
    return _burn_lock()


def burning_locked(cpu, prog=DD):
    """burning() for a caller that already holds burn_lock(); @prog as for burner()."""
    return _burning(cpu, prog)


def burn(cpu, seconds):
    """Burn @cpu for @seconds; returns the burner's PID."""
    with burning(cpu) as p:
        time.sleep(seconds)
        return p.pid

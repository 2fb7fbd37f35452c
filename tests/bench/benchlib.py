"""Measurement helpers for tests/bench.

- per-exec CPU time of a command from the kernel's own accounting of each child (wait4 rusage:
  user + system, children of a shell pipeline included), repeated in batches so every figure is
  a median of batch means with the min-max of those means as its spread;
- peak RSS from GNU time (its own small fork, unlike a vfork from Python whose child reports the
  interpreter's RSS until exec);
- instruction counts from valgrind's callgrind (user-space instructions, dynamic loader
  included, children of a shell pipeline summed): stable on a noisy shared machine;
- CPU of long-running processes from /proc/PID/task/*/schedstat (on-CPU ns, kernel included);
- one results file (BENCH_OUT/results.json) that the budget section reads at the end.

Ratios are computed within one run: these machines are shared and noisy, absolute times are not
comparable between runs."""
import glob
import json
import os
import re
import shutil
import socket
import statistics
import subprocess
import tempfile

DEVNULL = os.open(os.devnull, os.O_RDWR)
HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))


def run_once(argv, env=None):
    """(cpu_ms, exit_code) of one exec of argv, stdin/stdout/stderr on /dev/null."""
    pid = os.posix_spawnp(argv[0], argv, env or os.environ,
                          file_actions=[(os.POSIX_SPAWN_DUP2, DEVNULL, 0),
                                        (os.POSIX_SPAWN_DUP2, DEVNULL, 1),
                                        (os.POSIX_SPAWN_DUP2, DEVNULL, 2)])
    _, status, ru = os.wait4(pid, 0)
    return (ru.ru_utime + ru.ru_stime) * 1000.0, os.waitstatus_to_exitcode(status)


def peak_rss_kib(argv, env=None):
    """Peak RSS (KiB) of one run, from GNU time (largest of the pipeline's processes)."""
    p = subprocess.run(["/usr/bin/time", "-f", "%M", *argv], capture_output=True, text=True,
                       env=env or os.environ, stdin=DEVNULL)
    return int(p.stderr.strip().splitlines()[-1])


def callgrind_ir(argv, env=None):
    """Instructions executed (callgrind Ir) by one run of argv, children (a shell's awk, find,
    ethtool) included."""
    d = tempfile.mkdtemp(prefix="cz-cg-")
    try:
        subprocess.run(["valgrind", "--tool=callgrind", "--trace-children=yes",
                        "--callgrind-out-file=%s/cg.%%p" % d, *argv],
                       stdin=DEVNULL, stdout=DEVNULL, stderr=DEVNULL, env=env or os.environ,
                       timeout=600)
        tot = 0
        for f in glob.glob(d + "/cg.*"):
            with open(f) as fh:
                for line in fh:
                    if line.startswith(("summary:", "totals:")):
                        tot += int(line.split()[1])
                        break
        return tot
    finally:
        shutil.rmtree(d, ignore_errors=True)


def measure(argv, n=40, batches=5, env=None, rss=True):
    """Per-exec CPU ms: median over batches of the batch mean, with min/max of the batch means;
    peak RSS (KiB); exit codes seen."""
    means, codes = [], set()
    run_once(argv, env)  # warm the page cache
    for _ in range(batches):
        tot = 0.0
        for _ in range(n):
            ms, rc = run_once(argv, env)
            tot += ms
            codes.add(rc)
        means.append(tot / n)
    return {"median": statistics.median(means), "min": min(means), "max": max(means),
            "rss": peak_rss_kib(argv, env) if rss else 0, "codes": sorted(codes),
            "execs": n * batches}


def noop_binary(builddir, static=False):
    """A do-nothing C binary built like ours (PIE, full RELRO): the fork+exec floor every NPD
    plugin pays. @static: linked -static-pie like cpuzombie-check (no loader, no libc.so)."""
    os.makedirs(builddir, exist_ok=True)
    src = os.path.join(builddir, "noop.c")
    out = os.path.join(builddir, "noop-static" if static else "noop")
    with open(src, "w") as f:
        f.write("int main(void) { return 0; }\n")
    subprocess.run(["cc", "-O2", "-fPIE", "-static-pie" if static else "-pie",
                    "-Wl,-z,relro,-z,now", "-o", out, src], check=True)
    return out


def task_cpu_ns(pid):
    """On-CPU ns (user + kernel) of every live thread of pid, from schedstat."""
    tot = 0
    for f in glob.glob("/proc/%d/task/*/schedstat" % pid):
        try:
            with open(f) as fh:
                tot += int(fh.read().split()[0])
        except (OSError, ValueError, IndexError):
            pass  # a thread that just exited
    return tot


def vm_hwm_kib(pid):
    with open("/proc/%d/status" % pid) as f:
        m = re.search(r"VmHWM:\s+(\d+)", f.read())
    return int(m.group(1)) if m else 0


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def default_nic():
    """(ifname, driver) of the default route's interface, or (None, None)."""
    ifname = None
    try:
        out = subprocess.run(["ip", "-o", "route", "show", "default"], capture_output=True,
                             text=True).stdout.split()
        if "dev" in out:
            ifname = out[out.index("dev") + 1]
    except OSError:
        pass
    if not ifname:
        cands = [n for n in sorted(os.listdir("/sys/class/net")) if n != "lo"]
        ifname = cands[0] if cands else None
    if not ifname:
        return None, None
    p = subprocess.run(["ethtool", "-i", ifname], capture_output=True, text=True)
    m = re.search(r"^driver:\s*(\S+)", p.stdout, re.M)
    drv = m.group(1) if m else None
    return ifname, drv


# ---- results shared between sections (the budget reads them) ----

def _results_path():
    return os.path.join(os.environ.get("BENCH_OUT", tempfile.gettempdir()), "results.json")


def save(key, value):
    p = _results_path()
    data = load_all()
    data[key] = value
    with open(p + ".tmp", "w") as f:
        json.dump(data, f, indent=1)
    os.replace(p + ".tmp", p)


def load_all():
    try:
        with open(_results_path()) as f:
            return json.load(f)
    except (OSError, ValueError):
        return {}


# ---- table formatting ----

def ms(m):
    return f"{m['median']:.3f} ({m['min']:.3f}-{m['max']:.3f})"


def ratio(a, b):
    return f"{a / b:.2f}x" if b else "-"


def table(head, rows):
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for r in rows:
        print("| " + " | ".join(str(c).replace("|", "\\|") for c in r) + " |")


def mega(ir):
    return f"{ir / 1e6:.2f} M"

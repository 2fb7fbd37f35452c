"""Small measurement helpers for tests/bench: per-exec CPU time and peak memory of a command,
taken from the kernel's own accounting of each child (wait4 rusage), repeated in batches so the
tables show a median and a spread. Ratios are computed within one run: these machines are shared
and noisy, absolute times are not comparable between runs."""
import os
import statistics
import subprocess

DEVNULL = os.open(os.devnull, os.O_RDWR)


def run_once(argv, env=None):
    """(cpu_ms, maxrss_kib, exit_code) of one exec of argv, stdout/stderr discarded."""
    pid = os.posix_spawnp(argv[0], argv, env or os.environ,
                          file_actions=[(os.POSIX_SPAWN_DUP2, DEVNULL, 0),
                                        (os.POSIX_SPAWN_DUP2, DEVNULL, 1),
                                        (os.POSIX_SPAWN_DUP2, DEVNULL, 2)])
    _, status, ru = os.wait4(pid, 0)
    return (ru.ru_utime + ru.ru_stime) * 1000.0, ru.ru_maxrss, os.waitstatus_to_exitcode(status)


def peak_rss_kib(argv, env=None):
    """Peak RSS of one run, from GNU time (its own small fork, unlike a vfork from Python whose
    child inherits the interpreter's RSS until exec)."""
    p = subprocess.run(["/usr/bin/time", "-f", "%M", *argv], capture_output=True, text=True,
                       env=env or os.environ)
    return int(p.stderr.strip().splitlines()[-1])


def measure(argv, n=50, batches=5, env=None):
    """Per-exec CPU ms: median over batches of the batch mean, with min/max of the batch means;
    peak RSS (KiB) max over all runs; exit codes seen."""
    means, rss, codes = [], 0, set()
    run_once(argv, env)  # warm the page cache
    for _ in range(batches):
        tot = 0.0
        for _ in range(n):
            ms, r, rc = run_once(argv, env)
            tot += ms
            codes.add(rc)
        means.append(tot / n)
    rss = peak_rss_kib(argv, env)
    return {"median": statistics.median(means), "min": min(means), "max": max(means),
            "rss": rss, "codes": sorted(codes)}


def noop_binary(builddir):
    """A do-nothing C binary: the fork+exec floor every NPD plugin pays."""
    os.makedirs(builddir, exist_ok=True)
    src = os.path.join(builddir, "noop.c")
    out = os.path.join(builddir, "noop")
    if not os.path.exists(out):
        with open(src, "w") as f:
            f.write("int main(void) { return 0; }\n")
        subprocess.run(["cc", "-O2", "-o", out, src], check=True)
    return out


def fmt_row(name, m, floor):
    return (f"| {name} | {m['median']:.2f} ({m['min']:.2f}-{m['max']:.2f}) | "
            f"{m['median'] / floor['median']:.2f}x | {m['rss'] / 1024:.1f} |")


TABLE_HEAD = ("| command | CPU ms/exec median (range) | vs floor | peak RSS MiB |\n"
              "|---|---|---|---|")

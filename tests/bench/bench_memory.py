#!/usr/bin/env python3
"""The agent's idle memory: VmRSS a few seconds after start (default embedded config, as
`make run` would run it; private run and state dirs), what it is made of, before and after.

  1. before / after: VmRSS, VmHWM, RssAnon, RssFile of this binary and of a baseline binary
     (BENCH_MEMORY_BASELINE, or built from git rev BENCH_MEMORY_BASE_REV, default the commit
     before the compact kallsyms and the fixed mmap threshold), each also with cpu.profile off
     (no kernel symbol table) and with memcg.census_interval 0 (no BPF census, whose libbpf
     parses the kernel's BTF): the differences are what those two cost;
  2. the resident set by mapping (/proc/PID/smaps): main heap, thread arenas, large blocks
     (the kallsyms table), stacks, our binary, each shared library, the run dir's rings;
  3. the rings scale with CPUs: the agent on generated fixture trees (/proc/stat with 64 and
     192 CPUs, sysfs's possible CPUs, this machine's /proc/kallsyms copied in) read the same way.
Needs root for the real kallsyms addresses and the census (otherwise those rows say so).
BENCH_MEMORY_SECONDS: how long after start VmRSS is read (5).
"""
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "e2e"))
import benchlib as bl  # noqa: E402
from proc_helpers import stop  # noqa: E402

CZ = os.path.abspath(sys.argv[1])
SECONDS = float(os.environ.get("BENCH_MEMORY_SECONDS", "5"))
BASE_REV = os.environ.get("BENCH_MEMORY_BASE_REV", "1369100")
CONFIGS = [("default", ""),
           ("cpu.profile off", "cpu:\n  profile: false\n"),
           ("census off", "memcg:\n  census_interval: 0\n"),
           ("both off", "cpu:\n  profile: false\nmemcg:\n  census_interval: 0\n")]


def status(pid):
    with open("/proc/%d/status" % pid) as f:
        text = f.read()
    return {k: int(v) for k, v in re.findall(r"^(VmRSS|VmHWM|RssAnon|RssFile|RssShmem):\s+(\d+)",
                                              text, re.M)}


def classify(path, perms, start, binary):
    if path == "[heap]":
        return "heap (main arena)"
    if path.startswith("[stack"):
        return "stacks"
    if path.startswith("anon_inode:[perf_event]"):
        return "perf rings"
    if path.startswith("/run") or "/run" in path and path.endswith((".ring", ".tier")):
        return "run dir rings (mmap)"
    if path == "" or path.startswith("["):
        # glibc reserves a thread arena as a 64 MiB-aligned region (HEAP_MAX_SIZE), its used
        # head rw-p and the rest ---p
        return "thread arenas" if start % (64 << 20) == 0 or perms == "---p" else \
            "large blocks (kallsyms table, buffers)"
    if os.path.realpath(path) == os.path.realpath(binary):
        return "cpuzombie binary"
    base = os.path.basename(path)
    for lib in ("libc.so", "libcrypto", "libssl", "libgnutls", "libcurl", "libbpf", "libsystemd",
                "libm.so", "ld-linux"):
        if base.startswith(lib):
            return base.split(".so")[0] + " (shared lib)"
    if base.startswith("lib"):
        return "other shared libs (curl/gnutls deps)"
    return "other files: " + path


def smaps(pid, binary):
    """KiB resident by category, from /proc/PID/smaps."""
    out, cur = {}, None
    with open("/proc/%d/smaps" % pid) as f:
        for line in f:
            m = re.match(r"^([0-9a-f]+)-([0-9a-f]+) (\S+) \S+ \S+ \S+\s*(.*)$", line)
            if m:
                cur = classify(m.group(4).strip(), m.group(3), int(m.group(1), 16), binary)
                continue
            if line.startswith("Rss:") and cur:
                out[cur] = out.get(cur, 0) + int(line.split()[1])
    return out


def run_dir_kib(d):
    """(apparent, allocated) KiB of the run dir's files: the rings are written slot by slot,
    so what is allocated grows to the apparent size over cpu.history and the tiers' spans."""
    app = alloc = 0
    for root, _, files in os.walk(d):
        for f in files:
            st = os.stat(os.path.join(root, f))
            app += st.st_size
            alloc += st.st_blocks * 512
    return app // 1024, alloc // 1024


def run_agent(binary, tmp, extra_cfg="", roots=None):
    """(status, smaps) of the agent SECONDS after start, then SIGTERM; status also has RunDir
    (apparent KiB of the run dir's files, which the chart's emptyDir keeps in memory)."""
    d = tempfile.mkdtemp(dir=tmp)
    argv = [binary, "--state-dir", d + "/state", "--run-dir", d + "/run"]
    if extra_cfg:
        with open(d + "/cz.yaml", "w") as f:
            f.write(extra_cfg)
        argv += ["--config", d + "/cz.yaml"]
    if roots:
        argv += ["--proc-root", roots + "/proc", "--sys-root", roots + "/sys"]
    p = subprocess.Popen(argv + ["agent"], stdin=bl.DEVNULL, stdout=bl.DEVNULL,
                         stderr=bl.DEVNULL)
    try:
        time.sleep(SECONDS)
        if p.poll() is not None:
            return None, None
        st = status(p.pid)
        st["RunDir"], st["RunDirNow"] = run_dir_kib(d + "/run")
        return st, smaps(p.pid, binary)
    finally:
        stop(p, 15)
        shutil.rmtree(d, ignore_errors=True)


def baseline(tmp):
    if os.environ.get("BENCH_MEMORY_BASELINE"):
        return os.path.abspath(os.environ["BENCH_MEMORY_BASELINE"]), "BENCH_MEMORY_BASELINE"
    wt = os.path.join(tmp, "base")
    try:
        subprocess.run(["git", "-C", bl.ROOT, "worktree", "add", "-q", "--detach", wt, BASE_REV],
                       check=True, capture_output=True)
        subprocess.run(["make", "-C", wt, "-s", "build/cpuzombie"], check=True,
                       capture_output=True)
        out = os.path.join(tmp, "cpuzombie-base")
        shutil.copy(os.path.join(wt, "build", "cpuzombie"), out)
        return out, "rev " + BASE_REV
    except (subprocess.CalledProcessError, OSError) as e:
        print("(no baseline: %s)" % e)
        return None, None
    finally:
        subprocess.run(["git", "-C", bl.ROOT, "worktree", "remove", "--force", wt],
                       capture_output=True)


def mib(kib):
    return f"{kib / 1024:.1f}"


def before_after(tmp, base):
    print(f"\n### 1. idle VmRSS {SECONDS:.0f} s after start (MiB), by configuration\n")
    rows, res, maps = [], [], {}
    for name, cfg in CONFIGS:
        for label, binary in (("before", base), ("after", CZ)):
            if not binary:
                continue
            st, sm = run_agent(binary, tmp, cfg)
            if not st:
                rows.append([name, label, "(exited)", "", "", "", ""])
                continue
            if name == "default":
                maps[label] = sm
            res.append({"config": name, "binary": label, **st})
            rows.append([name, label, mib(st["VmRSS"]), mib(st["VmHWM"]), mib(st["RssAnon"]),
                         mib(st["RssFile"]), mib(st.get("RssShmem", 0))])
    bl.table(["config", "binary", "VmRSS", "VmHWM", "RssAnon", "RssFile", "RssShmem"], rows)
    bl.save("memory_idle", res)
    return maps


def breakdown(maps):
    print("\n### 2. the default config's resident set by mapping (KiB, /proc/PID/smaps Rss)\n")
    cats = sorted({c for m in maps.values() for c in m},
                  key=lambda c: -max(m.get(c, 0) for m in maps.values()))
    labels = [x for x in ("before", "after") if x in maps]
    rows = [[c] + [maps[x].get(c, 0) for x in labels] for c in cats]
    rows.append(["total"] + [sum(maps[x].values()) for x in labels])
    bl.table(["mapping"] + labels, rows)
    print("\nThread arenas: the periodic thread's malloc arena (the census's libbpf parses "
          "/sys/kernel/btf/vmlinux there, two 5.5 MiB blocks on 6.18). Large blocks: mmap'ed "
          "allocations, the kernel symbol table among them (cpu.profile off removes it).")


def proc_stat(n, rnd):
    def row(name):
        return name + " " + " ".join(str(rnd.randrange(10**6, 10**9)) for _ in range(8)) + \
            " 0 0\n"
    return (row("cpu ") + "".join(row("cpu%d" % i) for i in range(n)) +
            "intr 1 0\nctxt 99\nbtime 1700000000\nprocesses 5\nprocs_running 1\n"
            "procs_blocked 0\nsoftirq 1 2 3 4 5 6 7 8 9 10 11\n")


def tree(tmp, n):
    d = os.path.join(tmp, "cpus%d" % n)
    os.makedirs(d + "/proc")
    os.makedirs(d + "/sys/devices/system/cpu")
    with open(d + "/proc/stat", "w") as f:
        f.write(proc_stat(n, random.Random(n)))
    with open(d + "/sys/devices/system/cpu/possible", "w") as f:
        f.write("0-%d\n" % (n - 1))
    try:
        with open("/proc/kallsyms") as src, open(d + "/proc/kallsyms", "w") as dst:
            shutil.copyfileobj(src, dst)
    except OSError:
        pass
    return d


def by_cpus(tmp, base):
    print(f"\n### 3. idle VmRSS vs CPU count (MiB; generated fixture trees, this machine's "
          f"kallsyms copied in; {SECONDS:.0f} s after start)\n")
    rows, res = [], []
    for n in (2, 64, 192):
        d = tree(tmp, n)
        row = [n]
        for label, binary in (("before", base), ("after", CZ)):
            if not binary:
                row += ["", ""]
                continue
            st, _ = run_agent(binary, tmp, "", roots=d)
            row += [mib(st["VmRSS"]) if st else "(exited)", mib(st["VmHWM"]) if st else ""]
            if st and label == "after":
                row += [mib(st["RunDir"])]
            if st:
                res.append({"ncpu": n, "binary": label, **st})
        rows.append(row)
        shutil.rmtree(d)
    bl.table(["CPUs", "before VmRSS", "before VmHWM", "after VmRSS", "after VmHWM",
              "run dir files (apparent)"], rows)
    print("\nThe census does not run on a fixture tree (no cgroup fs there), so these rows have "
          "no BTF transient. The rings are written with pwrite(), not mapped: they are not in "
          "VmRSS, but the chart's run dir is an emptyDir in memory (tmpfs, sizeLimit 16Mi) "
          "charged to the pod's memory cgroup, filling to its apparent size over cpu.history "
          "and the tiers' spans.")
    bl.save("memory_cpus", res)


def main():
    tmp = tempfile.mkdtemp(prefix="cz-mem-")
    try:
        if os.geteuid() != 0:
            print("(not root: kallsyms addresses hidden and no census; figures are lower)")
        base, how = baseline(tmp)
        print(f"before: {how or 'none'}; after: {CZ}; {os.cpu_count()} CPUs")
        maps = before_after(tmp, base)
        breakdown(maps)
        by_cpus(tmp, base)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()

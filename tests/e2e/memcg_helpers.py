"""Real dying memory cgroups on the running kernel, for the memcg tests and benchmarks.

A memcg becomes "dying" when it is rmdir'ed while pages it was charged for are still in memory.
make_dying() creates N children under a private parent in the memory hierarchy, has one child
process charge a page of page cache in each (a small file write), moves it out, and rmdirs them.
release() deletes the files and drops caches so the kernel can free them.
"""
import os
import re
import shutil
import subprocess
import sys
import time

CHARGER = r'''
import os, sys
parent, files, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
me = str(os.getpid())
home = open("/proc/self/cgroup").read()
for i in range(n):
    cg = os.path.join(parent, "m%d" % i)
    os.mkdir(cg)
    with open(os.path.join(cg, "cgroup.procs"), "w") as f:
        f.write(me)
    with open(os.path.join(files, "f%d" % i), "wb") as f:
        f.write(b"z" * 4096)
        f.flush()
    with open(os.path.join(parent, "cgroup.procs"), "w") as f:
        f.write(me)
    os.rmdir(cg)
'''


def memory_v1_root():
    """Mount point of the v1 memory hierarchy, or None (pure cgroup v2)."""
    for line in open("/proc/self/mountinfo"):
        pre, _, post = line.partition(" - ")
        f = pre.split()
        p = post.split()
        if len(p) >= 3 and p[0] == "cgroup" and "memory" in p[2].split(","):
            return f[4]
    return None


def cgroup2_root():
    for line in open("/proc/self/mountinfo"):
        pre, _, post = line.partition(" - ")
        if post.split()[:1] == ["cgroup2"]:
            return pre.split()[4]
    return None


def proc_cgroups_memory():
    for line in open("/proc/cgroups"):
        f = line.split()
        if f and f[0] == "memory":
            return int(f[1]), int(f[2])
    raise RuntimeError("no memory row in /proc/cgroups")


def count_dirs(root):
    n = 0
    for _dirpath, dirnames, _files in os.walk(root):
        n += len(dirnames)
    return n + 1


def v1_counts():
    """(live, dying) the way the kernel sees them right now."""
    root = memory_v1_root()
    _, num = proc_cgroups_memory()
    live = count_dirs(root)
    return live, max(num - live, 0)


class DyingMemcgs:
    """Context manager: N real dying memcgs, released and verified gone on exit."""

    def __init__(self, n, workdir):
        self.n = n
        self.workdir = str(workdir)
        self.root = memory_v1_root() or cgroup2_root()
        self.parent = os.path.join(self.root, "cpuzombie-test-%d" % os.getpid())
        self.files = os.path.join(self.workdir, "charged")

    def __enter__(self):
        self.baseline = self._dying()
        os.makedirs(self.files, exist_ok=True)
        os.mkdir(self.parent)
        if not memory_v1_root():
            # cgroup v2: the memory controller must be enabled for the children
            with open(os.path.join(self.parent, "cgroup.subtree_control"), "w") as f:
                f.write("+memory")
        subprocess.run([sys.executable, "-c", CHARGER, self.parent, self.files, str(self.n)],
                       check=True, timeout=300)
        return self

    def release(self, timeout=60):
        """Delete the charged files, drop the page cache, rmdir the parent; wait until the
        kernel has freed the memcgs (num_cgroups back down)."""
        shutil.rmtree(self.files, ignore_errors=True)
        deadline = time.time() + timeout
        while True:
            with open("/proc/sys/vm/drop_caches", "w") as f:
                f.write("1")
            if os.path.isdir(self.parent):
                try:
                    os.rmdir(self.parent)
                except OSError:
                    pass
            # back to (about) where the node was: others may create a few meanwhile
            if not os.path.isdir(self.parent) and \
                    self._dying() <= self.baseline + max(self.n // 100, 20):
                return
            if time.time() > deadline:
                return
            time.sleep(0.5)

    def _dying(self):
        if memory_v1_root():
            return v1_counts()[1]
        st = open(os.path.join(self.root, "cgroup.stat")).read()
        m = re.search(r"nr_dying_descendants (\d+)", st)
        return int(m.group(1))

    def __exit__(self, *exc):
        self.release()
        return False

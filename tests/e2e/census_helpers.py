"""Named dying memcgs for the zombie census tests and bench.

NamedZombies makes real dying memcgs under a private parent of the memory hierarchy (v1 memory,
or v2's root with +memory), each charged a known amount of page cache, with distinctive names:
<parent>/ga-<i> one level down, and <parent>/nest-<j>/nb-<i> two levels down (the nest-<j>
directories are removed too: dying parents whose path the census must still rebuild). The
parent's name holds only letters after its prefix, so the census's pattern for it (numbers
collapse to "*") stays unique to this test. Everything is removed by name on exit: the files
deleted, page cache dropped, the directories rmdir'ed, and the kernel left to free the memcgs.
"""
import os
import shutil
import subprocess
import sys
import time

from memcg_helpers import cgroup2_root, memory_v1_root

CHARGER = r'''
import os, sys
parent, files, size, spec = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4:]
me = str(os.getpid())
data = b"z" * size
def enter(cg):
    with open(os.path.join(cg, "cgroup.procs"), "w") as f:
        f.write(me)
for i, rel in enumerate(spec):
    cg = os.path.join(parent, rel)
    os.makedirs(cg)
    enter(cg)
    with open(os.path.join(files, "f%d" % i), "wb") as f:
        f.write(data)
    enter(parent)
    os.rmdir(cg)
# the nest-<j> directories go last: dying parents of dying children
for rel in sorted({os.path.dirname(r) for r in spec if "/" in r}):
    os.rmdir(os.path.join(parent, rel))
'''


def letters(n):
    """@n as letters only ("czcensus" + letters: a name the census does not collapse)."""
    return "".join(chr(ord("a") + int(d)) for d in str(n))


class NamedZombies:
    seq = 0

    def __init__(self, workdir, flat=60, nests=2, per_nest=10, size=64 * 1024, tag=""):
        self.root = memory_v1_root() or cgroup2_root()
        # one name per instance: an earlier instance's memcgs may still be dying (the kernel
        # frees them asynchronously), and must not count as this one's
        NamedZombies.seq += 1
        self.name = "czcensus" + letters(os.getpid()) + "x" + letters(NamedZombies.seq) + tag
        self.parent = os.path.join(self.root, self.name)
        self.files = os.path.join(str(workdir), "census-charged-" + self.name)
        self.size = size
        self.flat, self.nests, self.per_nest = flat, nests, per_nest
        self.spec = ["ga-%d" % i for i in range(flat)]
        self.spec += ["nest-%d/nb-%d" % (j, i) for j in range(nests) for i in range(per_nest)]

    def __enter__(self):
        os.makedirs(self.files, exist_ok=True)
        os.mkdir(self.parent)
        try:
            if not memory_v1_root():
                with open(os.path.join(self.parent, "cgroup.subtree_control"), "w") as f:
                    f.write("+memory")
            subprocess.run([sys.executable, "-c", CHARGER, self.parent, self.files,
                            str(self.size), *self.spec], check=True, timeout=600)
        except BaseException:
            self.release()
            raise
        return self

    def release(self, timeout=60):
        shutil.rmtree(self.files, ignore_errors=True)
        deadline = time.time() + timeout
        while os.path.isdir(self.parent) and time.time() < deadline:
            with open("/proc/sys/vm/drop_caches", "w") as f:
                f.write("1")
            for d, _subdirs, _f in sorted(os.walk(self.parent), key=lambda t: -len(t[0])):
                try:
                    os.rmdir(d)
                except OSError:
                    pass
            time.sleep(0.2)

    def __exit__(self, *exc):
        self.release()
        return False


def parse_census(text):
    """The agent's memcg-census file (census_format): {("g"|"p", key): (count, bytes,
    first_ms)} for its groups by pattern and by parent. Asserts the header."""
    lines = text.splitlines()
    assert lines and lines[0] == "cpuzombie-census 1", text
    groups = {}
    for ln in lines[1:]:
        kind, _, rest = ln.partition(" ")
        if kind in ("g", "p"):
            count, nbytes, first, key = rest.split(" ")
            groups[(kind, key)] = (int(count), int(nbytes), int(first))
    return groups

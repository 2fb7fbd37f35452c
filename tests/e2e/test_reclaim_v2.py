# SPDX-License-Identifier: MIT
"""remediation.reclaim on pure cgroup v2 with a real kernel: memory.reclaim of the
subtree holding the zombies, and drop_caches, in Debian's 6.1 kernel under qemu (KVM, else TCG),
since this host's memory controller is on cgroup v1 (tests/tools/vm/census-v2-vm.sh with the
guest script reclaim-v2-init.sh).

The zombies must pin page cache that reclaim can free: tmpfs pages (the census VM's) are freed
by no reclaim without swap. So the guest gets an ext4 disk image made here with mkfs.ext4
(virtio_blk and ext4 are modules in Debian's kernel: taken from the same package), and each
zombie writes its file there, clean before it dies. Two sets of named zombies: A (the larger,
so the subtree holding most is A's) and B. `agent --once` with memory.reclaim frees A's and
leaves B's (the write went to A's subtree, not the root); then `agent --once` with drop_caches
frees B's. One boot serves all the tests here (module fixture)."""
import os
import re
import shutil
import subprocess

import pytest

from conftest import needs_root
from vm_helpers import boot, no_sanitizer_reports

pytestmark = [needs_root]

A = {"NAME": "czvmmr", "FLAT": 40, "NESTS": 2, "PER_NEST": 5}
B = {"B_NAME": "czvmdc", "B_FLAT": 30, "B_NESTS": 1, "B_PER_NEST": 4}
SIZE = 64 * 1024
MODULES = "virtio_pci virtio_blk crc32c_generic ext4"	# ext4's checksums want crc32c
OURS_A = A["FLAT"] + A["NESTS"] * A["PER_NEST"] + A["NESTS"]	# the dying nest-* parents too
OURS_B = B["B_FLAT"] + B["B_NESTS"] * B["B_PER_NEST"] + B["B_NESTS"]
LINE = re.compile(r"^reclaim: (memory\.reclaim of (\S+)|vm\.drop_caches=1) freed (\d+) of (\d+) "
                  r"dying memcgs \((\d+) left\) in ([0-9.]+) s")


@pytest.fixture(scope="module")
def guest(cz_bin, tmp_path_factory):
    mkfs = shutil.which("mkfs.ext4") or "/sbin/mkfs.ext4"
    if not os.access(mkfs, os.X_OK):
        pytest.skip("no mkfs.ext4 (Debian e2fsprogs) to make the guest's disk")
    out = tmp_path_factory.mktemp("reclaim-v2-vm")
    disk = out / "disk.img"
    with open(disk, "wb") as f:
        f.truncate(128 << 20)
    subprocess.run([mkfs, "-q", "-F", "-b", "4096", str(disk)], check=True, timeout=120)
    env = {"CZVM_" + k: str(v) for k, v in {**A, **B}.items()}
    env.update(CZVM_SIZE=str(SIZE), CZVM_INIT="reclaim-v2-init.sh", CZVM_MODULES=MODULES,
               CZVM_DISK=str(disk))
    try:
        g = boot(cz_bin, str(out / "vm"), env, "reclaim-v2")
    finally:
        disk.unlink()	# 128 MiB sparse, but not kept
    no_sanitizer_reports(g, "mr-err", "dc-err")
    return g


def stat(g, tag, name):
    """{key: value} of @name's cgroup.stat or memory.stat lines under @tag."""
    return {k: int(v) for n, k, v in (x.split() for x in g.all(tag)) if n == name}


def census_counts(g, tag):
    """{group: dying} of the census the agent published after its reclaim."""
    out = {}
    for ln in g.all(tag):
        kind, _, rest = ln.partition(" ")
        if kind == "e":
            pytest.skip("no census in the guest: %s" % rest)
        if kind == "g":
            count, _bytes, _first, key = rest.split(" ")
            out[key] = int(count)
    return out


def reclaim_line(g, phase):
    out = g.all(phase + "-out")
    assert g.one(phase + "-rc") == "0", (out, g.all(phase + "-err"))
    lines = [x for x in out if x.startswith("reclaim: ")]
    assert len(lines) == 1, out
    m = LINE.match(lines[0])
    assert m, lines[0]
    return m


def state(g, phase):
    return dict(x.split(" ", 1) for x in g.all(phase + "-state") if " " in x)


def test_guest_is_pure_v2_with_an_ext4_disk(guest):
    mem = [ln.split() for ln in guest.all("proc-cgroups") if ln.split()[:1] == ["memory"]]
    assert mem and mem[0][1] == "0", guest.all("proc-cgroups")	# on no v1 hierarchy
    assert guest.one("data").split()[:3] == ["/dev/vda", "/data", "ext4"], guest.all("data")
    # the zombies pin that disk's page cache, nearly all of it inactive (written once)
    mem = stat(guest, "mr-mem-before", A["NAME"])
    assert mem["file"] >= (A["FLAT"] + A["NESTS"] * A["PER_NEST"]) * SIZE, mem
    assert mem["inactive_file"] >= mem["file"] * 9 // 10, mem


def test_memory_reclaim_frees_the_subtrees_zombies(guest):
    g = guest
    m = reclaim_line(g, "mr")
    assert m.group(2) == A["NAME"], m.group(0)	# memory.reclaim, of A's subtree
    freed, before, left = int(m.group(3)), int(m.group(4)), int(m.group(5))
    err = "\n".join(g.all("mr-err"))
    assert "drop_caches" not in err, err	# no fallback
    root = g.stat("mr-root-before")
    assert before == root["nr_dying_descendants"] == OURS_A + OURS_B, (m.group(0), root)
    assert before - freed == left, m.group(0)
    # the kernel only frees more after the agent counted
    assert g.stat("mr-root-after")["nr_dying_descendants"] <= left, g.all("mr-root-after")
    st = state(g, "mr")
    assert (st["method"], st["target"]) == ("memory.reclaim", A["NAME"]), st
    assert st["result"] in ("ok", "partial"), st	# partial: less found than asked
    assert (int(st["before"]), int(st["after"])) == (before, left), st
    # A's zombies went (near) all, by cgroup.stat and by the census after the reclaim
    a0 = stat(g, "mr-stat-before", A["NAME"])["nr_dying_descendants"]
    a1 = stat(g, "mr-stat-after", A["NAME"])["nr_dying_descendants"]
    assert a0 == OURS_A, a0
    counts = census_counts(g, "mr-census")
    in_census = sum(n for k, n in counts.items() if k.startswith(A["NAME"] + "/"))
    assert a1 <= OURS_A // 10 and in_census == a1, (a1, counts)
    # B's, outside the subtree, were not touched: the write went to A's memory.reclaim
    b0 = stat(g, "mr-stat-before", B["B_NAME"])["nr_dying_descendants"]
    b1 = stat(g, "mr-stat-after", B["B_NAME"])["nr_dying_descendants"]
    assert b0 == b1 == OURS_B, (b0, b1)
    assert sum(n for k, n in counts.items() if k.startswith(B["B_NAME"] + "/")) == OURS_B, counts
    assert stat(g, "mr-mem-after", B["B_NAME"])["file"] == \
        stat(g, "mr-mem-before", B["B_NAME"])["file"], g.all("mr-mem-after")
    ma, mb = stat(g, "mr-mem-before", A["NAME"]), stat(g, "mr-mem-after", A["NAME"])
    print("memory.reclaim of %s: %s; A %d -> %d dying (file %d -> %d bytes, active %d -> %d), "
          "B %d -> %d, %s" % (A["NAME"], m.group(0), a0, a1, ma["file"], mb["file"],
                              ma["active_file"], mb["active_file"], b0, b1, g.accel))


def test_drop_caches_on_v2(guest):
    g = guest
    m = reclaim_line(g, "dc")
    assert m.group(1) == "vm.drop_caches=1", m.group(0)
    freed, before, left = int(m.group(3)), int(m.group(4)), int(m.group(5))
    assert before == g.stat("dc-root-before")["nr_dying_descendants"], m.group(0)
    assert before - freed == left, m.group(0)
    st = state(g, "dc")
    assert (st["method"], st["result"]) == ("drop_caches", "ok"), st
    b0 = stat(g, "dc-stat-before", B["B_NAME"])["nr_dying_descendants"]
    b1 = stat(g, "dc-stat-after", B["B_NAME"])["nr_dying_descendants"]
    assert b0 == OURS_B and b1 <= OURS_B // 10, (b0, b1)
    print("drop_caches on v2: %s; B %d -> %d dying" % (m.group(0), b0, b1))

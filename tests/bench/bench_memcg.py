#!/usr/bin/env python3
"""check memcg per invocation vs the exec floor and a naive shell plugin, and its cost as the
number of real dying memcgs grows (needs root for the scale curve)."""
import os
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "e2e"))
from benchlib import measure, noop_binary, fmt_row, TABLE_HEAD  # noqa: E402
from memcg_helpers import DyingMemcgs, memory_v1_root, v1_counts  # noqa: E402

CZ = sys.argv[1]
BUILD = os.path.join(os.path.dirname(CZ), "bench")
STATE = tempfile.mkdtemp(prefix="cz-bench-")
NAIVE = ("awk '$1==\"memory\"{n=$3} END{print n}' /proc/cgroups >/dev/null; "
         "find %s -type d | wc -l >/dev/null" % (memory_v1_root() or "/sys/fs/cgroup"))


def row_set(title):
    floor = measure([noop_binary(BUILD)])
    czm = measure([CZ, "--state-dir", STATE, "check", "memcg"])
    naive = measure(["sh", "-c", NAIVE], n=20)
    print(f"\n{title}\n\n{TABLE_HEAD}")
    print(fmt_row("do-nothing C binary (floor)", floor, floor))
    print(fmt_row("cpuzombie check memcg", czm, floor))
    print(fmt_row("naive shell plugin (awk + find | wc)", naive, floor))
    return floor, czm


def main():
    live, dying = v1_counts() if memory_v1_root() else (0, 0)
    row_set(f"### check memcg per invocation ({dying} dying, {live} live memcgs on this node)")
    if os.geteuid() != 0 or not memory_v1_root():
        print("\n(scale curve skipped: needs root and the v1 memory hierarchy)")
        return
    print("\n### check memcg vs number of real dying memcgs (flat is the goal)\n")
    print("| dying memcgs | check memcg CPU ms/exec | vs floor | naive shell ms/exec |")
    print("|---|---|---|---|")
    floor = measure([noop_binary(BUILD)])
    for n in (1000, 5000, 20000):
        with tempfile.TemporaryDirectory() as tmp, DyingMemcgs(n, tmp):
            _, d = v1_counts()
            czm = measure([CZ, "--state-dir", STATE, "check", "memcg"])
            naive = measure(["sh", "-c", NAIVE], n=20, batches=3)
            print(f"| {d} | {czm['median']:.2f} ({czm['min']:.2f}-{czm['max']:.2f}) | "
                  f"{czm['median'] / floor['median']:.2f}x | {naive['median']:.2f} |")


if __name__ == "__main__":
    main()

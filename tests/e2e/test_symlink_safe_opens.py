# SPDX-License-Identifier: MIT
"""Every open of a path that must not be a symlink, walked from the sources.

A path named by a person ("DIR", "DIR/", "DIR/.") goes through fileio_open_nofollow()
(base/fileio.h): the parent is opened, then the last component with O_NOFOLLOW, because with a
trailing slash or "/." the kernel resolves a symlinked DIR before O_NOFOLLOW applies. A direct
open(..., O_NOFOLLOW) is only right where the last component is a fixed name we chose (a state
file in its directory, a readdir entry, "bin"): each such place is listed here with why, so a new
one is reviewed. The behaviour of each caller of the helper (X, X/, X/., a symlinked middle
component) is tested in its own file: test_own_state.py, test_install_plugin.py; the helper
itself in tests/unit/test_fileio.c."""
import os
import re

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PLUGIN = os.path.join(ROOT, "plugin")

# file -> (number of direct O_NOFOLLOW opens, why the last component is never user-named)
FIXED = {
    "memcg/check_memcg.c": (1, "openat() of a readdir entry of the cgroup tree"),
    "agent/reclaimer.c": (1, "a sysfs file under the --sys-root dirfd, by a fixed name"),
    "agent/kube_agent.c": (1, "the reboot sentinel, O_CREAT: a trailing slash is EISDIR"),
    "remediator/remediate.c": (1, "the reboot sentinel, O_CREAT: a trailing slash is EISDIR"),
    "cmd/cmd_install.c": (2, "\"bin\" and the temporary file, openat() under DEST's fd"),
    "cpu/history.c": (1, "the ring: the run dir plus a fixed file name"),
    "base/state.c": (1, "the lock: the state dir plus a fixed file name"),
    "base/fileio.c": (2, "fileio_open() relative to a dirfd, and the helper itself"),
}
USERS = {"cmd/cmd_own_state.c": "DIR", "cmd/cmd_install.c": "DEST_DIR"}


def statements(text):
    """The C statements that call open() or openat() (comments left out), joined."""
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    return re.findall(r"\b(?:hostfs_)?open(?:at)?\s*\([^;]*;", text)


def test_every_nofollow_open_is_the_helper_or_a_fixed_name():
    found = {}
    for top, _, files in os.walk(PLUGIN):
        for f in files:
            if not f.endswith(".c"):
                continue
            path = os.path.join(top, f)
            rel = os.path.relpath(path, PLUGIN)
            n = sum("O_NOFOLLOW" in s for s in statements(open(path).read()))
            if n:
                found[rel] = n
    assert found == {k: v[0] for k, v in FIXED.items()}, (
        "a new open with O_NOFOLLOW: open a user-named path with fileio_open_nofollow(), "
        "or list it in FIXED with why its last component is fixed", found)


def test_user_named_paths_open_through_the_helper():
    for rel, what in USERS.items():
        src = open(os.path.join(PLUGIN, rel)).read()
        assert re.search(r"fileio_open_nofollow\(\s*(dir|dest)\b", src), (rel, what)

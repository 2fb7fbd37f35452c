# SPDX-License-Identifier: MIT
"""`cpuzombie own-state UID DIR...`: the chart's state-owner init container (node
containers as 65534 when nothing rendered needs root; the image has no chown), for the state
and the run directory. It gives each DIR itself to UID:UID and nothing else: not what is inside, never through a symlink (a symlink at
DIR's place is refused and its target left as it was), never to root, and refuses what is not
a directory, a bad UID and the static check binary, with one line and exit 2."""

import os
import subprocess

import pytest

from conftest import is_root

pytestmark = pytest.mark.skipif(not is_root(), reason="chown needs root (CAP_CHOWN)")


def own(cz_bin, *args):
    return subprocess.run([cz_bin, "own-state", *args], capture_output=True, text=True,
                          timeout=30)


def refused(p, words):
    assert p.returncode == 2, p
    assert p.stdout == "" and len(p.stderr.strip().splitlines()) == 1, p
    assert words in p.stderr, p.stderr


def test_gives_the_directory_itself_and_only_it(cz_bin, tmp_path):
    d = tmp_path / "state"
    d.mkdir()
    (d / "inside").write_text("x")
    p = own(cz_bin, "65534", str(d))
    assert p.returncode == 0, p
    assert p.stdout == "%s is owned by 65534:65534 (mode 0755)\n" % d, p.stdout
    st = os.stat(d)
    assert (st.st_uid, st.st_gid) == (65534, 65534)
    assert os.stat(d / "inside").st_uid == 0           # not recursive
    assert own(cz_bin, "65534", str(d)).returncode == 0  # idempotent


def test_never_through_a_symlink(cz_bin, tmp_path):
    target = tmp_path / "host-dir"
    target.mkdir()
    link = tmp_path / "state"
    link.symlink_to(target)
    refused(own(cz_bin, "65534", str(link)), "not following a symlink")
    assert os.stat(target).st_uid == 0 and os.lstat(link).st_uid == 0


@pytest.mark.parametrize("uid", ["0", "65535", "4294967295", "12x", "", " 7", "+7"])
def test_refuses_a_bad_uid(cz_bin, tmp_path, uid):
    refused(own(cz_bin, uid, str(tmp_path)), "UID must be a number from 1 to 65534")
    assert os.stat(tmp_path).st_uid == 0
    # a negative number is an option to the command line, and refused as one
    refused(own(cz_bin, "-1", str(tmp_path)), "unknown or incomplete option '-1'")


def test_refuses_what_is_not_a_directory(cz_bin, tmp_path):
    f = tmp_path / "file"
    f.write_text("")
    refused(own(cz_bin, "65534", str(f)), "Not a directory")
    assert os.stat(f).st_uid == 0
    refused(own(cz_bin, "65534", str(tmp_path / "absent")), "No such file or directory")
    refused(own(cz_bin, "65534"), "expected UID DIR")
    refused(own(cz_bin, "65534", "/tmp/\x1b[2J"), "plain text path")


def test_not_in_the_static_check_binary(cz_bin, tmp_path):
    build = os.environ.get("CZ_BUILD") or os.path.dirname(cz_bin)
    p = subprocess.run([os.path.join(build, "cpuzombie-check"), "own-state", "65534",
                        str(tmp_path)], capture_output=True, text=True, timeout=30)
    refused(p, "not in this binary")
    assert os.stat(tmp_path).st_uid == 0


@pytest.mark.parametrize("suffix", ["", "/", "/.", "/./", "//"])
def test_never_through_a_symlink_whatever_the_path_ends_in(cz_bin, tmp_path, suffix):
    """DIR/ and DIR/. name DIR itself: the kernel resolves a symlink DIR before O_NOFOLLOW
    applies, so the path is cut to DIR and DIR opened with O_NOFOLLOW from its parent."""
    target = tmp_path / "host-dir"
    target.mkdir()
    link = tmp_path / "state"
    link.symlink_to(target)
    refused(own(cz_bin, "65534", str(link) + suffix), "not following a symlink")
    assert os.stat(target).st_uid == 0 and os.lstat(link).st_uid == 0
    # a real directory given the same way is DIR itself
    real = tmp_path / "real"
    real.mkdir()
    p = own(cz_bin, "65534", str(real) + suffix)
    assert p.returncode == 0, p
    assert os.stat(real).st_uid == 65534 and os.stat(tmp_path).st_uid == 0


def test_a_symlinked_middle_component_is_followed_the_last_never(cz_bin, tmp_path):
    """The parent is opened as the path names it (a symlinked middle component leads where it
    points, as for any path); the last component is never a symlink."""
    parent = tmp_path / "parent"
    (parent / "state").mkdir(parents=True)
    (parent / "host-dir").mkdir()
    (parent / "link").symlink_to(parent / "host-dir")
    mid = tmp_path / "mid"
    mid.symlink_to(parent)
    p = own(cz_bin, "65534", str(mid / "state"))
    assert p.returncode == 0, p
    assert os.stat(parent / "state").st_uid == 65534 and os.lstat(mid).st_uid == 0
    for suffix in ("", "/", "/."):
        refused(own(cz_bin, "65534", str(mid / "link") + suffix), "not following a symlink")
    assert os.stat(parent / "host-dir").st_uid == 0 and os.stat(parent).st_uid == 0
    # ".." last leads to the parent of wherever a symlink led: refused
    refused(own(cz_bin, "65534", str(mid / "link" / "..")), "Invalid argument")
    assert os.stat(parent).st_uid == 0


def test_several_directories_in_order_up_to_the_first_failure(cz_bin, tmp_path):
    """The chart's state and run directories in one run: one line each. A DIR that is no plain
    text path refuses the whole run before any is given; a DIR that fails later (absent, a
    symlink) stops there, the ones before it given and said, the ones after it untouched."""
    state, run, after = tmp_path / "state", tmp_path / "run", tmp_path / "after"
    for d in (state, run, after):
        d.mkdir()
    p = own(cz_bin, "65534", str(state), str(run))
    assert p.returncode == 0, p
    assert p.stdout == "".join("%s is owned by 65534:65534 (mode 0755)\n" % d
                               for d in (state, run)), p.stdout
    assert [os.stat(d).st_uid for d in (state, run, after)] == [65534, 65534, 0]
    for d in (state, run):
        os.chown(d, 0, 0)
    refused(own(cz_bin, "65534", str(state), "/tmp/\x1b[2J"), "plain text path")
    assert os.stat(state).st_uid == 0
    link = tmp_path / "link"
    link.symlink_to(after)
    p = own(cz_bin, "65534", str(state), str(link), str(run))
    assert p.returncode == 2 and "not following a symlink" in p.stderr, p
    assert p.stdout == "%s is owned by 65534:65534 (mode 0755)\n" % state, p.stdout
    assert [os.stat(d).st_uid for d in (state, after, run)] == [65534, 0, 0]

# SPDX-License-Identifier: MIT
"""`cpuzombie install-plugin DEST_DIR [--from FILE]`: the chart's init container's copy of the
static check binary into the volume NPD's container mounts (the image has no cp).
Copies byte-identical at mode 0755 whatever the umask, atomically (no temporary file left, on
success or failure), never through a symlink, refuses what is not a directory, exits 2 with one
line on any failure, and is idempotent. The uid-65534 cases run the binary as the chart's init
container runs (needs root to switch to it)."""

import os
import stat
import subprocess

import pytest

from conftest import ROOT, is_root, reachable_tmp

OK_LINE = "installed %s as %s/bin/cpuzombie (%d bytes, mode 0755)\n"


@pytest.fixture
def tmp_path():
    yield from reachable_tmp("cz-install-")


@pytest.fixture(scope="module")
def check_bin(cz_bin):
    """The static check binary next to the binary under test: what the image ships."""
    build = os.environ.get("CZ_BUILD") or os.path.dirname(cz_bin)
    b = os.path.join(build, "cpuzombie-check")
    assert os.access(b, os.X_OK), b
    return b


def install(cz_bin, *args, as_nobody=False, umask=0o022):
    def pre():
        os.umask(umask)
        if as_nobody:
            os.setgroups([])
            os.setgid(65534)
            os.setuid(65534)
    env = dict(os.environ, ASAN_OPTIONS="detect_leaks=1:abort_on_error=0",
               UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1")
    p = subprocess.run([cz_bin, "install-plugin", *args], capture_output=True, text=True,
                       timeout=60, preexec_fn=pre, env=env, cwd="/")
    assert "Sanitizer" not in p.stderr and "runtime error:" not in p.stderr, p.stderr
    return p


def failed(p, *words):
    """Exit 2, nothing on stdout, one line on stderr naming @words."""
    assert p.returncode == 2, p
    assert p.stdout == "", p
    assert p.stderr.count("\n") == 1 and p.stderr.endswith("\n"), p
    for w in words:
        assert w in p.stderr, (w, p.stderr)


def tree(d):
    """Every path under @d with its kind: what a run left behind."""
    out = {}
    for top, dirs, files in os.walk(d):
        for n in dirs + files:
            p = os.path.join(top, n)
            out[os.path.relpath(p, d)] = "l" if os.path.islink(p) else \
                "d" if os.path.isdir(p) else "f"
    return out


def read(p):
    with open(p, "rb") as f:
        return f.read()


def test_copies_byte_identical_mode_0755_whatever_the_umask(cz_bin, check_bin, tmp_path):
    dest = tmp_path / "plugin"
    dest.mkdir()
    p = install(cz_bin, "--from", check_bin, str(dest), umask=0o077)
    assert p.returncode == 0, p
    size = os.path.getsize(check_bin)
    assert p.stdout == OK_LINE % (check_bin, dest, size) and p.stderr == "", p
    got = dest / "bin" / "cpuzombie"
    assert read(got) == read(check_bin)
    assert stat.S_IMODE(os.lstat(got).st_mode) == 0o755
    assert stat.S_IMODE(os.lstat(dest / "bin").st_mode) == 0o755	# made so, not by the umask
    assert tree(dest) == {"bin": "d", "bin/cpuzombie": "f"}
    # what it copied runs, as NPD's container will run it
    v = subprocess.run([str(got), "--version"], capture_output=True, text=True, timeout=30)
    assert v.returncode == 0 and v.stdout.startswith("cpuzombie "), v


def test_idempotent_and_replaces_an_old_copy(cz_bin, check_bin, tmp_path):
    dest = tmp_path / "plugin"
    (dest / "bin").mkdir(parents=True)
    old = dest / "bin" / "cpuzombie"
    old.write_bytes(b"an older plugin\n")
    os.chmod(old, 0o600)
    # held open (as an NPD exec of it would): replaced by rename, never written in place, so
    # the old file keeps its bytes and is unlinked
    with open(old, "rb") as held:
        for _ in range(3):
            p = install(cz_bin, "--from", check_bin, str(dest))
            assert p.returncode == 0, p
            assert read(old) == read(check_bin)
            assert stat.S_IMODE(os.lstat(old).st_mode) == 0o755
            assert tree(dest) == {"bin": "d", "bin/cpuzombie": "f"}
        assert os.fstat(held.fileno()).st_nlink == 0
        assert held.read() == b"an older plugin\n"


@pytest.mark.parametrize("where", ["file", "bin", "dest"])
def test_refuses_a_symlinked_destination(cz_bin, check_bin, tmp_path, where):
    victim_dir = tmp_path / "victim"
    victim_dir.mkdir()
    victim = victim_dir / "cpuzombie"
    victim.write_bytes(b"not ours\n")
    real = tmp_path / "plugin"
    real.mkdir()
    dest = real
    if where == "file":
        (real / "bin").mkdir()
        os.symlink(victim, real / "bin" / "cpuzombie")
    elif where == "bin":
        os.symlink(victim_dir, real / "bin")
    else:
        dest = tmp_path / "link"
        os.symlink(real, dest)
    before = tree(tmp_path)
    p = install(cz_bin, "--from", check_bin, str(dest))
    failed(p, str(dest))
    assert read(victim) == b"not ours\n"
    assert tree(tmp_path) == before


def test_refuses_a_file_as_dest(cz_bin, check_bin, tmp_path):
    f = tmp_path / "plugin"
    f.write_bytes(b"a file\n")
    failed(install(cz_bin, "--from", check_bin, str(f)), "not a directory", str(f))
    assert read(f) == b"a file\n"
    assert tree(tmp_path) == {"plugin": "f"}
    # a file where bin/ goes, and a directory where bin/cpuzombie goes
    d = tmp_path / "d"
    d.mkdir()
    (d / "bin").write_bytes(b"x")
    failed(install(cz_bin, "--from", check_bin, str(d)), "not a directory")
    e = tmp_path / "e"
    (e / "bin" / "cpuzombie").mkdir(parents=True)
    failed(install(cz_bin, "--from", check_bin, str(e)), "not a regular file")
    assert tree(e) == {"bin": "d", "bin/cpuzombie": "d"}


@pytest.mark.skipif(not is_root(), reason="needs root to run as uid 65534")
def test_unwritable_dest_as_nobody(cz_bin, check_bin, tmp_path):
    """As the init container's uid 65534: a DEST (or its bin/) that is root's 0755 is refused
    with EACCES and left as it was, an old copy there untouched; the everyone's-directory the
    chart's emptyDir is works."""
    dest = tmp_path / "plugin"
    dest.mkdir()
    os.chmod(dest, 0o755)
    failed(install(cz_bin, "--from", check_bin, str(dest), as_nobody=True),
           "Permission denied", str(dest))
    assert tree(dest) == {}
    (dest / "bin").mkdir()
    os.chmod(dest, 0o777)
    old = dest / "bin" / "cpuzombie"
    old.write_bytes(b"old\n")
    failed(install(cz_bin, "--from", check_bin, str(dest), as_nobody=True), "Permission denied")
    assert read(old) == b"old\n" and tree(dest) == {"bin": "d", "bin/cpuzombie": "f"}
    old.unlink()
    (dest / "bin").rmdir()
    p = install(cz_bin, "--from", check_bin, str(dest), as_nobody=True)
    assert p.returncode == 0, p
    st = os.lstat(dest / "bin" / "cpuzombie")
    assert (st.st_uid, st.st_gid, stat.S_IMODE(st.st_mode)) == (65534, 65534, 0o755)
    assert read(dest / "bin" / "cpuzombie") == read(check_bin)


def test_missing_or_unusable_source(cz_bin, tmp_path):
    dest = tmp_path / "plugin"
    dest.mkdir()
    missing = tmp_path / "nope"
    failed(install(cz_bin, "--from", str(missing), str(dest)), "No such file", str(missing))
    failed(install(cz_bin, "--from", str(tmp_path), str(dest)), "not a regular file")
    # the default source is the image's path, absent here
    if not os.path.exists("/opt/cpuzombie/bin/cpuzombie"):
        failed(install(cz_bin, str(dest)), "/opt/cpuzombie/bin/cpuzombie")
    assert tree(dest) == {}


def test_no_temporary_file_left_when_the_copy_fails(cz_bin, tmp_path):
    """A source that does not read back as fstat sized it (a /proc file: size 0, bytes on
    read) fails after the temporary file was made: it is removed, the old copy stays."""
    dest = tmp_path / "plugin"
    (dest / "bin").mkdir(parents=True)
    old = dest / "bin" / "cpuzombie"
    old.write_bytes(b"old\n")
    failed(install(cz_bin, "--from", "/proc/self/status", str(dest)), "Input/output error")
    assert tree(dest) == {"bin": "d", "bin/cpuzombie": "f"} and read(old) == b"old\n"


def test_command_line_errors(cz_bin, check_bin, tmp_path):
    failed(install(cz_bin), "one DEST_DIR")
    failed(install(cz_bin, str(tmp_path), str(tmp_path)), "one DEST_DIR")
    failed(install(cz_bin, "--from", check_bin, str(tmp_path) + "/\x1b[31m"), "plain text")
    h = subprocess.run([cz_bin, "install-plugin", "--help"], capture_output=True, text=True,
                       timeout=30)
    assert h.returncode == 0 and "install-plugin DEST_DIR [--from FILE]" in h.stdout, h


def test_not_in_the_static_check_binary(check_bin, tmp_path):
    """NPD execs the check binary; the copy is the image's agent's job (the check binary does
    not reinstall itself): it says so in one line, exit 2, and writes nothing."""
    dest = tmp_path / "plugin"
    dest.mkdir()
    failed(install(check_bin, "--from", check_bin, str(dest)), "not in this binary")
    assert tree(dest) == {}


@pytest.mark.parametrize("suffix", ["/", "/.", "/./"])
def test_refuses_a_symlinked_destination_whatever_it_ends_in(cz_bin, check_bin, tmp_path,
                                                             suffix):
    """DEST/ and DEST/. name DEST itself, which the kernel would resolve through a symlink
    before O_NOFOLLOW applies: refused as DEST is; a real DEST given so is installed into."""
    victim = tmp_path / "victim"
    victim.mkdir()
    dest = tmp_path / "link"
    os.symlink(victim, dest)
    before = tree(tmp_path)
    failed(install(cz_bin, "--from", check_bin, str(dest) + suffix), str(dest))
    assert tree(tmp_path) == before and tree(victim) == {}
    real = tmp_path / "plugin"
    real.mkdir()
    p = install(cz_bin, "--from", check_bin, str(real) + suffix)
    assert p.returncode == 0, p
    assert read(real / "bin" / "cpuzombie") == read(check_bin)


def test_a_symlinked_middle_component_is_followed_the_last_never(cz_bin, check_bin, tmp_path):
    parent = tmp_path / "parent"
    (parent / "plugin").mkdir(parents=True)
    (parent / "victim").mkdir()
    os.symlink(parent / "victim", parent / "link")
    mid = tmp_path / "mid"
    os.symlink(parent, mid)
    p = install(cz_bin, "--from", check_bin, str(mid / "plugin"))
    assert p.returncode == 0, p
    assert read(parent / "plugin" / "bin" / "cpuzombie") == read(check_bin)
    for suffix in ("", "/", "/."):
        failed(install(cz_bin, "--from", check_bin, str(mid / "link") + suffix),
               str(mid / "link"))
    assert tree(parent / "victim") == {}

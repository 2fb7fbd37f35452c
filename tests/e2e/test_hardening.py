"""Hardening of the built binary, read from the ELF itself (readelf from binutils)."""
import glob
import os
import subprocess

import pytest

from conftest import ROOT


def readelf(*args):
    return subprocess.run(["readelf", "-W", *args], capture_output=True, text=True,
                          check=True).stdout


@pytest.fixture(scope="module")
def elf(cz_bin):
    return {f: readelf(f, cz_bin) for f in ("-h", "-d", "-l", "--dyn-syms", "-n")}


def test_pie(elf):
    assert "DYN (Position-Independent Executable file)" in elf["-h"]


def test_full_relro(elf):
    assert "GNU_RELRO" in elf["-l"]
    assert "BIND_NOW" in elf["-d"] or "NOW" in elf["-d"]


def test_noexec_stack(elf):
    stack = [l for l in elf["-l"].splitlines() if "GNU_STACK" in l]
    assert stack and stack[0].split()[-2] == "RW"


def test_stack_protector_and_fortify(elf):
    syms = elf["--dyn-syms"]
    assert "__stack_chk_fail" in syms
    # _FORTIFY_SOURCE turns checked calls into their _chk variants
    assert any(s in syms for s in ("__snprintf_chk", "__memcpy_chk", "__vsnprintf_chk"))


def needed_libs(path):
    """NEEDED entries of @path, without the loader and the sanitizer runtimes."""
    d = readelf("-d", path)
    needed = [l.split("[")[1].rstrip("]") for l in d.splitlines() if "(NEEDED)" in l]
    # json-c's thread-local storage pulls __tls_get_addr from the dynamic loader, which is the
    # program interpreter (PT_INTERP) and mapped at every start anyway: it costs nothing.
    needed = [n for n in needed if not n.startswith("ld-linux")]
    if "build-asan" in path:  # the sanitizer runtimes come in as shared objects
        needed = [n for n in needed if not n.startswith(("libasan", "libubsan", "libm.",
                                                          "libgcc_s", "libstdc++"))]
    return needed


def check_bin(cz_bin):
    """The check binary NPD execs (issue 12: built beside the full one)."""
    return os.path.join(os.path.dirname(cz_bin), "cpuzombie-check")


def test_only_libc_at_start(cz_bin):
    """A check loads nothing but libc. Checks run from the check binary, which links no libcurl
    and no libsystemd at all (static-pie: not even libc is loaded; under ASan it is dynamic and
    needs only libc); json-c and libyaml are linked statically (NPD execs it every interval)."""
    needed = needed_libs(check_bin(cz_bin))
    assert needed in ([], ["libc.so.6"]), needed
    if "build-asan" not in cz_bin:
        assert needed == [], needed


def test_full_binary_links_only_the_agent_libraries(cz_bin):
    """The full binary (agent, report with systemd) links libsystemd and libcurl directly (no
    dlopen) and nothing else but libc: json-c and libyaml stay static."""
    needed = needed_libs(cz_bin)
    assert "libc.so.6" in needed, needed
    assert set(needed) <= {"libc.so.6", "libsystemd.so.0", "libcurl.so.4"}, needed
    obj = os.path.join(os.path.dirname(cz_bin), "obj", "host", "systemd.o")
    syms = subprocess.run(["nm", "-u", obj], capture_output=True, text=True, check=True).stdout
    assert "sd_bus_open_system" in syms and "dlopen" not in syms, syms  # linked, not dlopen()ed


def test_cet_on_our_objects(cz_bin):
    """Every object we compile carries the x86 IBT+SHSTK property (-fcf-protection). The linked
    binary loses the marking because Debian's static libjson-c.a and libyaml.a are built without
    it (the linker keeps a property only when every input has it); linking them dynamically
    would restore it at the start-up cost measured in README."""
    objs = glob.glob(os.path.join(os.path.dirname(cz_bin), "obj", "*", "*.o"))  # obj/<layer>/
    assert objs
    for o in objs:
        notes = readelf("-n", o)
        assert "IBT" in notes and "SHSTK" in notes, o

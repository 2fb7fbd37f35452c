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


def test_only_libc_at_start(elf, cz_bin):
    """A check loads nothing but libc: libcurl and libsystemd are dlopen()ed by the agent
    paths only, json-c and libyaml are linked statically (NPD execs us every interval)."""
    needed = [l.split("[")[1].rstrip("]") for l in elf["-d"].splitlines() if "(NEEDED)" in l]
    # json-c's thread-local storage pulls __tls_get_addr from the dynamic loader, which is the
    # program interpreter (PT_INTERP) and mapped at every start anyway: it costs nothing.
    needed = [n for n in needed if not n.startswith("ld-linux")]
    if "build-asan" in cz_bin:  # the sanitizer runtimes come in as shared objects
        needed = [n for n in needed if not n.startswith(("libasan", "libubsan", "libm.",
                                                          "libgcc_s", "libstdc++"))]
    assert needed == ["libc.so.6"], needed


def test_cet_on_our_objects(cz_bin):
    """Every object we compile carries the x86 IBT+SHSTK property (-fcf-protection). The linked
    binary loses the marking because Debian's static libjson-c.a and libyaml.a are built without
    it (the linker keeps a property only when every input has it); linking them dynamically
    would restore it at the start-up cost measured in README."""
    objs = glob.glob(os.path.join(os.path.dirname(cz_bin), "obj", "*.o"))
    assert objs
    for o in objs:
        notes = readelf("-n", o)
        assert "IBT" in notes and "SHSTK" in notes, o

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
    """The check binary NPD execs, built next to the binary under test."""
    return os.path.join(os.environ.get("CZ_BUILD") or os.path.dirname(cz_bin), "cpuzombie-check")


def test_only_libc_at_start(cz_bin):
    """What NPD execs every interval loads nothing at start: the check binary is static-pie
    (json-c, libyaml and libc inside; no loader, no libcurl, no libsystemd). The full binary
    (the agent) links libcurl and libsystemd directly; it is not what NPD runs."""
    b = check_bin(cz_bin)
    needed = [l.split("[")[1].rstrip("]") for l in readelf("-d", b).splitlines()
              if "(NEEDED)" in l]
    if "build-asan" in cz_bin:  # ASan cannot link statically: a PIE with the runtimes and libc
        needed = [n for n in needed if not n.startswith(("libasan", "libubsan", "libm.",
                                                          "libgcc_s", "libstdc++", "ld-linux"))]
        assert needed == ["libc.so.6"], needed
        return
    assert needed == [], needed
    assert "INTERP" not in readelf("-l", b)              # no program interpreter either
    assert "DYN (Position-Independent Executable file)" in readelf("-h", b)   # still PIE


def test_full_binary_links_only_the_agent_libraries(cz_bin):
    """The full binary (the agent's libraries: libsystemd, libcurl, libbpf for the zombie census)
    links them directly (no dlopen) and nothing else but glibc (libc, libm): json-c and libyaml
    stay static."""
    needed = needed_libs(cz_bin)
    assert "libc.so.6" in needed, needed
    assert set(needed) <= {"libc.so.6", "libm.so.6", "libsystemd.so.0", "libcurl.so.4",
                           "libbpf.so.1"}, needed
    obj = os.path.join(os.path.dirname(cz_bin), "obj", "host", "systemd.o")
    syms = subprocess.run(["nm", "-u", obj], capture_output=True, text=True, check=True).stdout
    assert "sd_bus_open_system" in syms and "dlopen" not in syms, syms  # linked, not dlopen()ed


def test_cet_on_our_objects(cz_bin):
    """Every object we compile carries the x86 IBT+SHSTK property (-fcf-protection). The linked
    binary loses the marking because Debian's static libjson-c.a and libyaml.a are built without
    it (the linker keeps a property only when every input has it); linking them dynamically
    would restore it at the start-up cost measured in docs/cost.md."""
    objs = glob.glob(os.path.join(os.path.dirname(cz_bin), "obj", "*", "*.o"))
    assert objs
    for o in objs:
        notes = readelf("-n", o)
        assert "IBT" in notes and "SHSTK" in notes, o

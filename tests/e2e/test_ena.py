"""End-to-end: `check ena`, `check ena-allowance` and `ena-diff` on the real kernel.

The live path reads a veth pair in a network namespace this test creates (ena.drivers set to
veth) and compares cpuzombie's raw counters (`ena-diff - IF`, the documented live dump) with
`ethtool -S` for the same moment. ENA semantics come from the real dumps in tests/fixtures/ena.
"""
import os
import re
import shutil
import subprocess

import pytest

from conftest import FIXTURES, needs_root

ENA = os.path.join(FIXTURES, "ena")
FX02 = os.path.join(ENA, "02-sliderule518-ens34-ena-2.14-2.15-allowance-exceeded.txt")
FX03 = os.path.join(ENA, "03-sliderule518-perqueue-excerpt-truncated-stat-name.txt")
FX01 = os.path.join(ENA, "01-ethq15-ena-1.2.0k-ethtool-i-and-S.txt")
FX15 = os.path.join(ENA, "15-amzn316-proc-interrupts-ena-msix.txt")

needs_tools = pytest.mark.skipif(not (shutil.which("ip") and shutil.which("ethtool")),
                                 reason="needs iproute2 and ethtool")


def parse_stats(text):
    """`ethtool -S` text -> {name: value} (the test's own, independent parser)."""
    out = {}
    for line in text.splitlines():
        m = re.match(r"^\s+(\S.*?):\s+(\d+)\s*$", line)
        if m:
            out[m.group(1)] = int(m.group(2))
    return out


def sh(*cmd, check=True):
    return subprocess.run(cmd, capture_output=True, text=True, timeout=30, check=check)


@pytest.fixture
def netns():
    """A namespace with a veth pair veth-a/veth-b, both up, addressed; removed by name."""
    name = f"czt-{os.getpid()}"
    sh("ip", "netns", "add", name)
    try:
        n = ["ip", "-n", name]
        sh(*n, "link", "set", "lo", "up")
        sh(*n, "link", "add", "veth-a", "type", "veth", "peer", "name", "veth-b")
        sh(*n, "addr", "add", "10.251.0.1/30", "dev", "veth-a")
        sh(*n, "addr", "add", "10.251.0.2/30", "dev", "veth-b")
        sh(*n, "link", "set", "veth-a", "up")
        sh(*n, "link", "set", "veth-b", "up")
        # some packets between the ends
        sh("ip", "netns", "exec", name, "ping", "-c", "3", "-i", "0.2", "-W", "1", "-I", "veth-a",
           "10.251.0.2", check=False)
        yield name
    finally:
        sh("ip", "netns", "del", name, check=False)


def veth_config(tmp_path, extra=""):
    p = tmp_path / "cz.yaml"
    p.write_text("ena:\n  drivers: [veth]\n  min_read_interval: 0s\n" + extra)
    return str(p)


@pytest.fixture
def czns(cz_bin, tmp_path):
    """cpuzombie inside a namespace: ip netns exec NS cpuzombie --state-dir ... ARGS."""
    state = tmp_path / "state"

    def run(ns, *args, check=None):
        env = dict(os.environ)
        env.setdefault("ASAN_OPTIONS", "detect_leaks=1:abort_on_error=0")
        p = subprocess.run(["ip", "netns", "exec", ns, cz_bin, "--state-dir", str(state), *args],
                           capture_output=True, text=True, timeout=60, env=env)
        assert "ERROR: AddressSanitizer" not in p.stderr, p.stderr
        assert "runtime error:" not in p.stderr, p.stderr
        if check is not None:
            assert p.returncode == check, (p.returncode, p.stdout, p.stderr)
        return p

    run.state = state
    return run


@needs_root
@needs_tools
def test_live_counters_equal_ethtool(netns, czns, tmp_path):
    cfg = veth_config(tmp_path)
    for ifname in ("veth-a", "veth-b"):
        ours = czns(netns, "--config", cfg, "ena-diff", "-", ifname, check=0).stdout
        theirs = sh("ip", "netns", "exec", netns, "ethtool", "-S", ifname).stdout
        info = sh("ip", "netns", "exec", netns, "ethtool", "-i", ifname).stdout
        assert parse_stats(ours) == parse_stats(theirs)
        assert len(parse_stats(ours)) >= 2
        assert "driver: veth" in ours and "driver: veth" in info
        # names in the kernel's order, same as ethtool prints them
        assert list(parse_stats(ours)) == list(parse_stats(theirs))
    # the dump is the input format: diffing it against a fresh live read works
    before = tmp_path / "before.txt"
    before.write_text(czns(netns, "--config", cfg, "ena-diff", "-", check=0).stdout)
    r = czns(netns, "--config", cfg, "ena-diff", str(before), "-", check=0)
    assert "veth-a no reset" in r.stdout and "veth-b no reset" in r.stdout


@needs_root
@needs_tools
def test_check_on_veth_rename_and_vanish(netns, czns, tmp_path):
    cfg = veth_config(tmp_path)
    r = czns(netns, "--config", cfg, "check", "ena", check=0)
    assert r.stdout.startswith("2 ENA interfaces: no resets in 1h"), r.stdout
    state = (czns.state / "ena").read_text()
    assert "iface if:veth-a " in state and "iface if:veth-b " in state
    r = czns(netns, "--config", cfg, "check", "ena", check=0)
    assert r.stdout.strip() == "2 ENA interfaces: no resets in 1h"
    r = czns(netns, "--config", cfg, "check", "ena-allowance", check=0)
    assert "no ENA allowance exceeded on 2 interfaces" in r.stdout
    # a renamed device (veth has no bus_info: a new key) is a new baseline, never a reset
    sh("ip", "-n", netns, "link", "set", "veth-b", "down")
    sh("ip", "-n", netns, "link", "set", "veth-b", "name", "veth-c")
    r = czns(netns, "--config", cfg, "check", "ena", check=0)
    assert "veth-c first reading" in r.stdout
    # only the named interfaces
    r = czns(netns, "--config", veth_config(tmp_path, "  interfaces: [veth-a]\n"), "check", "ena",
             check=0)
    assert r.stdout.startswith("veth-a: no ENA resets"), r.stdout
    # the pair disappears
    sh("ip", "-n", netns, "link", "del", "veth-a")
    r = czns(netns, "--config", cfg, "check", "ena", check=0)
    assert r.stdout.strip() == "No ENA interface (drivers: veth)"
    # and with the default drivers there is no ENA device in our namespace at all
    r = czns(netns, "check", "ena", check=0)
    assert r.stdout.strip() == "No ENA interface (drivers: ena)"


@needs_root
@needs_tools
def test_corrupt_and_unwritable_state(netns, czns, tmp_path):
    cfg = veth_config(tmp_path)
    czns(netns, "--config", cfg, "check", "ena", check=0)
    (czns.state / "ena").write_text("cpuzombie-state 1 ena\ntotal_resets 99\nend 00000000\n")
    r = czns(netns, "--config", cfg, "check", "ena", check=0)
    assert "state was corrupt: new baseline" in r.stdout
    r = subprocess.run(["ip", "netns", "exec", netns, os.environ.get("CZ_BIN", "build/cpuzombie"),
                        "--state-dir", "/proc/cz-no-such", "--config", cfg, "check", "ena"],
                       capture_output=True, text=True, timeout=30)
    assert r.returncode == 2 and "state" in r.stdout, r


@needs_root
@needs_tools
def test_quiet_reads_leave_the_state_file_alone(netns, czns, tmp_path):
    """A reading that tells the verdicts nothing new does not rewrite the state (that rewrite
    was two fsyncs on every exec); it moves the stamp in the lock file. A change is written."""
    cfg = veth_config(tmp_path)
    state = czns.state / "ena"
    for check in ("ena", "ena-allowance"):
        czns(netns, "--config", cfg, "check", check, check=0)
    ino = {n: os.stat(czns.state / n).st_ino for n in ("ena", "ena-allowance")}
    before = state.read_bytes()
    for _ in range(3):
        r = czns(netns, "--config", cfg, "check", "ena", check=0)
        assert r.stdout.strip() == "2 ENA interfaces: no resets in 1h", r.stdout
        r = czns(netns, "--config", cfg, "check", "ena-allowance", check=0)
        assert "no ENA allowance exceeded on 2 interfaces" in r.stdout, r.stdout
    assert {n: os.stat(czns.state / n).st_ino for n in ino} == ino
    assert state.read_bytes() == before
    stamp = (czns.state / "ena.lock").read_text()
    assert re.fullmatch(r"stamp \d{20}\n", stamp), stamp
    stored = int(re.search(r"^read (\d+)$", before.decode(), re.M).group(1))
    assert int(stamp.split()[1]) >= stored
    # someone else's bytes in the lock file: no stamp, the check reads and works on
    (czns.state / "ena.lock").write_text("not a stamp\n")
    r = czns(netns, "--config", cfg, "check", "ena", check=0)
    assert r.stdout.strip() == "2 ENA interfaces: no resets in 1h", r.stdout
    # a device that goes is news: written
    sh("ip", "-n", netns, "link", "set", "veth-b", "down")
    sh("ip", "-n", netns, "link", "set", "veth-b", "name", "veth-c")
    r = czns(netns, "--config", cfg, "check", "ena", check=0)
    assert "veth-c first reading" in r.stdout
    assert os.stat(state).st_ino != ino["ena"]
    assert "iface if:veth-c " in state.read_text()


def after_of(path, tmp_path, changes, name="after.txt"):
    text = open(path).read()
    for k, v in changes.items():
        text, n = re.subn(rf"(\n\s+{k}: )\d+", rf"\g<1>{v}", text)
        assert n == 1, k
    p = tmp_path / name
    p.write_text(text)
    return str(p)


def test_diff_oot_poll_starvation(cz, tmp_path):
    after = after_of(FX02, tmp_path, {"total_resets": 1, "suspected_poll_starvation": 1,
                                      "tx_timeout": 2, "bw_in_allowance_exceeded": 3241400})
    r = cz("ena-diff", FX02, after, check=1)
    lines = r.out.splitlines()
    assert lines[0] == "ens34 1 reset: poll starvation; tx_timeout +2", r.out
    assert lines[1] == "ens34 throttled: bw_in_allowance_exceeded +71"
    assert lines[2].startswith("  total_resets +1 (0 -> 1): the driver reset the device")
    assert any("suspected_poll_starvation +1" in l and "CPU starvation" in l for l in lines)
    assert all(l.isascii() for l in lines)


def test_diff_upstream_and_restart(cz, tmp_path):
    after = after_of(FX01, tmp_path, {"wd_expired": 1, "interface_up": 2, "interface_down": 1})
    assert cz("ena-diff", FX01, after, check=1).out.startswith("eth0 1 reset: wd_expired +1")
    # down/up with queue counters back to zero, no reset counter: a restart, reported as risk
    restart = after_of(FX01, tmp_path, {"interface_up": 2, "interface_down": 1,
                                        "queue_0_tx_cnt": 12, "queue_0_rx_cnt": 40}, "r.txt")
    r = cz("ena-diff", FX01, restart, check=1)
    assert r.out.startswith("eth0 no reset; risk: interface restarted"), r.out


def test_diff_quiet_reload_and_throttling_only(cz, tmp_path):
    r = cz("ena-diff", FX02, FX02, check=0)
    assert r.out.strip() == "ens34 no reset"
    reload = after_of(FX02, tmp_path, {"interface_up": 0})
    r = cz("ena-diff", FX02, reload, check=2)
    assert r.out == "" and r.err.count("\n") == 1 and "no verdict" in r.err, r
    thr = after_of(FX02, tmp_path, {"pps_allowance_exceeded": 800}, "t.txt")
    r = cz("ena-diff", FX02, thr, check=0)
    assert "throttled: pps_allowance_exceeded +16" in r.out


def test_diff_across_a_driver_reload_counts_from_the_new_values(cz, tmp_path):
    """Counters went down between the dumps (driver reload) and tx_timeout rose after it: the
    counters that went down count from their new value, so this is a reset (exit 1)."""
    before = after_of(FX02, tmp_path, {"interface_up": 3, "total_resets": 2, "tx_timeout": 2},
                      "b.txt")
    after = after_of(FX02, tmp_path, {"interface_up": 1, "total_resets": 1, "tx_timeout": 1})
    r = cz("ena-diff", before, after, check=1)
    assert r.out.startswith("ens34 1 reset at least (counters went down: counted from their "
                            "new value): tx_timeout +1\n"), r
    # only interface_up went down (the reload), tx_timeout rose 0 -> 1 after it
    before = after_of(FX02, tmp_path, {"interface_up": 3}, "b2.txt")
    after = after_of(FX02, tmp_path, {"interface_up": 1, "total_resets": 1, "tx_timeout": 1},
                     "a2.txt")
    r = cz("ena-diff", before, after, check=1)
    assert r.out.startswith("ens34 1 reset at least"), r


def test_diff_bad_input(cz, tmp_path):
    garbage = tmp_path / "garbage.txt"
    garbage.write_bytes(b"\x00\x01 not ethtool at all\n")
    r = cz("ena-diff", str(garbage), FX02, check=2)
    assert "garbage.txt:1:" in r.err and r.out == ""
    partial = tmp_path / "partial.txt"
    partial.write_text(open(FX03).read() + "     queue_")
    r = cz("ena-diff", FX03, str(partial), check=2)
    assert "partial.txt:41: not an ethtool -S line: 'queue_'" in r.err, r.err
    r = cz("ena-diff", FX15, FX02, check=2)
    assert "is not a counter" in r.err
    r = cz("ena-diff", str(tmp_path / "missing.txt"), FX02, check=2)
    assert "Failed to open" in r.err
    empty = tmp_path / "empty.txt"
    empty.write_text("NIC statistics:\n")
    assert "no ethtool statistics found" in cz("ena-diff", str(empty), FX02, check=2).err
    other = after_of(FX01, tmp_path, {}, "o.txt")
    open(other, "w").write(open(FX01).read().replace("0000:00:05.0", "0000:00:06.0"))
    assert "not the same device" in cz("ena-diff", FX01, other, check=2).err
    cz("ena-diff", FX01, check=2)


def test_every_fixture_dump_parses(cz):
    for f in sorted(os.listdir(ENA)):
        if not f.endswith(".txt") or f.endswith(".source.txt") or f.startswith("15-"):
            continue
        r = cz("ena-diff", os.path.join(ENA, f), os.path.join(ENA, f))
        assert r.rc == 0, (f, r)
        assert "no reset" in r.out

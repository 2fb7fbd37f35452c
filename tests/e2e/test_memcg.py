"""check memcg on the real kernel: thousands of real dying memcgs, then released."""
import os
import re
import subprocess
import concurrent.futures

import pytest

from conftest import needs_root, FIXTURES
from memcg_helpers import DyingMemcgs, memory_v1_root, v1_counts

MSG = re.compile(r"^(\d+) dying memcgs vs (\d+) live")


def parse(line):
    m = MSG.match(line)
    assert m, line
    return int(m.group(1)), int(m.group(2))


@needs_root
@pytest.mark.skipif(not memory_v1_root(), reason="this machine's memory controller is on cgroup v2;"
                    " the v1 count is compared with /proc/cgroups")
def test_real_dying_memcgs_problem_then_ok(cz, tmp_path):
    before = parse(cz("check", "memcg", check=None).line)
    with DyingMemcgs(2000, tmp_path) as d:
        live, dying = v1_counts()
        r = cz("check", "memcg")
        after_live, after_dying = v1_counts()
        assert r.rc == 1, r
        got_dying, got_live = parse(r.line)
        # the counts are the kernel's, read at (nearly) the same moment
        assert min(dying, after_dying) <= got_dying <= max(dying, after_dying)
        assert min(live, after_live) <= got_live <= max(live, after_live)
        assert got_dying >= 2000
        assert "x" in r.line and ">= x10" in r.line
        d.release()
        r = cz("check", "memcg")
        assert r.rc == 0, r
        got_dying, _ = parse(r.line)
        assert got_dying < 1000
        assert got_dying <= before[0] + 200  # back to what the node had before (others may add a few)


@needs_root
@pytest.mark.skipif(not memory_v1_root(), reason="needs the v1 memory hierarchy")
def test_thresholds_both_needed(cz, tmp_path):
    """80 dying / 3 live is x27 but below min_dying: not an alarm; lowering min_dying makes it one."""
    cfg = tmp_path / "c.yaml"
    with DyingMemcgs(300, tmp_path):
        cfg.write_text("memcg:\n  min_dying: 100000\n")
        assert cz("--config", str(cfg), "check", "memcg").rc == 0
        cfg.write_text("memcg:\n  min_dying: 250\n  max_ratio: 1000000\n")
        assert cz("--config", str(cfg), "check", "memcg").rc == 0
        cfg.write_text("memcg:\n  min_dying: 250\n  max_ratio: 2\n")
        r = cz("--config", str(cfg), "check", "memcg")
        assert r.rc == 1, r


def test_concurrent_invocations_share_state(cz, cz_bin, tmp_path):
    """8 concurrent checks on one state dir leave one valid state file and no temporaries."""
    tree = os.path.join(FIXTURES, "memcg", "v1-zombies")
    args = ["--proc-root", tree + "/proc", "--sys-root", tree + "/sys", "check", "memcg"]
    with concurrent.futures.ThreadPoolExecutor(8) as ex:
        results = list(ex.map(lambda _: cz(*args), range(8)))
    for r in results:
        assert r.rc == 1, r
        assert "corrupt" not in r.err
    names = sorted(os.listdir(cz.state))
    assert names == ["memcg", "memcg.lock"], names
    data = (cz.state / "memcg").read_text()
    assert data.startswith("cpuzombie-state 1 memcg\n") and re.search(r"\nend [0-9a-f]{8}\n$", data)


def test_corrupt_state_recovered(cz, tmp_path):
    tree = os.path.join(FIXTURES, "memcg", "v1-zombies")
    args = ["--proc-root", tree + "/proc", "--sys-root", tree + "/sys", "check", "memcg"]
    assert cz(*args).rc == 1
    st = cz.state / "memcg"
    good = st.read_text()
    st.write_text(good.replace("s ", "x ", 1))  # checksum no longer matches
    r = cz(*args)
    assert r.rc == 1, r  # the verdict does not depend on the history
    assert "corrupt" in r.err
    assert (cz.state / "memcg.corrupt").exists()
    assert st.read_text().startswith("cpuzombie-state 1 memcg\n")
    # a torn (truncated) file too
    st.write_bytes(st.read_bytes()[:20])
    r = cz(*args)
    assert r.rc == 1 and "corrupt" in r.err


def test_growth_from_history(cz, tmp_path):
    """An older sample in the state makes the message carry the growth rate per hour."""
    import time, zlib
    tree = os.path.join(FIXTURES, "memcg", "v1-zombies")
    args = ["--proc-root", tree + "/proc", "--sys-root", tree + "/sys", "check", "memcg"]
    now = int(time.time() * 1000)
    payload = f"s {now - 3600 * 1000} 12530\n".encode()
    body = b"cpuzombie-state 1 memcg\n" + payload + b"end %08x\n" % zlib.crc32(payload)
    cz.state.mkdir(parents=True, exist_ok=True)
    (cz.state / "memcg").write_bytes(body)
    r = cz(*args)
    assert r.rc == 1, r
    dying, _ = parse(r.line)
    assert f"+{dying - 12530}/h" in r.line, r.line

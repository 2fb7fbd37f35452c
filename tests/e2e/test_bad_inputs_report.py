# SPDX-License-Identifier: MIT
"""Hostile run files under `report` (text, --json, --svg, --html) and `top`: a heartbeat or a
burst that claims more CPUs than the history ring holds (or than this host can have), a window
that drops logged bursts beside one still going on, and task names that break XML or reorder a
terminal line.

Every per-CPU array of the node model is sized to the model's CPU count (report_percpu_new),
and each file's claim is bounded by the host's possible CPUs (report_claim_cpus): the tests walk
every renderer over the same run dir, under ASan when CZ_BIN is the sanitizer build."""
import json
import os
import re
import subprocess
import time
import xml.dom.minidom

from report_helpers import state_file, write_ring

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
HOUR = 3600 * 1000


def cz(*args):
    return [os.environ.get("CZ_BIN") or os.path.join(ROOT, "build", "cpuzombie"), *args]


def esc(b):
    """The run files' escape of a field (plugin/cpu/history.c put_esc): %XX but for [A-Za-z0-9]."""
    return "".join(chr(c) if chr(c).isalnum() and c < 0x80 else "%%%02X" % c for c in b)


def heartbeat(now, ncpu, active=()):
    lines = "pid 1\ntime_ms %d\ninterval_ms 1000\nmetric system\nncpu %d\nstopped 0\n" % (
        now, ncpu)
    for cpu, start, comm in active:
        lines += "active %d %d %d 100.0 99.0 tasks=4242/4242/%s/900\n" % (
            cpu, start, now, esc(comm))
    return lines


def burst_line(cpu, start, end, comm=b"kubelet"):
    return ("burst %d %d %d 100.0 99.0 system irqs=- tasks=4242/4242/%s/%d stack=- profile=- "
            "hot=- why=-\n" % (cpu, start, end, esc(comm), end - start))


def run_dir(tmp_path, ncpu_ring, hb_ncpu, bursts=(), active=()):
    now = int(time.time() * 1000)
    run = tmp_path / "run"
    run.mkdir()
    write_ring(run / "cpu-history", ncpu_ring,
               [(now - i * 1000, [7] * ncpu_ring) for i in range(60, 0, -1)], 1000, 900)
    state_file(run / "cpu-heartbeat", "cpu-heartbeat", heartbeat(now, hb_ncpu, active))
    state_file(run / "cpu-bursts", "cpu-bursts",
               "".join(burst_line(c, s, e, *rest) for c, s, e, *rest in bursts))
    return run, now


def cfg(tmp_path):
    p = tmp_path / "cz.yaml"
    p.write_text("cpu:\n  interval: 1s\n  lookback: 15m\n  history: 15m\n"
                 "memcg:\n  systemd_hints: false\n")
    return p


def report(tmp_path, run, *args, sys_root=None):
    roots = ["--sys-root", str(sys_root)] if sys_root else []
    return subprocess.run(cz("--config", str(cfg(tmp_path)), "--run-dir", str(run),
                             "--state-dir", str(tmp_path / "state"), *roots, "report", *args),
                          capture_output=True, text=True, timeout=120)


def clean(p):
    assert "AddressSanitizer" not in p.stderr and "runtime error" not in p.stderr, p.stderr
    assert p.returncode in (0, 1, 2), (p.returncode, p.stderr)


def possible_cpus():
    text = open("/sys/devices/system/cpu/possible").read()
    return max(int(x) for part in text.strip().split(",") for x in part.split("-")) + 1


def every_renderer(tmp_path, run, sys_root):
    """report, report --json, --svg and --html over @run; returns (text, json, svg path)."""
    svg, html = tmp_path / "r.svg", tmp_path / "r.html"
    t = report(tmp_path, run, sys_root=sys_root)
    clean(t)
    j = report(tmp_path, run, "--json", sys_root=sys_root)
    clean(j)
    s = report(tmp_path, run, "--svg", str(svg), sys_root=sys_root)
    clean(s)
    h = report(tmp_path, run, "--html", str(html), sys_root=sys_root)
    clean(h)
    return t.stdout, json.loads(j.stdout), svg


def test_heartbeat_claiming_more_cpus_than_the_ring_reads_no_heap(tmp_path):
    """A fresh 2-CPU ring beside a heartbeat saying ncpu 8192 and a logged burst on cpu5000:
    with no sysfs to bound them, the model has 8192 CPUs and every per-CPU array is that long;
    the cores the ring does not hold are unknown, never heap bytes shown as hot cores."""
    now = int(time.time() * 1000)
    run, now = run_dir(tmp_path, 2, 8192, bursts=[(5000, now - 120000, now - 60000)])
    text, doc, svg = every_renderer(tmp_path, run, tmp_path / "nosys")
    cores = doc["cores"]
    assert cores["ncpu"] == 8192, cores["ncpu"]
    now_pct = cores["now_pct"]
    assert len(now_pct) == 8192 and now_pct[:2] == [7, 7], now_pct[:4]
    assert all(v is None for v in now_pct[2:]), [v for v in now_pct[2:] if v is not None][:8]
    line = next(l for l in text.splitlines() if l.startswith("  now:"))
    assert line.startswith("  now: cpu0 7% cpu1 7% ...; 0 of 8192 at or above"), line
    xml.dom.minidom.parse(str(svg))


def test_claims_beyond_this_host_are_not_believed(tmp_path):
    """The same run dir read with this host's sysfs: no file may claim more CPUs than the host
    can have (its possible CPUs), so the model keeps the ring's count."""
    now = int(time.time() * 1000)
    run, now = run_dir(tmp_path, 2, 8192, bursts=[(5000, now - 120000, now - 60000)])
    text, doc, _ = every_renderer(tmp_path, run, None)
    assert doc["cores"]["ncpu"] == max(2, possible_cpus()), doc["cores"]["ncpu"]
    assert len(doc["cores"]["now_pct"]) == doc["cores"]["ncpu"]
    # a ring for more CPUs than the host can have is not this host's ring
    big = tmp_path / "big"
    big.mkdir()
    run2, _ = run_dir(big, possible_cpus() + 1, 1)
    p = report(big, run2, "--json")
    clean(p)
    assert json.loads(p.stdout)["cores"]["ncpu"] <= possible_cpus(), p.stdout[:300]
    p = report(big, run2)
    clean(p)
    assert "heatmap: no history (more CPUs than this host can have)" in p.stdout, p.stdout


def test_top_over_a_heartbeat_claiming_more_cpus_than_the_ring(tmp_path):
    now = int(time.time() * 1000)
    run, now = run_dir(tmp_path, 2, 8192, bursts=[(5000, now - 120000, now - 60000)],
                       active=[(5001, now - 30000, b"spin")])
    p = subprocess.run(cz("--run-dir", str(run), "--state-dir", str(tmp_path / "state"),
                          "--sys-root", str(tmp_path / "nosys"), "top", "--once"),
                       capture_output=True, text=True, timeout=60)
    clean(p)
    assert p.returncode == 0 and "cpu0" in p.stdout, (p.stdout, p.stderr)


def test_a_burst_still_going_on_stays_ongoing_when_the_window_drops_logged_ones(tmp_path):
    """--since 3h --until 1h: the heartbeat's burst on cpu0 began 2 h ago and goes on; the two
    logged bursts on cpu1 are after --until and leave the window. cpu0's burst is ongoing."""
    now = int(time.time() * 1000)
    logged = [(1, now - 50 * 60000, now - 49 * 60000), (1, now - 30 * 60000, now - 29 * 60000)]
    run, now = run_dir(tmp_path, 2, 2, bursts=logged, active=[(0, now - 2 * HOUR, b"spin")])
    p = report(tmp_path, run, "--json", "--since", "3h", "--until", "1h")
    clean(p)
    bursts = json.loads(p.stdout)["cores"]["bursts"]
    assert [(b["cpu"], b["ongoing"]) for b in bursts] == [(0, True)], bursts
    p = report(tmp_path, run, "--since", "3h", "--until", "1h")
    clean(p)
    line = next(l for l in p.stdout.splitlines() if l.startswith("  cpu0 "))
    assert re.match(r"  cpu0 +\S+ +[0-9.]+s\+ ", line), line


# A task name (15 bytes, the kernel's most) that breaks XML 1.0 (U+FFFE, U+FFFF are no
# characters), reorders a terminal line (RLO U+202E, LRI U+2066) and carries markup and ESC.
EVIL = b"\xef\xbf\xbe\xef\xbf\xbf\xe2\x80\xae<&\x1b\xe2\x81\xa6"
RAW = [b"\xef\xbf\xbe", b"\xef\xbf\xbf", b"\xe2\x80\xae", b"\xe2\x81\xa6", b"\x1b"]


def no_raw_hazard(data, what):
    for h in RAW:
        assert h not in data, (what, h, data[:400])


def evil_run(tmp_path):
    now = int(time.time() * 1000)
    return run_dir(tmp_path, 2, 2, bursts=[(1, now - 120000, now - 100000, EVIL)],
                   active=[(0, now - 30000, EVIL)])


def test_hostile_names_every_svg_and_json_parse_strictly(tmp_path):
    """Every SVG and JSON written from hostile names parses in a strict parser (expat rejects
    U+FFFE/U+FFFF), and the names are shown visibly, not dropped."""
    run, _ = evil_run(tmp_path)
    svg, html = tmp_path / "r.svg", tmp_path / "r.html"
    for args in (["--svg", str(svg)], ["--html", str(html)]):
        clean(report(tmp_path, run, *args))
    for path in (svg, html):
        data = path.read_bytes()
        xml.dom.minidom.parseString(data)
        no_raw_hazard(data, path.name)
        assert b"\\ufffe" in data and b"\\u202e" in data, path.name
    p = subprocess.run(cz("--config", str(cfg(tmp_path)), "--run-dir", str(run), "--state-dir",
                          str(tmp_path / "state"), "report", "--json"), capture_output=True,
                       timeout=120)
    assert b"AddressSanitizer" not in p.stderr, p.stderr
    doc = json.loads(p.stdout.decode("utf-8", errors="strict"))
    names = json.dumps(doc, ensure_ascii=False)
    for h in RAW:
        assert h.decode() not in names, h
    assert "\\ufffe" in names and "\\u202e" in names


def test_hostile_names_never_reach_the_terminal_raw(tmp_path):
    """One terminal-text rule for every human-facing output: report's text and top show the
    bidi controls and non-characters visibly (as check cpu's message does)."""
    run, _ = evil_run(tmp_path)
    p = subprocess.run(cz("--config", str(cfg(tmp_path)), "--run-dir", str(run), "--state-dir",
                          str(tmp_path / "state"), "report"), capture_output=True, timeout=120)
    assert b"AddressSanitizer" not in p.stderr, p.stderr
    no_raw_hazard(p.stdout, "report")
    assert b"\\u202e" in p.stdout, p.stdout[-2000:]
    p = subprocess.run(cz("--run-dir", str(run), "--state-dir", str(tmp_path / "state"), "top",
                          "--once"), capture_output=True, timeout=60)
    assert p.returncode == 0 and b"AddressSanitizer" not in p.stderr, p.stderr
    no_raw_hazard(p.stdout, "top")
    assert b"\\u202e" in p.stdout, p.stdout
    # explain, on a kernel log whose soft lockup names the same task
    log = tmp_path / "k.log"
    log.write_bytes(b"[  100.000000] watchdog: BUG: soft lockup - CPU#1 stuck for 22s! [" +
                    EVIL + b":4242]\n")
    for args in ([], ["--json"]):
        p = subprocess.run(cz("explain", *args, str(log)), capture_output=True, timeout=60)
        assert b"AddressSanitizer" not in p.stderr, p.stderr
        no_raw_hazard(p.stdout, "explain %s" % args)
        if args:
            json.loads(p.stdout.decode("utf-8", errors="strict"))

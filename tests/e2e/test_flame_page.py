"""The burst you can look into: `report --html` and `flame BURST-ID` on a real run dir.

The replayed incident: real dying memory cgroups, and one core burning in the kernel the way
kubelet's stats walk did, a SCHED_FIFO task pinned to it reading the root cgroup v1
memory.numa_stat in a loop (cpu_helpers: one burn at a time on the machine), under a real
`cpuzombie agent` whose profiler records the burst's stacks and the time of each sample. Then:

- the page and the standalone SVG pass a strict XML parser; the page names the memcg path as
  the burst's widest kernel frame and hot function;
- headless Chromium (DevTools protocol over a pipe, cdp_helpers) runs the page's one script
  under its Content-Security-Policy (no violation logged; an inline handler added later is
  refused) and the screenshot of the burst's flame graph is drawn where the page puts it:
  the hot frame as wide as its share of the profile's samples, warm past its label, in its
  purple outline;
- jsdom under node (flame_page_jsdom.js) clicks a frame (it then fills the width), searches
  (the share is the folded file's count) and drags over the sub-second strip (the flame graph
  then holds exactly the samples the .times file has in that range).

Hostile names (a task and frames named with </script>, quotes, <, &, U+FFFE, bidi controls)
stay text in both parsers and in the browser's DOM.

CZ_SCREENSHOT_DIR=DIR: the Chromium test also saves the replayed incident's page there
(report-html-incident.png: heatmap, the burst, its strip and flame graph), the docs' picture.
"""
import json
import os
import re
import subprocess
import sys
import time
import xml.dom.minidom

import pytest

from cdp_helpers import CHROMIUM, Browser
from cpu_helpers import burn_lock, burning_locked
from memcg_helpers import DyingMemcgs, memory_v1_root
from report_helpers import png_pixels, state_file, write_node

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
JSDOM_JS = os.path.join(ROOT, "tests", "e2e", "flame_page_jsdom.js")
MEMCG_PATH = re.compile(r"memcg_numa_stat_show|mem_cgroup_node_nr_lru_pages|"
                        r"mem_cgroup_nr_lru_pages|memcg_page_state|mem_cgroup_flush_stats")
needs_chromium = pytest.mark.skipif(not CHROMIUM, reason="needs Debian chromium (headless)")

READER = r"""
import os, sys, time
fd = os.open(sys.argv[1], os.O_RDONLY)
end = time.time() + float(sys.argv[2])
while time.time() < end:
    os.pread(fd, 65536, 0)
"""


def cz(cz_bin, run, *args):
    return subprocess.run([cz_bin, "--run-dir", str(run), "--state-dir", str(run) + "-state",
                           *args], capture_output=True, text=True, timeout=60)


def parse_folded(text):
    out = []
    for line in text.splitlines():
        stack, _, count = line.rpartition(" ")
        out.append((stack.split(";"), int(count)))
    return out


def parse_times(text):
    lines = text.splitlines()
    assert lines[0] == "cpuzombie-times 1", lines[:1]
    return [tuple(int(x) for x in l.split()) for l in lines[1:]]


def jsdom_path():
    p = subprocess.run([os.path.join(ROOT, "tests", "tools", "get-jsdom.sh")],
                       capture_output=True, text=True, timeout=600)
    if p.returncode != 0:
        pytest.skip("jsdom could not be installed with npm: " + p.stderr[-300:])
    return p.stdout.strip()


def jsdom(page, burst, frame, term, cell_from, cell_to):
    p = subprocess.run(["node", JSDOM_JS, str(page), burst, frame, term, str(cell_from),
                        str(cell_to)], capture_output=True, text=True, timeout=120,
                       env=dict(os.environ, NODE_PATH=jsdom_path()))
    assert p.returncode == 0, p.stderr[-3000:]
    out = json.loads(p.stdout)
    assert out["errors"] == [], out["errors"]
    return out


def strict_xml(path):
    """The whole file through a strict XML parser (raises on any error); the document."""
    return xml.dom.minidom.parse(str(path))


@pytest.fixture(scope="module")
def incident(cz_bin, tmp_path_factory):
    if os.geteuid() != 0:
        pytest.skip("needs root: dying memcgs, a CPU-wide perf event, an RT burner")
    if os.cpu_count() < 2:
        pytest.skip("needs 2 CPUs: one to burn, one for everything else")
    v1 = memory_v1_root()
    if not v1:
        pytest.skip("needs the cgroup v1 memory hierarchy (the incident's memory.numa_stat)")
    base = tmp_path_factory.mktemp("incident")
    run, hot = base / "run", os.cpu_count() - 1
    cfg = base / "cz.yaml"
    # 50%: each read returns to the Python loop, and on a paravirtualized guest (PVM: syscall
    # entry and exit go through the hypervisor) a third of the reader's core counts as user
    # time, so its system share is 62-73% there (at 70% a burst was seen in one run and missed
    # in the next). Not the busy metric: beside a build both cores are 100% busy, the burst
    # then starts before the reader and ends after it, and its profile is the build's as much
    # as the reader's (measured: 64% reader). What is under test is the profile of the
    # reader's kernel part, the incident's path.
    cfg.write_text("cpu:\n  interval: 250ms\n  metric: system\n  threshold_pct: 50\n"
                   "  min_burst: 2s\nmemcg:\n  systemd_hints: false\n")
    reader = base / "reader.py"
    reader.write_text(READER)
    prog = "%s %s %s 5" % (sys.executable, reader, os.path.join(v1, "memory.numa_stat"))
    page, svg = base / "incident.html", base / "flame.svg"
    args = ["--config", str(cfg), "--node-name", "replayed-node"]
    with DyingMemcgs(500, base / "memcgs"):
        with burn_lock():
            agent = subprocess.Popen([cz_bin, "--config", str(cfg), "--run-dir", str(run),
                                      "--state-dir", str(base / "state"), "--node-name",
                                      "replayed-node", "agent"],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                     text=True)
            try:
                deadline = time.time() + 10
                while not (run / "cpu-heartbeat").exists():
                    assert agent.poll() is None and time.time() < deadline, "no agent"
                    time.sleep(0.05)
                time.sleep(1.5)
                with burning_locked(hot, prog) as p:
                    p.wait(timeout=30)
                time.sleep(1.5)  # the burst ends at the next sample and is logged
            finally:
                agent.terminate()
                agent.wait(timeout=10)
        bursts = [l.split() for l in (run / "cpu-bursts").read_text().splitlines()
                  if l.startswith("burst %d " % hot)]
        assert bursts, (run / "cpu-bursts").read_text()
        ev = bursts[-1]
        prof = next(f.split("=", 1)[1] for f in ev if f.startswith("profile="))
        assert prof != "-", ev
        burst_id = "%s-%s" % (ev[1], ev[2])
        # the page while the zombies are there, as an SRE would make it during the incident
        r = cz(cz_bin, run, *args, "report", "--html", str(page))
        assert r.returncode in (0, 1) and page.exists(), r.stderr
        assert "page: %s" % page in r.stdout
        f = cz(cz_bin, run, *args, "flame", burst_id, "--out", str(svg))
        assert f.returncode == 0, f.stderr
    return {"run": run, "page": page, "svg": svg, "id": burst_id, "hot": hot,
            "folded": parse_folded((run / prof).read_text()),
            "times": parse_times((run / prof.replace(".folded", ".times")).read_text()),
            "cfg": cfg}


def test_page_names_the_memcg_path(incident):
    doc = strict_xml(incident["page"])
    strict_xml(incident["svg"])
    div = next(d for d in doc.getElementsByTagName("div")
               if d.getAttribute("id") == "burst-" + incident["id"])
    spans = [s for s in div.getElementsByTagName("span") if s.getAttribute("class") == "widest"]
    widest = spans[0].firstChild.data
    assert MEMCG_PATH.search(widest), widest
    text = incident["page"].read_text()
    assert re.search(r"hot kernel function: (%s)" % MEMCG_PATH.pattern, text), text[:3000]
    # the profile is the core's: the RT reader's samples are most of it and three times any
    # other task's (on a loaded machine the rest of the core's tasks take a share: a cold make
    # test at load 13 left the reader 74% of 629 samples), and in its kernel part the memcg
    # path outweighs every other leaf function (the rest is the syscall's own entry, exit and
    # file lookup, which on a paravirtualized guest is a good share)
    folded = incident["folded"]
    total = sum(c for _, c in folded)
    comm = os.path.basename(sys.executable)[:15]  # the reader's task name
    by_task = {}
    for fr, c in folded:
        by_task[fr[0]] = by_task.get(fr[0], 0) + c
    reader = by_task.get(comm, 0)
    second = max((c for t, c in by_task.items() if t != comm), default=0)
    memcg = sum(c for fr, c in folded if any(MEMCG_PATH.search(f) for f in fr))
    others = {}
    for fr, c in folded:
        if fr[0] == comm and fr[1:] != ["[user]"] and not any(MEMCG_PATH.search(f)
                                                                   for f in fr):
            others[fr[-1]] = others.get(fr[-1], 0) + c
    top = max(others.items(), key=lambda kv: kv[1], default=("-", 0))
    assert total >= 100 and reader > total // 2 and reader >= 3 * second, (
        total, reader, sorted(by_task.items(), key=lambda kv: -kv[1])[:6])
    assert memcg > top[1] and memcg >= total // 10, (total, memcg, top)
    # each sample has its time, within the profile's span
    assert len(incident["times"]) == total
    assert all(0 <= t < 8000 for t, _ in incident["times"])
    # the verdict on top is report's own text
    assert "<section id=\"verdict\"><h2>Verdict</h2>\n<pre>cpuzombie report  node " \
           "replayed-node" in text
    assert "<g class=\"core\" id=\"core-%d\"" % incident["hot"] in text  # the heatmap


@needs_chromium
def test_chromium_draws_the_flame_graph(incident, tmp_path):
    sel = "document.getElementById('burst-%s')" % incident["id"]
    with Browser(1300, 900) as b:
        b.open(incident["page"].as_uri(), ready=sel + ".querySelector('svg.flame g.f')")
        box = b.eval("(() => { const r = %s.querySelector('svg.flame')"
                     ".getBoundingClientRect(); return [r.x + scrollX, r.y + scrollY, "
                     "r.width, r.height]; })()" % sel)
        # the hot frame's rect, where its label ends, and its name
        hot = b.eval("(() => { const g = %s.querySelector('svg.flame g.f.hot');"
                     " const r = g.querySelector('rect'), t = g.querySelector('text').getBBox();"
                     " return [+r.getAttribute('x'), +r.getAttribute('y'), "
                     "+r.getAttribute('width'), t.x + t.width, "
                     "g.querySelector('title').textContent.split('\\n')[0]]; })()" % sel)
        png = tmp_path / "flame.png"
        b.screenshot(str(png), *box)
        shots = os.environ.get("CZ_SCREENSHOT_DIR")
        if shots:  # the page of the replayed incident, for the docs: heatmap, burst, graph
            top = b.eval("document.getElementById('heatmap').getBoundingClientRect().y"
                         " + scrollY")
            b.screenshot(os.path.join(shots, "report-html-incident.png"), 0, top, 1300,
                         box[1] + box[3] + 40 - top)
        # an inline handler added now is refused by the page's policy
        pwned = b.eval("document.body.setAttribute('onclick', 'window.pwned = 1'); "
                       "document.body.click(); String(window.pwned)")
        time.sleep(0.2)
        log = b.log()
    assert pwned == "undefined"
    csp = [l for l in log if "Content Security Policy" in l]
    assert len(csp) == 1 and "inline event handler" in csp[0], log
    assert not [l for l in log if l.startswith("exception")], log
    w, h, rows = png_pixels(str(png))
    assert (w, h) == (int(box[2]), int(box[3])), (w, h, box)
    assert box[2] >= 1200 and box[3] >= 5 * 16, box

    def warm(p):
        return p[0] >= 200 and p[2] <= 60

    # the hot frame's row: warm across its width past its label, inside the purple outline
    y = int(hot[1] + 8)
    row = rows[y]
    x0, x1 = int(max(hot[0] + 3, hot[3] + 2)) + 1, int(hot[0] + hot[2]) - 3
    span = sum(1 for x in range(x0, x1) if warm(row[x]))
    assert x1 - x0 >= 20 and span >= (x1 - x0) * 0.9, (span, x0, x1, hot)
    # as wide as the hot function's share of the profile (its one path in the folded stacks).
    # How wide that is depends on the machine: on the PVM guest the reader's syscall entry and
    # exit and its user part take 65-80% of its core (measured 20-36% on the memcg path, less
    # under load), so the share asked for is only that it is drawn as counted, not most
    folded, name = incident["folded"], hot[4]
    assert MEMCG_PATH.search(name), hot
    paths = {}
    for fr, c in folded:
        if name in fr:
            key = tuple(fr[:fr.index(name) + 1])
            paths[key] = paths.get(key, 0) + c
    total = sum(c for _, c in folded)
    widths = [1200.0 * n / total for n in paths.values()]
    assert any(abs(hot[2] - w) <= 1.0 for w in widths), (hot, widths)
    assert hot[2] >= 1200 / 10, hot
    purple = sum(1 for r in rows for p in r if 80 <= p[0] <= 110 and p[1] <= 20 and
                 140 <= p[2] <= 180)
    assert purple >= hot[2], purple
    # the graph is not blank: most of its bottom row (the root) is drawn
    bottom = rows[h - 8]
    assert sum(1 for p in bottom[10:1210] if p != (248, 248, 248)) >= 1100


def test_jsdom_zoom_search_and_range(incident):
    folded, times = incident["folded"], incident["times"]
    total = sum(c for _, c in folded)
    term = "mem_cgroup"
    share = sum(c for fr, c in folded if any(term in f for f in fr))
    # the first 1.5 s of the burst: cells 0 .. 74 (50 rows of 20 ms a column)
    lo, hi = 0, 74
    in_range = sum(1 for t, _ in times if lo * 20 <= t < (hi + 1) * 20)
    out = jsdom(incident["page"], incident["id"], "memcg_numa_stat_show", term, lo, hi)
    assert out["root"]["samples"] == total and out["root"]["width"] == 1200
    assert MEMCG_PATH.search(" ".join(out["hot"])), out["hot"]
    assert {"kernel", "task"} <= set(out["kinds"]), out["kinds"]
    # a click: the frame fills the width, its parents dimmed across it; Reset zoom goes back
    assert out["zoomed"]["width"] == 1200, out["zoomed"]
    assert out["zoomedDim"] >= 3
    assert out["unzoomed"]["width"] < 1200
    # the search's share is the folded file's count of stacks with a matching frame
    assert out["matched"] == share, (out["matchedText"], share)
    assert out["highlighted"] >= 1
    assert "of %d samples" % total in out["matchedText"]
    # the strip: its cells, and a drag over the first 1.5 s shows exactly those samples
    assert out["strip"] and out["cells"] % 50 == 0
    assert out["rangeSamples"] == in_range == out["rangeRoot"]["samples"], out
    assert out["selected"] == hi - lo + 1
    assert out["wholeRoot"]["samples"] == total


@needs_chromium
def test_flame_svg_is_drawn(incident, tmp_path):
    text = incident["svg"].read_text()
    total = sum(c for _, c in incident["folded"])
    assert 'data-total="%d"' % total in text
    assert not re.search(r"\son[a-z]+=", text)  # no inline handler: listeners only
    m = re.search(r'<svg[^>]* width="(\d+)" height="(\d+)"', text)
    w, h = int(m.group(1)), int(m.group(2))
    with Browser(w, h) as b:
        b.open(incident["svg"].as_uri(), ready="document.querySelector('g.f')")
        png = tmp_path / "svg.png"
        b.screenshot(str(png), 0, 0, w, h)
        # the script zooms the clicked frame across the width
        width = b.eval("(() => { const g = document.querySelector('g.f.hot');"
                       " g.dispatchEvent(new MouseEvent('click', {bubbles: true}));"
                       " return +g.querySelector('rect').getAttribute('width'); })()")
    assert width == 1200
    _, _, rows = png_pixels(str(png))
    bottom = rows[h - 30 - 8]  # the root row, above the details line
    assert sum(1 for p in bottom[10:1210] if p != (248, 248, 248)) >= 1100


# ---- hostile names, on a run dir written by hand (no root needed) ----

# bytes as a task may name itself (the kernel keeps 15): one per burst
EVIL_COMMS = ["</script>&\xef\xbf\xbe", "<b>'\"\xe2\x80\xae"]
EVIL_FRAMES = ["</script><img src=x onerror=window.pwned=1>", "a&b\"c'd<e>"]


def escape_comm(comm):
    """The burst log's %XX escaping of a comm (cpu/history.h)."""
    return "".join(c if re.match(r"[A-Za-z0-9._:+-]", c) else "%%%02X" % ord(c) for c in comm)


def hostile_run(base):
    now = int(time.time() * 1000)
    s, e = now - 60000, now - 54000
    s0, e0 = now - 40000, now - 37000
    state, run, cfg = write_node(str(base), 2, now, [(1, s, e), (0, s0, e0)], [])
    name = "cpu-profile-1-%d" % s
    folded = [("kubelet;entry_SYSCALL_64;" + EVIL_FRAMES[0] + ";memcg_numa_stat_show", 30),
              ("</script>;" + EVIL_FRAMES[1], 10)]
    with open(os.path.join(run, name + ".folded"), "w") as f:
        f.write("".join("%s %d\n" % x for x in folded))
    with open(os.path.join(run, name + ".times"), "w") as f:
        f.write("cpuzombie-times 1\n" + "".join("%d %d\n" % (i * 100, 0 if i < 30 else 1)
                                                for i in range(40)))
    log = ("burst 1 %d %d 100.0 99.0 system irqs=eth0-Tx-Rx-1 tasks=4242/4242/%s/%d stack=- "
           "profile=%s.folded hot=memcg_numa_stat_show/75 why=-\n"
           % (s, e, escape_comm(EVIL_COMMS[0]), e - s, name))
    log += ("burst 0 %d %d 100.0 99.0 system irqs=- tasks=7/7/%s/%d stack=- profile=- hot=- "
            "why=no%%20samples\n" % (s0, e0, escape_comm(EVIL_COMMS[1]), e0 - s0))
    state_file(os.path.join(run, "cpu-bursts"), "cpu-bursts", log)
    return state, run, cfg, "1-%d" % s, folded


def test_hostile_names_stay_text(cz_bin, tmp_path):
    state, run, cfg, burst_id, folded = hostile_run(tmp_path)
    page, svg = tmp_path / "p.html", tmp_path / "f.svg"
    base = [cz_bin, "--config", cfg, "--state-dir", state, "--run-dir", run, "--proc-root",
            str(tmp_path), "--sys-root", str(tmp_path), "--node-name", "n1"]
    r = subprocess.run(base + ["report", "--html", str(page)], capture_output=True, timeout=60)
    assert r.returncode in (0, 1) and page.exists(), r.stderr
    r = subprocess.run(base + ["flame", burst_id, "--out", str(svg)], capture_output=True,
                       timeout=60)
    assert r.returncode == 0, r.stderr
    raw = page.read_bytes()
    # valid under a strict XML parse: no U+FFFE, no raw markup from a name
    strict_xml(page)
    strict_xml(svg)
    assert b"\xef\xbf\xbe" not in raw and b"\xe2\x80\xae" not in raw
    assert b"<b>" not in raw and b"<img" not in raw
    assert b"\\ufffe" in raw and b"\\u202e" in raw  # shown, visibly
    data = re.search(rb'<script type="application/json" id="cz-data">(.*?)</script>', raw,
                     re.S).group(1)
    assert b"<" not in data and b"&" not in data
    names = json.loads(data)["names"]
    assert EVIL_FRAMES[0] in names and "</script>" in names
    # jsdom: the names are text nodes; searching for "</script>" counts its stacks
    out = jsdom(page, burst_id, EVIL_FRAMES[0], "</script>", 0, 49)
    assert out["matched"] == 40  # both stacks: one has the frame, one the task named so
    assert out["zoomed"]["width"] == 1200
    if not CHROMIUM:
        return
    with Browser() as b:
        b.open(page.as_uri(), ready="document.querySelector('svg.flame g.f')")
        got = b.eval("JSON.stringify({b: document.querySelectorAll('b, img').length,"
                     " pwned: String(window.pwned), titles: Array.from(document"
                     ".querySelectorAll('svg.flame title')).map(t => t.textContent.split("
                     "'\\n')[0]), meta: Array.from(document.querySelectorAll('.burst .meta'))"
                     ".map(m => m.textContent).join(' | ')})")
        b.open(svg.as_uri(), ready="document.querySelector('g.f')")
        svg_titles = b.eval("JSON.stringify(Array.from(document.querySelectorAll('g.f title'))"
                            ".map(t => t.textContent.split('\\n')[0]))")
    got = json.loads(got)
    assert got["b"] == 0 and got["pwned"] == "undefined", got
    assert EVIL_FRAMES[0] in got["titles"] and EVIL_FRAMES[1] in got["titles"], got
    assert "</script>&\\ufffe" in got["meta"] and "<b>'\"\\u202e" in got["meta"], got["meta"]
    assert EVIL_FRAMES[0] in json.loads(svg_titles)


def test_flame_bad_ids(cz_bin, tmp_path):
    state, run, cfg, burst_id, _ = hostile_run(tmp_path)
    base = [cz_bin, "--config", cfg, "--state-dir", state, "--run-dir", run]
    for bad, why in (("x", "not a burst id"), ("1-", "not a burst id"), ("a-5", "not a burst id"),
                     ("1-99", "no burst 1-99")):
        r = subprocess.run(base + ["flame", bad], capture_output=True, text=True, timeout=30)
        assert r.returncode == 2 and why in r.stderr and r.stdout == "", (bad, r)
        assert len(r.stderr.strip().splitlines()) == 1, r.stderr
    r = subprocess.run(base + ["flame"], capture_output=True, text=True, timeout=30)
    assert r.returncode == 2 and "usage" in r.stderr
    # its profile gone: says so
    for f in os.listdir(run):
        if f.startswith("cpu-profile-"):
            os.unlink(os.path.join(run, f))
    r = subprocess.run(base + ["flame", burst_id], capture_output=True, text=True, timeout=30)
    assert r.returncode == 2 and "rolled off" in r.stderr, r.stderr
    # to stdout without --out, and --html with --json is a usage error
    r = subprocess.run(base + ["report", "--json", "--html", str(tmp_path / "x.html")],
                       capture_output=True, text=True, timeout=30)
    assert r.returncode == 2 and "usage" in r.stderr

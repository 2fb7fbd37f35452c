"""The SVG heatmap rendered by a real browser: Debian's headless Chromium loads the file
`report --svg` wrote for a synthetic node of 2 and of 192 cores (report_helpers.write_node: the
sampler's real file formats), dumps the DOM (count core rows and markers as the browser parsed
them) and takes a screenshot (look at the pixels: the burst outline's blue, the reset line's
green and the saturated cells' dark red are really drawn).

And the first thing a new user does: start a real `cpuzombie agent`, burn one core
for a few seconds (cpu_helpers: a SCHED_FIFO dd, one burn at a time on the machine), report
--svg well within the first minute, and look at the screenshot: the overview spans the sampled
time, so the burst's dark cells take a share of the width in proportion to its length (not a
speck at the right of a 15-minute ring), and the zoom panel below it draws the burst at the
sampler's resolution."""
import os
import re
import shutil
import subprocess
import tempfile
import time

import pytest

import cpu_helpers
from proc_helpers import stop
from report_helpers import png_pixels, write_node

CHROMIUM = shutil.which("chromium")
pytestmark = pytest.mark.skipif(not CHROMIUM, reason="needs Debian chromium (headless)")
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--no-first-run",
         "--hide-scrollbars"]


def chromium(url, *args):
    with tempfile.TemporaryDirectory(prefix="cz-chromium-") as prof:
        p = subprocess.run([CHROMIUM, *FLAGS, "--user-data-dir=" + prof, *args, url],
                           capture_output=True, text=True, timeout=120)
    return p


def make_svg(cz_bin, tmp_path, ncpu):
    now = int(time.time() * 1000)
    hot = ncpu - 1
    bursts = [(hot, now - 300000, now - 290000), (0, now - 120000, now - 114000)]
    resets = [now - 280000]
    state, run, cfg = write_node(str(tmp_path), ncpu, now, bursts, resets)
    svg = tmp_path / "heat.svg"
    p = subprocess.run([cz_bin, "--config", cfg, "--state-dir", state, "--run-dir", run,
                        "--proc-root", str(tmp_path), "--sys-root", str(tmp_path),
                        "report", "--svg", str(svg)], capture_output=True, text=True, timeout=60)
    assert p.returncode in (0, 1), p
    assert svg.exists(), p
    return svg, hot


@pytest.mark.parametrize("ncpu", [2, 192])
def test_chromium_renders_rows_and_markers(cz_bin, tmp_path, ncpu):
    svg, hot = make_svg(cz_bin, tmp_path, ncpu)
    dom = chromium(svg.as_uri(), "--dump-dom")
    assert dom.returncode == 0, dom.stderr[-2000:]
    html = dom.stdout
    assert len(re.findall(r'<g class="core" id="core-\d+"', html)) == ncpu, html[:500]
    bursts = re.findall(r'<g class="marker burst" id="burst-\d+" data-cpu="(\d+)"', html)
    assert sorted(bursts) == sorted([str(hot), "0"]), bursts
    assert len(re.findall(r'<g class="marker ena-reset"', html)) == 1
    assert "perf record -C %d -g -- sleep 20" % hot in html

    m = re.search(r'<svg[^>]* width="(\d+)" height="(\d+)"', svg.read_text())
    w, h = int(m.group(1)), int(m.group(2))
    png = tmp_path / "heat.png"
    shot = chromium(svg.as_uri(), "--screenshot=" + str(png), "--window-size=%d,%d" % (w, h))
    assert shot.returncode == 0 and png.exists(), shot.stderr[-2000:]
    pw, ph, rows = png_pixels(str(png))
    assert (pw, ph) == (w, h)
    colors = {}
    for row in rows:
        for px in row:
            colors[px] = colors.get(px, 0) + 1
    blue = sum(n for (r, g, b), n in colors.items() if b > 200 and r < 60 and 40 < g < 120)
    green = sum(n for (r, g, b), n in colors.items() if g > 150 and r < 60 and b < 60)
    hotred = sum(n for (r, g, b), n in colors.items() if r > 140 and g < 40 and b < 40)
    white = sum(n for (r, g, b), n in colors.items() if r > 250 and g > 250 and b > 250)
    assert blue > 20, sorted(colors.items(), key=lambda kv: -kv[1])[:10]
    assert green > 20, sorted(colors.items(), key=lambda kv: -kv[1])[:10]
    assert hotred > 10, sorted(colors.items(), key=lambda kv: -kv[1])[:10]
    assert white > 1000  # idle cells
    # the rows really stack: the plot is at least one pixel per core high
    assert h >= 56 + ncpu * 3 + 64


def test_svg_stays_small_for_192_idle_cores(cz_bin, tmp_path):
    svg, _ = make_svg(cz_bin, tmp_path, 192)
    # equal neighbouring cells are merged: an idle row is one rectangle
    assert svg.stat().st_size < 400 * 1024, svg.stat().st_size
    assert len(re.findall(r"<rect class=\"cell", svg.read_text())) < 192 * 8


def dark_runs(row, x0, x1):
    """Lengths of the runs of burst-level pixels (shades s8..s10, 80..100%) in row[x0:x1]."""
    runs, n = [], 0
    for r, g, b in row[x0:x1] + [(255, 255, 255)]:
        if r > 140 and g < 60 and b < 60:
            n += 1
        elif n:
            runs.append(n)
            n = 0
    return runs


def screenshot(svg, tmp_path):
    """(svg text, w, h, pixel rows) of Chromium's rendering of @svg at its own size."""
    text = svg.read_text()
    m = re.search(r'<svg[^>]* width="(\d+)" height="(\d+)"', text)
    w, h = int(m.group(1)), int(m.group(2))
    png = tmp_path / (svg.stem + ".png")
    shot = chromium(svg.as_uri(), "--screenshot=" + str(png), "--window-size=%d,%d" % (w, h))
    assert shot.returncode == 0 and png.exists(), shot.stderr[-2000:]
    pw, ph, rows = png_pixels(str(png))
    assert (pw, ph) == (w, h)
    return text, w, h, rows


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root: burns a core with SCHED_FIFO and "
                    "reads other tasks' /proc for the burst's top tasks")
@pytest.mark.skipif(os.cpu_count() < 2, reason="needs 2 CPUs: one to burn")
def test_fresh_agent_burst_is_big_and_zoomed(cz_bin, tmp_path):
    hot, seconds = os.cpu_count() - 1, 6
    cfg = tmp_path / "cz.yaml"
    # threshold 80%: on this shared box other tests' loopback traffic lands in softirq on the
    # burned core and takes it to 80-89% *system* for a sample every second or so (seen: runs
    # split so no 2 s burst at 90%); what is under test here is the picture of a burst
    cfg.write_text("cpu:\n  interval: 250ms\n  metric: system\n  threshold_pct: 80\n"
                   "  min_burst: 2s\n")
    base = [cz_bin, "--config", str(cfg), "--state-dir", str(tmp_path / "state"), "--run-dir",
            str(tmp_path / "run"), "--node-name", "fresh-node"]
    # hold the machine-wide burn lock for the agent's whole life: the minute is ours, and no
    # other checkout's burn shows up in this agent's picture
    with cpu_helpers.burn_lock():
        agent = subprocess.Popen(base + ["agent"], stdout=subprocess.DEVNULL,
                                 stderr=subprocess.DEVNULL)
        started = time.time()
        try:
            while not (tmp_path / "run" / "cpu-heartbeat").exists():
                assert agent.poll() is None and time.time() < started + 10, "no agent"
                time.sleep(0.05)
            time.sleep(5)  # idle samples before the burst
            for _ in range(2):  # a second burn only if the busy machine split the first
                with cpu_helpers.burning_locked(hot):
                    time.sleep(seconds)
                time.sleep(4)  # the burst ends at the next sample and is logged; idle after
                log = tmp_path / "run" / "cpu-bursts"
                if log.exists() and re.search(r"^burst %d " % hot, log.read_text(), re.M):
                    break
            svg = tmp_path / "fresh.svg"
            p = subprocess.run(base + ["report", "--svg", str(svg)], capture_output=True,
                               text=True, timeout=60)
            sampled = time.time() - started
        finally:
            stop(agent, 10, strict=True)
    assert p.returncode in (0, 1) and svg.exists(), p
    assert sampled < 60, sampled  # the case is a minute-old agent, not a full ring
    text, w, h, rows = screenshot(svg, tmp_path)

    # the burst was caught on the burned core and drawn, with one zoom panel for it
    marks = re.findall(r'<g class="marker burst" id="burst-(\d+)" data-cpu="(\d+)"', text)
    assert str(hot) in [c for _, c in marks], (marks, p.stdout[-3000:])
    zooms = re.findall(r'<g class="zoom" id="zoom-\d+" data-cpu="(\d+)" data-burst="(\d+)" '
                       r'transform="translate\(0 (\d+)\)"><rect class="section" x="0" y="0" '
                       r'width="\d+" height="(\d+)"', text)
    assert str(hot) in [z[0] for z in zooms], zooms
    over_h = int(re.search(r'<g id="overview"><rect class="section" x="0" y="0" width="\d+" '
                           r'height="(\d+)"', text).group(1))
    row = re.search(r'<g class="core" id="core-%d" data-cpu="%d"><rect class="cell \S+" '
                    r'x="[\d.]+" y="([\d.]+)" width="[\d.]+" height="([\d.]+)"' % (hot, hot),
                    text)
    row_mid = int(float(row.group(1)) + float(row.group(2)) / 2)
    left, plot_w = 80, 1200

    # PIXELS, overview: the hot core's row has saturated cells over a share of the width in
    # proportion to the burst (6 s of ~20 s sampled: ~30%; on the old 15-minute axis it was
    # under 1%). Counted, not as one run: the busy shared machine can dip a sample below 90%.
    dark = sum(dark_runs(rows[row_mid], left, left + plot_w))
    assert dark >= plot_w * 0.08, (dark, sampled)
    assert dark >= plot_w * (seconds - 1) / (sampled + 2) * 0.5, (dark, sampled)
    assert row_mid < over_h

    # PIXELS, zoom panel: below the overview, the burst's outline (blue) on the burned core's
    # row spans a large share of the panel (the burst at full resolution, a few seconds either
    # side), and inside it the row is drawn saturated
    z = next(z for z in zooms if z[0] == str(hot))
    z_top, z_h = int(z[2]), int(z[3])
    assert z_top >= over_h and z_top + z_h <= h
    zrow = re.search(r'<g class="zoom-core" data-cpu="%d"><rect class="zcell \S+" x="[\d.]+" '
                     r'y="([\d.]+)" width="[\d.]+" height="([\d.]+)"' % hot,
                     text[text.index('id="zoom-%s"' % zooms.index(z)):])
    ztop = z_top + int(float(zrow.group(1)))
    zmid = ztop + int(float(zrow.group(2)) / 2)
    blue_x = [x for y in range(ztop - 3, ztop + 2) for x, (r, g, b) in enumerate(rows[y])
              if left <= x < left + plot_w and b > 200 and r < 60 and 40 < g < 120]
    assert blue_x, "no burst outline in the zoom panel"
    x1, x2 = min(blue_x), max(blue_x)
    assert x2 - x1 >= plot_w * 0.15, (x1, x2)
    inside = sum(dark_runs(rows[zmid], x1 + 2, x2 - 1))
    assert inside >= (x2 - x1) * 0.6, (inside, x1, x2)
    # the panel names the burst's length, peak and top task (the burner, dd)
    assert re.search(r'cpu%d burst \d\d:\d\d:\d\d\.\.\d\d:\d\d:\d\d UTC: [\d.]+s, peak \d+%%'
                     % hot, text), text[-3000:]
    assert re.search(r"top tasks: dd\[\d+\] [\d.]+s", text), text[-3000:]

"""The SVG heatmap rendered by a real browser: Debian's headless Chromium loads the file
`report --svg` wrote for a synthetic node of 2 and of 192 cores (report_helpers.write_node: the
sampler's real file formats), dumps the DOM (count core rows and markers as the browser parsed
them) and takes a screenshot (look at the pixels: the burst outline's blue, the reset line's
green and the saturated cells' dark red are really drawn)."""
import os
import re
import shutil
import subprocess
import tempfile
import time

import pytest

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

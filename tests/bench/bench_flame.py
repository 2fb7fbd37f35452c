"""The cost of looking into a burst: `cpuzombie flame` and `report --html` on the largest profile
the agent keeps, and the page's size for a day of bursts.

The profile: a 30 s burst at cpu.profile_max and the default 99 Hz (2970 samples, each with its
time), its folded stacks at the cpu.profile_bytes bound (64 KiB: about as many distinct stacks as
that holds), frame names taken from this host's /proc/kallsyms so they are as long as real ones.
A day: the burst log full (256 bursts, one every 5.6 min) and the newest 32 with such a profile
(the run dir keeps no more), the page of `report --html --since 24h`: once with frames drawn
from 2000 kernel functions (a node's profiles share their kernel paths), once with every frame
a name of its own (the worst case, where the page's bound on profile data, HTML_DATA_MAX,
leaves the oldest out).

Measured: CPU per exec (kernel accounting, median of batch means) of `flame ID --out`, of
`report --html` and of the same `report` without the page (the difference is the page), the
do-nothing floor beside them; in Chromium (DevTools protocol, tests/e2e/cdp_helpers.py), the
page script's time to draw the flame graph, to redraw it for a range of the strip and to search
(performance.now(), median of 20); bytes of the page, its data block and the SVG."""
import os
import random
import re
import statistics
import subprocess
import sys
import tempfile
import time
import zlib

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "e2e"))
from benchlib import measure, ms, noop_binary, table  # noqa: E402

HZ, SECONDS, PROFILE_BYTES = 99, 30, 65536


def state_file(path, name, payload):
    data = payload.encode()
    with open(path, "wb") as f:
        f.write(b"cpuzombie-state 1 %s\n" % name.encode() + data +
                b"end %08x\n" % (zlib.crc32(data) & 0xffffffff))


def kernel_names():
    names = []
    try:
        for line in open("/proc/kallsyms"):
            f = line.split()
            if len(f) >= 3 and f[1] in "tT" and len(f) == 3 and not f[2].startswith("__pfx"):
                names.append(f[2])
    except OSError:
        pass
    return names or ["kernel_function_%d" % i for i in range(5000)]


def profile(rng, names):
    """(folded text, times text) of a 30 s burst at the byte bound."""
    samples = HZ * SECONDS
    comms = ["kubelet", "python3", "containerd", "ena-poll", "kworker/1:2", "dd", "cadvisor"]
    # a tree: each stack shares a prefix with an earlier one, then goes its own way
    stacks, lines, size = [], [], 0
    while True:
        if stacks and rng.random() < 0.85:
            base = rng.choice(stacks)
            cut = rng.randint(1, len(base))
            st = base[:cut] + [rng.choice(names) for _ in range(rng.randint(1, 12))]
        else:
            st = [rng.choice(comms), "entry_SYSCALL_64_after_hwframe", "do_syscall_64"] + \
                 [rng.choice(names) for _ in range(rng.randint(4, 30))]
        line = ";".join(st)
        if size + len(line) + 8 > PROFILE_BYTES - 48:
            break
        stacks.append(st)
        lines.append(line)
        size += len(line) + 8
    # counts: a heavy head (the burst's path), a long tail of ones
    counts = [1] * len(lines)
    left = samples - len(lines)
    for i in range(len(lines)):
        take = left // 3 if i < 3 else (rng.randint(0, 3) if left > 0 else 0)
        take = min(take, left)
        counts[i] += take
        left -= take
    counts[0] += left
    order = sorted(range(len(lines)), key=lambda i: -counts[i])
    folded = "".join("%s %d\n" % (lines[i], counts[i]) for i in order)
    per = [(k, counts[i]) for k, i in enumerate(order)]
    ts = sorted((rng.randint(0, SECONDS * 1000 - 1), k) for k, c in per for _ in range(c))
    times = "cpuzombie-times 1\n" + "".join("%d %d\n" % t for t in ts)
    return folded, times, len(lines), sum(counts)


def ring(path, ncpu, now, minutes, bursts):
    import struct
    slots = minutes * 60
    ss = (20 + ncpu + 7) & ~7
    buf = bytearray(64 + slots * ss)
    buf[:8] = b"CZHIST1\n"
    struct.pack_into("<5I", buf, 8, 1, ncpu, slots, 1000, ss)
    for seq in range(1, slots + 1):
        t = now - (slots - seq + 1) * 1000
        pct = [3] * ncpu
        for c, s, e in bursts:
            if s <= t <= e:
                pct[c] = 100
        off = 64 + (seq % slots) * ss
        hdr = struct.pack("<QQ", seq, t)
        body = bytes(pct)
        buf[off:off + 20 + ncpu] = hdr + struct.pack("<I", zlib.crc32(hdr) ^ zlib.crc32(body)) + body
    with open(path, "wb") as f:
        f.write(buf)


def tiny(rng, names):
    """A profile of one sample: what every render costs besides the profile's size."""
    return "dd;read_iter_zero 1\n", "cpuzombie-times 1\n0 0\n", 1, 1


def run_dir(base, nbursts, nprofiles, rng, names, make=profile):
    run = os.path.join(base, "run")
    os.makedirs(run)
    os.makedirs(os.path.join(base, "state"))
    now = int(time.time() * 1000)
    day = 86400 * 1000
    log, shapes = "", []
    for i in range(nbursts):
        s = now - day + (i + 1) * day // (nbursts + 1)
        e = s + SECONDS * 1000
        cpu = i % 2
        prof, hot = "-", "-"
        if i >= nbursts - nprofiles:
            folded, times, nstacks, total = make(rng, names)
            name = "cpu-profile-%d-%d" % (cpu, s)
            with open(os.path.join(run, name + ".folded"), "w") as f:
                f.write(folded)
            with open(os.path.join(run, name + ".times"), "w") as f:
                f.write(times)
            prof, hot = name + ".folded", "x/50"
            shapes.append((nstacks, total, len(folded), len(times)))
        log += ("burst %d %d %d 100.0 99.0 system irqs=eth0-Tx-Rx-%d tasks=4242/4242/kubelet/%d "
                "stack=- profile=%s hot=%s why=-\n" % (cpu, s, e, cpu, e - s, prof, hot))
    state_file(os.path.join(run, "cpu-bursts"), "cpu-bursts", log)
    ring(os.path.join(run, "cpu-history"), 2, now, 15, [])
    cfg = os.path.join(base, "cz.yaml")
    with open(cfg, "w") as f:
        f.write("cpu:\n  interval: 1s\n  inline_window: 0\nmemcg:\n  systemd_hints: false\n")
    last = re.findall(r"^burst (\d+) (\d+) ", log, re.M)[-1]
    return run, cfg, "%s-%s" % last, shapes


def browser_times(page):
    try:
        from cdp_helpers import CHROMIUM, Browser
    except ImportError:
        return None
    if not CHROMIUM:
        return None
    js = """(() => {
      const d = document.querySelector('div.burst[data-i]').burst, t = [], r = [], s = [];
      for (let i = 0; i < 20; i++) {
        let a = performance.now(); d.view = 0; d.draw(); t.push(performance.now() - a);
        a = performance.now(); d.select(0, 499); r.push(performance.now() - a);
        a = performance.now(); d.term = 'mem'; d.draw(); d.term = ''; s.push(performance.now() - a);
        d.select(-1, -1);
      }
      const med = v => v.sort((x, y) => x - y)[10];
      return [med(t), med(r), med(s), document.querySelectorAll('svg.flame g.f').length];
    })()"""
    with Browser() as b:
        b.open("file://" + page, ready="document.querySelector('svg.flame g.f')")
        return b.eval(js)


def main():
    binary = sys.argv[1]
    check = sys.argv[2] if len(sys.argv) > 2 and os.path.exists(sys.argv[2]) else binary
    rng = random.Random(39)
    names = kernel_names()
    vocab = rng.sample(names, min(2000, len(names)))
    tmp = tempfile.mkdtemp(prefix="cz-bench-flame-")
    floor = noop_binary(os.path.join(tmp, "noop"))
    runs = {}
    for name, make in (("one", profile), ("tiny", tiny)):
        d = os.path.join(tmp, name)
        os.makedirs(d)
        run, cfg, bid, shapes = run_dir(d, 1, 1, rng, vocab, make)
        base = [check, "--config", cfg, "--run-dir", run, "--state-dir",
                os.path.join(d, "state")]
        svg, page = os.path.join(d, "f.svg"), os.path.join(d, "p.html")
        runs[name] = {
            "shape": shapes[0], "svg": svg, "page": page,
            "flame": measure(base + ["flame", bid, "--out", svg], n=20, rss=False),
            "text": measure(base + ["report", "--since", "24h"], n=10, rss=False),
            "html": measure(base + ["report", "--since", "24h", "--html", page], n=10,
                            rss=False)}
    r_floor = measure([floor], n=20, rss=False)
    big, small = runs["one"], runs["tiny"]
    nstacks, total, fbytes, tbytes = big["shape"]
    svg, page = big["svg"], big["page"]
    print("The largest profile kept: a 30 s burst at %d Hz, %d samples with their times, %d "
          "distinct stacks in %d bytes of folded text (+ %d of times); against a profile of "
          "one sample, so what remains is the cost of the profile's size. The static check "
          "binary (%s)." % (HZ, total, nstacks, fbytes, tbytes, os.path.basename(check)))
    print()
    table(["command", "30 s profile: CPU ms", "1 sample: CPU ms", "the profile's cost"],
          [["flame ID --out FILE (standalone SVG)", ms(big["flame"]), ms(small["flame"]),
            "%.3f ms" % (big["flame"]["median"] - small["flame"]["median"])],
           ["report --html FILE, minus report alone",
            "%.3f" % (big["html"]["median"] - big["text"]["median"]),
            "%.3f" % (small["html"]["median"] - small["text"]["median"]),
            "%.3f ms" % ((big["html"]["median"] - big["text"]["median"]) -
                         (small["html"]["median"] - small["text"]["median"]))],
           ["report alone (for scale)", ms(big["text"]), ms(small["text"]), "-"],
           ["do-nothing binary (floor)", ms(r_floor), "-", "-"]])
    print()
    bt = browser_times(page)
    if bt:
        table(["in Chromium (the page's script)", "ms, median of 20"],
              [["draw the flame graph (%d frames drawn)" % bt[3], "%.1f" % bt[0]],
               ["redraw for a 10 s range of the strip", "%.1f" % bt[1]],
               ["search (highlight and share)", "%.1f" % bt[2]]])
        print()
    rows = [["one burst (above)", os.path.getsize(page), "1 of 1", "-", fbytes + tbytes],
            ["flame SVG of that burst", os.path.getsize(svg), "-", "-", fbytes]]
    for label, vocab in (("a day, 2000 kernel functions", rng.sample(names, min(2000, len(names)))),
                         ("a day, every frame its own name", names)):
        dayd = os.path.join(tmp, "day-%d" % len(vocab))
        os.makedirs(dayd)
        run, cfg, _, shapes = run_dir(dayd, 256, 32, rng, vocab)
        dpage = os.path.join(dayd, "p.html")
        subprocess.run([check, "--config", cfg, "--run-dir", run, "--state-dir",
                        os.path.join(dayd, "state"), "report", "--since", "24h", "--html",
                        dpage], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=120)
        text = open(dpage, "rb").read()
        data = re.search(rb'<script type="application/json" id="cz-data">.*?</script>', text,
                         re.S)
        drawn = len(re.findall(rb'<div class="burst" id="burst-[0-9-]+" data-i=', text))
        rows.append(["%s: 256 bursts, 32 profiles" % label, len(text),
                     "%d of 32 (%d bytes)" % (drawn, len(data.group(0))),
                     len(re.search(rb'<section id="heatmap">.*?</section>', text, re.S).group(0)),
                     sum(f + t for _, _, f, t in shapes)])
    table(["page", "bytes", "flame graphs in it (data block)", "heatmap", "profiles on disk"],
          rows)
    subprocess.run(["rm", "-rf", tmp])


if __name__ == "__main__":
    main()

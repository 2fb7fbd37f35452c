"""Helpers of the report/systemd/metrics end-to-end tests.

UserManager: a real `systemd --user` manager started in a private mount namespace (`unshare -m`)
with a tmpfs over /run/systemd holding an empty `system` directory (the manager refuses to start
without it; nothing outside the namespace changes), its own XDG_RUNTIME_DIR and XDG_CONFIG_HOME,
and one deliberately crash-looping unit (Restart=always, StartLimitIntervalSec=0) pulled in by
default.target. Its private socket ($XDG_RUNTIME_DIR/systemd/private) is what cpuzombie's
systemd.bus is pointed at. Stopped by PID (SIGTERM, then SIGKILL), directories removed.
"""
import os
import shutil
import subprocess
import time

from proc_helpers import stop

SYSTEMD = next((p for p in ("/lib/systemd/systemd", "/usr/lib/systemd/systemd")
                if os.access(p, os.X_OK)), None)

START = r'''set -e
mount -t tmpfs -o mode=0755 cpuzombie-test /run/systemd
mkdir /run/systemd/system
exec env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin XDG_RUNTIME_DIR="$1" XDG_CONFIG_HOME="$2" \
    HOME="$3" "$4" --user --log-target=console --log-level=warning
'''


class UserManager:
    def __init__(self, workdir, unit="cpuzombie-crashloop-%d.service" % os.getpid()):
        self.dir = os.path.join(str(workdir), "sdmgr")
        self.rt = os.path.join(self.dir, "rt")
        self.cfg = os.path.join(self.dir, "cfg")
        self.unit = unit
        self.proc = None

    @property
    def address(self):
        return "unix:path=" + os.path.join(self.rt, "systemd", "private")

    def __enter__(self):
        units = os.path.join(self.cfg, "systemd", "user")
        os.makedirs(os.path.join(units, "default.target.wants"))
        os.makedirs(self.rt, mode=0o700)
        with open(os.path.join(units, self.unit), "w") as f:
            f.write("[Unit]\nDescription=cpuzombie test: crash loop\nStartLimitIntervalSec=0\n"
                    "[Service]\nExecStart=/bin/false\nRestart=always\nRestartSec=100ms\n")
        os.symlink("../" + self.unit, os.path.join(units, "default.target.wants", self.unit))
        self.log = open(os.path.join(self.dir, "manager.log"), "w")
        self.proc = subprocess.Popen(["unshare", "-m", "--propagation", "private", "sh", "-c",
                                      START, "sh", self.rt, self.cfg, self.dir, SYSTEMD],
                                     stdout=self.log, stderr=subprocess.STDOUT)
        sock = os.path.join(self.rt, "systemd", "private")
        deadline = time.time() + 20
        while not os.path.exists(sock):
            if self.proc.poll() is not None or time.time() > deadline:
                self.__exit__()
                raise RuntimeError("systemd --user did not start: " +
                                   open(os.path.join(self.dir, "manager.log")).read())
            time.sleep(0.05)
        return self

    def nrestarts(self):
        p = subprocess.run(["systemctl", "--user", "show", "-p", "NRestarts", "--value",
                            self.unit], env=dict(os.environ, XDG_RUNTIME_DIR=self.rt),
                           capture_output=True, text=True, timeout=10)
        return int(p.stdout.strip() or 0)

    def wait_restarts(self, n, timeout=20):
        deadline = time.time() + timeout
        while self.nrestarts() < n:
            assert time.time() < deadline, "unit did not restart %d times" % n
            time.sleep(0.1)

    def __exit__(self, *exc):
        if self.proc:
            # unshare exec'd sh exec'd the manager: this PID is systemd --user itself
            stop(self.proc, 10)
        if getattr(self, "log", None):
            self.log.close()
        shutil.rmtree(self.dir, ignore_errors=True)
        return False


def can_run_manager():
    return os.geteuid() == 0 and SYSTEMD and shutil.which("unshare") and shutil.which("systemctl")


# ---- a synthetic node: the sampler's run dir and the ENA state, in the formats of
# plugin/cpu/history.h, plugin/base/state.h and plugin/ena/ena.c, for any number of cores ----

import struct  # noqa: E402
import zlib  # noqa: E402


def state_file(path, name, payload):
    data = payload.encode()
    with open(path, "wb") as f:
        f.write(b"cpuzombie-state 1 %s\n" % name.encode() + data +
                b"end %08x\n" % (zlib.crc32(data) & 0xffffffff))


def write_ring(path, ncpu, samples, interval_ms=1000, slots=900):
    """samples: [(t_ms, [pct per cpu])], oldest first."""
    ss = (20 + ncpu + 7) & ~7
    buf = bytearray(64 + slots * ss)
    buf[:8] = b"CZHIST1\n"
    struct.pack_into("<5I", buf, 8, 1, ncpu, slots, interval_ms, ss)
    for seq, (t, pct) in enumerate(samples, start=1):
        off = 64 + (seq % slots) * ss
        hdr = struct.pack("<QQ", seq, t)
        body = bytes(pct)
        crc = zlib.crc32(hdr) ^ zlib.crc32(body)
        buf[off:off + 20 + ncpu] = hdr + struct.pack("<I", crc) + body
    with open(path, "wb") as f:
        f.write(buf)


def write_node(base, ncpu, now_ms, bursts, resets, minutes=15):
    """A run dir with @minutes of 1 s samples (idle 3%, 100% on each burst's core while it
    lasts), the bursts' log, and an ENA state with one reset event per time in @resets.
    Returns (state_dir, run_dir, config_path)."""
    run, state = os.path.join(base, "run"), os.path.join(base, "state")
    os.makedirs(run)
    os.makedirs(state)
    samples = []
    for i in range(minutes * 60):
        t = now_ms - (minutes * 60 - i) * 1000
        pct = [3] * ncpu
        for cpu, s, e in bursts:
            if s <= t <= e:
                pct[cpu] = 100
        samples.append((t, pct))
    write_ring(os.path.join(run, "cpu-history"), ncpu, samples)
    log = "".join("burst %d %d %d 100.0 99.0 system irqs=eth0-Tx-Rx-%d tasks=4242/4242/kubelet/%d "
                  "stack=mem_cgroup_nr_lru_pages<memcg_numa_stat_show\n" % (c, s, e, c, e - s)
                  for c, s, e in bursts)
    state_file(os.path.join(run, "cpu-bursts"), "cpu-bursts", log)
    ena = "read %d\niface pci:0000:00:05.0 %d eth0 ena 0000:00:05.0\n" % (now_ms, now_ms)
    for t in resets:
        ena += "event %d 1 poll starvation q1 (cpu%d burst 6.0s)\n" % (t, bursts[0][0])
    ena += "stat suspected_poll_starvation %d\nstat interface_up 1\n" % len(resets)
    state_file(os.path.join(state, "ena"), "ena", ena)
    cfg = os.path.join(base, "cz.yaml")
    with open(cfg, "w") as f:
        f.write("cpu:\n  interval: 1s\n  inline_window: 0\n  lookback: 15m\n"
                "ena:\n  window: 1h\nmemcg:\n  systemd_hints: false\n")
    return state, run, cfg


def png_pixels(path):
    """Decode an 8-bit RGB/RGBA non-interlaced PNG (what Chromium writes): (w, h, rows of
    (r, g, b) tuples)."""
    data = open(path, "rb").read()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat, w = 8, b"", None
    while pos < len(data):
        n, typ = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        if typ == b"IHDR":
            w, h, depth, color, _c, _f, interlace = struct.unpack(">IIBBBBB", body)
            assert depth == 8 and color in (2, 6) and interlace == 0, (depth, color)
            bpp = 3 if color == 2 else 4
        elif typ == b"IDAT":
            idat += body
        pos += 12 + n
    raw = zlib.decompress(idat)
    stride = w * bpp
    rows, prev = [], bytearray(stride)
    for y in range(h):
        f = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b = prev[i]
            c = prev[i - bpp] if i >= bpp else 0
            if f == 1:
                line[i] = (line[i] + a) & 255
            elif f == 2:
                line[i] = (line[i] + b) & 255
            elif f == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append([tuple(line[x * bpp:x * bpp + 3]) for x in range(w)])
        prev = line
    return w, h, rows

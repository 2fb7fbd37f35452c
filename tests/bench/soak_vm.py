#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""make soak-vm: the kernel-log flood, in a VM (tests/tools/vm/census-v2-vm.sh with the guest
/init tests/tools/vm/flood-init.sh), so the shared host's log stays clean.

In the guest the agent follows the real /dev/kmsg (agent.kmsg /dev/kmsg) with the chart's
features on (sampler, checks every 30 s, metrics textfile, census). A kernel module of this test
(tests/tools/vm/czflood.c, built here against the guest kernel's headers: linux-headers of the
Debian kernel the harness boots, installed with apt-get when missing) printk()s FLOOD_RATE lines
a second (default 1000) for FLOOD_SECONDS (300): facility-0 records, as a flooding driver's,
which user space cannot write to /dev/kmsg; among them an ENA reset every FLOOD_ENA_EVERY
seconds (20) in the driver's real format (tests/fixtures/klog), each numbered by its
"lost tx completions" count. Measured: the agent's CPU (utime+stime from the guest's
/proc/PID/stat) idle, during the flood and after; the records it counted lost (sequence gaps)
and its read overruns (EPIPE); which resets it found and whether each one missing falls where
it counted records lost; `check ena`; VmRSS over time. Exit 1 when a reset is missing without
a loss counted around its time, `check ena` disagrees with what was found, or the agent exited;
77 (skipped, the reason printed) when the VM cannot run here.
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
VM = os.path.join(ROOT, "tests", "tools", "vm")
CZ = os.path.abspath(sys.argv[1]) if len(sys.argv) > 1 else os.path.join(ROOT, "build",
                                                                         "cpuzombie")
RATE = int(os.environ.get("FLOOD_RATE", "1000"))
SECONDS = int(os.environ.get("FLOOD_SECONDS", "300"))
ENA_EVERY = int(os.environ.get("FLOOD_ENA_EVERY", "20"))
IDLE = int(os.environ.get("FLOOD_IDLE", "30"))
SAMPLE = int(os.environ.get("FLOOD_SAMPLE", "5"))
OUT = os.environ.get("FLOOD_OUT") or ""


def skip(why):
    print("SKIP: " + why)
    sys.exit(77)


def guest_kernel():
    """The kernel the harness boots: linux-image-amd64's dependency (census-v2-vm.sh)."""
    r = subprocess.run(["apt-cache", "depends", "linux-image-amd64"], capture_output=True,
                       text=True)
    for line in r.stdout.splitlines():
        f = line.split()
        if len(f) == 2 and f[0] == "Depends:" and re.match(r"linux-image-\d", f[1]):
            return f[1][len("linux-image-"):]
    return None


def build_module(ver, d):
    hdr = "/usr/src/linux-headers-" + ver
    if not os.path.isdir(hdr):
        print("installing linux-headers-%s (to build czflood.ko for the guest)" % ver,
              file=sys.stderr)
        r = subprocess.run(["apt-get", "install", "-y", "-q", "--no-install-recommends",
                            "linux-headers-" + ver], capture_output=True, text=True,
                           env=dict(os.environ, DEBIAN_FRONTEND="noninteractive"))
        if r.returncode != 0 or not os.path.isdir(hdr):
            skip("no kernel headers for the guest kernel %s (apt-get install linux-headers-%s:"
                 " %s)" % (ver, ver, r.stderr.strip()[-200:]))
    shutil.copy(os.path.join(VM, "czflood.c"), d)
    with open(os.path.join(d, "Kbuild"), "w") as f:
        f.write("obj-m := czflood.o\n")
    r = subprocess.run(["make", "-s", "-C", hdr, "M=" + d, "modules"], capture_output=True,
                       text=True)
    ko = os.path.join(d, "czflood.ko")
    if r.returncode != 0 or not os.path.exists(ko):
        print(r.stdout + r.stderr, file=sys.stderr)
        sys.exit(2)
    subprocess.run(["strip", "--strip-debug", ko], check=True)
    return ko


def main():
    if os.geteuid() != 0:
        skip("needs root (qemu with /dev/kvm, the harness's apt-get download)")
    ver = guest_kernel()
    if not ver:
        skip("apt-cache names no kernel for linux-image-amd64")
    tmp = tempfile.mkdtemp(prefix="cz-flood-", dir="/var/tmp")
    try:
        ko = build_module(ver, tmp)
        out = os.path.join(tmp, "vm")
        env = dict(os.environ, CZVM_INIT="flood-init.sh", CZVM_FILES=ko + ":/lib/czflood.ko",
                   CZVM_RATE=str(RATE), CZVM_SECONDS=str(SECONDS),
                   CZVM_ENA_EVERY=str(ENA_EVERY), CZVM_IDLE=str(IDLE),
                   CZVM_SAMPLE=str(SAMPLE),
                   CZ_VM_TIMEOUT_KVM=str(SECONDS + 3 * IDLE + 240),
                   CZ_VM_TIMEOUT_TCG=str(3 * SECONDS + 3 * IDLE + 900))
        p = subprocess.run(["bash", os.path.join(VM, "census-v2-vm.sh"), CZ, out], env=env,
                           capture_output=True, text=True, timeout=4 * SECONDS + 3600)
        if p.returncode == 77:
            skip(p.stdout.strip().splitlines()[-1].removeprefix("SKIP: "))
        if p.returncode != 0:
            print(p.stdout + p.stderr, file=sys.stderr)
            return 2
        print(p.stderr.strip(), file=sys.stderr)   # why not KVM, when it fell back to TCG
        console = open(os.path.join(out, "console.log"), errors="replace").read()
        accel = open(os.path.join(out, "accel")).read().strip()
        if OUT:
            os.makedirs(OUT, exist_ok=True)
            shutil.copy(os.path.join(out, "console.log"), os.path.join(OUT, "console.log"))
        return judge(console, accel, ver)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def judge(console, accel, ver):
    lines = {}
    for ln in console.splitlines():
        ln = ln.rstrip("\r")
        if ln.startswith("CZVM "):
            tag, _, text = ln[5:].partition(" ")
            lines.setdefault(tag, []).append(text)

    def one(tag):
        v = lines.get(tag) or ["?"]
        return v[0]

    if "end" not in lines or "fail" in lines:
        print("the guest did not finish: %s\n%s" % (lines.get("fail"), console[-3000:]),
              file=sys.stderr)
        return 2
    tick = int(one("ticks"))
    t_start, t_end = int(one("flood-start")), int(one("flood-end"))
    samples = []
    for s in lines.get("sample", []):
        f = s.split()
        if "x" in f:
            continue
        samples.append({"phase": f[0], "t": int(f[1]), "cpu": (int(f[2]) + int(f[3])) / tick,
                        "rss": int(f[4]), "next_seq": int(f[5]), "lost": int(f[6]),
                        "overruns": int(f[7])})
    mod = one("module").split()
    noise, ena_in = int(mod[1]), int(mod[3])
    kev = lines.get("kevents", [])
    found = sorted({int(m.group(1)) - 129 for l in kev
                    for m in [re.search(r"lost tx completions is above the threshold \((\d+) >",
                                        l)] if m})
    counts = {l.split()[1]: int(l.split()[2]) for l in kev if l.startswith("count ")}

    def at(t):
        """The last sample at or before uptime @t (ms)."""
        best = samples[0]
        for s in samples:
            if s["t"] <= t:
                best = s
        return best

    def after(t):
        for s in samples:
            if s["t"] >= t:
                return s
        return samples[-1]

    def rate(phase):
        ss = [s for s in samples if s["phase"] == phase]
        if phase == "flood":
            ss = [at(t_start)] + ss
        if len(ss) < 2 or ss[-1]["t"] == ss[0]["t"]:
            return float("nan")
        return (ss[-1]["cpu"] - ss[0]["cpu"]) / ((ss[-1]["t"] - ss[0]["t"]) / 1000) * 1000

    ok = True
    print("## Kernel-log flood in a VM: %d lines/s for %d s, an ENA reset every %d s" %
          (RATE, SECONDS, ENA_EVERY))
    print()
    print("guest: Debian kernel %s, 1 vCPU, 1 GiB, %s; the agent follows the guest's "
          "/dev/kmsg; czflood.ko printk()s the flood (facility 0)" % (ver, accel))
    print()
    print("| phase | agent CPU (millicores) | VmRSS first-last (KiB) |")
    print("|---|---:|---:|")
    for ph in ("idle", "flood", "after"):
        ss = [s for s in samples if s["phase"] == ph]
        if ss:
            print("| %s | %.1f | %d-%d |" % (ph, rate(ph), ss[0]["rss"], ss[-1]["rss"]))
    s0, s1 = at(t_start), samples[-1]
    written = noise + 3 * ena_in
    read_span = s1["next_seq"] - s0["next_seq"]
    lost = s1["lost"] - s0["lost"]
    over = s1["overruns"] - s0["overruns"]
    print()
    print("records the module wrote: %d (%d flood + %d ENA reset lines, %d resets); the "
          "follower's sequence span over the flood %d" % (written, noise, 3 * ena_in, ena_in,
                                                          read_span))
    print("lost (sequence gaps) %d = %.2f%% of the span; read overruns (EPIPE) %d" % (
        lost, 100.0 * lost / max(read_span, 1), over))
    rss = [s["rss"] for s in samples]
    print("VmRSS min %d, max %d KiB over %d samples" % (min(rss), max(rss), len(rss)))
    print()
    print("| reset | at (s into the flood) | found | records lost around it |")
    print("|---:|---:|---|---:|")
    missed_uncounted = 0
    for k in range(ena_in):
        t = t_start + (ENA_EVERY * 1000 // 2) + k * ENA_EVERY * 1000
        before, aft = at(t - SAMPLE * 1000), after(t + SAMPLE * 1000)
        around = aft["lost"] - before["lost"]
        got = k in found
        if not got and around == 0:
            missed_uncounted += 1
        print("| %d | %d | %s | %d |" % (k, (t - t_start) // 1000, "yes" if got else "no",
                                          around))
    ena_out = one("ena-out")
    m = re.match(r"eth0 (\d+) resets?/", ena_out)
    print()
    print("check ena (rc %s): %s" % (one("ena-rc"), ena_out))
    print("kernel-event counts: %s" % ", ".join("%s %d" % kv for kv in sorted(counts.items())))
    print("agent: %s, rc %s" % (one("agent"), one("agent-rc")))
    if missed_uncounted:
        print("FAIL: %d reset(s) missed with no loss counted around them" % missed_uncounted)
        ok = False
    if counts.get("ena_reset_trigger", 0) != len(found):
        print("FAIL: %d reset triggers counted, %d resets found by their lines"
              % (counts.get("ena_reset_trigger", 0), len(found)))
        ok = False
    if found and (not m or int(m.group(1)) != len(found) or one("ena-rc") != "1"):
        print("FAIL: check ena does not say the %d resets found" % len(found))
        ok = False
    if one("agent") != "alive" or one("agent-rc") != "0":
        print("FAIL: the agent exited or did not stop cleanly")
        ok = False
    err = "\n".join(lines.get("agent-err", []))
    if "Sanitizer" in err or "runtime error:" in err:
        print("FAIL: a sanitizer report in the agent's stderr:\n" + err)
        ok = False
    print("Verdict: %s" % ("PASS" if ok else "FAIL"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

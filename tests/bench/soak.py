#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""make soak: the agent with every feature the chart enables, for SOAK_MINUTES (default 60),
against the real control plane (tests/tools/kube) through the fault proxy, with a scripted
incident every SOAK_INCIDENT_SECONDS (default 120, kinds in turn) and API faults in between.

  agent       cpu sampler (250 ms), burst profiles (perf), history tiers, zombie census (BPF,
              every minute), kernel-log follower (a FIFO fed here with /dev/kmsg records: user
              space cannot write facility-0 records to the real one), metrics textfile,
              set_conditions through the proxy as the chart's agent ServiceAccount (a token bound
              to its pod on a kwok node)
  remediator  `cpuzombie remediator`, remediation.mode dry-run, as the chart's remediator
              ServiceAccount, through the same proxy (Events only)
  incidents   cpu:   a one-core system-time burst (tests/e2e/cpu_helpers.burning, 8 s)
              memcg: SOAK_MEMCG_BATCH (600) real dying memcgs (tests/e2e/memcg_helpers), kept
                     70 s, then released
              ena:   a real-format ENA reset (lost Tx completions, trigger, completed) on the
                     kernel log
  faults      between incidents, one rule at a time from FAULTS (503, dropped connection, a
              delay past kubernetes.timeout, a lost answer after the write, 429 Retry-After)

Sampled every SOAK_SAMPLE_SECONDS (60): the agent's VmRSS, open fds, threads, CPU time
(utime+stime), run-dir and state-dir bytes; the remediator's VmRSS. At the end: a table of each
figure's first and last value and least-squares slope per hour; every incident and how it was
found (cpu: a burst on the burned core in the run dir's burst log and CPUCoreSaturation True on
the server; memcg: MemcgZombieLeak True on the server; ena: the kernel-event log's reset count
and ENADeviceReset True on the server); every condition flip the server took (the proxy's log of
the agent's status PATCHes, checked against the node's final conditions); the Events; faults
fired. Exit 1 if an incident was missed, the agent or remediator exited or was restarted (PID
and start time), 2 if the soak itself could not run. Cleans up by PID and by name.
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "tests", "e2e"))
import cpu_helpers as ch     # noqa: E402
import kube_helpers as kh    # noqa: E402
import memcg_helpers as mh   # noqa: E402
from proc_helpers import stop  # noqa: E402

CZ = os.path.abspath(sys.argv[1]) if len(sys.argv) > 1 else os.path.join(ROOT, "build",
                                                                         "cpuzombie")
MINUTES = float(os.environ.get("SOAK_MINUTES", "60"))
INCIDENT_S = float(os.environ.get("SOAK_INCIDENT_SECONDS", "120"))
SAMPLE_S = float(os.environ.get("SOAK_SAMPLE_SECONDS", "60"))
BATCH = int(os.environ.get("SOAK_MEMCG_BATCH", "600"))
OUT = os.environ.get("SOAK_OUT") or ""
CHECK_S = 15
BURN_S = 8
SLACK = 2 * CHECK_S + 20   # an incident is judged this long after it ended
MEMCG_HOLD_S = min(70, INCIDENT_S * 0.8)
BURN_CPU = (os.cpu_count() or 2) - 1
CONDS = ("MemcgZombieLeak", "CPUCoreSaturation", "ENADeviceReset")

FAULTS = [
    ("503 on the status PATCH", {"method": "PATCH", "path": "/status$", "status": 503}),
    ("dropped connection on GET node", {"method": "GET", "path": "^/api/v1/nodes/", "drop": True}),
    ("7 s delay (past the 5 s timeout) on the status PATCH",
     {"method": "PATCH", "path": "/status$", "delay_ms": 7000}),
    ("lost answer after the status PATCH", {"method": "PATCH", "path": "/status$",
                                            "when": "after"}),
    ("429 Retry-After 2 on any request", {"status": 429, "retry_after": "2"}),
    ("lost answer after an Event POST", {"method": "POST", "path": "/events$", "when": "after"}),
]


def log(msg):
    print("soak %s %s" % (time.strftime("%H:%M:%S"), msg), file=sys.stderr, flush=True)


def mono_us():
    return int(time.clock_gettime(time.CLOCK_MONOTONIC) * 1e6)


def dir_bytes(d):
    n = 0
    for dp, _dn, fn in os.walk(d):
        for f in fn:
            try:
                n += os.lstat(os.path.join(dp, f)).st_size
            except OSError:
                pass
    return n


def proc_figures(pid):
    st = {}
    for line in open("/proc/%d/status" % pid):
        k, _, v = line.partition(":")
        st[k] = v.strip()
    stat = open("/proc/%d/stat" % pid).read()
    f = stat[stat.rindex(")") + 2:].split()
    tick = os.sysconf("SC_CLK_TCK")
    return {"rss_kib": int(st["VmRSS"].split()[0]), "fds": len(os.listdir("/proc/%d/fd" % pid)),
            "threads": int(st["Threads"]), "cpu_s": (int(f[11]) + int(f[12])) / tick,
            "start": int(f[19])}


def slope_per_hour(pts):
    """Least-squares slope of (t seconds, v) in v per hour."""
    n = len(pts)
    if n < 2:
        return 0.0
    mt = sum(t for t, _ in pts) / n
    mv = sum(v for _, v in pts) / n
    den = sum((t - mt) ** 2 for t, _ in pts)
    return 0.0 if den == 0 else sum((t - mt) * (v - mv) for t, v in pts) / den * 3600


class Soak:
    def __init__(self):
        self.dir = tempfile.mkdtemp(prefix="cz-soak-", dir="/var/tmp")
        self.node = "soak-%d" % os.getpid()
        self.run = os.path.join(self.dir, "run")
        self.state = os.path.join(self.dir, "state")
        self.kmsg = os.path.join(self.dir, "kmsg.fifo")
        os.makedirs(self.state)
        self.prom = os.path.join(self.state, "cz.prom")     # a host file lies in the state dir
        self.cp = self.kube = self.agent = self.rem = None
        self.kfd = -1
        self.seq = 5000
        self.incidents = []       # dicts: kind, t0, t1, found, how
        self.samples = []         # (t, {figure: value})
        self.faults_set = []      # (t, name)
        self.memcgs = None
        self.t_start = None

    # -- setup -------------------------------------------------------------------------------

    def start(self):
        log("control plane in %s" % self.dir)
        self.cp = kh.cluster.ControlPlane(os.path.join(self.dir, "cp"))
        self.cp.start()
        kh.apply_chart_rbac(self.cp)
        self.kube = kh.Kube(self.cp, os.path.join(self.dir, "kube"))
        self.kube.add(kh.node_obj(self.node))
        secs = int(MINUTES * 60 + 3600)
        kc = self.cp.kubeconfig(os.path.join(self.dir, "kc-agent"),
                                {"token": self.kube.agent_token(self.node, seconds=secs)},
                                server=self.kube.url)
        kc_rem = self.cp.kubeconfig(os.path.join(self.dir, "kc-rem"),
                                    {"token": self.cp.token(kh.AGENT_NS, "cpuzombie-remediator",
                                                            None, secs)}, server=self.kube.url)
        root = mh.memory_v1_root() or mh.cgroup2_root()
        live = mh.count_dirs(root) if mh.memory_v1_root() else 1
        os.mkfifo(self.kmsg)
        self.kfd = os.open(self.kmsg, os.O_RDWR | os.O_NONBLOCK)  # never EOF for the agent
        cfg = os.path.join(self.dir, "agent.yaml")
        with open(cfg, "w") as f:
            f.write(
                "memcg:\n  min_dying: %d\n  max_ratio: %d\n  census_interval: 1m\n"
                "  latency_canary: 1m\n"
                "cpu:\n  interval: 250ms\n  threshold_pct: 90\n  min_burst: 2s\n"
                "  lookback: 90s\n  attribute_tasks: true\n  profile: true\n"
                "ena:\n  window: 2m\n"
                "kubernetes:\n  node_name: %s\n  kubeconfig: %s\n  timeout: 5s\n"
                "agent:\n  check_interval: %ds\n  set_conditions: true\n  remediate: false\n"
                "  metrics_textfile: %s\n  kmsg: %s\n"
                "remediation:\n  mode: dry-run\n"
                % (BATCH // 2, max(1, BATCH // 2 // max(live, 1)), self.node, kc, CHECK_S,
                   self.prom, self.kmsg))
        rcfg = os.path.join(self.dir, "remediator.yaml")
        with open(rcfg, "w") as f:
            f.write("kubernetes:\n  kubeconfig: %s\n  timeout: 5s\n"
                    "agent:\n  check_interval: %ds\n"
                    "remediation:\n  mode: dry-run\n  for: 30s\n  uncordon_after: 30s\n"
                    % (kc_rem, CHECK_S))
        self.cfg = cfg
        self.agent_err = open(os.path.join(self.dir, "agent.err"), "w")
        self.agent = subprocess.Popen([CZ, "--config", cfg, "--run-dir", self.run,
                                       "--state-dir", self.state, "agent"],
                                      stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                      stderr=self.agent_err)
        self.rem_err = open(os.path.join(self.dir, "remediator.err"), "w")
        self.rem = subprocess.Popen([CZ, "--config", rcfg, "remediator"],
                                    env=dict(os.environ, POD_NAME="soak-remediator"),
                                    stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                    stderr=self.rem_err)
        kh.wait_until(lambda: os.path.exists(os.path.join(self.run, "cpu-heartbeat")), 60,
                      "the agent's first heartbeat")
        self.agent_start = proc_figures(self.agent.pid)["start"]
        self.rem_start = proc_figures(self.rem.pid)["start"]
        # the first condition patch (all False) before the clock starts
        kh.wait_until(lambda: set(CONDS) <= self.server_conds().keys(), 120,
                      "the agent's first conditions on the server")
        log("agent %d, remediator %d, node %s; first conditions %s"
            % (self.agent.pid, self.rem.pid, self.node, self.server_conds()))

    def server_conds(self):
        st, obj = self.cp.raw("GET", "/api/v1/nodes/" + self.node)
        if st != 200:
            return {}
        return {c["type"]: c["status"] for c in obj["status"].get("conditions", [])
                if c["type"] in CONDS}

    # -- incidents ---------------------------------------------------------------------------

    def kmsg_write(self, lines):
        buf = ""
        for pri, text in lines:
            self.seq += 1
            buf += "%d,%d,%d,-;%s\n" % (pri, self.seq, mono_us(), text)
        os.write(self.kfd, buf.encode())

    def ena_resets(self):
        p = os.path.join(self.run, "kernel-events")
        if not os.path.exists(p):
            return 0
        for line in open(p):
            if line.startswith("count ena_reset_trigger "):
                return int(line.split()[2])
        return 0

    def incident_cpu(self, inc):
        with ch.burning(BURN_CPU):
            time.sleep(BURN_S)
        inc["t1"] = time.time()

    def incident_memcg(self, inc):
        self.memcgs = mh.DyingMemcgs(BATCH, os.path.join(self.dir, "memcg"))
        self.memcgs.parent = os.path.join(self.memcgs.root, "cpuzombie-soak-%d-%d"
                                          % (os.getpid(), len(self.incidents)))
        self.memcgs.__enter__()
        inc["t1"] = time.time()
        inc["release_at"] = time.time() + MEMCG_HOLD_S

    def incident_ena(self, inc):
        inc["before"] = self.ena_resets()
        self.kmsg_write([
            (3, "ena 0000:00:05.0 eth0: The number of lost tx completions is above the "
                "threshold (156 > 128). Reset the device"),
            (3, "ena 0000:00:05.0 eth0: Trigger reset is on"),
            (6, "ena 0000:00:05.0: Device reset completed successfully, Driver info: Elastic "
                "Network Adapter (ENA) v2.11.0g"),
        ])
        inc["t1"] = time.time()

    def release_memcgs(self, force=False):
        m = self.memcgs
        if m is None:
            return
        inc = self.incidents[-1] if self.incidents else None
        if not force and inc and time.time() < inc.get("release_at", 0):
            return
        m.release()
        self.memcgs = None
        log("released the dying memcgs")

    # -- judging -------------------------------------------------------------------------------

    def status_patches(self):
        """(t, {type: status}) of every status PATCH of ours the server answered 2xx."""
        out = []
        for e in self.kube.log():
            if e["method"] != "PATCH" or not e["path"].endswith("/nodes/%s/status" % self.node):
                continue
            if not (e.get("status") and 200 <= e["status"] < 300):
                continue
            body = e["body"] if isinstance(e["body"], dict) else {}
            cs = {c["type"]: c["status"] for c in body.get("status", {}).get("conditions", [])
                  if c.get("type") in CONDS}
            if cs:
                out.append((e["t"], cs))
        return out

    def flips(self):
        cur, out = {}, []
        for t, cs in self.status_patches():
            for k, v in sorted(cs.items()):
                if cur.get(k) != v:
                    if k in cur:
                        out.append((t, k, cur[k], v))
                    cur[k] = v
        return out, cur

    def true_between(self, cond, t0, t1):
        return any(t0 <= t <= t1 and v == "True" and k == cond
                   for t, k, _, v in self.flips()[0]) or \
            any(t0 <= t <= t1 and cs.get(cond) == "True" for t, cs in self.status_patches())

    def bursts_on(self, cpu, t0, t1):
        r = subprocess.run([CZ, "--config", self.cfg, "--run-dir", self.run, "--state-dir",
                            self.state, "report", "--json", "--since", "@%d" % int(t0 - 5)],
                           capture_output=True, text=True, timeout=60)
        try:
            rep = json.loads(r.stdout)
        except ValueError:
            return []
        out = []
        for b in rep.get("cores", {}).get("bursts", []):
            if b.get("cpu") == cpu and b["start_ms"] <= (t1 + 5) * 1000 and \
                    b["end_ms"] >= (t0 - 5) * 1000:
                out.append(b)
        return out

    def judge(self, inc):
        slack = SLACK
        if inc["kind"] == "cpu":
            bs = self.bursts_on(BURN_CPU, inc["t0"], inc["t1"])
            server = self.true_between("CPUCoreSaturation", inc["t0"], inc["t1"] + slack)
            inc["found"] = bool(bs) and server
            inc["how"] = "%d burst(s) on cpu%d in the run dir%s; CPUCoreSaturation True on the " \
                "server: %s" % (len(bs), BURN_CPU, (" (%s)" % fmt_burst(bs[0])) if bs else "",
                                server)
        elif inc["kind"] == "memcg":
            server = self.true_between("MemcgZombieLeak", inc["t0"], inc["t1"] + slack)
            inc["found"] = server
            inc["how"] = "%d dying memcgs; MemcgZombieLeak True on the server: %s" \
                % (BATCH, server)
        else:
            n = self.ena_resets()
            server = self.true_between("ENADeviceReset", inc["t0"], inc["t1"] + slack)
            inc["found"] = n == inc["before"] + 1 and server
            inc["how"] = "kernel-event log resets %d -> %d; ENADeviceReset True on the server: " \
                "%s" % (inc["before"], n, server)
        inc["judged"] = True

    # -- the loop ------------------------------------------------------------------------------

    def sample(self):
        now = time.time()
        a = proc_figures(self.agent.pid)
        r = proc_figures(self.rem.pid)
        self.samples.append((now - self.t_start, {
            "agent VmRSS (KiB)": a["rss_kib"], "agent open fds": a["fds"],
            "agent threads": a["threads"], "agent CPU time (s)": a["cpu_s"],
            "run dir (bytes)": dir_bytes(self.run), "state dir (bytes)": dir_bytes(self.state),
            "remediator VmRSS (KiB)": r["rss_kib"], "remediator CPU time (s)": r["cpu_s"]}))
        if a["start"] != self.agent_start or r["start"] != self.rem_start:
            raise RuntimeError("agent or remediator restarted")

    def alive(self):
        return self.agent.poll() is None and self.rem.poll() is None

    def loop(self):
        self.t_start = time.time()
        end = self.t_start + MINUTES * 60
        kinds = ["cpu", "memcg", "ena"]
        next_inc = self.t_start + min(30, INCIDENT_S / 2)
        next_sample = self.t_start
        next_fault = self.t_start + INCIDENT_S / 2 + min(30, INCIDENT_S / 2)
        fi = 0
        self.sample()
        next_sample += SAMPLE_S
        while time.time() < end and self.alive():
            now = time.time()
            if now >= next_sample:
                self.sample()
                next_sample += SAMPLE_S
            self.release_memcgs()
            for inc in self.incidents:
                if not inc.get("judged") and now > inc["t1"] + SLACK and \
                        (inc["kind"] != "memcg" or self.memcgs is None):
                    self.judge(inc)
                    log("%s incident %s: %s" % (inc["kind"], "found" if inc["found"]
                                                else "MISSED", inc["how"]))
            # a new incident only where it still leaves time to judge it
            kind = kinds[len(self.incidents) % len(kinds)]
            if now >= next_inc and now + SLACK + (MEMCG_HOLD_S if kind == "memcg" else 0) \
                    + 10 < end:
                if kind != "memcg" or self.memcgs is None:
                    inc = {"kind": kind, "t0": time.time()}
                    self.incidents.append(inc)
                    log("incident %d: %s" % (len(self.incidents), kind))
                    getattr(self, "incident_" + kind)(inc)
                next_inc += INCIDENT_S
            if now >= next_fault:
                name, rule = FAULTS[fi % len(FAULTS)]
                fi += 1
                self.kube.faults(dict(rule, count=1))
                self.faults_set.append((now, name))
                log("fault: " + name)
                next_fault += INCIDENT_S
            time.sleep(1)
        self.t_end = time.time()
        self.release_memcgs(force=True)
        for inc in self.incidents:     # the last ones: wait their slack out
            while not inc.get("judged"):
                if time.time() > inc["t1"] + SLACK:
                    self.judge(inc)
                else:
                    time.sleep(1)
        if self.alive():
            self.sample()

    # -- report --------------------------------------------------------------------------------

    def report(self):
        alive = self.alive()
        a_rc, r_rc = self.agent.poll(), self.rem.poll()
        mins = (self.t_end - self.t_start) / 60
        print("## Soak: %.1f minutes, %s" % (mins, time.strftime("%Y-%m-%d %H:%M UTC",
                                                                 time.gmtime(self.t_start))))
        print()
        print("agent %d and remediator %d (dry-run) against kube-apiserver through the fault "
              "proxy; check_interval %d s; incident every %d s; sample every %d s; %s"
              % (self.agent.pid, self.rem.pid, CHECK_S, INCIDENT_S, SAMPLE_S,
                 subprocess.run([CZ, "--version"], capture_output=True,
                                text=True).stdout.splitlines()[0]))
        print()
        print("| figure | first | last | slope per hour (least squares, %d samples) |"
              % len(self.samples))
        print("|---|---:|---:|---:|")
        for k in self.samples[0][1]:
            pts = [(t, s[k]) for t, s in self.samples]
            fmtv = (lambda v: "%.2f" % v) if isinstance(pts[0][1], float) else str
            print("| %s | %s | %s | %+.2f |" % (k, fmtv(pts[0][1]), fmtv(pts[-1][1]),
                                                slope_per_hour(pts)))
        pts = [(t, s["agent CPU time (s)"]) for t, s in self.samples]
        if len(pts) > 1 and pts[-1][0] > pts[0][0]:
            print("| agent CPU (millicores, mean) | | %.2f | |"
                  % ((pts[-1][1] - pts[0][1]) / (pts[-1][0] - pts[0][0]) * 1000))
        print()
        by = {}
        for inc in self.incidents:
            by.setdefault(inc["kind"], [0, 0])
            by[inc["kind"]][0] += 1
            by[inc["kind"]][1] += bool(inc.get("found"))
        print("| incident | in | found |")
        print("|---|---:|---:|")
        for k, (n, f) in sorted(by.items()):
            print("| %s | %d | %d |" % (k, n, f))
        print()
        for i, inc in enumerate(self.incidents, 1):
            print("%2d. +%5.0f s %-5s %s: %s" % (i, inc["t0"] - self.t_start, inc["kind"],
                                                "found" if inc.get("found") else "MISSED",
                                                inc.get("how")))
        flips, last = self.flips()
        final = self.server_conds()
        print()
        print("Condition flips the server took (%d; from the proxy's log of the agent's status "
              "PATCHes, 2xx):" % len(flips))
        for t, k, a, b in flips:
            print("  +%5.0f s %s %s -> %s" % (t - self.t_start, k, a, b))
        print("  last patched %s; on the server at the end %s: %s" % (
            last, final, "agree" if all(final.get(k) == v for k, v in last.items())
            else "DISAGREE"))
        evs = [e for e in self.kube.log() if e["method"] == "POST" and
               e["path"].endswith("/events") and e.get("status") and e["status"] < 300]
        reasons = {}
        for e in evs:
            r = e["body"].get("reason", "?") if isinstance(e["body"], dict) else "?"
            reasons[r] = reasons.get(r, 0) + 1
        print("Events posted (2xx): %s" % (", ".join("%s %d" % kv for kv in sorted(
            reasons.items())) or "none"))
        fired = [e for e in self.kube.log() if e.get("fault")]
        print("Faults: %d set, %d fired (%s)" % (len(self.faults_set), len(fired), ", ".join(
            sorted({"%s %s" % (e["method"], e["fault"]) for e in fired}))))
        ke = os.path.join(self.run, "kernel-events")
        kev = {l.split()[0]: l.split()[1] for l in open(ke) if l.split()[:1] in
               (["lost"], ["overruns"], ["next_seq"])} if os.path.exists(ke) else {}
        print("Kernel log: %s" % (", ".join("%s %s" % kv for kv in sorted(kev.items()))))
        restarted = not alive
        print("Agent: %s; remediator: %s" % (
            "running, same PID and start time" if a_rc is None else "EXITED rc=%s" % a_rc,
            "running, same PID and start time" if r_rc is None else "EXITED rc=%s" % r_rc))
        missed = [i for i in self.incidents if not i.get("found")]
        kinds = {i["kind"] for i in self.incidents}
        self.agent_err.flush()
        self.rem_err.flush()
        san = [f for f in ("agent.err", "remediator.err")
               if any(w in open(os.path.join(self.dir, f), errors="replace").read()
                      for w in ("Sanitizer", "runtime error:"))]
        if san:
            print("Sanitizer reports in: %s" % ", ".join(san))
        ok = not missed and not restarted and kinds == {"cpu", "memcg", "ena"} and not san
        print("Verdict: %s" % ("PASS" if ok else "FAIL (%d missed%s%s)" % (
            len(missed), ", restarted/exited" if restarted else "",
            "" if kinds == {"cpu", "memcg", "ena"} else ", not every kind ran")))
        return ok

    # -- cleanup -------------------------------------------------------------------------------

    def stop(self):
        for p in (self.agent, self.rem):
            if p:
                stop(p, 30)
        if self.memcgs is not None:
            self.memcgs.release()
        if self.kfd >= 0:
            os.close(self.kfd)
        if self.kube:
            try:
                self.kube.stop()
            except Exception as e:   # the control plane goes anyway
                log("cleanup of the fixtures: %s" % e)
        if self.cp:
            self.cp.stop()
        if OUT:
            os.makedirs(OUT, exist_ok=True)
            for f in ("agent.err", "remediator.err"):
                if os.path.exists(os.path.join(self.dir, f)):
                    shutil.copy(os.path.join(self.dir, f), OUT)
        shutil.rmtree(self.dir, ignore_errors=True)


def fmt_burst(b):
    top = max(b.get("tasks") or [{}], key=lambda t: t.get("stime_ms", 0)).get("comm", "?")
    prof = b.get("profile") or {}
    return "%.1f s, peak %.0f%%, top task %s, profile %s" % (
        b["seconds"], b["peak_pct"], top, "%s samples, hot %s" % (
            prof.get("samples"), prof.get("hot_frame")) if prof.get("file") else "none")


def main():
    if os.geteuid() != 0:
        print("soak: needs root (cgroups, the burn's RT priority, BPF, perf)", file=sys.stderr)
        return 2
    s = Soak()
    ok = False
    try:
        s.start()
        s.loop()
        ok = s.report()
    except Exception as e:
        import traceback
        traceback.print_exc()
        print("soak: %s" % e, file=sys.stderr)
        try:
            s.t_end = time.time()
            if s.samples:
                s.report()
        except Exception:
            pass
        return 2 if not s.samples else 1
    finally:
        s.stop()
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

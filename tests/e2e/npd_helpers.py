# SPDX-License-Identifier: MIT
"""The real node-problem-detector (../shared/bin, v0.8.20, the version the chart deploys) for the
end-to-end tests: where it is, the shipped config/npd/*.json with only the plugin path and the
host roots rewritten, a run of NPD with its Prometheus exporter on 127.0.0.1 and its Kubernetes
exporter pointed at the API server emulator, and readers for what NPD published."""

import json
import os
import socket
import subprocess
import time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
NPD_CONFIGS = ("cpuzombie-memcg", "cpuzombie-cpu", "cpuzombie-ena", "cpuzombie-ena-allowance")


def shared_dir():
    """../shared beside the repository (CI has it; a user's clone does not). CZ_SHARED_DIR
    overrides it, for a git worktree that lives elsewhere."""
    return os.environ.get("CZ_SHARED_DIR") or os.path.join(os.path.dirname(ROOT), "shared")


def npd_binary():
    return os.path.join(shared_dir(), "bin", "node-problem-detector")


def npd_missing_reason():
    """None when the real NPD can run here, else why not (the skip reason)."""
    p = npd_binary()
    if not os.access(p, os.X_OK):
        return "no real node-problem-detector at %s (../shared/bin is not in a user's clone; " \
               "set CZ_SHARED_DIR)" % p
    return None


def shipped_config(name):
    with open(os.path.join(ROOT, "config", "npd", name + ".json")) as f:
        return json.load(f)


def rewrite(cfg, plugin, proc_root, sys_root):
    """The shipped config with only each rule's path and its --proc-root/--sys-root values
    changed; everything else (args, intervals, conditions) stays as shipped."""
    cfg = json.loads(json.dumps(cfg))
    for rule in cfg["rules"]:
        assert rule["path"] == "/opt/cpuzombie/bin/cpuzombie", rule["path"]
        args = list(rule["args"])
        for flag, value in (("--proc-root", proc_root), ("--sys-root", sys_root)):
            i = args.index(flag)
            assert args[i + 1] == "/host/" + flag[2:].split("-")[0], args
            args[i + 1] = value
        rule["path"] = plugin
        rule["args"] = args
    return cfg


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


class Npd:
    """One node-problem-detector process. It runs in a private mount namespace whose /var/lib
    and /run are directories of the test, so the plugin's default state dir
    (/var/lib/cpuzombie) and run dir (/run/cpuzombie) are private without changing its
    arguments, as they are in NPD's container."""

    def __init__(self, workdir, configs, node, apiserver=None, kubeconfig=None):
        self.dir = str(workdir)
        self.node = node
        self.port = free_port()
        self.varlib = os.path.join(self.dir, "varlib")
        self.run = os.path.join(self.dir, "run")
        os.makedirs(self.varlib, exist_ok=True)
        os.makedirs(self.run, exist_ok=True)
        paths = []
        for name, cfg in configs.items():
            p = os.path.join(self.dir, name + ".json")
            with open(p, "w") as f:
                json.dump(cfg, f, indent=1)
            paths.append(p)
        self.args = [npd_binary(), "--config.custom-plugin-monitor=" + ",".join(paths),
                     "--config.system-log-monitor=", "--hostname-override=" + node,
                     "--prometheus-address=127.0.0.1", "--prometheus-port=%d" % self.port,
                     "--logtostderr"]
        if apiserver:
            self.args += ["--apiserver-override=%s?inClusterConfig=false&auth=%s"
                          % (apiserver, kubeconfig), "--k8s-exporter-heartbeat-period=5s"]
        else:
            self.args += ["--enable-k8s-exporter=false"]
        self.proc = None

    def start(self):
        self.log = os.path.join(self.dir, "npd.log")
        script = 'mount --bind "$0" /var/lib && mount --bind "$1" /run && shift && exec "$@"'
        self.proc = subprocess.Popen(
            ["unshare", "--mount", "--propagation", "private", "sh", "-c", script,
             self.varlib, self.run] + self.args,
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=open(self.log, "w"))
        deadline = time.monotonic() + 30
        while True:
            try:
                self.metrics()
                return self
            except OSError:
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("node-problem-detector did not start: " + self.logtail())
                time.sleep(0.2)

    def logtail(self, n=4000):
        with open(self.log, errors="replace") as f:
            return f.read()[-n:]

    def metrics(self):
        """{(name, frozenset(labels.items())): value} of the problem_* series."""
        with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % self.port, timeout=5) as r:
            text = r.read().decode()
        out = {}
        for line in text.splitlines():
            if not line.startswith("problem_"):
                continue
            series, value = line.rsplit(" ", 1)
            name, _, labels = series.partition("{")
            pairs = {}
            for kv in labels.rstrip("}").split(","):
                if kv:
                    k, v = kv.split("=", 1)
                    pairs[k] = json.loads(v)
            out[(name, frozenset(pairs.items()))] = float(value)
        return out

    def gauge(self, ctype, reason):
        return self.metrics().get(("problem_gauge", frozenset({"type": ctype,
                                                               "reason": reason}.items())))

    def gauges(self, ctype):
        """{reason: value} of problem_gauge for condition @ctype (a reason appears once NPD
        has reported the condition with it, or the rule declares it)."""
        return {dict(labels)["reason"]: v for (name, labels), v in self.metrics().items()
                if name == "problem_gauge" and dict(labels).get("type") == ctype}

    def counter(self, reason):
        return self.metrics().get(("problem_counter", frozenset({"reason": reason}.items())))

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def wait_condition(emu, node, ctype, pred, timeout=90):
    """Polls the emulator until node @node's condition @ctype satisfies @pred; returns it."""
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        conds = {c["type"]: c for c in emu.node(node)["status"].get("conditions", [])}
        last = conds.get(ctype)
        if last is not None and pred(last):
            return last
        time.sleep(0.5)
    raise AssertionError("condition %s never matched; last: %r" % (ctype, last))


def describe_conditions(describe_out):
    """The Conditions table of `kubectl describe node` -> {type: (status, reason, message)}."""
    lines = describe_out.splitlines()
    start = next(i for i, l in enumerate(lines) if l.startswith("Conditions:"))
    header = lines[start + 1]
    cols = [header.index(c) for c in ("Type", "Status", "LastHeartbeatTime", "Reason",
                                      "Message")]
    out = {}
    for l in lines[start + 3:]:
        if not l.startswith("  "):
            break
        typ = l[cols[0]:cols[1]].strip()
        out[typ] = (l[cols[1]:cols[2]].strip(), l[cols[3]:cols[4]].strip(), l[cols[4]:].strip())
    return out

# SPDX-License-Identifier: MIT
"""The real node-problem-detector for the end-to-end tests, in both versions we support:
v0.8.20 (../shared/bin: the last v0.8 release), v1.34.0 (the release before) and v1.36.0 (the
current release, the one the chart deploys); tests/tools/kube/build.sh builds the v1 releases
from their Go module. Where each binary is,
the shipped config/npd/*.json with only the plugin path and the host roots rewritten, a run of
NPD with its Prometheus exporter on 127.0.0.1 and its Kubernetes exporter talking to the real
control plane (through the test's fault proxy) as the chart's ServiceAccount with a token bound
to the agent's pod on the node, and readers for what NPD published."""

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request

import pytest

from proc_helpers import stop

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
NPD_CONFIGS = ("cpuzombie-memcg", "cpuzombie-cpu", "cpuzombie-ena", "cpuzombie-ena-allowance")
# The NPD versions the tests run: the old ones first, then the current one (the chart's;
# NPD_VERSION and NPD_OLD_VERSION of tests/tools/kube/versions.sh).
VERSIONS = ("v0.8.20", "v1.34.0", "v1.36.0")
CURRENT = VERSIONS[-1]


def shared_dir():
    """../shared beside the repository (CI has it; a user's clone does not). CZ_SHARED_DIR
    overrides it, for a git worktree that lives elsewhere."""
    return os.environ.get("CZ_SHARED_DIR") or os.path.join(os.path.dirname(ROOT), "shared")


_built = {}


def npd_binary(version="v0.8.20"):
    """The node-problem-detector binary of @version. v0.8.20 is the prebuilt one in
    ../shared/bin; the v1 releases are built by tests/tools/kube/build.sh (cached per machine; a
    failed build is an error, not a skip: the control plane needs the same build)."""
    if version == "v0.8.20":
        return os.path.join(shared_dir(), "bin", "node-problem-detector")
    if version not in _built:
        sys.path.insert(0, os.path.join(ROOT, "tests", "tools", "kube"))
        import cluster
        env = dict(os.environ, NPD_VERSION=version)
        _built[version] = os.path.join(cluster.build(("npd",), env=env)["npd"],
                                       "node-problem-detector")
    return _built[version]


def npd_missing_reason(version="v0.8.20"):
    """None when the real NPD @version can run here, else why not (the skip reason). Only the
    prebuilt v0.8.20 can be missing (../shared/bin is not in a user's clone)."""
    if version != "v0.8.20":
        return None
    p = npd_binary(version)
    if not os.access(p, os.X_OK):
        return "no real node-problem-detector v0.8.20 at %s (../shared/bin is not in a " \
               "user's clone; set CZ_SHARED_DIR)" % p
    return None


def npd_for(version):
    """The binary of @version for a test, after checking it says that version (so a test
    named for a version runs that version); skips when v0.8.20 is absent."""
    why = npd_missing_reason(version)
    if why:
        pytest.skip(why)
    b = npd_binary(version)
    out = subprocess.run([b, "--version"], capture_output=True, text=True, timeout=30)
    assert out.stdout.strip() == version, (b, out.stdout, out.stderr)
    return b


def version_params():
    """pytest parameters for the NPD versions, ids = the versions."""
    return [pytest.param(v, id=v) for v in VERSIONS]


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

    def __init__(self, workdir, configs, node, apiserver=None, kubeconfig=None,
                 binary=None, extra_args=(), command=None, env=None):
        """@apiserver: the URL NPD's override names (the test's fault proxy); @kubeconfig: the
        credentials it uses (NPD takes the server from the kubeconfig when auth= is given).
        Without @apiserver the Kubernetes exporter is off. @command(config paths, prometheus
        port) -> argv replaces NPD's whole command line; @env is added to its environment."""
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
        # --port: NPD's own status server (127.0.0.1:20256 by default, where a collision
        # is fatal) on a free port, as several NPDs may run on this shared machine
        self.args = [binary or npd_binary(), "--config.custom-plugin-monitor=" + ",".join(paths),
                     "--config.system-log-monitor=", "--hostname-override=" + node,
                     "--prometheus-address=127.0.0.1", "--prometheus-port=%d" % self.port,
                     "--port=%d" % free_port(), "--logtostderr"] + list(extra_args)
        if apiserver:
            self.args += ["--apiserver-override=%s?inClusterConfig=false&auth=%s"
                          % (apiserver, kubeconfig), "--k8s-exporter-heartbeat-period=5s"]
        else:
            self.args += ["--enable-k8s-exporter=false"]
        if command is not None:
            self.args = command(paths, self.port)
        self.env = dict(os.environ, **(env or {}))
        self.proc = None

    def start(self):
        self.log = os.path.join(self.dir, "npd.log")
        script = 'mount --bind "$0" /var/lib && mount --bind "$1" /run && shift && exec "$@"'
        self.proc = subprocess.Popen(
            ["unshare", "--mount", "--propagation", "private", "sh", "-c", script,
             self.varlib, self.run] + self.args,
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=open(self.log, "w"),
            env=self.env)
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

    def children(self):
        """The PIDs of NPD's live (not yet exited) children: the checks it is running."""
        out = []
        task = "/proc/%d/task" % self.proc.pid
        for t in os.listdir(task):
            try:
                pids = open(os.path.join(task, t, "children")).read().split()
            except OSError:
                continue
            for pid in pids:
                try:
                    state = open("/proc/%s/stat" % pid).read().rsplit(")", 1)[1].split()[0]
                except OSError:
                    continue
                if state != "Z":
                    out.append(int(pid))
        return out

    @contextlib.contextmanager
    def paused(self, timeout=60):
        """NPD stopped (SIGSTOP), and no check of its running, for the body: a change made
        meanwhile is seen whole by the next check, never half made. Resumed (SIGCONT) after."""
        os.kill(self.proc.pid, signal.SIGSTOP)
        try:
            deadline = time.monotonic() + timeout
            while self.children():
                assert time.monotonic() < deadline, ("NPD's checks did not end",
                                                     self.children())
                time.sleep(0.1)
            yield self
        finally:
            os.kill(self.proc.pid, signal.SIGCONT)

    def stop(self):
        if self.proc:
            stop(self.proc, 15)


def wait_condition(kube, node, ctype, pred, timeout=90):
    """Polls the real API server (as the admin: looking, not under test) until node @node's
    condition @ctype satisfies @pred; returns it."""
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        conds = {c["type"]: c for c in kube.node(node)["status"].get("conditions", [])}
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


SA_USER = "system:serviceaccount:cpuzombie:cpuzombie"     # the chart's ServiceAccount


def npd_requests(kube, version):
    """What NPD @version asked the server (the fault proxy's log; NPD's user agent is
    node-problem-detector/VERSION)."""
    return [e for e in kube.log()
            if (e.get("agent") or "").startswith("node-problem-detector/" + version)]


def wait_events(kube, node, pred, timeout=60):
    """Polls the real server until the Events about @node satisfy @pred; returns them."""
    deadline = time.monotonic() + timeout
    while True:
        evs = kube.events(node)
        if pred(evs) or time.monotonic() > deadline:
            return evs
        time.sleep(0.5)


def in_cluster_credentials(npd, kube, token):
    """What a pod's NPD finds: the ServiceAccount's token and the cluster's CA at
    /var/run/secrets/kubernetes.io/serviceaccount (under NPD's private /run), and
    KUBERNETES_SERVICE_HOST/PORT naming the test's fault proxy. Returns the environment."""
    d = os.path.join(npd.run, "secrets", "kubernetes.io", "serviceaccount")
    os.makedirs(d, exist_ok=True)
    for name, text in (("token", token), ("ca.crt", open(kube.cp.ca).read()),
                       ("namespace", "cpuzombie")):
        with open(os.path.join(d, name), "w") as f:
            f.write(text)
    return {"KUBERNETES_SERVICE_HOST": "127.0.0.1", "KUBERNETES_SERVICE_PORT": str(kube.port)}


def wait_policy_in_force(kube, token, other_node, timeout=60):
    """Waits until the chart's admission policy refuses an Event about @other_node made with
    @token (bound to a pod on another node): a dry run (admission runs, nothing is stored).
    Needed right after the control plane starts: the policy is applied, but the server takes
    a moment to enforce it (seen: an Event NPD made then was taken with 201, the node PATCH a
    second later refused)."""
    ev = {"apiVersion": "v1", "kind": "Event",
          "metadata": {"name": "cz-policy-probe", "namespace": "default"},
          "involvedObject": {"kind": "Node", "name": other_node}, "reason": "Probe",
          "message": "probe", "type": "Normal"}
    deadline = time.monotonic() + timeout
    while True:
        st, obj = kube.call("POST", "/api/v1/namespaces/default/events?dryRun=All", ev,
                            token=token)
        if st == 403:           # refused by the policy (its reason: Forbidden)
            return
        assert st == 201 and time.monotonic() < deadline, ("the policy is not in force", st, obj)
        time.sleep(0.2)

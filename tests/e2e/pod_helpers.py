# SPDX-License-Identifier: MIT
"""Run the chart's DaemonSet pod with podman, container by container, exactly as its spec says:
`helm template` renders the chart, and every container becomes one `podman run` with the spec's
image, command, env, securityContext (user, read-only root, capabilities, no privilege
escalation, seccomp) and volume mounts; hostNetwork becomes --network host. What a kubelet
would provide is made here: hostPath volumes are the host's paths except the state dir, which
is the test's (the test must not write the node's /var/lib/cpuzombie), and the run dir, which
is always the test's (the node's /run/cpuzombie is one agent's: its lock); emptyDir volumes are
directories of the test (a memory emptyDir a tmpfs); configMap and projected volumes are
directories holding the rendered ConfigMaps' keys; NODE_NAME is the test's node name."""

import os
import subprocess
import time

import yaml

from proc_helpers import stop

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CONF = os.path.join(ROOT, "tests", "tools", "podman", "containers.conf")
RUN_DIR = "/run/cpuzombie"      # the chart's hostPaths.run


def podman_env():
    return dict(os.environ, CONTAINERS_CONF=CONF)


def podman(*args, check=True, timeout=600, **kw):
    p = subprocess.run(["podman", *args], env=podman_env(), capture_output=True, text=True,
                       timeout=timeout, **kw)
    if check and p.returncode != 0:
        raise AssertionError("podman %s failed (%d): %s" % (" ".join(args[:3]), p.returncode,
                                                            p.stderr[-2000:]))
    return p


# containers/common's default profile (podman's and CRI-O's RuntimeDefault) lets bpf() and
# perf_event_open() through only with CAP_SYS_ADMIN. containerd's RuntimeDefault (1.6.x and
# 1.7+, containerd PR 7301; Docker's since 23.0) also lets bpf() through with CAP_BPF and
# perf_event_open() with CAP_PERFMON: what the chart's capabilities for the census and the
# burst profiles count on, on containerd nodes.
CONTAINERS_SECCOMP = "/usr/share/containers/seccomp.json"
CAP_GATED = {"bpf": "CAP_BPF", "perf_event_open": "CAP_PERFMON"}


def containerd_runtime_default(workdir):
    """Writes RuntimeDefault as containerd applies it into @workdir: this machine's podman
    profile with containerd's two capability gates (CAP_GATED) in place of its CAP_SYS_ADMIN-only
    rules for those syscalls (allowed with either capability, EPERM without both, as
    containerd). Returns the file's path, for Pod(seccomp=)."""
    import json
    with open(CONTAINERS_SECCOMP) as f:
        prof = json.load(f)
    rules = []
    for r in prof["syscalls"]:
        gated = [n for n in r["names"] if n in CAP_GATED]
        admin_only = ["CAP_SYS_ADMIN"] in (r.get("includes", {}).get("caps"),
                                           r.get("excludes", {}).get("caps"))
        if gated and admin_only:
            rest = dict(r, names=[n for n in r["names"] if n not in CAP_GATED])
            if rest["names"]:
                rules.append(rest)
            continue
        rules.append(r)
    for name, cap in CAP_GATED.items():
        for c in ("CAP_SYS_ADMIN", cap):
            rules.append({"names": [name], "action": "SCMP_ACT_ALLOW", "includes": {"caps": [c]}})
        rules.append({"names": [name], "action": "SCMP_ACT_ERRNO", "errnoRet": 1,
                      "excludes": {"caps": ["CAP_SYS_ADMIN", cap]}})
    prof["syscalls"] = rules
    path = os.path.join(str(workdir), "seccomp-containerd-runtime-default.json")
    with open(path, "w") as f:
        json.dump(prof, f)
    return path


class Pod:
    def __init__(self, objs, workdir, node, host_overrides=None, seccomp=None):
        """@objs: the rendered chart; @host_overrides: {host path: test path} for hostPath
        volumes that must not be the node's; @seccomp: the profile file that RuntimeDefault
        stands for (None: podman's own, i.e. CRI-O's; containerd_runtime_default() for
        containerd's)."""
        self.seccomp = seccomp
        self.objs = objs
        ds = next(o for o in objs if o["kind"] == "DaemonSet")
        self.spec = ds["spec"]["template"]["spec"]
        self.namespace = ds["metadata"].get("namespace", "default")
        self.dir = str(workdir)
        self.node = node
        self.overrides = dict(host_overrides or {})
        for v in self.spec["volumes"]:
            path = v.get("hostPath", {}).get("path", "")
            if path == RUN_DIR or path.startswith(RUN_DIR + "/"):
                self.overrides.setdefault(path, os.path.join(self.dir, "host-run"))
        if not os.path.isdir("/var/log/pods"):
            # the kubelet's pod log directories (agent.podNames): a host without a kubelet has
            # none, and a hostPath of type Directory must exist; an empty one stands in
            self.overrides.setdefault("/var/log/pods", os.path.join(self.dir, "var-log-pods"))
            os.makedirs(self.overrides["/var/log/pods"], exist_ok=True)
        self.names = []
        self.vols = {v["name"]: self._volume(v) for v in self.spec["volumes"]}

    def configmap(self, name):
        return next(o for o in self.objs if o["kind"] == "ConfigMap" and
                    o["metadata"]["name"] == name)

    def _write_cm(self, d, cm, items=None):
        data = cm.get("data", {})
        pairs = [(i["key"], i["path"]) for i in items] if items else [(k, k) for k in data]
        for key, path in pairs:
            p = os.path.join(d, path)
            os.makedirs(os.path.dirname(p), exist_ok=True)
            with open(p, "w") as f:
                f.write(data[key])

    def _volume(self, v):
        name = v["name"]
        if "hostPath" in v:
            path = v["hostPath"]["path"]
            path = self.overrides.get(path, path)
            if v["hostPath"].get("type") == "DirectoryOrCreate":
                os.makedirs(path, exist_ok=True)
            return path
        d = os.path.join(self.dir, "vol-" + name)
        os.makedirs(d, exist_ok=True)
        if "emptyDir" in v:
            os.chmod(d, 0o777)      # the kubelet's emptyDir mode: a non-root container writes
            if v["emptyDir"].get("medium") == "Memory":
                subprocess.run(["mount", "-t", "tmpfs", "-o", "size=16m", "cz-test-" + name, d],
                               check=True)
                self.tmpfs = getattr(self, "tmpfs", []) + [d]
            return d
        if "configMap" in v:
            self._write_cm(d, self.configmap(v["configMap"]["name"]), v["configMap"].get("items"))
            return d
        if "projected" in v:
            for src in v["projected"]["sources"]:
                # the ServiceAccount token volume (kube-api-access: token, the cluster's CA
                # kube-root-ca.crt, the namespace) is the kubelet's to fill: the tests hand the
                # containers that talk to the API server a kubeconfig of their own instead
                if "serviceAccountToken" in src or "downwardAPI" in src:
                    continue
                cm = src["configMap"]
                if cm["name"] == "kube-root-ca.crt":
                    continue
                self._write_cm(d, self.configmap(cm["name"]), cm.get("items"))
            return d
        raise AssertionError("volume kind not handled: %r" % v)

    def container(self, name):
        for c in self.spec.get("initContainers", []) + self.spec["containers"]:
            if c["name"] == name:
                return c
        raise KeyError(name)

    def run_args(self, c, extra_args=(), extra_mounts=()):
        """The podman run arguments for container @c of the pod spec."""
        a = ["--name", "cz-test-%s-%d-%d" % (c["name"], os.getpid(), len(self.names)),
             "--pull=never"]
        if self.spec.get("hostNetwork"):
            a += ["--network", "host"]
        sc = c.get("securityContext", {})
        if "runAsUser" in sc:
            a += ["--user", str(sc["runAsUser"])]
        if sc.get("readOnlyRootFilesystem"):
            a += ["--read-only", "--read-only-tmpfs=false"]
        if sc.get("privileged"):
            a += ["--privileged"]
        if sc.get("allowPrivilegeEscalation") is False:
            a += ["--security-opt", "no-new-privileges"]
        caps = sc.get("capabilities", {})
        for cap in caps.get("drop", []):
            a += ["--cap-drop", cap.lower()]
        for cap in caps.get("add", []):
            a += ["--cap-add", cap.lower()]
        assert sc.get("seccompProfile", {}).get("type", "RuntimeDefault") == "RuntimeDefault"
        if self.seccomp:
            a += ["--security-opt", "seccomp=" + self.seccomp]
        for e in c.get("env", []):
            if "value" in e:
                a += ["--env", "%s=%s" % (e["name"], e["value"])]
            elif e.get("valueFrom", {}).get("fieldRef", {}).get("fieldPath") == "spec.nodeName":
                a += ["--env", "%s=%s" % (e["name"], self.node)]
            elif e.get("valueFrom", {}).get("fieldRef", {}).get("fieldPath") == \
                    "metadata.namespace":     # the downward API: the pod's, the DaemonSet's
                a += ["--env", "%s=%s" % (e["name"], self.namespace)]
            else:
                raise AssertionError("env not handled: %r" % e)
        lim = c.get("resources", {}).get("limits", {})
        if "memory" in lim:
            a += ["--memory", lim["memory"].replace("Mi", "m")]
        for m in c.get("volumeMounts", []):
            opts = "ro" if m.get("readOnly") else "rw"
            a += ["--volume", "%s:%s:%s" % (self.vols[m["name"]], m["mountPath"], opts)]
        for src, dst in extra_mounts:
            a += ["--volume", "%s:%s:ro" % (src, dst)]
        cmd = list(c.get("command", [])) + list(c.get("args", [])) + list(extra_args)
        a += ["--entrypoint", cmd[0], c["image"], *cmd[1:]]
        return a

    def run(self, name, **kw):
        """Runs container @name to completion (an init container); returns the process."""
        args = self.run_args(self.container(name), **kw)
        self.names.append(args[1])
        return podman("run", "--rm", *args, check=False, timeout=300)

    def start(self, name, **kw):
        """Starts container @name detached; returns its podman name."""
        args = self.run_args(self.container(name), **kw)
        self.names.append(args[1])
        podman("run", "-d", *args)
        return args[1]

    def logs(self, cname):
        p = podman("logs", cname, check=False)
        return p.stdout + p.stderr

    def running(self, cname):
        p = podman("inspect", "--format", "{{.State.Running}}", cname, check=False)
        return p.stdout.strip() == "true"

    def stop(self):
        for n in self.names:
            podman("rm", "-f", "-t", "5", n, check=False)
        for d in getattr(self, "tmpfs", []):
            subprocess.run(["umount", d], check=False)


def render_chart(helm, chart, *args):
    p = subprocess.run([helm, "template", "cpuzombie", chart, "-n", "cpuzombie", *args],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    return [d for d in yaml.safe_load_all(p.stdout) if d]



def bus_manager(workdir):
    """A crash-looping unit's systemd --user manager (report_helpers.UserManager, same unit and
    private mount namespace) registered on a D-Bus daemon of the test's own: dbus-daemon with
    the session policy (only uid 0, the daemon's, may connect) at $XDG_RUNTIME_DIR/bus, where
    the manager looks for its bus. A container mounting that socket at
    /run/dbus/system_bus_socket reaches "the host's systemd" exactly as the chart's agent does
    through the real system bus. Returns a context manager; .bus is the socket's path."""
    import report_helpers as rh

    class BusManager(rh.UserManager):
        def __enter__(self):
            units = os.path.join(self.cfg, "systemd", "user")
            os.makedirs(os.path.join(units, "default.target.wants"))
            os.makedirs(self.rt, mode=0o700)
            with open(os.path.join(units, self.unit), "w") as f:
                f.write("[Unit]\nDescription=cpuzombie test: crash loop\n"
                        "StartLimitIntervalSec=0\n[Service]\nExecStart=/bin/false\n"
                        "Restart=always\nRestartSec=100ms\n")
            os.symlink("../" + self.unit, os.path.join(units, "default.target.wants", self.unit))
            self.bus = os.path.join(self.rt, "bus")
            self.dbus_log = open(os.path.join(self.dir, "dbus.log"), "w")
            self.dbus = subprocess.Popen(
                ["dbus-daemon", "--config-file=/usr/share/dbus-1/session.conf",
                 "--address=unix:path=" + self.bus, "--nofork", "--nopidfile"],
                stdout=subprocess.DEVNULL, stderr=self.dbus_log)
            self.log = open(os.path.join(self.dir, "manager.log"), "w")
            self.proc = subprocess.Popen(["unshare", "-m", "--propagation", "private", "sh", "-c",
                                          rh.START, "sh", self.rt, self.cfg, self.dir, rh.SYSTEMD],
                                         stdout=self.log, stderr=subprocess.STDOUT)
            deadline = time.time() + 20
            while not (os.path.exists(self.bus) and
                       os.path.exists(os.path.join(self.rt, "systemd", "private"))):
                if self.proc.poll() is not None or self.dbus.poll() is not None or \
                        time.time() > deadline:
                    self.__exit__()
                    raise RuntimeError("systemd --user or dbus-daemon did not start")
                time.sleep(0.05)
            return self

        def __exit__(self, *exc):
            super().__exit__(*exc)
            if getattr(self, "dbus", None):
                stop(self.dbus, 10, strict=True)
            if getattr(self, "dbus_log", None):
                self.dbus_log.close()
            return False

    return BusManager(workdir)

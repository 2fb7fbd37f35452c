# SPDX-License-Identifier: MIT
"""Helpers for the Kubernetes tests: certificates made with openssl, the API server emulator
(tests/tools/kubeemu.py) on a free 127.0.0.1 port, kubeconfig files, objects, the request log,
and the real kubectl from tests/tools/get-kube-tools.sh."""

import base64
import json
import os
import shutil
import signal
import ssl
import subprocess
import threading
import time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EMU = os.path.join(ROOT, "tests", "tools", "kubeemu.py")
PY = "/usr/bin/python3"
TOKEN = "s3cr3t-admin-token"


def openssl(*args, cwd):
    subprocess.run(["openssl", *args], cwd=cwd, check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)


def make_ca(d, name):
    openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
            "-nodes", "-keyout", name + ".key", "-out", name + ".pem", "-days", "2",
            "-subj", "/CN=" + name, cwd=d)
    return os.path.join(d, name + ".pem")


def make_cert(d, ca, name, cn, server=False):
    ext = os.path.join(d, name + ".ext")
    with open(ext, "w") as f:
        if server:
            f.write("subjectAltName=IP:127.0.0.1,DNS:localhost,IP:::1\n"
                    "extendedKeyUsage=serverAuth\n")
        else:
            f.write("extendedKeyUsage=clientAuth\n")
    openssl("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
            "-keyout", name + ".key", "-out", name + ".csr", "-subj", "/CN=" + cn, cwd=d)
    openssl("x509", "-req", "-in", name + ".csr", "-CA", ca + ".pem", "-CAkey", ca + ".key",
            "-CAcreateserial", "-out", name + ".pem", "-days", "2", "-extfile", ext, cwd=d)
    return os.path.join(d, name + ".pem"), os.path.join(d, name + ".key")


class Certs:
    """A CA, a server certificate for 127.0.0.1, a client certificate (CN=cert-admin), and an
    unrelated CA for the "wrong CA is refused" test."""

    def __init__(self, d):
        os.makedirs(d, exist_ok=True)
        self.dir = d
        self.ca = make_ca(d, "ca")
        self.server_cert, self.server_key = make_cert(d, "ca", "server", "kubeemu", server=True)
        self.client_cert, self.client_key = make_cert(d, "ca", "client", "cert-admin")
        self.wrong_ca = make_ca(d, "wrongca")


class Emulator:
    def __init__(self, certs, workdir, tokens=None):
        self.certs = certs
        self.dir = workdir
        self.tokens = tokens or {TOKEN: "admin"}
        self.proc = None
        self.port = None

    def start(self):
        portfile = os.path.join(self.dir, "emu.port")
        if os.path.exists(portfile):
            os.unlink(portfile)
        args = [PY, EMU, "--cert", self.certs.server_cert, "--key", self.certs.server_key,
                "--client-ca", self.certs.ca, "--port-file", portfile]
        for t, u in self.tokens.items():
            args += ["--token", "%s:%s" % (t, u)]
        self.errf = open(os.path.join(self.dir, "emu.stderr"), "w")
        self.proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=self.errf)
        deadline = time.monotonic() + 15
        while not os.path.exists(portfile):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("kubeemu did not start: " +
                                   open(os.path.join(self.dir, "emu.stderr")).read())
            time.sleep(0.05)
        self.port = int(open(portfile).read())
        self.url = "https://127.0.0.1:%d" % self.port
        self.ssl = ssl.create_default_context(cafile=self.certs.ca)
        return self

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.errf.close()

    # -- side API and plain API calls --------------------------------------------------------

    def call(self, method, path, body=None, token=TOKEN, ctype="application/json"):
        """Returns (status, parsed JSON or None)."""
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(self.url + path, data=data, method=method)
        if data is not None:
            req.add_header("Content-Type", ctype)
        if token:
            req.add_header("Authorization", "Bearer " + token)
        try:
            with urllib.request.urlopen(req, context=self.ssl, timeout=20) as r:
                raw = r.read()
                return r.status, json.loads(raw) if raw else None
        except urllib.error.HTTPError as e:
            raw = e.read()
            try:
                return e.code, json.loads(raw)
            except ValueError:
                return e.code, raw

    def side(self, method, path, body=None):
        st, obj = self.call(method, "/_emu/" + path, body, token=None)
        assert st == 200, (path, st, obj)
        return obj

    def add(self, *objs):
        return self.side("POST", "objects", {"objects": list(objs)})["objects"]

    def log(self, since=0):
        return self.side("GET", "log?since=%d" % since)

    def reset_log(self):
        self.side("POST", "reset-log")

    def faults(self, *rules):
        self.side("POST", "faults", {"rules": list(rules)})

    def rbac_deny(self, *rules):
        self.side("POST", "rbac", {"deny": list(rules)})

    def get(self, path):
        st, obj = self.call("GET", path)
        assert st == 200, (path, st, obj)
        return obj

    def node(self, name):
        return self.get("/api/v1/nodes/" + name)

    def pods(self, node=None, ns=None):
        path = "/api/v1/namespaces/%s/pods" % ns if ns else "/api/v1/pods"
        if node:
            path += "?fieldSelector=spec.nodeName%3D" + node
        return self.get(path)["items"]

    # -- kubeconfig ----------------------------------------------------------------------------

    def kubeconfig(self, path, user=None, ca=None, ca_data=False, server=None):
        """Writes a kubeconfig for this emulator. @user is the users[0].user mapping (default:
        the admin token)."""
        cluster = {"server": server or self.url}
        ca = ca or self.certs.ca
        if ca_data:
            cluster["certificate-authority-data"] = base64.b64encode(open(ca, "rb").read()).decode()
        else:
            cluster["certificate-authority"] = ca
        doc = {"apiVersion": "v1", "kind": "Config", "current-context": "emu",
               "clusters": [{"name": "emu", "cluster": cluster}],
               "users": [{"name": "u", "user": user if user is not None else {"token": TOKEN}}],
               "contexts": [{"name": "emu", "context": {"cluster": "emu", "user": "u"}}],
               "preferences": {}}
        with open(path, "w") as f:
            json.dump(doc, f, indent=1)  # JSON is YAML: kubectl and our libyaml parser read it
        return path


def kubectl_path():
    """The pinned kubectl from tests/tools/get-kube-tools.sh, or None."""
    for p in (os.path.join(ROOT, "build", "tools", "bin", "kubectl"),):
        if os.access(p, os.X_OK):
            return p
    r = subprocess.run([os.path.join(ROOT, "tests", "tools", "get-kube-tools.sh")],
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    p = os.path.join(ROOT, "build", "tools", "bin", "kubectl")
    if r.returncode == 0 and os.access(p, os.X_OK):
        return p
    return shutil.which("kubectl")


def kubectl(kc, *args, timeout=60, check=True):
    env = dict(os.environ, KUBECONFIG=kc, HOME=os.path.dirname(kc))
    r = subprocess.run([kubectl_path(), "--request-timeout=20s", *args], env=env,
                       capture_output=True, text=True, timeout=timeout)
    if check and r.returncode != 0:
        raise AssertionError("kubectl %s failed (%d): %s%s" % (" ".join(args), r.returncode,
                                                             r.stdout, r.stderr))
    return r


# -- objects -----------------------------------------------------------------------------------

def node_obj(name, labels=None, unschedulable=False, conditions=None):
    return {"kind": "Node", "apiVersion": "v1",
            "metadata": {"name": name, "labels": dict({"kubernetes.io/hostname": name},
                                                      **(labels or {}))},
            "spec": {"unschedulable": True} if unschedulable else {},
            "status": {"conditions": conditions or [
                {"type": "Ready", "status": "True", "reason": "KubeletReady",
                 "message": "kubelet is posting ready status",
                 "lastHeartbeatTime": "2024-01-01T00:00:00Z",
                 "lastTransitionTime": "2024-01-01T00:00:00Z"}],
                "nodeInfo": {"kubeletVersion": "v1.31.0"},
                "capacity": {"cpu": "2", "memory": "4Gi", "pods": "110"},
                "allocatable": {"cpu": "2", "memory": "4Gi", "pods": "110"}}}


def pod_obj(name, node, ns="default", owner=None, labels=None, emptydir=False, mirror=False,
            phase="Running"):
    md = {"name": name, "namespace": ns, "labels": labels or {"app": name}}
    if owner:
        kind, oname = owner
        md["ownerReferences"] = [{"apiVersion": "apps/v1", "kind": kind, "name": oname,
                                  "uid": "uid-" + oname, "controller": True}]
    if mirror:
        md["annotations"] = {"kubernetes.io/config.mirror": "abc"}
    spec = {"nodeName": node, "containers": [{"name": "c", "image": "busybox"}]}
    if emptydir:
        spec["volumes"] = [{"name": "scratch", "emptyDir": {}}]
    return {"kind": "Pod", "apiVersion": "v1", "metadata": md, "spec": spec,
            "status": {"phase": phase, "containerStatuses": [
                {"name": "c", "ready": True, "restartCount": 0, "image": "busybox",
                 "imageID": "", "state": {"running": {}}}]}}


def ds_obj(name, ns="default"):
    return {"kind": "DaemonSet", "apiVersion": "apps/v1",
            "metadata": {"name": name, "namespace": ns},
            "spec": {"selector": {"matchLabels": {"app": name}},
                     "template": {"metadata": {"labels": {"app": name}},
                                  "spec": {"containers": [{"name": "c", "image": "x"}]}}}}


def rs_obj(name, ns="default"):
    return {"kind": "ReplicaSet", "apiVersion": "apps/v1",
            "metadata": {"name": name, "namespace": ns},
            "spec": {"replicas": 1, "selector": {"matchLabels": {"app": name}}}}


def pdb_obj(name, labels, min_available, ns="default"):
    return {"kind": "PodDisruptionBudget", "apiVersion": "policy/v1",
            "metadata": {"name": name, "namespace": ns},
            "spec": {"minAvailable": min_available, "selector": {"matchLabels": labels}}}


# -- driving the agent: `cpuzombie agent --once` on a fixture node ----------------------------

# One second of sampling; no core can stay saturated for an hour within it, so the cpu check is
# False (NoCoreSaturation) on this shared machine whatever the other tests burn.
AGENT_CPU = "cpu:\n  inline_window: 1s\n  min_burst: 1h\n"


def agent_tree(tmp, case="v1-zombies"):
    """A fixture node: the memcg capture @case (v1-zombies: 12840 dying memcgs; v1-healthy) with
    the real /proc/stat linked in for the sampler, and no network interface of its own."""
    dst = os.path.join(str(tmp), "tree-" + case)
    if not os.path.isdir(dst):    # built aside and renamed: callers may race (threads)
        part = "%s.part-%d-%d" % (dst, os.getpid(), threading.get_ident())
        shutil.copytree(os.path.join(ROOT, "tests", "fixtures", "memcg", case), part,
                        symlinks=True)
        os.symlink("/proc/stat", os.path.join(part, "proc", "stat"))
        try:
            os.rename(part, dst)
        except OSError:
            shutil.rmtree(part)   # another caller was first
    return dst


def unusable_state_dir(tmp):
    """A state dir under a regular file: the ena check cannot read its state (Unknown, as on a
    node whose state mount is broken); the memcg and cpu checks do not need one."""
    blocker = os.path.join(str(tmp), "state-blocked")
    if not os.path.exists(blocker):
        open(blocker, "w").close()
    return os.path.join(blocker, "state")


def agent_once_args(binary, cfg, tree, tmp, name="n1", state=None):
    """`agent --once` on fixture node @tree with run and state dirs of its own under @tmp: one
    sampling window, the checks, then one Kubernetes cycle whose summary line is stdout."""
    return [binary, "--config", cfg, "--proc-root", os.path.join(tree, "proc"),
            "--sys-root", os.path.join(tree, "sys"),
            "--state-dir", state or os.path.join(str(tmp), "state-" + name),
            "--run-dir", os.path.join(str(tmp), "run-" + name), "agent", "--once"]

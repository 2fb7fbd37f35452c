# SPDX-License-Identifier: MIT
"""The real control plane on 127.0.0.1, for tests and benchmarks: etcd, kube-apiserver,
kube-controller-manager and kwok, built by build.sh (versions.sh pins them).

ControlPlane(workdir).start() makes a CA of its own (openssl), the API server's serving
certificate, an admin client certificate (system:masters: for setting up fixtures only; what is
under test authenticates as a ServiceAccount) and a ServiceAccount signing key; starts etcd,
then kube-apiserver (--authorization-mode=Node,RBAC, NodeRestriction, ServiceAccount tokens that
carry the node name of the pod they are bound to, ValidatingAdmissionPolicy as the release has
it), then kube-controller-manager (disruption: PDB status; garbage collector; service accounts
and their tokens; namespace deletion), then kwok (fake kubelets for the nodes annotated
kwok.x-k8s.io/node=fake: they report Ready, their pods run, deleted pods go). stop() ends each by
PID and removes its data. A port in use or a process that dies is an error carrying the last
lines of that process's log.
"""

import base64
import contextlib
import json
import os
import shutil
import socket
import ssl
import subprocess
import sys
import time
import urllib.error
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
# the tests' one process helper: start with a log of its own, stop by PID, the log's tail
sys.path.insert(0, os.path.join(HERE, "..", "..", "e2e"))
from proc_helpers import Proc, die_with_parent, tail  # noqa: E402,F401  (Proc, tail: ours too)

KWOK_ANNOTATION = "kwok.x-k8s.io/node"


# Set by the e2e conftest: a context manager under which a build still running after
# SLOW_BUILD seconds is waited for. A host test that needs a component make test's node stage
# is still building lets the host lock go meanwhile (a cold run measured a module holding it
# for 5m40s, mostly waiting here), so the other sessions' host modules go on.
WHILE_BUILDING = None
SLOW_BUILD = 2.0


def build(components=("all",), env=None, script=os.path.join(HERE, "build.sh")):
    """Runs @script (build.sh here, or the node's: builds what is missing, says so on stderr);
    returns {name: bin_dir}."""
    p = subprocess.Popen([script, *components], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True, env=env)
    try:
        out, err = p.communicate(timeout=SLOW_BUILD)
    except subprocess.TimeoutExpired:
        with (WHILE_BUILDING or contextlib.nullcontext)():
            out, err = p.communicate()
    if p.returncode != 0:
        raise RuntimeError("%s failed:\n%s" % (os.path.relpath(script, os.path.join(
            HERE, "..", "..", "..")), err[-4000:]))
    if err.strip():
        print(err.strip(), flush=True)
    return dict(line.split("=", 1) for line in out.split())


def is_built(components, script=os.path.join(HERE, "build.sh")):
    """Whether @script has every one of @components built and cached (it builds nothing)."""
    p = subprocess.run([script, *components], capture_output=True, text=True,
                       env=dict(os.environ, CZ_KUBE_QUERY="1"), timeout=60)
    return p.returncode == 0


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def openssl(cwd, *args):
    subprocess.run(["openssl", *args], cwd=cwd, check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)


def make_cert(d, name, cn, org=None, server=False, ca="ca"):
    """A P-256 key and a certificate signed by @ca in @d: (cert, key)."""
    ext = os.path.join(d, name + ".ext")
    with open(ext, "w") as f:
        if server:
            # 10.96.0.1: the `kubernetes` Service's IP, what pods on a real node dial
            f.write("subjectAltName=IP:127.0.0.1,DNS:localhost,IP:::1,IP:10.96.0.1,"
                    "DNS:kubernetes.default.svc\nextendedKeyUsage=serverAuth\n")
        else:
            f.write("extendedKeyUsage=clientAuth\n")
    subj = "/CN=" + cn + ("/O=" + org if org else "")
    openssl(d, "req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
            "-keyout", name + ".key", "-out", name + ".csr", "-subj", subj)
    openssl(d, "x509", "-req", "-in", name + ".csr", "-CA", ca + ".pem", "-CAkey", ca + ".key",
            "-CAcreateserial", "-out", name + ".pem", "-days", "2", "-extfile", ext)
    return os.path.join(d, name + ".pem"), os.path.join(d, name + ".key")


def make_ca(d, name):
    openssl(d, "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
            "-nodes", "-keyout", name + ".key", "-out", name + ".pem", "-days", "2",
            "-subj", "/CN=" + name)
    return os.path.join(d, name + ".pem")


def call(url, ctx, method, body=None, ctype="application/json", headers=None, timeout=30):
    """One HTTPS call with TLS context @ctx: (status, parsed JSON, or the raw bytes of an answer
    that is not JSON, e.g. /readyz's "ok"). @body: a JSON value, or bytes as they are."""
    data = json.dumps(body).encode() if body is not None and not isinstance(body, bytes) \
        else body
    req = urllib.request.Request(url, data=data, method=method)
    if data is not None:
        req.add_header("Content-Type", ctype)
    for k, v in (headers or {}).items():
        req.add_header(k, v)
    try:
        with urllib.request.urlopen(req, context=ctx, timeout=timeout) as r:
            raw, status = r.read(), r.status
    except urllib.error.HTTPError as e:
        raw, status = e.read(), e.code
    try:
        return status, json.loads(raw) if raw else None
    except ValueError:
        return status, raw


class ControlPlane:
    def __init__(self, workdir, bins=None):
        self.dir = workdir
        self.bins = bins
        self.procs = []
        os.makedirs(workdir, exist_ok=True)

    # -- start and stop ----------------------------------------------------------------------

    def start(self):
        if self.bins is None:
            self.bins = build()
        try:
            self._certs()
            self._etcd()
            self._apiserver()
            self._kubeconfigs()
            self._controller_manager()
            self._kwok()
            self._wait_ready()
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self):
        for p in reversed(self.procs):
            p.stop()
        self.procs = []
        for d in ("etcd-data",):
            shutil.rmtree(os.path.join(self.dir, d), ignore_errors=True)

    def _certs(self):
        d = self.pki = os.path.join(self.dir, "pki")
        os.makedirs(d, exist_ok=True)
        self.ca = make_ca(d, "ca")
        self.server_cert, self.server_key = make_cert(d, "apiserver", "kube-apiserver",
                                                      server=True)
        self.admin_cert, self.admin_key = make_cert(d, "admin", "cz-test-admin",
                                                    org="system:masters")
        self.proxy_cert, self.proxy_key = make_cert(d, "proxy", "faultproxy", server=True)
        openssl(d, "genrsa", "-out", "sa.key", "2048")
        openssl(d, "rsa", "-in", "sa.key", "-pubout", "-out", "sa.pub")
        self.sa_key = os.path.join(d, "sa.key")
        self.sa_pub = os.path.join(d, "sa.pub")

    def _start(self, name, args, port=None, env=None):
        if port is not None:
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", port)) == 0:
                    raise RuntimeError("%s: port 127.0.0.1:%d is in use" % (name, port))
        p = Proc(name, args, self.dir, env, preexec_fn=die_with_parent)
        self.procs.append(p)
        return p

    def _etcd(self):
        self.etcd_port, peer = free_port(), free_port()
        self.etcd_url = "http://127.0.0.1:%d" % self.etcd_port
        self.etcd = self._start("etcd", [
            os.path.join(self.bins["etcd"], "etcd"), "--name", "cz",
            "--data-dir", os.path.join(self.dir, "etcd-data"),
            "--listen-client-urls", self.etcd_url, "--advertise-client-urls", self.etcd_url,
            "--listen-peer-urls", "http://127.0.0.1:%d" % peer,
            "--initial-advertise-peer-urls", "http://127.0.0.1:%d" % peer,
            "--initial-cluster", "cz=http://127.0.0.1:%d" % peer,
            "--unsafe-no-fsync", "--quota-backend-bytes", str(2 << 30),
            "--log-level", "warn"], self.etcd_port)
        self._wait(lambda: self._etcd_call("/health"), self.etcd, 30)

    def _etcd_call(self, path, body=None):
        req = urllib.request.Request(self.etcd_url + path,
                                     data=json.dumps(body).encode() if body is not None else None)
        with urllib.request.urlopen(req, timeout=10) as r:
            return json.loads(r.read())

    def compact_etcd(self):
        """Compacts etcd at its current revision: continue tokens from before become 410."""
        rev = int(self._etcd_call("/v3/kv/range", {"key": base64.b64encode(b"/").decode()})
                  ["header"]["revision"])
        self._etcd_call("/v3/kv/compaction", {"revision": rev, "physical": True})
        return rev

    def restart_apiserver(self):
        """Stops kube-apiserver and starts it again on the same port (etcd keeps the data):
        every watch ends, every client reconnects."""
        self.apiserver.stop()
        self.procs.remove(self.apiserver)
        self._apiserver(self.port)

    def _apiserver(self, port=None):
        self.port = port or free_port()
        self.url = "https://127.0.0.1:%d" % self.port
        self.apiserver = self._start("kube-apiserver", [
            os.path.join(self.bins["kube"], "kube-apiserver"),
            "--etcd-servers", self.etcd_url,
            "--bind-address", "127.0.0.1", "--advertise-address", "127.0.0.1",
            "--secure-port", str(self.port),
            "--tls-cert-file", self.server_cert, "--tls-private-key-file", self.server_key,
            "--client-ca-file", self.ca,
            "--authorization-mode", "Node,RBAC",
            "--enable-admission-plugins", "NodeRestriction",
            "--service-account-issuer", "https://kubernetes.default.svc",
            "--service-account-key-file", self.sa_pub,
            "--service-account-signing-key-file", self.sa_key,
            "--api-audiences", "https://kubernetes.default.svc",
            "--service-cluster-ip-range", "10.96.0.0/24",
            "--allow-privileged=true", "--profiling=false",
            "--cert-dir", os.path.join(self.dir, "apiserver-certs"),
            "--audit-policy-file", self._audit_policy(),
            "--audit-log-path", self.audit_log, "--audit-log-format", "json",
            "--audit-log-mode", "blocking",
            # the "kubernetes" Service's endpoints would name 127.0.0.1, which the
            # endpoint reconciler refuses: nothing here needs them
            "--endpoint-reconciler-type", "none",
            *self._feature_gates(),
            "--event-ttl", "1h", "--v", "1"], self.port)
        self.ssl = ssl.create_default_context(cafile=self.ca)
        self.ssl.load_cert_chain(self.admin_cert, self.admin_key)
        self._wait(lambda: self.raw("GET", "/readyz")[0] == 200, self.apiserver, 90)

    def _feature_gates(self):
        """From 1.34 (beta, on by default) the server answers a list's later pages from
        snapshots in its watch cache, so a continue token outlives an etcd compaction there;
        the tests of an expired continue token want the 410 a client meets once its pages fall
        out of that cache. Off, continue pages are read from etcd, as through 1.33: a
        compaction between two pages is the real 410."""
        v = self.version()
        return ["--feature-gates=ListFromCacheSnapshot=false"] if v >= (1, 33) else []

    def version(self):
        """(major, minor) of the Kubernetes the binaries were built at (versions.sh)."""
        built = open(os.path.join(os.path.dirname(self.bins["kube"]), ".built")).read().split()[0]
        major, minor = built.lstrip("v").split(".")[:2]
        return int(major), int(minor)

    def _audit_policy(self):
        """The server's own record of who asked what and what it answered (level Metadata),
        for tests that talk to it directly (client certificates) or assert a refusal; the
        admin (fixtures, kwok, the controller manager) is left out."""
        self.audit_log = os.path.join(self.dir, "audit.log")
        path = os.path.join(self.dir, "audit-policy.yaml")
        with open(path, "w") as f:
            f.write("apiVersion: audit.k8s.io/v1\nkind: Policy\nomitStages: [RequestReceived]\n"
                    "rules:\n- level: None\n  userGroups: [\"system:masters\"]\n"
                    "- level: None\n  users: [\"system:apiserver\"]\n"
                    "- level: None\n  nonResourceURLs: [\"/healthz*\", \"/readyz*\", \"/livez*\"]\n"
                    "- level: Metadata\n")
        return path

    def audit(self, since=0):
        """The audit events after byte offset @since: (events, next offset). Each event has
        user.username, verb, requestURI, objectRef, responseStatus.code."""
        try:
            with open(self.audit_log, "rb") as f:
                f.seek(since)
                data = f.read()
        except FileNotFoundError:
            return [], since
        end = data.rfind(b"\n") + 1
        return [json.loads(l) for l in data[:end].splitlines() if l.strip()], since + end

    def audit_mark(self):
        try:
            return os.path.getsize(self.audit_log)
        except FileNotFoundError:
            return 0

    def _kubeconfigs(self):
        self.admin_kubeconfig = self.kubeconfig(os.path.join(self.dir, "admin.kubeconfig"),
                                                {"client-certificate": self.admin_cert,
                                                 "client-key": self.admin_key})

    def _controller_manager(self):
        self.kcm = self._start("kube-controller-manager", [
            os.path.join(self.bins["kube"], "kube-controller-manager"),
            "--kubeconfig", self.admin_kubeconfig,
            "--controllers", "disruption,garbagecollector,serviceaccount,"
                             "serviceaccount-token,namespace",
            "--service-account-private-key-file", self.sa_key, "--root-ca-file", self.ca,
            "--leader-elect=false", "--bind-address", "127.0.0.1", "--secure-port", "0",
            "--use-service-account-credentials=false", "--v", "1"])

    def _kwok(self):
        self.kwok = self._start("kwok", [
            os.path.join(self.bins["kwok"], "kwok"), "--kubeconfig", self.admin_kubeconfig,
            "--manage-all-nodes=false",
            "--manage-nodes-with-annotation-selector", KWOK_ANNOTATION + "=fake",
            "--cidr", "10.244.0.0/16", "--node-ip", "127.0.0.1",
            "--node-lease-duration-seconds", "0",
            "--config", os.path.join(HERE, "kwok-stages.yaml")],
            env=dict(os.environ, HOME=self.dir))     # no ~/.kwok of the machine's

    def _wait_ready(self):
        # The default ServiceAccount is the serviceaccount controller's: pods can be created
        # (ServiceAccount admission) once it is there.
        def sa():
            return self.raw("GET", "/api/v1/namespaces/default/serviceaccounts/default")[0] == 200
        self._wait(sa, self.kcm, 60)
        for p in self.procs:
            p.check()

    def _wait(self, ok, proc, seconds):
        deadline = time.monotonic() + seconds
        while True:
            proc.check()
            try:
                if ok():
                    return
            except (OSError, ValueError, urllib.error.URLError):
                pass
            if time.monotonic() > deadline:
                raise RuntimeError("%s not ready after %d s; last lines of %s:\n%s" %
                                   (proc.name, seconds, proc.log, tail(proc.log)))
            time.sleep(0.2)

    def check(self):
        for p in self.procs:
            p.check()

    # -- calls as admin (fixtures only) ------------------------------------------------------

    def raw(self, method, path, body=None, ctype="application/json", headers=None, timeout=30):
        """(status, parsed JSON or raw bytes) of one call as the admin."""
        return call(self.url + path, self.ssl, method, body, ctype, headers, timeout)

    def kubeconfig(self, path, user, server=None, ca=None, ca_data=False, name="cz"):
        cluster = {"server": server or self.url}
        ca = ca or self.ca
        if ca_data:
            cluster["certificate-authority-data"] = base64.b64encode(
                open(ca, "rb").read()).decode()
        else:
            cluster["certificate-authority"] = ca
        doc = {"apiVersion": "v1", "kind": "Config", "current-context": name,
               "clusters": [{"name": name, "cluster": cluster}],
               "users": [{"name": "u", "user": user}],
               "contexts": [{"name": name, "context": {"cluster": name, "user": "u"}}],
               "preferences": {}}
        with open(path, "w") as f:
            json.dump(doc, f, indent=1)      # JSON is YAML: kubectl and our libyaml read it
        return path

    def token(self, ns, sa, pod=None, seconds=3600, audiences=None):
        """A ServiceAccount token from the TokenRequest API, bound to @pod (a dict with
        metadata.name and uid) when given: then it carries the pod's node name, as in a pod."""
        spec = {"expirationSeconds": seconds}
        if audiences:
            spec["audiences"] = audiences
        if pod is not None:
            spec["boundObjectRef"] = {"kind": "Pod", "apiVersion": "v1",
                                      "name": pod["metadata"]["name"],
                                      "uid": pod["metadata"]["uid"]}
        st, obj = self.raw("POST", "/api/v1/namespaces/%s/serviceaccounts/%s/token" % (ns, sa),
                           {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
                            "spec": spec})
        if st != 201:
            raise RuntimeError("TokenRequest for %s/%s: %s %s" % (ns, sa, st, obj))
        return obj["status"]["token"]

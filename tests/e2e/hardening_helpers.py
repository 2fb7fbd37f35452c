# SPDX-License-Identifier: MIT
"""Helpers for the hardening tests (bad inputs, valgrind, privileges, crash safety).

RawApi: a tiny TLS server on 127.0.0.1 that answers each request from a Python function with
arbitrary bytes, slowly if asked: the hostile API server that the real control plane
(tests/tools/kube) cannot be made to be, since kube-apiserver only ever sends well-formed
objects and the fault proxy in front of it only delays, cuts or replaces whole answers (malformed
JSON, a Content-Length that lies, bytes that are not UTF-8, a body that never ends). Its serving
certificate is signed by the control plane's CA (the `certs` fixture), so the client under test
trusts it as it trusts the real server. Each connection is served by its own thread; the server
stops by itself when the test calls stop() (no process is left behind: it runs in the test's
process).
"""
import json
import os
import socket
import ssl
import subprocess
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FIXTURES = os.path.join(ROOT, "tests", "fixtures")


def bin_path():
    return os.environ.get("CZ_BIN") or os.path.join(ROOT, "build", "cpuzombie")


class Reply:
    """What RawApi sends: status, body bytes, and optionally a drip (bytes per second)."""

    def __init__(self, status=200, body=b"", ctype="application/json", drip=None,
                 close=False, length=None, encoding=None):
        self.status, self.ctype, self.drip, self.close = status, ctype, drip, close
        self.encoding = encoding            # a Content-Encoding header (the body as given)
        self.body = body if isinstance(body, bytes) else json.dumps(body).encode()
        self.length = len(self.body) if length is None else length


def server_cert(certs):
    """A serving certificate for 127.0.0.1 signed by @certs' CA (ca.pem and ca.key in
    certs.dir: kube_helpers.Certs copies the control plane's), made once per directory."""
    if getattr(certs, "server_cert", None):
        return certs.server_cert, certs.server_key
    import kube_helpers as kh
    cert, key = (os.path.join(certs.dir, "rawapi" + ext) for ext in (".pem", ".key"))
    if not os.path.exists(cert):
        cert, key = kh.make_cert(certs.dir, "rawapi", "rawapi", server=True)
    return cert, key


class RawApi:
    def __init__(self, certs, handler):
        self.handler = handler
        self.requests = []
        self.ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        cert, key = server_cert(certs)
        self.ctx.load_cert_chain(cert, key)
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.sock.settimeout(0.2)
        self.port = self.sock.getsockname()[1]
        self.url = "https://127.0.0.1:%d" % self.port
        self.stopping = False
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def stop(self):
        self.stopping = True
        self.thread.join(5)
        self.sock.close()

    def _serve(self):
        while not self.stopping:
            try:
                c, _ = self.sock.accept()
            except (socket.timeout, OSError):
                continue
            threading.Thread(target=self._conn, args=(c,), daemon=True).start()

    def _conn(self, c):
        try:
            c.settimeout(10)
            s = self.ctx.wrap_socket(c, server_side=True)
            f = s.makefile("rb")
            while not self.stopping:
                line = f.readline(65536)
                if not line:
                    break
                method, path = line.decode("latin-1").split()[:2]
                n = 0
                while True:
                    h = f.readline(65536).decode("latin-1").strip()
                    if not h:
                        break
                    if h.lower().startswith("content-length:"):
                        n = int(h.split(":", 1)[1])
                body = f.read(n) if n else b""
                self.requests.append((method, path, body))
                r = self.handler(method, path, body)
                head = ("HTTP/1.1 %d X\r\nContent-Type: %s\r\nContent-Length: %d\r\n%s%s\r\n" %
                        (r.status, r.ctype, r.length,
                         "Content-Encoding: %s\r\n" % r.encoding if r.encoding else "",
                         "Connection: close\r\n" if r.close else "")).encode()
                s.sendall(head)
                if r.drip:
                    for i in range(0, len(r.body)):
                        if self.stopping:
                            return
                        s.sendall(r.body[i:i + 1])
                        time.sleep(1.0 / r.drip)
                else:
                    s.sendall(r.body)
                if r.close:
                    break
        except (OSError, ssl.SSLError, ValueError, IndexError):
            pass
        finally:
            c.close()


def kubeconfig(path, url, ca, token="s3cr3t-admin-token"):
    doc = {"apiVersion": "v1", "kind": "Config", "current-context": "c",
           "clusters": [{"name": "c", "cluster": {"server": url, "certificate-authority": ca}}],
           "users": [{"name": "u", "user": {"token": token}}],
           "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}]}
    with open(path, "w") as f:
        json.dump(doc, f)
    return path


def node(name, conditions=None, **extra):
    n = {"kind": "Node", "apiVersion": "v1",
         "metadata": {"name": name, "uid": "u-1", "resourceVersion": "7", "labels": {}},
         "spec": {}, "status": {"conditions": conditions if conditions is not None else [
             {"type": "Ready", "status": "True", "reason": "KubeletReady", "message": "ok",
              "lastHeartbeatTime": "2024-01-01T00:00:00Z",
              "lastTransitionTime": "2024-01-01T00:00:00Z"}]}}
    n.update(extra)
    return n


def zombie_cond(since="2024-01-01T00:00:00Z"):
    return {"type": "MemcgZombieLeak", "status": "True", "reason": "ZombieMemcgsHigh",
            "message": "m", "lastHeartbeatTime": since, "lastTransitionTime": since}


def drop_caps_cmd(*caps):
    """setpriv prefix that runs a command as root without @caps (names like 'dac_override'):
    removed from the bounding set (so exec cannot regain them) and from the inheritable set."""
    spec = ",".join("-" + c for c in caps)
    return ["setpriv", "--inh-caps=" + spec, "--bounding-set=" + spec, "--"]


def run(args, timeout=60, env=None, prefix=()):
    e = dict(os.environ)
    e.setdefault("ASAN_OPTIONS", "detect_leaks=1:abort_on_error=0")
    e.setdefault("UBSAN_OPTIONS", "print_stacktrace=1:halt_on_error=1")
    if env:
        e.update(env)
    t = time.monotonic()
    p = subprocess.run([*prefix, bin_path(), *args], capture_output=True, text=True,
                       errors="replace", timeout=timeout, env=e)
    p.elapsed = time.monotonic() - t
    return p


def assert_no_sanitizer(err):
    for bad in ("ERROR: AddressSanitizer", "runtime error:", "LeakSanitizer", "Assertion",
                "Segmentation fault"):
        assert bad not in err, err

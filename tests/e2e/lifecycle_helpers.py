# SPDX-License-Identifier: MIT
"""Watching a node's conditions through a restart, on the real API server: every version of
the node the server stores is seen (a watch stream, not a poll that could miss a short False),
as the admin (looking, not under test)."""

import http.client
import json
import threading
import urllib.parse


class NodeWatch:
    """A watch of node @name from now on: .statuses(type) -> the status of condition @type in
    every version of the node seen ("" while the node has no such condition)."""

    def __init__(self, cp, name):
        self.cp, self.name = cp, name
        self.seen = []          # [{type: (status, reason, message)}] per version
        self.error = None
        self._stop = threading.Event()
        u = urllib.parse.urlparse(cp.url)
        self.conn = http.client.HTTPSConnection(u.hostname, u.port, context=cp.ssl, timeout=600)
        q = urllib.parse.urlencode({"watch": "true", "fieldSelector": "metadata.name=" + name,
                                    "timeoutSeconds": "600", "allowWatchBookmarks": "false"})
        self.conn.request("GET", "/api/v1/nodes?" + q)
        self.resp = self.conn.getresponse()
        assert self.resp.status == 200, (self.resp.status, self.resp.read()[:500])
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self):
        try:
            while not self._stop.is_set():
                line = self.resp.readline()
                if not line:
                    return
                ev = json.loads(line)
                obj = ev.get("object", {})
                if ev.get("type") not in ("ADDED", "MODIFIED"):
                    continue
                conds = obj.get("status", {}).get("conditions", []) or []
                self.seen.append({c["type"]: (c.get("status"), c.get("reason"), c.get("message"))
                                  for c in conds})
        except Exception as e:    # noqa: BLE001 - reported by statuses()
            if not self._stop.is_set():
                self.error = e

    def statuses(self, ctype):
        assert self.error is None, self.error
        return [v.get(ctype, ("",))[0] for v in self.seen]

    def versions(self):
        return len(self.seen)

    def stop(self):
        self._stop.set()
        try:
            self.conn.sock.shutdown(2)
        except OSError:
            pass
        self.conn.close()
        self.thread.join(10)

"""Debian's headless Chromium driven through the DevTools protocol over a pipe
(--remote-debugging-pipe: commands on the browser's fd 3, answers on its fd 4, each message JSON
ended by a NUL), so the tests need no WebSocket client: load a page, evaluate in it, read the
console and the CSP violations it logged, and take a screenshot of one region."""
import base64
import json
import os
import select
import shutil
import subprocess
import tempfile
import time

CHROMIUM = shutil.which("chromium")
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--no-first-run", "--hide-scrollbars",
         "--remote-debugging-pipe"]


class Browser:
    def __init__(self, width=1300, height=900):
        self.prof = tempfile.mkdtemp(prefix="cz-cdp-")
        cmd_r, self._w = os.pipe()   # we write commands, the browser reads them on fd 3
        self._r, ans_w = os.pipe()   # the browser writes answers on fd 4, we read them

        def fds():  # through copies: dup2() onto the same number would keep O_CLOEXEC
            a, b = os.dup(cmd_r), os.dup(ans_w)
            os.dup2(a, 3)
            os.dup2(b, 4)

        self.p = subprocess.Popen(
            [CHROMIUM, *FLAGS, "--user-data-dir=" + self.prof,
             "--window-size=%d,%d" % (width, height), "about:blank"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            preexec_fn=fds, close_fds=False)
        os.close(cmd_r)
        os.close(ans_w)
        self._buf = b""
        self._id = 0
        self.events = []
        targets = self.call("Target.getTargets")["targetInfos"]
        page = next(t for t in targets if t["type"] == "page")
        self.session = self.call("Target.attachToTarget", targetId=page["targetId"],
                                 flatten=True)["sessionId"]
        for domain in ("Page", "Runtime", "Log"):
            self.call(domain + ".enable", session=True)
        self.call("Emulation.setDeviceMetricsOverride", session=True, width=width,
                  height=height, deviceScaleFactor=1, mobile=False)

    def _read(self, deadline):
        while b"\0" not in self._buf:
            left = deadline - time.time()
            assert left > 0, "no answer from chromium"
            r, _, _ = select.select([self._r], [], [], left)
            if r:
                chunk = os.read(self._r, 1 << 20)
                assert chunk, "chromium closed its pipe"
                self._buf += chunk
        msg, self._buf = self._buf.split(b"\0", 1)
        return json.loads(msg)

    def call(self, method, session=False, timeout=60, **params):
        self._id += 1
        msg = {"id": self._id, "method": method, "params": params}
        if session:
            msg["sessionId"] = self.session
        os.write(self._w, json.dumps(msg).encode() + b"\0")
        deadline = time.time() + timeout
        while True:
            m = self._read(deadline)
            if m.get("id") == self._id:
                assert "error" not in m, (method, m["error"])
                return m.get("result", {})
            self.events.append(m)

    def eval(self, expr):
        r = self.call("Runtime.evaluate", session=True, expression=expr, returnByValue=True,
                      awaitPromise=True)
        assert "exceptionDetails" not in r, r["exceptionDetails"]
        return r["result"].get("value")

    def open(self, url, ready="true", timeout=30):
        self.call("Page.navigate", session=True, url=url)
        deadline = time.time() + timeout
        while not self.eval("document.readyState === 'complete' && !!(%s)" % ready):
            assert time.time() < deadline, "page not ready: " + ready
            time.sleep(0.1)

    def log(self):
        """Console and log entries so far (CSP violations are logged as errors)."""
        out = []
        for m in self.events:
            if m.get("method") == "Log.entryAdded":
                out.append(m["params"]["entry"]["text"])
            elif m.get("method") == "Runtime.consoleAPICalled":
                out.append(" ".join(str(a.get("value")) for a in m["params"]["args"]))
            elif m.get("method") == "Runtime.exceptionThrown":
                out.append("exception: " + json.dumps(m["params"]["exceptionDetails"])[:500])
        return out

    def screenshot(self, path, x, y, w, h):
        data = self.call("Page.captureScreenshot", session=True, format="png",
                         captureBeyondViewport=True,
                         clip={"x": x, "y": y, "width": w, "height": h, "scale": 1})["data"]
        with open(path, "wb") as f:
            f.write(base64.b64decode(data))

    def close(self):
        try:
            self.call("Browser.close", timeout=10)
        except (AssertionError, OSError):
            pass
        try:
            self.p.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.p.kill()
            self.p.wait()
        os.close(self._w)
        os.close(self._r)
        shutil.rmtree(self.prof, ignore_errors=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

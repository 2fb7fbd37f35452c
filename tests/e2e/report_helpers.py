"""Helpers of the report/systemd/metrics end-to-end tests (issue 7).

UserManager: a real `systemd --user` manager started in a private mount namespace (`unshare -m`)
with a tmpfs over /run/systemd holding an empty `system` directory (the manager refuses to start
without it; nothing outside the namespace changes), its own XDG_RUNTIME_DIR and XDG_CONFIG_HOME,
and one deliberately crash-looping unit (Restart=always, StartLimitIntervalSec=0) pulled in by
default.target. Its private socket ($XDG_RUNTIME_DIR/systemd/private) is what cpuzombie's
systemd.bus is pointed at. Stopped by PID (SIGTERM, then SIGKILL), directories removed.
"""
import os
import shutil
import signal
import subprocess
import time

SYSTEMD = next((p for p in ("/lib/systemd/systemd", "/usr/lib/systemd/systemd")
                if os.access(p, os.X_OK)), None)

START = r'''set -e
mount -t tmpfs -o mode=0755 cpuzombie-test /run/systemd
mkdir /run/systemd/system
exec env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin XDG_RUNTIME_DIR="$1" XDG_CONFIG_HOME="$2" \
    HOME="$3" "$4" --user --log-target=console --log-level=warning
'''


class UserManager:
    def __init__(self, workdir, unit="cpuzombie-crashloop-%d.service" % os.getpid()):
        self.dir = os.path.join(str(workdir), "sdmgr")
        self.rt = os.path.join(self.dir, "rt")
        self.cfg = os.path.join(self.dir, "cfg")
        self.unit = unit
        self.proc = None

    @property
    def address(self):
        return "unix:path=" + os.path.join(self.rt, "systemd", "private")

    def __enter__(self):
        units = os.path.join(self.cfg, "systemd", "user")
        os.makedirs(os.path.join(units, "default.target.wants"))
        os.makedirs(self.rt, mode=0o700)
        with open(os.path.join(units, self.unit), "w") as f:
            f.write("[Unit]\nDescription=cpuzombie test: crash loop\nStartLimitIntervalSec=0\n"
                    "[Service]\nExecStart=/bin/false\nRestart=always\nRestartSec=100ms\n")
        os.symlink("../" + self.unit, os.path.join(units, "default.target.wants", self.unit))
        self.log = open(os.path.join(self.dir, "manager.log"), "w")
        self.proc = subprocess.Popen(["unshare", "-m", "--propagation", "private", "sh", "-c",
                                      START, "sh", self.rt, self.cfg, self.dir, SYSTEMD],
                                     stdout=self.log, stderr=subprocess.STDOUT)
        sock = os.path.join(self.rt, "systemd", "private")
        deadline = time.time() + 20
        while not os.path.exists(sock):
            if self.proc.poll() is not None or time.time() > deadline:
                self.__exit__()
                raise RuntimeError("systemd --user did not start: " +
                                   open(os.path.join(self.dir, "manager.log")).read())
            time.sleep(0.05)
        return self

    def nrestarts(self):
        p = subprocess.run(["systemctl", "--user", "show", "-p", "NRestarts", "--value",
                            self.unit], env=dict(os.environ, XDG_RUNTIME_DIR=self.rt),
                           capture_output=True, text=True, timeout=10)
        return int(p.stdout.strip() or 0)

    def wait_restarts(self, n, timeout=20):
        deadline = time.time() + timeout
        while self.nrestarts() < n:
            assert time.time() < deadline, "unit did not restart %d times" % n
            time.sleep(0.1)

    def __exit__(self, *exc):
        if self.proc and self.proc.poll() is None:
            # unshare exec'd sh exec'd the manager: this PID is systemd --user itself
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)
        if getattr(self, "log", None):
            self.log.close()
        shutil.rmtree(self.dir, ignore_errors=True)
        return False


def can_run_manager():
    return os.geteuid() == 0 and SYSTEMD and shutil.which("unshare") and shutil.which("systemctl")

"""Helpers for the tests of the incident as it happens: an agent on a private run
dir and the commands a person runs in the middle of a real burst."""
import os
import re
import shlex
import subprocess
import sys
import time

from test_cpu import nic_irqs_for_cpu  # noqa: F401  (the machine's own NIC IRQs of a core)
from test_profile import ZERO_PATH, cz, start_agent  # noqa: F401


def run_dirs(run_dir, state):
    return ["--run-dir", str(run_dir), "--state-dir", str(state)]


def cz_run(run_dir, state, *args, timeout=30):
    return subprocess.run(cz(*run_dirs(run_dir, state), *args), capture_output=True, text=True,
                          timeout=timeout)


def heartbeat_active(run_dir):
    """The heartbeat's "active" lines, split (the bursts going on as the agent sees them)."""
    try:
        text = (run_dir / "cpu-heartbeat").read_text()
    except OSError:
        return []
    return [l.split() for l in text.splitlines() if l.startswith("active ")]


def heartbeat_field(line, name):
    for f in line[6:]:
        if f.startswith(name + "="):
            return f[len(name) + 1:]
    return None


def hot_core():
    return os.cpu_count() - 1


# A burner whose name is hostile: ESC sequences a terminal would obey (OSC 0 sets the window
# title to "pwn", CSI 2J clears the screen), 12 bytes within the kernel's 15. It reads
# /dev/zero into one buffer like dd, so its core is in the kernel (read_zero/clear_user).
HOSTILE_COMM = b"\x1b]0;pwn\x07\x1b[2J"
HOSTILE_BURNER = r"""
import ctypes, os
ctypes.CDLL(None).prctl(15, ctypes.c_char_p(%r), 0, 0, 0)  # PR_SET_NAME
buf = bytearray(1 << 25)
f = open("/dev/zero", "rb", buffering=0)
while True:
    f.readinto(buf)
""" % HOSTILE_COMM


def burning_hostile(cpu):
    """cpu_helpers.burning_locked() with the hostile-named burner (the caller holds the lock)."""
    import cpu_helpers as ch

    return ch.burning_locked(cpu, f"{sys.executable} -c {shlex.quote(HOSTILE_BURNER)}")


class Tmux:
    """A tmux server of our own (its own socket: -L, killed by close()), one session running
    @argv in a window of @cols x @rows; its exit status is printed in the pane after it."""

    def __init__(self, argv, cols=200, rows=40):
        self.sock = "cz-top-%d-%d" % (os.getpid(), int(time.time() * 1000) % 100000)
        self.t = ["tmux", "-L", self.sock, "-f", "/dev/null"]
        # the exit status is printed when the command is gone (after its alternate screen)
        cmd = " ".join(shlex.quote(a) for a in argv) + '; echo "[exit $?]"; exec sleep 600'
        subprocess.run(self.t + ["new-session", "-d", "-s", "top", "-x", str(cols), "-y",
                                 str(rows), cmd], check=True, env=dict(os.environ, TERM="xterm"))

    def capture(self):
        return subprocess.run(self.t + ["capture-pane", "-p", "-t", "top"], capture_output=True,
                              text=True, check=True).stdout

    def keys(self, *k):
        subprocess.run(self.t + ["send-keys", "-t", "top", *k], check=True)

    def resize(self, cols, rows):
        subprocess.run(self.t + ["resize-window", "-t", "top", "-x", str(cols), "-y", str(rows)],
                       check=True)

    def fmt(self, f):
        return subprocess.run(self.t + ["display-message", "-p", "-t", "top", f],
                              capture_output=True, text=True, check=True).stdout.strip()

    def exit_status(self):
        """The command's exit status once it exited, else None."""
        m = re.search(r"^\[exit (\d+)\]$", self.capture(), re.M)
        return int(m.group(1)) if m else None

    def close(self):
        subprocess.run(self.t + ["kill-server"], capture_output=True)

"""Helpers for the tests of the incident as it happens (issue 27): an agent on a private run
dir and the commands a person runs in the middle of a real burst."""
import os
import subprocess

from test_cpu import nic_irqs_for_cpu  # noqa: F401  (the machine's own NIC IRQs of a core)
from test_profile import ZERO_PATH, cz, start_agent, stop  # noqa: F401


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

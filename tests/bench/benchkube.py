"""The real control plane for the Kubernetes benchmarks (bench_latency, bench_drain): started
in a directory of the benchmark's, the chart's RBAC applied, a Kube (tests/e2e/kube_helpers.py)
for fixtures, and everything stopped and removed afterwards. soak.py keeps its own lifecycle:
it starts the control plane inside a run it can stop from a signal."""
import contextlib
import os
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "e2e"))
import kube_helpers as kh  # noqa: E402


@contextlib.contextmanager
def control_plane(tmp):
    """Yields (cp, kube) on a control plane under @tmp; removes @tmp afterwards."""
    cp = kh.cluster.ControlPlane(os.path.join(tmp, "cp"))
    cp.start()
    kube = None
    try:
        kh.apply_chart_rbac(cp)
        kube = kh.Kube(cp, tmp)
        yield cp, kube
    finally:
        if kube:
            kube.stop()  # the fault proxy, then the fixtures
        cp.stop()
        shutil.rmtree(tmp, ignore_errors=True)


def start_agent(args, run_dir):
    """`cpuzombie ... agent` (@args) started, once its sampler wrote its heartbeat in
    @run_dir; stderr is a pipe. RuntimeError when it exits or writes none within 15 s."""
    p = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 15
    while not os.path.exists(os.path.join(run_dir, "cpu-heartbeat")):
        if p.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError("agent did not start: " + (p.communicate()[1] or ""))
        time.sleep(0.05)
    return p

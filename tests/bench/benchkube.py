"""The real control plane for the Kubernetes benchmarks (bench_latency, bench_drain): started
in a directory of the benchmark's, the chart's RBAC applied, a Kube (tests/e2e/kube_helpers.py)
for fixtures, and everything stopped and removed afterwards. soak.py keeps its own lifecycle:
it starts the control plane inside a run it can stop from a signal."""
import contextlib
import os
import shutil
import sys

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

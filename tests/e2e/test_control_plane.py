# SPDX-License-Identifier: MIT
"""The harness the Kubernetes tests stand on (tests/tools/kube): the control plane is the real
one at the pinned versions, a port in use or a process that dies is reported with the last lines
of its log, and the fault proxy does what the tests rely on it for."""

import os
import signal
import socket
import ssl
import subprocess
import sys
import time
import urllib.request

import pytest

import kube_helpers as kh


def test_the_server_is_the_real_one_at_the_pinned_version(control_plane):
    want = os.environ.get("KUBE_VERSION") or open(os.path.join(
        kh.ROOT, "tests", "tools", "kube", "versions.sh")).read().split(
        'KUBE_VERSION:=')[1].split('}')[0]
    st, v = control_plane.raw("GET", "/version")
    assert st == 200 and v["gitVersion"] == want, v
    # the controller manager is there: the serviceaccount controller made default's account
    st, _ = control_plane.raw("GET", "/api/v1/namespaces/default/serviceaccounts/default")
    assert st == 200


def test_a_port_in_use_is_named(tmp_path, control_plane):
    cp = kh.cluster.ControlPlane(str(tmp_path / "cp"), control_plane.bins)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        with pytest.raises(RuntimeError, match="port 127.0.0.1:%d is in use" % port):
            cp._start("etcd", ["/bin/true"], port)
    cp.stop()


def test_a_process_that_dies_is_reported_with_its_log(tmp_path, control_plane):
    cp = kh.cluster.ControlPlane(str(tmp_path / "cp"), control_plane.bins)
    cp._certs()
    cp._etcd()
    try:
        os.kill(cp.etcd.p.pid, signal.SIGKILL)
        cp.etcd.p.wait(10)
        with pytest.raises(RuntimeError) as e:
            cp.check()
        msg = str(e.value)
        assert "etcd exited with -9" in msg and cp.etcd.log in msg
        assert len(msg.splitlines()) > 2          # the log's last lines come with it
    finally:
        cp.stop()
    assert not os.path.exists(os.path.join(cp.dir, "etcd-data"))


def test_a_killed_session_leaves_no_server(tmp_path, control_plane):
    """A pytest killed outright (no teardown: `make test` stopped, CI's time limit) takes its
    control plane with it: etcd and kube-apiserver are started with die_with_parent."""
    script = tmp_path / "owner.py"
    script.write_text(
        "import os, sys\nsys.path.insert(0, %r)\nimport kube_helpers as kh\n"
        "cp = kh.cluster.ControlPlane(%r, %r)\ncp._certs()\ncp._etcd()\n"
        "print(cp.etcd.pid, flush=True)\nos._exit(0)\n"
        % (os.path.dirname(os.path.abspath(__file__)), str(tmp_path / "cp"), control_plane.bins))
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    pid = int(out.stdout.split()[-1])
    deadline = time.time() + 10
    while os.path.exists("/proc/%d" % pid) and time.time() < deadline:
        time.sleep(0.1)
    alive = os.path.exists("/proc/%d" % pid)
    if alive:  # the test's own clean-up, by PID
        os.kill(pid, signal.SIGKILL)
    assert not alive, "etcd (pid %d) outlived the session that started it" % pid


def test_an_expired_continue_token_is_a_real_410(kube):
    """Compacting etcd between two pages: the next page is refused by the real server."""
    kube.add(*[kh.node_obj("cpage-%d" % i) for i in range(3)])
    st, page = kube.call("GET", "/api/v1/nodes?limit=1")
    assert st == 200 and page["metadata"].get("continue")
    for i in range(3):      # writes after the list's revision, so there is something to compact
        kube.set_conditions("cpage-%d" % i, {"type": "Compacted", "status": "True",
                                              "reason": "R", "message": "m"})
    kube.cp.compact_etcd()
    st, obj = kube.call("GET", "/api/v1/nodes?limit=1&continue=" + page["metadata"]["continue"])
    assert st == 410, (st, obj)
    assert obj["reason"] == "Expired"


def test_the_proxy_logs_and_injects(kube, tmp_path):
    kube.add(kh.node_obj("proxied"))
    tok = kube.agent_token("proxied")
    kube.faults({"method": "GET", "path": "^/api/v1/nodes/proxied$", "status": 503, "count": 1})
    assert kube.call("GET", "/api/v1/nodes/proxied", token=tok)[0] == 503
    assert kube.call("GET", "/api/v1/nodes/proxied", token=tok)[0] == 200
    log = kube.log()
    assert [(e["status"], e["fault"]) for e in log] == [(None, "status 503"), (200, None)]
    assert log[-1]["user"] == "system:serviceaccount:%s:%s" % (kh.AGENT_NS, kh.AGENT_SA)
    # a reset mid-body: the client sees the connection end before the body does
    kube.faults({"path": "^/api/v1/nodes/proxied$", "reset_mid_body": True})
    req = urllib.request.Request(kube.url + "/api/v1/nodes/proxied",
                                 headers={"Authorization": "Bearer " + tok})
    with pytest.raises(Exception) as e:
        with urllib.request.urlopen(req, context=ssl.create_default_context(
                cafile=kube.cp.ca), timeout=10) as r:
            r.read()
    assert not isinstance(e.value, AssertionError)
    assert kube.log()[-1]["fault"] == "reset mid-body"

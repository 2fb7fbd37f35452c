# SPDX-License-Identifier: MIT
"""Bad-input catalogue, the credential side, against the real control plane
(tests/tools/kube, through the test's fault proxy), as the chart's agent ServiceAccount with a
token bound to its pod on the node:

- an exec credential plugin starts clean: the default signal mask and dispositions even when the
  agent's periodic thread (which blocks every signal) starts it, only fds 0-2 (stdin /dev/null),
  in a process group of its own that is killed as a whole when the plugin times out or ends, so
  nothing it started survives;
- a bearer token with a control character (CR/LF would start a header of its own) is refused with
  a clear error from every source: the kubeconfig's token, its tokenFile, an exec plugin's
  status.token, the in-cluster service-account token; no request carries it.
"""
import os
import socket
import subprocess
import time

import pytest

import kube_helpers as kh
from proc_helpers import stop

BIN = os.environ.get("CZ_BIN", os.path.join(kh.ROOT, "build", "cpuzombie"))
READY = {"type": "Ready", "status": "True", "reason": "KubeletReady", "message": "ok",
         "lastHeartbeatTime": "2024-01-01T00:00:00Z",
         "lastTransitionTime": "2024-01-01T00:00:00Z"}

def config(tmp, kc, timeout="5s", interval="1s"):
    p = os.path.join(str(tmp), "cz-n1.yaml")
    with open(p, "w") as f:
        f.write(kh.AGENT_CPU)
        f.write("kubernetes:\n  node_name: n1\n  kubeconfig: %s\n  timeout: %s\n" % (kc, timeout))
        f.write("agent:\n  set_conditions: true\n  check_interval: %s\n" % interval)
        f.write("remediation:\n  mode: dry-run\n  for: 1s\n  lease_namespace: cpuzombie\n")
    return p


def once(tmp, cfg, env=None, timeout=90):
    args = kh.agent_once_args(BIN, cfg, kh.agent_tree(tmp, "v1-healthy"), tmp)
    return subprocess.run(args, env=dict(os.environ, **(env or {})), capture_output=True,
                          text=True, timeout=timeout)


# who the plugins' token names: the chart's agent ServiceAccount (fault proxy log's user)
AGENT_USER = "system:serviceaccount:%s:%s" % (kh.AGENT_NS, kh.AGENT_SA)


def plugin(tmp, name, body, token="unused"):
    """An exec credential plugin: a shell script; $TOK is @token (a real ServiceAccount token
    where the plugin prints it: kube.agent_token(node))."""
    p = os.path.join(str(tmp), name)
    with open(p, "w") as f:
        f.write("#!/bin/sh\n" + body)
    os.chmod(p, 0o755)
    return {"exec": {"apiVersion": "client.authentication.k8s.io/v1", "command": p,
                     "env": [{"name": "TOK", "value": token}], "interactiveMode": "Never"}}


PRINT_TOKEN = ("printf '{\"apiVersion\":\"client.authentication.k8s.io/v1\","
               "\"kind\":\"ExecCredential\",\"status\":{\"token\":\"%s\"}}' \"$TOK\"\n")


def group_members(pgid):
    """Processes whose process group is @pgid (field 5 of /proc/PID/stat)."""
    out = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:    # bytes: a comm may be anything, even a UTF-8 character cut in two
            stat = open("/proc/%s/stat" % d, "rb").read()
        except OSError:
            continue
        fields = stat[stat.rindex(b")") + 2:].split()
        if int(fields[2]) == pgid:
            out.append(int(d))
    return out


def wait_gone(pgid, secs=10):
    deadline = time.monotonic() + secs
    while group_members(pgid) and time.monotonic() < deadline:
        time.sleep(0.1)
    return group_members(pgid)


# -- finding 7: the plugin's environment ------------------------------------------------------

def test_exec_plugin_starts_clean_from_the_running_agent(kube, tmp_path):
    """Started by the agent's periodic thread (every signal blocked there), with a socket and a
    pipe inherited by the agent: the plugin sees none of it."""
    kube.add(kh.node_obj("n1", conditions=[READY]))
    rec = tmp_path / "plugin-env"
    # mawk, not a shell: a shell blocks signals around its own forks and waits and resets the
    # mask of its children, so only the exec'd program itself can say what it was given
    awk = tmp_path / "get-token.awk"
    awk.write_text("#!/usr/bin/awk -f\n"
                   "BEGIN {\n"
                   "  while ((getline l < \"/proc/self/status\") > 0)\n"
                   "    if (l ~ /^(SigBlk|SigIgn|Pid):/) { split(l, kv, \":\"); st[kv[1]] = l }\n"
                   "  getline s < \"/proc/self/stat\"; split(s, f, \" \")\n"
                   "  close(\"/proc/self/status\"); close(\"/proc/self/stat\")\n"
                   "  split(st[\"Pid\"], p, \"\\t\")\n"
                   "  system(\"ls -l /proc/\" p[2] \"/fd/ > %s.fds\")\n"
                   "  print st[\"SigBlk\"] \"\\n\" st[\"SigIgn\"] \"\\npid \" p[2] \" pgid \" f[5] "
                   "> \"%s.tmp\"\n"
                   "  close(\"%s.tmp\"); system(\"mv %s.tmp %s\")\n"
                   "  printf \"{\\\"apiVersion\\\":\\\"client.authentication.k8s.io/v1\\\","
                   "\\\"kind\\\":\\\"ExecCredential\\\",\\\"status\\\":{\\\"token\\\":"
                   "\\\"%%s\\\"}}\", ENVIRON[\"TOK\"]\n"
                   "}\n" % (rec, rec, rec, rec, rec))
    awk.chmod(0o755)
    user = {"exec": {"apiVersion": "client.authentication.k8s.io/v1", "command": str(awk),
                     "env": [{"name": "TOK", "value": kube.agent_token("n1")}],
                     "interactiveMode": "Never"}}
    cfg = config(tmp_path, kube.kubeconfig(str(tmp_path / "kc"), user=user))
    leak = socket.socket()
    r, w = os.pipe()
    args = kh.agent_once_args(BIN, cfg, kh.agent_tree(tmp_path, "v1-healthy"), tmp_path)[:-1]
    p = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         pass_fds=(leak.fileno(), r, w))
    try:
        deadline = time.monotonic() + 60
        while not rec.exists():
            assert p.poll() is None, p.communicate()
            assert time.monotonic() < deadline, "the agent never ran the plugin"
            time.sleep(0.1)
    finally:
        _, out, err = stop(p, 30, strict=True, communicate=True)
        leak.close()
        os.close(r)
        os.close(w)
    text = rec.read_text()
    lines = dict(l.split(":", 1) for l in text.splitlines() if l.startswith("Sig"))
    assert int(lines["SigBlk"], 16) == 0, text          # the default mask, not the thread's
    assert int(lines["SigIgn"], 16) == 0, text          # default dispositions
    pid, pgid = [l.split() for l in text.splitlines() if l.startswith("pid ")][0][1::2]
    assert pid == pgid, text                             # a process group of its own
    fdtext = open(str(rec) + ".fds").read()
    fds = {int(l.split(" -> ")[0].split()[-1]): l.split(" -> ")[1]
           for l in fdtext.splitlines() if " -> " in l}
    text += fdtext
    script = str(awk)
    assert fds[0] == "/dev/null", text
    assert fds[1].startswith("pipe:"), text
    extra = {n: t for n, t in fds.items() if n > 2 and t != script}
    assert extra == {}, text                             # no socket, pipe or file of ours
    assert p.returncode == 0, err
    assert any(e["user"] == AGENT_USER and e["status"] == 200 for e in kube.log()), kube.log()


def test_exec_plugin_timeout_kills_its_whole_group(kube, tmp_path):
    """A plugin that never answers, with a child of its own: at the timeout both are killed."""
    kube.add(kh.node_obj("n1", conditions=[READY]))
    rec = tmp_path / "pgid"
    user = plugin(tmp_path, "hang.sh", "echo $$ > %s\nsleep 1000 &\nexec sleep 1000\n" % rec)
    cfg = config(tmp_path, kube.kubeconfig(str(tmp_path / "kc"), user=user), timeout="2s")
    t0 = time.monotonic()
    r = once(tmp_path, cfg)
    assert r.returncode == 2, (r.stdout, r.stderr)
    assert time.monotonic() - t0 < 60
    assert "ran longer than 2000ms" in r.stderr and "process group" in r.stderr, r.stderr
    assert wait_gone(int(rec.read_text())) == []         # no `sleep 1000` left under init
    assert [e for e in kube.log() if e["path"].startswith("/api/v1/nodes")] == []


def test_exec_plugin_leftover_child_is_killed_after_it_answers(kube, tmp_path):
    """A plugin that answers at once but leaves a background child (its stdout detached, so we
    do not wait for it): the child goes with the plugin's group."""
    kube.add(kh.node_obj("n1", conditions=[READY]))
    rec = tmp_path / "pgid"
    user = plugin(tmp_path, "daemonish.sh",
                  "echo $$ > %s\nsleep 1000 >/dev/null 2>&1 &\n" % rec + PRINT_TOKEN,
                  token=kube.agent_token("n1"))
    cfg = config(tmp_path, kube.kubeconfig(str(tmp_path / "kc"), user=user))
    r = once(tmp_path, cfg)
    assert r.returncode == 0, r.stderr
    assert wait_gone(int(rec.read_text())) == []
    assert kube.log() and all(e["user"] == AGENT_USER for e in kube.log()), kube.log()


# -- finding 8: control characters in tokens --------------------------------------------------

EVIL = "t\r\nX-Evil: injected"


def assert_refused(kube, r, what):
    assert r.returncode == 2, (r.stdout, r.stderr)
    assert "control characters" in r.stderr and what in r.stderr, r.stderr
    assert kube.log() == []                               # nothing reached the server
    assert "X-Evil" not in r.stdout


@pytest.mark.parametrize("tok", [EVIL, "t\nX", "t\rX", "t\x1b[2J", "t\x7f"],
                         ids=["crlf", "lf", "cr", "escape", "del"])
def test_kubeconfig_token_with_control_characters(kube, tmp_path, tok):
    kube.add(kh.node_obj("n1", conditions=[READY]))
    cfg = config(tmp_path, kube.kubeconfig(str(tmp_path / "kc"), user={"token": tok}))
    assert_refused(kube, once(tmp_path, cfg), "kubeconfig")


@pytest.mark.parametrize("tok", [EVIL + "\n", "t\rX\n", "\x00t"], ids=["crlf", "cr", "nul"])
def test_token_file_with_control_characters(kube, tmp_path, tok):
    kube.add(kh.node_obj("n1", conditions=[READY]))
    tf = tmp_path / "token"
    tf.write_bytes(tok.encode())
    cfg = config(tmp_path, kube.kubeconfig(str(tmp_path / "kc"), user={"tokenFile": str(tf)}))
    assert_refused(kube, once(tmp_path, cfg), str(tf))


def test_exec_plugin_token_with_control_characters(kube, tmp_path):
    kube.add(kh.node_obj("n1", conditions=[READY]))
    user = plugin(tmp_path, "evil.sh",
                  "printf '{\"apiVersion\":\"client.authentication.k8s.io/v1\","
                  "\"kind\":\"ExecCredential\",\"status\":{\"token\":\"t\\\\r\\\\nX-Evil: "
                  "exec\"}}'\n")
    cfg = config(tmp_path, kube.kubeconfig(str(tmp_path / "kc"), user=user))
    assert_refused(kube, once(tmp_path, cfg), "evil.sh")


def test_in_cluster_token_with_control_characters(kube, tmp_path, certs):
    kube.add(kh.node_obj("n1", conditions=[READY]))
    sa = tmp_path / "sa"
    sa.mkdir()
    (sa / "ca.crt").write_bytes(open(certs.ca, "rb").read())
    token = kube.agent_token("n1")        # as the kubelet mounts it: pod-bound, real
    (sa / "token").write_text(token + "\rX-Evil: in-cluster\n")
    env = {"KUBERNETES_SERVICE_HOST": "127.0.0.1", "KUBERNETES_SERVICE_PORT": str(kube.port),
           "CZ_SERVICEACCOUNT_DIR": str(sa)}
    cfg = config(tmp_path, "")
    assert_refused(kube, once(tmp_path, cfg, env=env), str(sa / "token"))
    (sa / "token").write_text(token + "\n")               # the same file, fixed: accepted
    r = once(tmp_path, cfg, env=env)
    assert r.returncode == 0, r.stderr
    assert kube.log() and kube.log()[-1]["user"] == AGENT_USER, kube.log()

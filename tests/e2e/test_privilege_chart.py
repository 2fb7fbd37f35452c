# SPDX-License-Identifier: MIT
"""Least privilege in the chart as rendered, read from real `helm template` output:
the default rendering mounts no socket that leads to host root and no writable host directory
outside cpuzombie's own; /proc and /sys are read-only recursively; each container has a token
only when it calls the API server; hostNetwork only for the ENA checks; NPD's metrics local;
metrics_textfile and reboot_sentinel mount their own directory only, and a system directory is
refused by the schema and by the binary's config check alike."""

import json
import re

import pytest
import yaml

import privilege_helpers as ph
from conftest import is_root
from deploy_helpers import CHART, VARIANTS, container, helm, kube_tools, one, pod_spec, render

STATE = "/var/lib/cpuzombie"
# the run dir: on the host's /run (tmpfs) so the burst history outlives a replaced pod; ours,
# below /run, whose other entries (sockets of dbus, systemd, containerd) stay refused
RUN = "/run/cpuzombie"
TOKEN_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"
# host paths whose mount gives a container root on the host, or the container runtime, or the
# kubelet's credentials, read-only or not
HOST_ROOT_WAYS = ("/run/dbus", "/var/run/dbus", "/run/systemd", "/run/containerd",
                  "/var/run/containerd", "/run/crio", "/var/run/docker.sock", "/run/docker.sock",
                  "/var/run", "/run", "/var/lib/kubelet", "/etc", "/", "/dev", "/root", "/boot")


@pytest.fixture(scope="module", autouse=True)
def tools():
    return kube_tools()


@pytest.fixture(scope="module")
def rendered():
    return {v: render(v)[1] for v in VARIANTS}


# /sys in the subtrees read, each at its place under /host/sys
SYS_DEFAULT = {"host-sys-fs-cgroup": ("/sys/fs/cgroup", "Directory"),
               "host-sys-class-net": ("/sys/class/net", "Directory"),
               "host-sys-devices": ("/sys/devices", "Directory")}


def _sys_mounts(spec):
    """{container: {mountPath under /host/sys: host path}} of a pod spec."""
    hv = ph.host_volumes(spec)
    return {c["name"]: {m["mountPath"]: hv[m["name"]][0] for m in c.get("volumeMounts", [])
                        if m["name"] in hv and m["mountPath"].startswith("/host/sys")}
            for c in ph.containers(spec)}


def _socketish(path):
    if path == RUN or path.startswith(RUN + "/"):
        return False        # cpuzombie's own directory below /run (the schema: nothing else)
    return any(path == p or path.startswith(p.rstrip("/") + "/") for p in HOST_ROOT_WAYS
               if p != "/") or path == "/"


def test_default_mounts_no_way_to_host_root(rendered):
    for v, objs in rendered.items():
        spec = pod_spec(objs)
        hv = ph.host_volumes(spec)
        for name, (path, typ) in hv.items():
            assert typ != "Socket", (v, name, path)
            assert not _socketish(path), (v, name, path)
        # exactly these host paths, by default
        assert hv == {"host-proc": ("/proc", "Directory"), **SYS_DEFAULT,
                      "state": (STATE, "DirectoryOrCreate"),
                      "run": (RUN, "DirectoryOrCreate"),
                      "pod-logs": ("/var/log/pods", "Directory")}, (v, hv)
        # writable: cpuzombie's own state directory, and its run dir in the agent's container
        # only (the checks in NPD's read it)
        npd = {("node-problem-detector", "state", STATE)} if v != "standalone" else set()
        assert {(c, n, p) for c, n, p in ph.writable_host_mounts(spec)} == npd | {
            ("agent", "state", STATE), ("agent", "run", RUN)}, v
        assert spec.get("hostPID") in (None, False) and "hostIPC" not in spec


def test_roots_are_read_only_recursively(rendered):
    """A plain readOnly mount of /sys leaves /sys/fs/cgroup below it writable to uid 0: every
    host root mount is recursiveReadOnly Enabled (which needs readOnly and propagation None);
    so is the run dir where it is read only (NPD's container), writable in the agent's alone."""
    for v, objs in rendered.items():
        spec = pod_spec(objs)
        hv = ph.host_volumes(spec)
        for c in ph.containers(spec):
            for name, m in ph.mounts(c).items():
                if name in hv and name != "state" and (name, c["name"]) != ("run", "agent"):
                    assert m.get("readOnly") is True, (v, c["name"], m)
                    assert m.get("recursiveReadOnly") == "Enabled", (v, c["name"], m)
                    assert m.get("mountPropagation") in (None, "None"), (v, c["name"], m)


CG = {"/host/sys/fs/cgroup": "/sys/fs/cgroup"}
NET = {"/host/sys/class/net": "/sys/class/net", "/host/sys/devices": "/sys/devices"}


@pytest.mark.parametrize("sets,want", [
    ([], {**CG, **NET}),                                          # every check
    (["--set", "mode=standalone"], {**CG, **NET}),                # the agent runs every check
    (["--set", "npd.checks.cpu=false"], {**CG, **NET}),           # ena: class/net
    (["--set", "npd.checks.ena=false", "--set", "npd.checks.ena-allowance=false"],
     {**CG, **NET}),                                              # cpu: the NIC IRQ map
    (["--set", "npd.checks.cpu=false", "--set", "npd.checks.ena=false",
      "--set", "npd.checks.ena-allowance=false"], CG),            # memcg alone: cgroups only
], ids=["default", "standalone", "no-cpu", "no-ena", "memcg-only"])
def test_sys_is_mounted_in_the_subtrees_read_only(sets, want):
    """Not the host's whole /sys: only what the checks read (fs/cgroup; class/net and the
    devices its relative symlinks point into, with system/cpu/possible), each at its own place
    under /host/sys, so ../../devices/... resolves; never kernel/, firmware/, module/, bus/."""
    spec = pod_spec(render("default", sets)[1])
    got = _sys_mounts(spec)
    for name, m in got.items():
        if name != "install-plugin":
            assert m == want, (name, m)
    assert all(p.startswith("/sys/") for p, _ in ph.host_volumes(spec).values()
               if p.startswith("/sys")), ph.host_volumes(spec)
    assert "/sys" not in [p for p, _ in ph.host_volumes(spec).values()]


def test_memory_reclaim_makes_only_the_agents_cgroup_mount_writable():
    spec = pod_spec(render("default", ["--set", "config.remediation.reclaim=memory.reclaim"])[1])
    got = _sys_mounts(spec)
    assert got["agent"] == got["node-problem-detector"] == {**CG, **NET}
    assert ("agent", "host-cgroup", "/sys/fs/cgroup") in ph.writable_host_mounts(spec)
    assert ("node-problem-detector", "host-cgroup", "/sys/fs/cgroup") not in \
        ph.writable_host_mounts(spec)


def test_bus_socket_only_when_asked_and_then_agent_only():
    _, objs = render("default", ["--set", "agent.systemdBus=true"])
    spec = pod_spec(objs)
    assert ph.host_volumes(spec)["systemd-bus"] == ("/run/dbus/system_bus_socket", "Socket")
    for c in ph.containers(spec):
        assert ("systemd-bus" in ph.mounts(c)) is (c["name"] == "agent"), c["name"]


def test_tokens_only_where_the_api_is_called(rendered):
    """automountServiceAccountToken false on the pod; the projected token (what the automatic
    mount would give: token, ca.crt, namespace) in NPD's container (it sets the conditions), in
    the agent's only when it calls the API server, never in the init container."""
    def has_token(c):
        return any(m["mountPath"] == TOKEN_DIR for m in c.get("volumeMounts", []))
    for v, objs in rendered.items():
        spec = pod_spec(objs)
        assert spec["automountServiceAccountToken"] is False, v
        names = {c["name"]: has_token(c) for c in ph.containers(spec)}
        want = {"default": {"install-plugin": False, "node-problem-detector": True,
                            "agent": False},
                "remediation": {"install-plugin": False, "node-problem-detector": True,
                                "agent": False},
                "standalone": {"agent": True}}[v]
        assert names == want, (v, names)
        vol = [x for x in spec["volumes"] if x["name"] == "kube-api-access"]
        assert len(vol) == 1
        srcs = vol[0]["projected"]["sources"]
        assert srcs[0]["serviceAccountToken"]["path"] == "token"
        assert srcs[1]["configMap"]["name"] == "kube-root-ca.crt"
        assert srcs[2]["downwardAPI"]["items"][0]["fieldRef"]["fieldPath"] == \
            "metadata.namespace"
    # the agent calls the API server for reclaim Events, and for the kured hand-off
    for extra in (["--set", "config.remediation.reclaim=drop_caches"],
                  ["--set", "config.remediation.mode=drain", "--set",
                   "config.remediation.reboot_sentinel=%s/reboot-required" % STATE]):
        spec = pod_spec(render("default", extra)[1])
        assert has_token(container(spec, "agent")), extra
        assert not has_token(spec["initContainers"][0])


def test_a_check_npd_does_not_run_owns_no_condition():
    """npd mode, npd.checks.<x> false: NPD does not set that condition, so the
    agent's config says <x>.condition false and the agent gets its token to remove the type an
    earlier release left on the node (kube_agent.c); the checks NPD runs keep theirs, and with
    every check on the agent has no token."""
    def cfg_of(objs):
        return yaml.safe_load(one(objs, "ConfigMap", "cpuzombie-config")["data"]["cpuzombie.yaml"])

    def has_token(c):
        return any(m["mountPath"] == TOKEN_DIR for m in c.get("volumeMounts", []))
    _, objs = render("default")
    cfg = cfg_of(objs)
    assert all((cfg.get(c) or {}).get("condition", True) is not False
               for c in ("memcg", "cpu", "ena"))
    assert not has_token(container(pod_spec(objs), "agent"))
    for off in ("memcg", "cpu", "ena"):
        _, objs = render("default", ["--set", "npd.checks.%s=false" % off])
        cfg = cfg_of(objs)
        got = {c: (cfg.get(c) or {}).get("condition", True) for c in ("memcg", "cpu", "ena")}
        assert got == {c: c != off for c in ("memcg", "cpu", "ena")}, (off, got)
        assert has_token(container(pod_spec(objs), "agent")), off
        assert not has_token(pod_spec(objs)["initContainers"][0]), off


def test_host_network_only_for_the_ena_checks():
    for checks, want in ((("ena", "ena-allowance"), False), (("ena",), True),
                         (("ena-allowance",), True), ((), True)):
        args = sum((["--set", "npd.checks.%s=false" % c] for c in checks), [])
        spec = pod_spec(render("default", args)[1])
        assert spec["hostNetwork"] is want, (checks, spec["hostNetwork"])
        assert ("dnsPolicy" in spec) is want
    # standalone: the agent runs the ENA checks itself
    assert pod_spec(render("standalone")[1])["hostNetwork"] is True


def test_npd_metrics_local_unless_asked(rendered):
    objs = rendered["default"]
    npd = container(pod_spec(objs), "node-problem-detector")
    assert "--prometheus-address=127.0.0.1" in npd["command"]
    ann = one(objs, "DaemonSet")["spec"]["template"]["metadata"]["annotations"]
    assert "prometheus.io/scrape" not in ann
    objs = render("default", ["--set", "npd.metrics.address=0.0.0.0"])[1]
    assert "--prometheus-address=0.0.0.0" in container(pod_spec(objs),
                                                        "node-problem-detector")["command"]
    ann = one(objs, "DaemonSet")["spec"]["template"]["metadata"]["annotations"]
    assert ann["prometheus.io/scrape"] == "true"


def test_default_remediation_conditions_are_node_intrinsic(rendered):
    cfg = yaml.safe_load(one(rendered["remediation"], "ConfigMap",
                             "cpuzombie-config")["data"]["cpuzombie.yaml"])
    assert cfg["remediation"]["conditions"] == ["MemcgZombieLeak", "ENADeviceReset"]


def test_reclaim_mounts_the_one_file_it_writes():
    spec = pod_spec(render("default", ["--set", "config.remediation.reclaim=drop_caches"])[1])
    assert ph.host_volumes(spec)["host-drop-caches"] == ("/proc/sys/vm/drop_caches", "File")
    assert {(c, n, p) for c, n, p in ph.writable_host_mounts(spec)} == {
        ("node-problem-detector", "state", STATE), ("agent", "state", STATE),
        ("agent", "run", RUN), ("agent", "host-drop-caches", "/proc/sys/vm/drop_caches")}


# Host directories a writable mount would hand the agent (uid 0): each refused by the schema
# and by `config check`, whatever the deny-list of system directories used to say.
HOST_ATTACKS = ("/var/run/reboot-required", "/run/x", "/x", "/etc/cron.d/x", "/var/lib/x",
                "/var/lib/kubelet/pki/x", "/run/containerd/x", "/var/lib/../run/x", "relative/x",
                "/opt/cni/bin/x", "/var/spool/cron/crontabs/root",
                "/var/lib/rancher/k3s/server/manifests/x.yaml",
                "/var/lib/rancher/rke2/agent/pod-manifests/x.yaml",
                "/home/admin/.ssh/authorized_keys", "/var/lib/node_exporter/x.prom",
                "/var/lib/node_exporter/a/b/x.prom", "/var/lib/cpuzombie-evil/x",
                "/var/lib/cpuzombie/../kubelet/x", "/var/lib/node_exporter/../kubelet/x")


@pytest.mark.parametrize("key", ["agent.metrics_textfile", "remediation.reboot_sentinel"])
def test_host_files_by_allow_list(key, cz, tmp_path):
    """In the state directory: no further mount. A textfile also in one directory of its own
    directly below node_exporter's: that one directory, writable, to the agent only. Anything
    else (the sentinel in node_exporter's directory too): refused by the schema and by
    `config check`, each with one line naming the key."""
    extra = ["--set", "config.remediation.mode=drain"]
    spec = pod_spec(render("default", extra + ["--set", "config.%s=%s/x" % (key, STATE)])[1])
    assert set(ph.host_volumes(spec)) == {"host-proc", "state", "run", "pod-logs",
                                          *SYS_DEFAULT}
    d = "/var/lib/node_exporter/textfile_collector"
    bad = HOST_ATTACKS
    if key == "agent.metrics_textfile":
        for d in (d, "/var/lib/prometheus/node-exporter/cpuzombie"):
            spec = pod_spec(render("default", extra + ["--set", "config.%s=%s/x" % (key, d)])[1])
            extra_dirs = [(c, p) for c, n, p in ph.writable_host_mounts(spec)
                          if n not in ("state", "run")]
            assert extra_dirs == [("agent", d)], extra_dirs
            # a volume's name is a DNS label: node_exporter's own directory has an underscore
            # (the server refused the upgrade; found on the real node)
            names = [v["name"] for v in spec["volumes"]]
            assert all(len(n) <= 63 and re.fullmatch(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?", n)
                       for n in names), names
    else:
        bad = bad + (d + "/x",)
    sec, k = key.split(".")
    for path in bad:
        p = helm("template", "x", CHART, *extra, "--set", "config.%s=%s" % (key, path),
                 check=False)
        assert p.returncode != 0 and k in p.stderr, (path, p.stderr)
        f = tmp_path / "c.yaml"
        f.write_text("%s:\n  %s: %s\n" % (sec, k, path))
        r = cz("config", "check", "--config", str(f), check=2)
        assert r.err.startswith("%s:2: key '%s'" % (f, key)), r
        assert len(r.err.strip().splitlines()) == 1, r.err
    # what `config check` takes: the state dir it is given (cz: --state-dir), below it, and
    # for the textfile node_exporter's directory of its own
    good = [str(cz.state / "x"), str(cz.state / "sub" / "x")]
    if key == "agent.metrics_textfile":
        good.append("/var/lib/node_exporter/textfile_collector/cpuzombie.prom")
    for path in good:
        f = tmp_path / "c.yaml"
        f.write_text("%s:\n  %s: %s\n" % (sec, k, path))
        cz("config", "check", "--config", str(f), check=0)


@pytest.mark.parametrize("state", ["/etc", "/var/lib", "/", "/opt/cni/bin", "/var/lib/kubelet",
                                   "/var/lib/cpuzombie/../kubelet", "/var/lib/cpuzombie-x",
                                   "/home/admin/.ssh", "relative"])
def test_state_dir_by_allow_list(state):
    """hostPaths.state is mounted writable into both node containers: /var/lib/cpuzombie or a
    directory below it, nothing else (the schema)."""
    p = helm("template", "x", CHART, "--set", "hostPaths.state=" + state, check=False)
    assert p.returncode != 0 and "state" in p.stderr, (state, p.stderr)


def test_state_dir_below_ours_is_taken():
    spec = pod_spec(render("default", ["--set", "hostPaths.state=%s/node" % STATE])[1])
    assert ph.host_volumes(spec)["state"] == (STATE + "/node", "DirectoryOrCreate")


@pytest.mark.parametrize("run", ["/run", "/var/run", "/run/containerd", "/run/dbus", "/",
                                 "/run/cpuzombie/../containerd", "/run/cpuzombie-x", "/etc",
                                 "/var/lib/cpuzombie", "/run/cpuzombie/a b", "relative"])
def test_run_dir_by_allow_list(run):
    """hostPaths.run is mounted writable into the agent's container: /run/cpuzombie or a
    directory below it, nothing else (the schema): never /run itself, nor a runtime's or a bus's
    sockets beside it."""
    p = helm("template", "x", CHART, "--set", "hostPaths.run=" + run, check=False)
    assert p.returncode != 0 and "run" in p.stderr, (run, p.stderr)


def test_run_dir_below_ours_is_taken_and_read_only_to_npd():
    """A run dir of its own below ours (a second release on a node: one agent per run dir), at
    the same place in the containers; NPD's container reads it only (the checks write nothing
    there), the agent writes it."""
    spec = pod_spec(render("default", ["--set", "hostPaths.run=%s/second" % RUN])[1])
    assert ph.host_volumes(spec)["run"] == (RUN + "/second", "DirectoryOrCreate")
    for c, ro in (("node-problem-detector", True), ("agent", False)):
        m = ph.mounts(container(spec, c))["run"]
        assert m["mountPath"] == RUN and bool(m.get("readOnly")) is ro, (c, m)


def test_the_init_container_has_nothing_but_its_copy(rendered):
    for v in ("default", "remediation"):
        spec = pod_spec(rendered[v])
        init, = spec["initContainers"]
        assert set(ph.mounts(init)) == {"plugin"}
        assert init["securityContext"]["capabilities"] == {"drop": ["ALL"]}
        # not root: it copies into an emptyDir (everyone's); the node containers stay uid 0
        # here (burst profiles, on by default, need PERFMON and SYSLOG effective: uid 0)
        assert init["securityContext"]["runAsUser"] == 65534
        assert init["securityContext"]["runAsNonRoot"] is True
        for c in spec["containers"]:
            assert c["securityContext"]["runAsUser"] == 0, c["name"]


def test_a_cluster_may_run_without_syslog():
    """agent.profileSymbols false: burst profiles with CAP_PERFMON alone (what is lost: kernel
    symbols unless the host has kptr_restrict=0; docs/privileges.md's table)."""
    spec = pod_spec(render("default", ["--set", "agent.profileSymbols=false"])[1])
    assert container(spec, "agent")["securityContext"]["capabilities"]["add"] == ["PERFMON"]
    spec = pod_spec(render("default")[1])
    assert container(spec, "agent")["securityContext"]["capabilities"]["add"] == \
        ["PERFMON", "SYSLOG"]
    for c in ph.containers(spec):
        if c["name"] != "agent":
            assert "add" not in c["securityContext"]["capabilities"], c["name"]


NARROW = r"""set -e
mount --make-rprivate /
for sub in "$@"; do
    mkdir -p "$ROOT/sys/$sub"
    mount --rbind "/sys/$sub" "$ROOT/sys/$sub"
    mount -o remount,bind,ro "$ROOT/sys/$sub"
done
for c in memcg cpu ena; do
    for side in full narrow; do
        root=/sys; [ $side = narrow ] && root="$ROOT/sys"
        set +e
        "$CZ" --state-dir "$ROOT/st-$side-$c" --run-dir "$ROOT/run-$side-$c" --sys-root "$root" \
            check "$c" >"$ROOT/$side-$c.out" 2>"$ROOT/$side-$c.err"
        echo $? >"$ROOT/$side-$c.rc"
        set -e
    done
done
for side in full narrow; do
    root=/sys; [ $side = narrow ] && root="$ROOT/sys"
    "$CZ" --state-dir "$ROOT/st-$side-r" --run-dir "$ROOT/run-$side-r" --sys-root "$root" \
        report --json >"$ROOT/$side-report.json" || true
done
"""


@pytest.mark.skipif(not is_root(), reason="needs root: bind mounts in a private mount namespace")
def test_checks_read_the_same_through_the_narrowed_sys(cz_bin, tmp_path):
    """The checks run against a /sys shaped like the default rendering's mounts (only those
    subtrees, at the same places, read-only; class/net's relative symlinks resolving into
    devices/) answer as over the whole /sys: the same exit code and the same line, numbers
    aside (dying memcgs come and go between two runs)."""
    import os
    import re
    import subprocess
    spec = pod_spec(render("default")[1])
    subs = sorted(p[len("/host/sys/"):] for p in _sys_mounts(spec)["node-problem-detector"])
    assert subs == ["class/net", "devices", "fs/cgroup"]
    subprocess.run(["unshare", "-m", "sh", "-c", NARROW, "narrow", *subs], check=True,
                   env=dict(os.environ, ROOT=str(tmp_path), CZ=cz_bin), timeout=120)
    for c in ("memcg", "cpu", "ena"):
        got = {side: (open(tmp_path / ("%s-%s.rc" % (side, c))).read().strip(),
                      re.sub(r"[0-9.]+", "N", open(tmp_path / ("%s-%s.out" % (side, c))).read()),
                      open(tmp_path / ("%s-%s.err" % (side, c))).read())
               for side in ("full", "narrow")}
        assert got["narrow"][:2] == got["full"][:2], (c, got)
        assert "No such file" not in got["narrow"][2], (c, got)
    # the NICs' IRQ map (check cpu's attribution, read through class/net into devices/)
    nics = {side: json.load(open(tmp_path / ("%s-report.json" % side)))["nics"]
            for side in ("full", "narrow")}
    assert nics["narrow"] == nics["full"], nics
    if not nics["full"]:
        pytest.skip("no NIC with IRQs on this host: the class/net half is untested here")


NOBODY = 65534
# each value that needs uid 0 in the node containers (docs/privileges.md's table says why)
ROOT_FEATURES = [
    [],                                                   # agent.profileBursts (PERFMON, SYSLOG)
    ["--set", "agent.profileBursts=false", "--set", "agent.zombieCensus=true"],   # BPF, PERFMON
    ["--set", "agent.profileBursts=false", "--set", "agent.readKernelStacks=true"],
    ["--set", "agent.profileBursts=false", "--set", "config.remediation.reclaim=drop_caches"],
    ["--set", "agent.profileBursts=false", "--set", "config.agent.kmsg=/dev/kmsg"],
    ["--set", "agent.profileBursts=false",
     "--set", "config.agent.metrics_textfile=/var/lib/cpuzombie/cz.prom"],
]
NON_ROOT = ["--set", "agent.profileBursts=false"]
NODE_GROUPS = {"node-problem-detector": 64390, "agent": 64391}     # values.yaml nodeGroups


def _uid(c):
    return c["securityContext"]["runAsUser"]


@pytest.mark.parametrize("sets", ROOT_FEATURES,
                         ids=["profiles", "census", "kernel-stacks", "reclaim", "kmsg", "textfile"])
def test_node_containers_are_root_only_for_a_feature_that_needs_it(sets):
    """A capability is effective only for uid 0 (Kubernetes sets no ambient capabilities, and
    allowPrivilegeEscalation false, no_new_privs, keeps file capabilities out); reclaim writes
    root's sysctl and cgroup files; the textfile or sentinel lands in a host directory of
    root's. The checks read the agent's run files (0600), so NPD's container runs as the agent's
    uid. No state-owner init container then."""
    spec = pod_spec(render("default", sets)[1])
    assert {c["name"]: _uid(c) for c in spec["containers"]} == {
        "node-problem-detector": 0, "agent": 0}
    assert {c["name"]: c["securityContext"]["runAsGroup"] for c in spec["containers"]} == \
        NODE_GROUPS
    assert [c["name"] for c in spec["initContainers"]] == ["install-plugin"]
    assert ph.host_volumes(spec)["state"] == (STATE, "DirectoryOrCreate")
    assert ph.host_volumes(spec)["run"] == (RUN, "DirectoryOrCreate")


@pytest.mark.parametrize("variant", ["default", "standalone"])
def test_node_containers_run_as_nobody_when_nothing_needs_root(variant):
    """agent.profileBursts off (and nothing else of the list above): NPD's container and the
    agent run as 65534, no capability; their state is the host's /var/lib/cpuzombie/uid-65534
    and their run dir /run/cpuzombie/uid-65534, which the kubelet makes root's: an init
    container of uid 0 with CAP_CHOWN alone, no token and those two mounts, gives them to 65534
    (separate directories: root's files of a former rendering stay where they are)."""
    sets = NON_ROOT + (["--set", "mode=standalone"] if variant == "standalone" else [])
    spec = pod_spec(render("default", sets)[1])
    for c in spec["containers"]:
        sc = c["securityContext"]
        # each with a gid of its own (nodeGroups; test_privilege_ptrace.py says why)
        assert (sc["runAsUser"], sc["runAsGroup"], sc["runAsNonRoot"]) == (
            NOBODY, NODE_GROUPS[c["name"]], True)
        assert sc["capabilities"] == {"drop": ["ALL"]}, c["name"]
    assert ph.host_volumes(spec)["state"] == (STATE + "/uid-65534", "DirectoryOrCreate")
    assert ph.host_volumes(spec)["run"] == (RUN + "/uid-65534", "DirectoryOrCreate")
    owner = [c for c in spec["initContainers"] if c["name"] == "state-owner"]
    assert len(owner) == 1 and spec["initContainers"][0]["name"] == "state-owner"
    o = owner[0]
    # the image's own binary: the image has no chown (test_own_state.py); the state and the
    # run dir, each where the node containers mount it
    assert o["command"] == ["/usr/local/bin/cpuzombie", "own-state", "65534", STATE, RUN]
    assert o["securityContext"]["runAsUser"] == 0
    assert o["securityContext"]["capabilities"] == {"drop": ["ALL"], "add": ["CHOWN"]}
    assert [(m["name"], m["mountPath"]) for m in o["volumeMounts"]] == [
        ("state", STATE), ("run", RUN)]
    assert not [c for c in ph.containers(spec) if c["name"] not in ("node-problem-detector", "agent")
                and "kube-api-access" in ph.mounts(c)]


@pytest.mark.skipif(not is_root(), reason="needs root: runs the binary as 65534 with setpriv")
def test_the_checks_and_the_agent_work_as_nobody(cz_bin):
    """The non-root rendering's config, run as 65534 over the real /proc and /sys: each check
    and one agent cycle answer (exit 0 or 1) and read and write their state, in a directory
    made root's (as the kubelet makes a hostPath) and then given to 65534 (as the state-owner
    init container does). In root's directory, unchanged, the state is refused: the init
    container is needed."""
    import os
    import pathlib
    import shutil
    import subprocess
    import tempfile
    # not under pytest's tmp_path: its parents are root's 0700, which 65534 cannot pass
    tmp_path = pathlib.Path(tempfile.mkdtemp(prefix="cz-nobody-"))
    try:
        _as_nobody(cz_bin, tmp_path, subprocess, os)
    finally:
        shutil.rmtree(tmp_path)


def _as_nobody(cz_bin, tmp_path, subprocess, os):
    cfg = yaml.safe_load(one(render("default", NON_ROOT)[1], "ConfigMap",
                             "cpuzombie-config")["data"]["cpuzombie.yaml"])
    cfg["paths"].update(proc="/proc", sys="/sys", pod_logs="")
    f = tmp_path / "cz.yaml"
    f.write_text(yaml.safe_dump(cfg))
    os.chmod(tmp_path, 0o755)
    os.chmod(f, 0o644)
    for d in ("st", "run", "st-root"):
        (tmp_path / d).mkdir(mode=0o755)
    for d in ("st", "run"):
        os.chown(tmp_path / d, NOBODY, NOBODY)

    def nobody(state, *args):
        return subprocess.run(["setpriv", "--reuid=%d" % NOBODY, "--regid=%d" % NOBODY,
                               "--clear-groups", cz_bin, "--config", str(f), "--state-dir",
                               str(tmp_path / state), "--run-dir", str(tmp_path / "run"), *args],
                              capture_output=True, text=True, timeout=120)
    for check in ("memcg", "cpu", "ena", "ena-allowance"):
        r = nobody("st", "check", check)
        assert r.returncode in (0, 1), (check, r.stdout, r.stderr)
        assert "ermission denied" not in r.stderr, (check, r.stderr)
    r = nobody("st", "agent", "--once")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "ermission denied" not in r.stderr and "refused" not in r.stderr, r.stderr
    assert {os.stat(p).st_uid for p in (tmp_path / "st").iterdir()} == {NOBODY}
    assert os.path.exists(tmp_path / "st" / "memcg")
    r = nobody("st-root", "check", "memcg")
    assert "Permission denied" in r.stderr, r.stderr


def test_lease_namespace_empty_is_the_pods_own(cz, tmp_path):
    """remediation.lease_namespace "" (the default): $POD_NAMESPACE (the chart's downward API),
    else the service account's namespace file; neither where Leases are written (cordon, drain):
    exit 2 with one line saying so; off (fleet, cleanup by hand) or dry-run (an agent reclaiming
    in dry-run takes no slot): cpuzombie. A value that is no namespace name is not taken."""
    sa = tmp_path / "sa"
    sa.mkdir()
    on = tmp_path / "on.yaml"
    on.write_text("remediation:\n  mode: cordon\n")
    off = tmp_path / "off.yaml"
    off.write_text("remediation:\n  mode: \"off\"\n")

    def lease_ns(cfg, **env):
        e = {"CZ_SERVICEACCOUNT_DIR": str(sa), "POD_NAMESPACE": ""}
        e.update(env)
        r = cz("--config", str(cfg), "config", "check", "-v", env=e, check=0)
        assert r.out.startswith("configuration OK"), r.out
        return yaml.safe_load(r.out.split("\n", 1)[1])["remediation"]["lease_namespace"]
    r = cz("--config", str(on), "config", "check", env={"CZ_SERVICEACCOUNT_DIR": str(sa),
                                                         "POD_NAMESPACE": ""}, check=2)
    assert len(r.err.strip().splitlines()) == 1 and \
        r.err.startswith("remediation.lease_namespace: unset, and this pod's namespace is "
                         "unknown"), r.err
    assert lease_ns(off) == "cpuzombie"
    dry = tmp_path / "dry.yaml"
    dry.write_text("remediation:\n  mode: dry-run\n")
    assert lease_ns(dry) == "cpuzombie"
    assert lease_ns(on, POD_NAMESPACE="team-a") == "team-a"
    (sa / "namespace").write_text("from-token")
    assert lease_ns(on) == "from-token"
    assert lease_ns(on, POD_NAMESPACE="../x") == "from-token"
    assert lease_ns(on, POD_NAMESPACE="team-a") == "team-a"      # the env first
    set_ = tmp_path / "set.yaml"
    set_.write_text("remediation:\n  mode: cordon\n  lease_namespace: cz-budget\n")
    assert lease_ns(set_, POD_NAMESPACE="team-a") == "cz-budget"  # a value set is kept

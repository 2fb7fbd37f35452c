# SPDX-License-Identifier: MIT
"""The image, built from manifests/image/Dockerfile with podman (make image), run as the chart's
DaemonSet runs it: the pod spec comes from `helm template` of the chart itself, so a chart
change is tested, not a copy (pod_helpers: one `podman run` per container with the spec's
command, env, securityContext and mounts).

- the agent container: samples through /host/proc and /host/sys, its heartbeat and history
  appear in the run dir, it writes the metrics textfile, under a read-only root with every
  capability dropped;
- the agent container with the chart's zombie census on (agent.zombieCensus: CAP_BPF and
  CAP_PERFMON, under RuntimeDefault as containerd applies it): its BPF census lists the real
  dying memcgs the test made by their former names, and the check in the image names their
  group; without the capabilities, or under CRI-O's RuntimeDefault, it says why, and runs on;
- the init container (the agent's install-plugin: the image has no cp) copies the check binary
  out of /opt/cpuzombie, then node-problem-detector in a container made from
  the real binary, once per version (v1.36.0, the chart's, and v1.34.0, built by
  tests/tools/kube/build.sh; v0.8.20 from ../shared/bin), runs the shipped config/npd/*.json
  unchanged on that copy; its
  Kubernetes exporter talks to the real control plane (kube-apiserver through the test's fault
  proxy, reached on 127.0.0.1 as the pod has the host's network) as the chart's ServiceAccount
  with a token bound to the agent's pod on a kwok node, and a real `kubectl describe node`
  shows our three conditions, MemcgZombieLeak True with our message over real dying memcgs.

Test-only departures, all outside the product's files: the state hostPath (and the textfile
directory) are the test's directories, not the node's; NPD gets --apiserver-override with a
kubeconfig (the pod-bound token and the CA inline) instead of the in-cluster credentials a
kubelet would mount, its Prometheus exporter on 127.0.0.1 and a free port (the chart's
0.0.0.0:20257 would collide on a shared host), and its own status server on a free port."""

import contextlib
import os
import re
import shutil
import stat
import subprocess
import time

import pytest

import kube_helpers as kh
import npd_helpers as nh
import pod_helpers as ph
import test_agent_dropcaps as dh  # its /proc status and capability-mask parsers
from conftest import ROOT, host_lock_let_go, is_root
from census_helpers import NamedZombies, parse_census
from memcg_helpers import DyingMemcgs
from report_helpers import can_run_manager

pytestmark = [
    pytest.mark.skipif(not is_root(), reason="needs root: runs rootful podman and hostPath "
                       "mounts of /proc and /sys"),
    pytest.mark.skipif(shutil.which("podman") is None,
                       reason="podman is not installed (make deps installs it)"),
    # the image holds its own build, not the binary under test: one run (the plain one) is enough
    pytest.mark.skipif("build-asan" in os.environ.get("CZ_BIN", ""),
                       reason="the image is built from the sources, not from the ASan binary "
                       "under test: tested in the plain run"),
]

VERSION = open(os.path.join(ROOT, "VERSION")).read().strip()
IMAGE_REPO = "localhost/cpuzombie/cpuzombie"
NPD_IMAGE = "localhost/cpuzombie-test/node-problem-detector"
NODE = "image-node-%d" % os.getpid()
TEXTFILE_DIR = "/var/lib/node_exporter/textfile_collector"
MEMCG_MSG = re.compile(r"^(\d+) dying memcgs vs (\d+) live")
SYSTEM_BUS = "/run/dbus/system_bus_socket"


@pytest.fixture(scope="module")
def image():
    """make image's script (cached layers: a rebuild only when sources changed). The build
    touches nothing of the host's: the host lock is let go meanwhile (a cold one held it 4
    minutes)."""
    with host_lock_let_go():
        p = subprocess.run([os.path.join(ROOT, "tests", "tools", "podman", "build-image.sh"),
                            "%s:%s" % (IMAGE_REPO, VERSION)], capture_output=True, text=True,
                           timeout=1800)
    assert p.returncode == 0, p.stderr[-3000:]
    return "%s:%s" % (IMAGE_REPO, VERSION)


@pytest.fixture(scope="module", params=nh.version_params())
def npd_image(request):
    """(repository, tag): an NPD image of the real binary of the version, as upstream's."""
    version = request.param
    with host_lock_let_go():     # a build: nothing of the host's
        binary = nh.npd_for(version)
        p = subprocess.run([os.path.join(ROOT, "tests", "tools", "podman", "npd-image.sh"),
                            binary, "%s:%s" % (NPD_IMAGE, version)], capture_output=True,
                           text=True, timeout=600)
    assert p.returncode == 0, p.stderr[-3000:]
    return NPD_IMAGE, version


@pytest.fixture(scope="module")
def helm():
    if kh.kubectl_path() is None:
        pytest.skip("no kubectl/helm (tests/tools/get-kube-tools.sh needs npm)")
    return os.path.join(ROOT, "build", "tools", "bin", "helm")


def chart(helm, *sets, bus=False, json_sets=()):
    args = ["--set", "image.repository=" + IMAGE_REPO, "--set", "image.tag=" + VERSION,
            "--set", "image.pullPolicy=Never"]
    for s in json_sets:	# numbers that are not integers (--set would make them strings)
        args += ["--set-json", s]
    if bus:
        # the bus socket is opt-in (agent.systemdBus, off by default: root on the system bus
        # can run any command on the host); a test with a manager of its own asks
        args += ["--set", "agent.systemdBus=true"]
    for s in sets:
        args += ["--set", s]
    return ph.render_chart(helm, os.path.join(ROOT, "charts", "cpuzombie"), *args)


def wait_for(pred, what, timeout=60, diag=lambda: ""):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        v = pred()
        if v:
            return v
        time.sleep(0.5)
    raise AssertionError("timed out waiting for %s. %s" % (what, diag()))


def test_agent_container_as_the_daemonset_runs_it(image, helm, tmp_path):
    has_bus = os.path.exists(SYSTEM_BUS)
    objs = chart(helm, "config.agent.metrics_textfile=%s/cpuzombie.prom" % TEXTFILE_DIR)
    state, textfile = tmp_path / "state", tmp_path / "textfile"
    pod = ph.Pod(objs, tmp_path, NODE, {"/var/lib/cpuzombie": str(state),
                                         TEXTFILE_DIR: str(textfile)})
    try:
        c = pod.start("agent")
        run = pod.vols["run"]
        wait_for(lambda: "cpu-heartbeat" in os.listdir(run), "the agent's heartbeat",
                 diag=lambda: pod.logs(c))
        prom = textfile / "cpuzombie.prom"
        wait_for(prom.exists, "the metrics textfile", timeout=90, diag=lambda: pod.logs(c))
        text = prom.read_text()
        assert re.search(r"^cpuzombie_\w+(\{[^}]*\})? [0-9.e+-]+$", text, re.M), text[:2000]
        time.sleep(2)
        assert pod.running(c), pod.logs(c)
        names = os.listdir(run)
        assert any(n.startswith("cpu-history") or n == "cpu-history" for n in names), names
        # the heartbeat names this node's cores: the agent read the host through /host/proc
        hb = open(os.path.join(run, "cpu-heartbeat"), errors="replace").read()
        assert hb.strip(), hb
        # the security context podman applied is the chart's
        sc = ph.podman("inspect", "--format",
                       "{{.HostConfig.ReadonlyRootfs}} {{.HostConfig.CapDrop}} "
                       "{{.HostConfig.CapAdd}} {{.HostConfig.SecurityOpt}} "
                       "{{.HostConfig.NetworkMode}}", c).stdout
        assert sc.startswith("true ") and "no-new-privileges" in sc and " host" in sc, sc
        eff = ph.podman("exec", c, "/usr/local/bin/cpuzombie", "--version").stdout
        assert VERSION in eff
        # the image ships the kubectl plugin name for `kubectl cpuzombie` (fleet)
        plug = ph.podman("exec", c, "/usr/local/bin/kubectl-cpuzombie", "--help").stdout
        assert "fleet" in plug, plug
        # capabilities: the container is granted exactly those the chart's securityContext adds
        # (agent.profileBursts: CAP_PERFMON 38 and CAP_SYSLOG 34 for burst profiles), its
        # bounding set; the agent holds none of them once it has opened its perf events and
        # read kallsyms (agent/privdrop.c, test_agent_dropcaps), and without CAP_SETPCAP the
        # bounding set stays, inert under no_new_privs
        pid = ph.podman("inspect", "--format", "{{.State.Pid}}", c).stdout.strip()
        want = sum(1 << {"PERFMON": 38, "SYSLOG": 34, "SYS_ADMIN": 21, "SYS_PTRACE": 19}[cap]
                   for cap in pod.container("agent")["securityContext"]["capabilities"]
                   .get("add", []))
        assert want == (1 << 38) | (1 << 34), hex(want)

        def caps():
            st = dh.status(int(pid))
            m = dict(dh.masks(st), NoNewPrivs=st["NoNewPrivs"])
            return m if m["CapEff"] == 0 else None
        m = wait_for(caps, "the agent's capabilities dropped after start",
                     diag=lambda: dh.status(int(pid)))
        assert m["CapPrm"] == m["CapAmb"] == 0 and m["CapBnd"] == want, m
        assert m["NoNewPrivs"] == "1", m
        # the agent published the systemd units for the checks (or why it could not ask)
        units = wait_for(lambda: os.path.exists(os.path.join(run, "systemd-units")) and
                         open(os.path.join(run, "systemd-units")).read(), "published units",
                         diag=lambda: pod.logs(c))
        assert units.startswith("cpuzombie-units 1\nt "), units
        if not has_bus:
            assert "\ne cannot connect to bus" in units, units
        assert not [l for l in pod.logs(c).splitlines() if "rror" in l and "systemd" not in l], \
            pod.logs(c)
    finally:
        pod.stop()


# The census on, and `check memcg` told to name its group (no systemd hints; a threshold the
# test's few zombies cross, so the check's line carries the census or why there is none).
CENSUS_SETS = ("agent.zombieCensus=true", "config.memcg.systemd_hints=false",
               "config.memcg.min_dying=5")
CENSUS_JSON = ("config.memcg.max_ratio=0.001",)
NO_CAPS = "no capability to load the census BPF program (CAP_BPF, CAP_PERFMON)"
SECCOMP_REFUSED = "bpf() refused with CAP_BPF and CAP_PERFMON held: seccomp?"


def agent_census(pod, c):
    """The agent's first census (at its start) from the pod's run dir: (text, groups)."""
    path = os.path.join(pod.vols["run"], "memcg-census")
    text = wait_for(lambda: os.path.exists(path) and open(path).read(), "the agent's census",
                    timeout=90, diag=lambda: pod.logs(c))
    return text, parse_census(text)


def image_check_memcg(c):
    """`check memcg` with the static check binary the image hands to NPD, run in the agent's
    container (the chart's config, host roots, the agent's run dir): NPD's view."""
    return ph.podman("exec", c, "/opt/cpuzombie/bin/cpuzombie", "--config",
                     "/etc/cpuzombie/cpuzombie.yaml", "check", "memcg", check=False)


@pytest.mark.skipif(not os.path.isdir("/sys/fs/cgroup"), reason="no cgroup filesystem")
def test_agent_container_census_names_real_zombies(image, helm, tmp_path):
    """agent.zombieCensus=true as the chart renders it (CAP_BPF, CAP_PERFMON; census on), under
    RuntimeDefault as containerd applies it: the image's agent loads its BPF census and lists
    the dying memcgs the test made (one and two levels down a parent of its own) under their
    former names, with exact counts; the check binary of the image names the census's top
    group; `-v --version` says the image's agent was built with the census."""
    objs = chart(helm, *CENSUS_SETS, json_sets=CENSUS_JSON)
    pod = ph.Pod(objs, tmp_path, NODE, {"/var/lib/cpuzombie": str(tmp_path / "state")},
                 seccomp=ph.containerd_runtime_default(tmp_path))
    add = pod.container("agent")["securityContext"]["capabilities"]["add"]
    assert {"BPF", "PERFMON"} <= set(add), add
    try:
        with NamedZombies(tmp_path) as z:
            c = pod.start("agent")
            text, g = agent_census(pod, c)
            assert "\ne " not in text, (text, pod.logs(c))
            flat, nested = ("g", z.name + "/ga-*"), ("g", z.name + "/nest-*/nb-*")
            assert g.get(flat, (0,))[0] == z.flat, text
            assert g.get(nested, (0,))[0] == z.nests * z.per_nest, text
            assert g[("g", z.name + "/nest-*")][0] == z.nests, text	# dying parents
            assert g[("p", z.name)][0] == z.flat + z.nests, text
            assert g[flat][1] >= z.flat * z.size, text	# the page cache each was charged
            p = image_check_memcg(c)
            assert p.returncode == 1, (p.stdout, p.stderr)
            top = [ln for ln in text.splitlines() if ln.startswith("g ")][0].split(" ")
            # the census's top group: ours unless others' tests on this box made more
            assert "; %s were %s, " % (top[1], top[4]) in p.stdout, (p.stdout, text)
            print("check memcg in the image:", p.stdout.strip())
            assert pod.running(c), pod.logs(c)
            ver = ph.podman("exec", c, "/usr/local/bin/cpuzombie", "-v", "--version").stdout
            assert re.search(r"^census: bpf \(CO-RE, libbpf v1\.\d+\)$", ver, re.M), ver
            assert "Zombie census off" not in pod.logs(c), pod.logs(c)
    finally:
        pod.stop()


RECLAIM_SETS = ("config.remediation.reclaim=drop_caches", "config.remediation.for=0s",
                "agent.zombieCensus=true", "config.memcg.systemd_hints=false",
                "config.memcg.min_dying=5")


def reclaim_state(pod):
    path = os.path.join(pod.overrides["/var/lib/cpuzombie"], "reclaim")
    if not os.path.exists(path):
        return None
    return dict(ln.split(" ", 1) for ln in open(path).read().splitlines()[1:-1])


@pytest.mark.skipif(not os.path.isdir("/sys/fs/cgroup"), reason="no cgroup filesystem")
@pytest.mark.parametrize("mounted", [True, False], ids=["charts-mounts", "proc-read-only"])
def test_agent_container_reclaims_with_the_charts_mounts(image, helm, tmp_path, mounted):
    """config.remediation.reclaim=drop_caches as the chart renders it: the agent container
    (uid 0, every capability dropped, read-only root) reclaims through the host's
    /proc/sys/vm/drop_caches, the one file the chart mounts writable over the read-only
    /host/proc, and the named zombies go.
    Without that mount (the pod as it was before: /host/proc read-only) the write is refused
    with EROFS, which the agent records and says, and it keeps running."""
    objs = chart(helm, *RECLAIM_SETS, json_sets=CENSUS_JSON)
    if not mounted:
        ds = next(o for o in objs if o["kind"] == "DaemonSet")
        agent = next(x for x in ds["spec"]["template"]["spec"]["containers"]
                     if x["name"] == "agent")
        agent["volumeMounts"] = [m for m in agent["volumeMounts"]
                                 if m["name"] != "host-drop-caches"]
    pod = ph.Pod(objs, tmp_path, NODE, {"/var/lib/cpuzombie": str(tmp_path / "state")},
                 seccomp=ph.containerd_runtime_default(tmp_path))
    agent = pod.container("agent")
    assert "add" not in agent["securityContext"]["capabilities"] or \
        not {"SYS_ADMIN", "DAC_OVERRIDE"} & set(agent["securityContext"]["capabilities"]["add"])
    try:
        with NamedZombies(tmp_path, flat=40, nests=1, per_nest=5) as z:
            os.sync()	# as time would: drop_caches drops clean pages only (test_reclaim.py)
            c = pod.start("agent")
            st = wait_for(lambda: (reclaim_state(pod) or {}).get("result") not in
                          (None, "none", "started") and reclaim_state(pod),
                          "the agent's reclaim", timeout=120, diag=lambda: pod.logs(c))
            logs = pod.logs(c)
            if mounted:
                assert st["result"] == "ok" and st["method"] == "drop_caches", (st, logs)
                assert int(st["before"]) >= z.flat + z.nests * z.per_nest, (st, logs)
                assert "vm.drop_caches=1 freed %s of %s" % (
                    int(st["before"]) - int(st["after"]), st["before"]) in logs, logs
                # the census the agent took after it: ours are (nearly) all gone
                text = open(os.path.join(pod.vols["run"], "memcg-census")).read()
                left = sum(n for (kind, key), (n, *_r) in parse_census(text).items()
                           if kind == "g" and key.startswith(z.name))
                assert left <= (z.flat + z.nests * z.per_nest) // 10, (text, logs)
                print("reclaim in the image:", [l for l in logs.splitlines() if "freed" in l])
            else:
                assert st["result"] == "failed" and st["err"] == "30", (st, logs)	# EROFS
                assert "refused: Read-only file system (the agent needs root and the " \
                    "host's /proc/sys/vm writable)" in logs, logs
            assert "Reclaim Events off" in logs, logs	# no API server here: no Event
            time.sleep(1)
            assert pod.running(c), pod.logs(c)
    finally:
        pod.stop()


@pytest.mark.skipif(not os.path.isdir("/sys/fs/cgroup"), reason="no cgroup filesystem")
@pytest.mark.parametrize("how", ["no-capabilities", "crio-seccomp"])
def test_agent_container_census_without_privileges_says_why(image, helm, tmp_path, how):
    """The census on, but the agent cannot load BPF: its capabilities were taken away (an
    admission policy, a values override), or it runs under CRI-O's RuntimeDefault (podman's
    own profile here: bpf() only with CAP_SYS_ADMIN), which refuses bpf() though CAP_BPF is
    held. The agent publishes why instead of a census, logs it, keeps running, and the check
    line says it."""
    objs = chart(helm, *CENSUS_SETS, json_sets=CENSUS_JSON)
    seccomp, why = None, SECCOMP_REFUSED
    ds = next(o for o in objs if o["kind"] == "DaemonSet")
    agent = next(x for x in ds["spec"]["template"]["spec"]["containers"] if x["name"] == "agent")
    if how == "no-capabilities":
        caps = agent["securityContext"]["capabilities"]
        caps["add"] = [x for x in caps["add"] if x not in ("BPF", "PERFMON")]
        seccomp, why = ph.containerd_runtime_default(tmp_path), NO_CAPS
    pod = ph.Pod(objs, tmp_path, NODE, {"/var/lib/cpuzombie": str(tmp_path / "state")},
                 seccomp=seccomp)
    try:
        with NamedZombies(tmp_path, flat=6, nests=1, per_nest=2):
            c = pod.start("agent")
            text, g = agent_census(pod, c)
            assert "\ne %s" % why in text and not g, (text, pod.logs(c))
            p = image_check_memcg(c)
            assert p.returncode == 1, (p.stdout, p.stderr)
            assert "census: " + why in p.stdout, p.stdout
            time.sleep(2)
            assert pod.running(c), pod.logs(c)
            assert "Zombie census off: " + why in pod.logs(c), pod.logs(c)
    finally:
        pod.stop()


@pytest.mark.skipif(not os.path.isdir("/sys/fs/cgroup"), reason="no cgroup filesystem")
def test_init_then_npd_container_sets_conditions_seen_by_kubectl(image, npd_image, helm,
                                                                 kube, tmp_path):
    """With a systemd manager to ask (a crash-looping unit's, on a bus of the test's own mounted
    where the chart mounts the host's system bus), the condition's message names the unit:
    the agent container published it, the check in NPD's container read it."""
    kube.add(kh.node_obj(NODE))
    # the CA inline: the NPD container mounts only this file's directory
    kc = kube.kubeconfig(str(tmp_path / "kubeconfig"), node=NODE, ca_data=True)
    with (ph.bus_manager(tmp_path) if can_run_manager() else contextlib.nullcontext()) as mgr:
        run_pod(helm, npd_image, kube, kc, tmp_path, mgr)


def run_pod(helm, npd_image, kube, kc, tmp_path, mgr):
    overrides = {"/var/lib/cpuzombie": str(tmp_path / "state")}
    if mgr:
        overrides[SYSTEM_BUS] = mgr.bus
        mgr.wait_restarts(3)
    repo, version = npd_image
    sets = ["npd.image.repository=" + repo, "npd.image.pullPolicy=Never"]
    if version != nh.CURRENT:
        sets.append("npd.image.tag=" + version)
    objs = chart(helm, *sets, bus=mgr is not None)
    pod = ph.Pod(objs, tmp_path, NODE, overrides)
    assert pod.container("node-problem-detector")["image"] == "%s:%s" % (repo, version)
    assert pod.spec.get("hostNetwork") is True     # 127.0.0.1 is the host's: the proxy
    port = nh.free_port()
    try:
        init = pod.run("install-plugin")
        assert init.returncode == 0, init.stderr
        # the agent's install-plugin (no cp in the image): one line, the binary at mode 0755,
        # made by the init container's uid 65534, and nothing else in the volume
        assert init.stdout.startswith("installed /opt/cpuzombie/bin/cpuzombie as "
                                      "/plugin/bin/cpuzombie ("), init.stdout
        assert init.stdout.count("\n") == 1, init.stdout
        copy = os.path.join(pod.vols["plugin"], "bin", "cpuzombie")
        st = os.lstat(copy)
        assert stat.S_ISREG(st.st_mode) and stat.S_IMODE(st.st_mode) == 0o755, oct(st.st_mode)
        assert (st.st_uid, st.st_gid) == (65534, 65534), (st.st_uid, st.st_gid)
        assert os.listdir(pod.vols["plugin"]) == ["bin"]
        assert os.listdir(os.path.dirname(copy)) == ["cpuzombie"]
        assert os.access(copy, os.X_OK)
        # the shipped NPD configs, unchanged, are what NPD's container sees
        for f in nh.NPD_CONFIGS:
            with open(os.path.join(pod.vols["npd-config"], "npd", f + ".json")) as got, \
                    open(os.path.join(ROOT, "config", "npd", f + ".json")) as want:
                assert got.read() == want.read(), f
        agent = pod.start("agent")
        if mgr:
            units = os.path.join(pod.vols["run"], "systemd-units")
            wait_for(lambda: os.path.exists(units) and mgr.unit in open(units).read(),
                     "the agent's published units", diag=lambda: pod.logs(agent))
        with DyingMemcgs(2000, tmp_path):
            npd = pod.start("node-problem-detector", extra_args=[
                "--apiserver-override=%s?inClusterConfig=false&auth=%s" % (kube.url, kc),
                "--prometheus-address=127.0.0.1", "--prometheus-port=%d" % port,
                "--port=%d" % nh.free_port()],
                extra_mounts=[(os.path.dirname(kc), os.path.dirname(kc))])
            c = nh.wait_condition(kube, NODE, "MemcgZombieLeak",
                                  lambda c: c["status"] == "True", timeout=120)
            m = MEMCG_MSG.match(c["message"])
            assert m and int(m.group(1)) >= 2000, c
            assert c["reason"] == "ZombieMemcgsHigh"
            if mgr:     # the leaker, named inside the cluster
                assert re.search(r"; top restarts: %s=\d+" % re.escape(mgr.unit), c["message"]), c
            else:
                assert "agent cannot ask systemd" in c["message"], c
            for t in ("CPUCoreSaturation", "ENADeviceReset"):
                nh.wait_condition(kube, NODE, t, lambda c: c["status"] in ("False", "True"))
            admin = kube.admin_kubeconfig(str(tmp_path / "admin.kubeconfig"))
            out = kh.kubectl(admin, "describe", "node", NODE).stdout
            table = nh.describe_conditions(out)
            assert table["MemcgZombieLeak"][:2] == ("True", "ZombieMemcgsHigh")
            assert MEMCG_MSG.match(table["MemcgZombieLeak"][2])
            assert set(table) >= {"MemcgZombieLeak", "CPUCoreSaturation", "ENADeviceReset"}
            for t, (status, reason, msg) in table.items():
                if t != "Ready":
                    assert msg, (t, status, reason)
            # NPD in its container, the version of its image, as the chart's ServiceAccount
            reqs = nh.npd_requests(kube, version)
            assert reqs and {e["user"] for e in reqs} == {nh.SA_USER}, reqs
            assert any(e["method"] == "PATCH" and e["status"] == 200 and
                       e["path"] == "/api/v1/nodes/%s/status" % NODE for e in reqs), reqs
            assert pod.running(npd), pod.logs(npd)
            assert pod.running(agent), pod.logs(agent)
    finally:
        pod.stop()


# -- what the image holds: a final stage with only what the binaries need ----------------------

# Every path of the image outside the library directories, as manifests/image/rootfs.sh makes
# them: "f" a regular file, "l" a symlink (its target), "d" a directory.
TOP_LEVEL = {"etc", "lib", "lib64", "opt", "usr"}
LIBDIRS = ("usr/lib/x86_64-linux-gnu/", "usr/lib64/")
PROGRAMS = ("usr/local/bin/cpuzombie",)	# the dynamic one: its closure ships (no cp)
SBOM = "usr/share/cpuzombie/sbom.spdx.json"
OURS = {"usr/local/bin/cpuzombie", "opt/cpuzombie/bin/cpuzombie",
        "usr/share/cpuzombie/cpuzombie.yaml", "etc/passwd", "etc/group", "etc/nsswitch.conf"} | \
    {"usr/share/cpuzombie/npd/" + f for f in os.listdir(os.path.join(ROOT, "config", "npd"))}
UNOWNED = {"etc/ssl/certs/ca-certificates.crt": "ca-certificates"}	# update-ca-certificates'
SHELLS = {"sh", "bash", "dash", "ash", "zsh", "ksh", "mksh", "csh", "tcsh", "busybox",
          "toybox", "python3", "perl", "env"}


def expected_paths():
    files = OURS | set(UNOWNED) | {SBOM}
    want = {p: "f" for p in files}
    want["usr/local/bin/kubectl-cpuzombie"] = "l cpuzombie"
    want["lib"], want["lib64"] = "l usr/lib", "l usr/lib64"
    for p in list(files) + list(LIBDIRS):
        d = os.path.dirname(p.rstrip("/"))
        while d:
            want.setdefault(d, "d")
            d = os.path.dirname(d)
    for d in LIBDIRS:
        want[d.rstrip("/")] = "d"
    return want


@pytest.fixture(scope="module")
def image_tree(image, tmp_path_factory):
    """The image's filesystem as `podman export` gives it: {path: TarInfo}, and the extracted
    tree's directory (the files' bytes, for readelf and the checksums)."""
    import tarfile
    d = tmp_path_factory.mktemp("image-tree")
    c = ph.podman("create", "--pull=never", image).stdout.strip()
    try:
        tar = str(d / "image.tar")
        ph.podman("export", "-o", tar, c)
    finally:
        ph.podman("rm", "-f", c, check=False)
    root = d / "root"
    root.mkdir()
    with tarfile.open(tar) as t:
        members = {m.name.lstrip("./").rstrip("/"): m for m in t.getmembers()
                   if m.name.lstrip("./")}
        t.extractall(root, filter="fully_trusted") if hasattr(tarfile, "data_filter") \
            else t.extractall(root)
    return members, str(root)


def is_elf(path):
    with open(path, "rb") as f:
        return f.read(4) == b"\x7fELF"


def readelf(*args):
    p = subprocess.run(["readelf", "-W", *args], capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    return p.stdout


def needed(path):
    """DT_NEEDED sonames and the ELF interpreter of @path (from its own headers)."""
    dyn = readelf("-d", path)
    sonames = re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]", dyn)
    interp = re.search(r"Requesting program interpreter: ([^\]]+)\]", readelf("-l", path))
    return sonames, interp.group(1) if interp else None


def test_image_holds_only_what_the_binaries_need(image_tree):
    """The final stage is its staging stage's /rootfs and nothing else: the exact set of
    top-level paths and of files outside the library directories that rootfs.sh names, and in
    the library directories exactly the closure of the dynamic program's DT_NEEDED (read
    from the image's own ELF headers, not from ldd) with the loader and libgcc_s.so.1, which
    glibc dlopens to unwind a thread in pthread_exit (some library of the closure calls it);
    no shell or other interpreter, no apt or dpkg, no setuid/setgid or world-writable file,
    everything root's; every ELF file stripped (no .symtab, no .debug_*)."""
    members, root = image_tree
    assert {p.split("/")[0] for p in members} == TOP_LEVEL, sorted(members)
    got = {}
    for p, m in members.items():
        if any(p.startswith(d) for d in LIBDIRS):
            continue
        got[p] = "f" if m.isfile() else "l " + m.linkname if m.issym() else \
            "d" if m.isdir() else "? %r" % m.type
    assert got == expected_paths(), set(got) ^ set(expected_paths())
    # the libraries: the closure, walked from the programs' headers through the image's files
    libdir = os.path.join(root, LIBDIRS[0])
    want, todo, imports_unwind = set(), list(PROGRAMS), []
    while todo:
        path = todo.pop()
        sonames, interp = needed(os.path.join(root, path))
        if interp:
            assert interp == "/lib64/ld-linux-x86-64.so.2", (path, interp)
            want.add("ld-linux-x86-64.so.2")
        syms = readelf("--dyn-syms", os.path.join(root, path))
        if re.search(r"\bUND (pthread_exit|pthread_cancel|backtrace)\b", syms):
            imports_unwind.append(path)
        for so in sonames:
            if so not in want:
                want.add(so)
                assert os.path.exists(os.path.join(libdir, so)), (path, so)
                todo.append(LIBDIRS[0] + so)
    assert imports_unwind, "no library calls pthread_exit: libgcc_s.so.1 would not be needed"
    want.add("libgcc_s.so.1")
    names = {p[len(LIBDIRS[0]):] for p in members if p.startswith(LIBDIRS[0])}
    # each soname is the file or a symlink to it in the same directory (the real file then too)
    real = set()
    for so in want:
        m = members[LIBDIRS[0] + so]
        assert m.isfile() or (m.issym() and "/" not in m.linkname), (so, m.linkname)
        real.add(so if m.isfile() else m.linkname)
    assert names == want | real, sorted(names ^ (want | real))
    assert {p for p in members if p.startswith(LIBDIRS[1])} == {LIBDIRS[1] + "ld-linux-x86-64.so.2"}
    assert members[LIBDIRS[1] + "ld-linux-x86-64.so.2"].linkname == \
        "/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2"
    # no shell, interpreter or package manager anywhere, no setuid/setgid, root's
    for p, m in members.items():
        base = os.path.basename(p)
        assert base not in SHELLS and not re.match(r"(apt|dpkg)", base), p
        assert not m.mode & 0o6000 and not (m.mode & 0o002 and not m.issym()), (p, oct(m.mode))
        assert (m.uid, m.gid) == (0, 0), (p, m.uid, m.gid)
    elves = [p for p, m in members.items() if m.isfile() and is_elf(os.path.join(root, p))]
    assert set(elves) == {"usr/local/bin/cpuzombie", "opt/cpuzombie/bin/cpuzombie"} | \
        {p for p in elves if p.startswith(LIBDIRS)}, sorted(elves)
    for p in elves:
        sections = re.findall(r"^\s*\[\s*\d+\]\s+(\S+)", readelf("-S", os.path.join(root, p)),
                              re.M)
        assert ".symtab" not in sections and not [s for s in sections if
                                                  s.startswith(".debug")], (p, sections)
    files = [p for p, m in members.items() if m.isfile()]
    links = [p for p, m in members.items() if m.issym()]
    size = sum(m.size for m in members.values() if m.isfile())
    print("image: %d files (%d ELF), %d symlinks, %d directories, %.1f MiB" % (
        len(files), len(elves), len(links), len(members) - len(files) - len(links),
        size / 1048576))


def test_image_runs_as_nobody_without_a_shell(image, image_tree, tmp_path):
    """USER 65534:65534 by default: the file the image's own install-plugin writes into a
    directory of the test's (everyone's, as the chart's emptyDir) is owned by the process's
    uid and gid, 65534:65534 (the image has no cp or cat to print /proc/self/status);
    named in the image's passwd/group; no /bin/sh and no sh on PATH to run."""
    cfg = ph.podman("image", "inspect", "--format", "{{.Config.User}}", image).stdout.strip()
    assert cfg == "65534:65534"
    out = tmp_path / "plugin"
    out.mkdir()
    os.chmod(out, 0o777)
    p = ph.podman("run", "--rm", "--pull=never", "--network", "none", "-v",
                  "%s:/plugin" % out, image, "install-plugin", "/plugin")
    assert p.stdout.startswith("installed /opt/cpuzombie/bin/cpuzombie as /plugin/bin/"), p
    for f in (out / "bin", out / "bin" / "cpuzombie"):
        st = os.lstat(f)
        assert (st.st_uid, st.st_gid) == (65534, 65534), (f, st.st_uid, st.st_gid)
    members, root = image_tree
    with open(os.path.join(root, "opt", "cpuzombie", "bin", "cpuzombie"), "rb") as want:
        assert (out / "bin" / "cpuzombie").read_bytes() == want.read()
    pw = open(os.path.join(root, "etc", "passwd")).read()
    gr = open(os.path.join(root, "etc", "group")).read()
    assert "nobody:x:65534:65534:" in pw and "nogroup:x:65534:" in gr, (pw, gr)
    for sh in ("/bin/sh", "sh", "/usr/bin/sh", "bash"):
        p = ph.podman("run", "--rm", "--pull=never", "--entrypoint", sh, image, "-c", "true",
                      check=False)
        assert p.returncode != 0 and re.search(r"no such file|not found", p.stderr), (sh, p)


def test_sbom_lists_exactly_the_images_files_and_their_packages(image, image_tree):
    """The SBOM (SPDX 2.3 JSON) lists every regular file of the image but itself, each with its
    real SHA-256, contained by exactly one package; its packages are exactly those containing
    some file: cpuzombie for our files, and for every other file the Debian package that
    dpkg -S names for it in the staging stage the files were copied from (asked here, one dpkg
    per image: the staging stage from the same cached layers), with dpkg-query's version."""
    import hashlib
    import json
    members, root = image_tree
    doc = json.load(open(os.path.join(root, SBOM)))
    assert doc["spdxVersion"] == "SPDX-2.3" and doc["SPDXID"] == "SPDXRef-DOCUMENT"
    files = {f["SPDXID"]: f for f in doc["files"]}
    by_name = {f["fileName"][2:]: f for f in doc["files"]}
    assert len(by_name) == len(files) == len(doc["files"])
    assert all(f["fileName"].startswith("./") for f in doc["files"])
    assert set(by_name) == {p for p, m in members.items() if m.isfile()} - {SBOM}
    for p, f in by_name.items():
        sums = {c["algorithm"]: c["checksumValue"] for c in f["checksums"]}
        data = open(os.path.join(root, p), "rb").read()
        assert sums == {"SHA1": hashlib.sha1(data).hexdigest(),
                        "SHA256": hashlib.sha256(data).hexdigest()}, p
    pkgs = {p["SPDXID"]: p for p in doc["packages"]}
    contains = [r for r in doc["relationships"] if r["relationshipType"] == "CONTAINS"]
    owner = {}
    for r in contains:
        assert r["relatedSpdxElement"] not in owner, r
        owner[r["relatedSpdxElement"]] = pkgs[r["spdxElementId"]]["name"]
    assert set(owner) == set(files)
    assert {pkgs[r["spdxElementId"]]["name"] for r in contains} == \
        {p["name"] for p in doc["packages"]}
    assert [r for r in doc["relationships"] if r["relationshipType"] == "DESCRIBES"] == [
        {"spdxElementId": "SPDXRef-DOCUMENT", "relationshipType": "DESCRIBES",
         "relatedSpdxElement": "SPDXRef-Package-cpuzombie"}]
    owner = {files[i]["fileName"][2:]: name for i, name in owner.items()}
    assert {p for p, n in owner.items() if n == "cpuzombie"} == OURS
    ours = next(p for p in doc["packages"] if p["name"] == "cpuzombie")
    assert ours["versionInfo"] == VERSION
    # the Debian side, asked of dpkg in the staging stage
    staging = "localhost/cpuzombie/cpuzombie-staging:" + VERSION
    with host_lock_let_go():     # a build: nothing of the host's
        b = subprocess.run([os.path.join(ROOT, "tests", "tools", "podman", "build-image.sh"),
                            staging, "staging"], capture_output=True, text=True, timeout=1800)
    assert b.returncode == 0, b.stderr[-3000:]
    debs = {p: n for p, n in owner.items() if n != "cpuzombie"}
    q = ph.podman("run", "--rm", "--pull=never", "--entrypoint", "dpkg", staging, "-S",
                  *sorted({os.path.basename(p) for p in debs}), check=False)
    said = {}	# /path as in the image (merged /usr) -> packages dpkg names for it
    for line in q.stdout.splitlines():
        names, path = line.split(": ", 1)
        path = re.sub(r"^/(lib|lib64|bin)/", r"/usr/\1/", path)
        said.setdefault(path.lstrip("/"), set()).update(n.split(":")[0] for n in names.split(", "))
    for p, n in debs.items():
        if p in UNOWNED:
            assert p not in said and n == UNOWNED[p], (p, n)
            continue
        assert said.get(p) == {n}, (p, n, said.get(p))
    v = ph.podman("run", "--rm", "--pull=never", "--entrypoint", "dpkg-query", staging, "-W",
                  "-f", "${Package} ${Version} ${Architecture}\\n", *sorted(set(debs.values())))
    versions = {ln.split(" ")[0]: ln.split(" ")[1:] for ln in v.stdout.splitlines()}
    deb_pkgs = [p for p in doc["packages"] if p["name"] != "cpuzombie"]
    assert {p["name"] for p in deb_pkgs} == set(debs.values())
    for p in deb_pkgs:
        ver, arch = versions[p["name"]]
        assert p["versionInfo"] == ver and p["supplier"] == "Organization: Debian", p
        assert p["externalRefs"][0]["referenceLocator"] == "pkg:deb/debian/%s@%s?arch=%s" % (
            p["name"], ver.replace("+", "%2B"), arch), p
    # how many packages the staging stage has (debian:bookworm-slim + four), for the summary
    base = ph.podman("run", "--rm", "--pull=never", "--entrypoint", "dpkg-query", staging,
                     "-W", "-f", "${Package}\\n").stdout.split()
    print("SBOM: %d files from %d Debian packages + cpuzombie (the staging stage has %d "
          "packages)" % (len(by_name), len(deb_pkgs), len(base)))


def test_image_labels_record_the_bases(image):
    """The OCI labels, and the bases as build-image.sh resolved them: a base imported here
    (bases.sh's debootstrap) by tag with its image ID; one from a registry by digest."""
    labels = ph.podman("image", "inspect", "--format", "{{json .Config.Labels}}", image).stdout
    import json
    labels = json.loads(labels)
    for k in ("title", "version", "licenses", "description", "base.name"):
        assert labels.get("org.opencontainers.image." + k), (k, labels)
    assert labels["org.opencontainers.image.version"] == VERSION
    assert labels["io.cpuzombie.image.sbom"] == "/" + SBOM
    for key, ref, id_label in (
            ("io.cpuzombie.image.build-base", "docker.io/library/debian:bookworm",
             "io.cpuzombie.image.build-base.id"),
            ("org.opencontainers.image.base.name", "docker.io/library/debian:bookworm-slim",
             "io.cpuzombie.image.runtime-base.id")):
        img_id = ph.podman("image", "inspect", "--format", "{{.Id}}", ref).stdout.strip()
        assert labels[id_label] == "sha256:" + img_id, (id_label, labels)
        hist = ph.podman("history", "--no-trunc", "--format", "{{.Comment}}", ref).stdout
        if hist.split("\n")[0] == "imported from tarball":	# its top layer: bases.sh's
            assert labels[key] == ref, (key, labels)
        else:
            digest = ph.podman("image", "inspect", "--format", "{{.Digest}}", ref).stdout.strip()
            assert labels[key] == ref.rsplit(":", 1)[0] + "@" + digest, (key, labels)
            if id_label.endswith("runtime-base.id"):
                assert labels["org.opencontainers.image.base.digest"] == digest


def test_image_reaches_the_api_server_by_name(image, kube, tmp_path):
    """The image's libcurl, resolver and CA handling against the real API server (its fault
    proxy), as uid 65534 under a read-only root: by the name localhost (getaddrinfo through
    the image's nsswitch.conf and the hosts file the runtime mounts) with the CA inline; with
    no CA in the kubeconfig it verifies against the image's bundle (the test's CA is in no
    public bundle: refused), and with the test's CA mounted over that bundle it connects."""
    import json
    import fleet_helpers as fh
    kube.add(kh.node_obj(NODE))
    fh.ensure_viewers(kube.cp)
    server = kube.url.replace("127.0.0.1", "localhost")
    assert server != kube.url
    tok = kube.cp.token(fh.VIEWER_NS, fh.VIEWER)
    kdir = tmp_path / "kc"
    kdir.mkdir()
    os.chmod(tmp_path, 0o755)
    os.chmod(kdir, 0o755)
    inline = kube.cp.kubeconfig(str(kdir / "inline"), {"token": tok}, server=server,
                                ca_data=True)
    doc = json.load(open(inline))
    del doc["clusters"][0]["cluster"]["certificate-authority-data"]
    json.dump(doc, open(kdir / "no-ca", "w"))
    for f in ("inline", "no-ca"):
        os.chmod(kdir / f, 0o644)

    def fleet(kc, *extra):
        return ph.podman("run", "--rm", "--pull=never", "--network", "host", "--read-only",
                         "--cap-drop", "all", "--security-opt", "no-new-privileges",
                         "-v", "%s:/kc:ro" % kdir, *extra, image, "fleet", "--kubeconfig",
                         "/kc/" + kc, "-l", "kubernetes.io/hostname=" + NODE,
                         check=False)
    since = len(kube.log())
    p = fleet("inline")
    assert p.returncode == 0 and p.stdout.startswith("cpuzombie fleet: 1 nodes\n"), \
        (p.stdout, p.stderr)
    reqs = [e for e in kube.log(since) if e["path"] == "/api/v1/nodes"]
    assert reqs and {e["status"] for e in reqs} == {200}, reqs
    assert {e["user"] for e in reqs} == {"system:serviceaccount:%s:%s" % (fh.VIEWER_NS,
                                                                        fh.VIEWER)}, reqs
    p = fleet("no-ca")
    assert p.returncode == 2 and "SSL certificate problem" in p.stderr, (p.stdout, p.stderr)
    p = fleet("no-ca", "-v", "%s:/etc/ssl/certs/ca-certificates.crt:ro" % kube.cp.ca)
    assert p.returncode == 0 and p.stdout.startswith("cpuzombie fleet: 1 nodes\n"), \
        (p.stdout, p.stderr)

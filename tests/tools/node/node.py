# SPDX-License-Identifier: MIT
"""A real Kubernetes node on this machine, beside kwok's fake ones, for the control plane of
tests/tools/kube/cluster.py: containerd with runc, a kubelet, kube-proxy and a bridge CNI,
built by build.sh (../kube/versions.sh pins them), plus what the control plane leaves out and
a node's pods need: kube-scheduler, and a kube-controller-manager of the node's own running the
controllers that make pods (daemonset, deployment, replicaset, job) and publish the cluster's
CA to every namespace (root-ca-cert-publisher).

Node(cp, workdir).start() registers a Node named NAME with the control plane and returns when
it is Ready; stop() ends what start() made, in reverse: the node's pods (through the kubelet,
so each sandbox's network is torn down by the CNI), kube-proxy's rules (`kube-proxy
--cleanup`), the kubelet, containerd's tasks, containerd, every mount under the work
directory, the bridge, the iptables rules added here, the node's cgroup tree, the Node object.
Processes are ended by PID (proc_helpers), shims by the PID containerd recorded.

The network, all inside this machine:
- the bridge BRIDGE holds GATEWAY (the node's InternalIP: the kubelet refuses a loopback
  node IP) and the pods' POD_CIDR; a FORWARD rule drops whatever a pod sends out of any other
  interface, and there is no masquerade: nothing leaves the machine;
- the API server listens on 127.0.0.1 only, and the `kubernetes` Service's endpoints may not
  name a loopback address (the control plane runs without an endpoint reconciler): an
  EndpointSlice of the node's own names GATEWAY:relay_port, where a relay here carries the
  bytes to 127.0.0.1:<API port> (TLS passes through: the pods verify the API server's own
  certificate, which names the Service's IP 10.96.0.1), and kube-proxy's rules take
  10.96.0.1:443 there, from a pod's network and from the host's (hostNetwork pods);
- the kubelet serves on GATEWAY (the API server reaches it for exec and logs) without
  authentication: the address exists only on this machine.
"""

import json
import os
import shlex
import shutil
import socket
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "kube"))
import cluster  # noqa: E402
from cluster import Proc, free_port, tail  # noqa: E402

sys.path.insert(0, HERE)
import images  # noqa: E402

BRIDGE = "czbr0"
POD_CIDR = "10.213.0.0/24"
GATEWAY = "10.213.0.1"
# The node's name is its address: the API server reaches a kubelet (exec, logs) at the node's
# Hostname address first (--kubelet-preferred-address-types), which is the name, and nothing
# here resolves a made-up host name; an IP address is a valid node name and needs no resolver.
NAME = GATEWAY
SERVICE_IP = "10.96.0.1"
# node-lifecycle-controller: a kubelet registers its node tainted not-ready (NoSchedule) and
# this controller lifts the taint once the node is Ready; its grace periods are long here, so
# kwok's nodes (no Lease) are never marked unreachable and their pods never evicted by it
CONTROLLERS = ("daemonset,deployment,replicaset,job,root-ca-cert-publisher,"
               "node-lifecycle-controller")
MARK = "cz-real-node"        # the comment on every iptables rule added here
# Machine-wide settings the node's parts set (the kubelet its kernel tunables unless
# protectKernelDefaults, the bridge plugin forwarding, kube-proxy route_localnet): saved before
# and written back by stop(), the machine is shared.
# Host directories the kubelet and containerd make at fixed places (pod logs and their links,
# the shims' sockets under /run/containerd/s): removed by stop() when start() did not find them.
HOST_DIRS = ("/var/log/pods", "/var/log/containers", "/run/containerd")
SYSCTLS = ("vm/overcommit_memory", "vm/panic_on_oom", "kernel/panic", "kernel/panic_on_oops",
           "kernel/keys/root_maxkeys", "kernel/keys/root_maxbytes", "net/ipv4/ip_forward",
           "net/ipv4/conf/all/route_localnet", "net/bridge/bridge-nf-call-iptables")


def build(components=("all",), env=None):
    """Runs the node's build.sh (builds what is missing, says how long on stderr);
    {name: bin_dir}."""
    return cluster.build(components, env, script=os.path.join(HERE, "build.sh"))


def run(*args, check=True, timeout=120, **kw):
    r = subprocess.run(args, capture_output=True, text=True, timeout=timeout, **kw)
    if check and r.returncode != 0:
        raise RuntimeError("%s: exit %d\n%s%s" % (" ".join(args), r.returncode, r.stdout,
                                                   r.stderr))
    return r


class Relay:
    """TCP from (host, port) to 127.0.0.1:@to, byte for byte, one thread per direction."""

    def __init__(self, host, to):
        self.to = to
        self.srv = socket.socket()
        self.srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.srv.bind((host, 0))
        self.srv.listen(64)
        self.port = self.srv.getsockname()[1]
        self.conns = []
        self.lock = threading.Lock()
        self.t = threading.Thread(target=self._accept, daemon=True)
        self.t.start()

    def _accept(self):
        while True:
            try:
                c, _ = self.srv.accept()
            except OSError:
                return
            try:
                u = socket.create_connection(("127.0.0.1", self.to), timeout=10)
                u.settimeout(None)
            except OSError:
                c.close()
                continue
            with self.lock:
                self.conns += [c, u]
            for a, b in ((c, u), (u, c)):
                threading.Thread(target=self._pipe, args=(a, b), daemon=True).start()

    @staticmethod
    def _pipe(a, b):
        try:
            while True:
                data = a.recv(65536)
                if not data:
                    break
                b.sendall(data)
        except OSError:
            pass
        for s in (a, b):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def close(self):
        self.srv.close()
        with self.lock:
            for s in self.conns:
                s.close()


class Node:
    def __init__(self, cp, workdir, name=NAME):
        self.cp = cp
        self.dir = workdir
        self.name = name
        self.procs = []
        self.undo = []          # (what, callable), run in reverse by stop()
        self.relay = None
        os.makedirs(workdir, exist_ok=True)
        self.cgroup_root = "/cz-node-%s" % name.replace(".", "-")

    # -- start ---------------------------------------------------------------------------------

    def start(self, bins=None):
        self.bins = bins or build()
        self.kube_bins = self.cp.bins["kube"]
        for d in HOST_DIRS:
            if not os.path.exists(d):
                self.undo.append((d, lambda d=d: shutil.rmtree(d, ignore_errors=True)))
        try:
            self._kube_chains_before = self._kube_chains()
            self.undo.append(("the kubelet's iptables chains", self._remove_kube_chains))
            self._save_sysctls()
            self._certs()
            self._network()
            self._controllers()
            self._containerd()
            self.import_image(images.pause_archive(self.dir))
            self._kubelet()
            self._kube_proxy()
            self._service_endpoints()
            self.wait_ready()
        except BaseException:
            self.stop()
            raise
        return self

    @staticmethod
    def _kube_chains():
        """{(command, table): {KUBE-* chain}}: the kubelet makes KUBE-FIREWALL (jumped to
        from INPUT and OUTPUT), KUBE-KUBELET-CANARY and KUBE-IPTABLES-HINT, in both families,
        and nothing removes them (kube-proxy --cleanup removes only its own)."""
        out = {}
        for cmd in ("iptables", "ip6tables"):
            for table in ("filter", "nat", "mangle"):
                r = run(cmd, "-w", "-t", table, "-S", check=False)
                out[(cmd, table)] = {l.split()[1] for l in r.stdout.splitlines()
                                     if l.startswith("-N KUBE-")}
        return out

    def _remove_kube_chains(self):
        """The KUBE-* chains that appeared since start(), with the rules that jump to them."""
        now = self._kube_chains()
        for (cmd, table), chains in now.items():
            new = chains - self._kube_chains_before.get((cmd, table), set())
            if not new:
                continue
            rules = run(cmd, "-w", "-t", table, "-S", check=False).stdout.splitlines()
            for l in rules:
                f = shlex.split(l)
                if f[0] == "-A" and "-j" in f and f[f.index("-j") + 1] in new \
                        and f[1] not in new:
                    run(cmd, "-w", "-t", table, "-D", *f[1:], check=False)
            for c in new:
                run(cmd, "-w", "-t", table, "-F", c, check=False)
            for c in new:
                run(cmd, "-w", "-t", table, "-X", c, check=False)

    def _save_sysctls(self):
        saved = {}
        for k in SYSCTLS:
            try:
                saved[k] = open("/proc/sys/" + k).read()
            except OSError:
                pass

        def restore():
            for k, v in saved.items():
                try:
                    if open("/proc/sys/" + k).read() != v:
                        with open("/proc/sys/" + k, "w") as f:
                            f.write(v)
                except OSError:
                    pass
        self.undo.append(("sysctls", restore))

    def _start(self, name, args, env=None):
        p = Proc(name, args, self.dir, env)
        self.procs.append(p)
        return p

    def _certs(self):
        d = self.cp.pki
        self.node_cert, self.node_key = cluster.make_cert(
            d, "node-" + self.name, "system:node:" + self.name, org="system:nodes")
        self.proxy_cert, self.proxy_key = cluster.make_cert(
            d, "kube-proxy-" + self.name, "system:kube-proxy")
        self.kubeconfig = self.cp.kubeconfig(
            os.path.join(self.dir, "kubelet.kubeconfig"),
            {"client-certificate": self.node_cert, "client-key": self.node_key})
        self.proxy_kubeconfig = self.cp.kubeconfig(
            os.path.join(self.dir, "kube-proxy.kubeconfig"),
            {"client-certificate": self.proxy_cert, "client-key": self.proxy_key})

    def _iptables(self, table, chain, *rule):
        """Inserts @rule at the top of @chain, commented MARK; stop() deletes it."""
        r = ["-m", "comment", "--comment", MARK, *rule]
        run("iptables", "-w", "-t", table, "-I", chain, *r)
        self.undo.append(("iptables %s %s" % (chain, " ".join(rule)),
                          lambda: run("iptables", "-w", "-t", table, "-D", chain, *r,
                                      check=False)))

    def _network(self):
        if os.path.exists("/sys/class/net/" + BRIDGE):
            raise RuntimeError("bridge %s exists: another test node is up, or one was left "
                               "behind (ip link del %s)" % (BRIDGE, BRIDGE))
        run("ip", "link", "add", BRIDGE, "type", "bridge")
        self.undo.append(("bridge", lambda: run("ip", "link", "del", BRIDGE, check=False)))
        run("ip", "addr", "add", GATEWAY + "/24", "dev", BRIDGE)
        run("ip", "link", "set", BRIDGE, "up")
        # the pods talk to this machine only: nothing they send is forwarded anywhere else
        self._iptables("filter", "FORWARD", "-i", BRIDGE, "!", "-o", BRIDGE, "-j", "DROP")
        self.relay = Relay(GATEWAY, self.cp.port)
        cni = os.path.join(self.dir, "cni")
        os.makedirs(os.path.join(cni, "net.d"), exist_ok=True)
        with open(os.path.join(cni, "net.d", "10-cz-node.conflist"), "w") as f:
            json.dump({"cniVersion": "1.0.0", "name": "cz-node", "plugins": [{
                "type": "bridge", "bridge": BRIDGE, "isGateway": True, "ipMasq": False,
                "hairpinMode": True,
                "ipam": {"type": "host-local", "dataDir": os.path.join(cni, "ipam"),
                         "ranges": [[{"subnet": POD_CIDR, "gateway": GATEWAY}]],
                         "routes": [{"dst": "0.0.0.0/0"}]}}]}, f, indent=1)
        self.cni_conf = os.path.join(cni, "net.d")

    def _controllers(self):
        kc = self.cp.admin_kubeconfig
        self.kcm = self._start("node-controller-manager", [
            os.path.join(self.kube_bins, "kube-controller-manager"), "--kubeconfig", kc,
            "--controllers", CONTROLLERS, "--root-ca-file", self.cp.ca,
            "--leader-elect=false", "--bind-address", "127.0.0.1", "--secure-port", "0",
            "--use-service-account-credentials=false", "--concurrent-daemonset-syncs", "2",
            "--node-monitor-grace-period", "1h", "--node-startup-grace-period", "1h",
            "--v", "1"])
        self.scheduler = self._start("kube-scheduler", [
            os.path.join(self.bins["kube-scheduler"], "kube-scheduler"),
            "--kubeconfig", kc, "--authentication-kubeconfig", kc,
            "--authorization-kubeconfig", kc, "--leader-elect=false",
            "--bind-address", "127.0.0.1", "--secure-port", str(free_port()), "--v", "1"])

    def _containerd(self):
        d = os.path.join(self.dir, "containerd")
        self.cd_root, self.cd_state = os.path.join(d, "root"), os.path.join(d, "state")
        self.sock = os.path.join(d, "containerd.sock")
        os.makedirs(self.cd_root, exist_ok=True)
        os.makedirs(self.cd_state, exist_ok=True)
        runc = os.path.join(self.bins["runc"], "runc")
        cfg = os.path.join(d, "config.toml")
        with open(cfg, "w") as f:
            f.write('''version = 3
root = "%(root)s"
state = "%(state)s"
disabled_plugins = ["io.containerd.nri.v1.nri", "io.containerd.tracing.processor.v1.otlp",
                    "io.containerd.internal.v1.tracing"]
[grpc]
  address = "%(sock)s"
[ttrpc]
  address = "%(sock)s.ttrpc"
[plugins."io.containerd.internal.v1.opt"]
  path = "%(dir)s/opt"
[plugins."io.containerd.cri.v1.images"]
  snapshotter = "overlayfs"
  [plugins."io.containerd.cri.v1.images".pinned_images]
    sandbox = "%(pause)s"
[plugins."io.containerd.cri.v1.runtime"]
  netns_mounts_under_state_dir = true
  # no container's oom_score_adj below containerd's own: this machine's sandbox withholds
  # CAP_SYS_RESOURCE (CapBnd), so lowering one fails with EACCES (runc init: "failed to update
  # /proc/self/oom_score_adj: Permission denied"), the sandbox's -998 first
  restrict_oom_score_adj = true
  [plugins."io.containerd.cri.v1.runtime".containerd]
    default_runtime_name = "runc"
    [plugins."io.containerd.cri.v1.runtime".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.cri.v1.runtime".containerd.runtimes.runc.options]
        BinaryName = "%(runc)s"
        SystemdCgroup = false
  [plugins."io.containerd.cri.v1.runtime".cni]
    bin_dirs = ["%(cni)s"]
    conf_dir = "%(conf)s"
[plugins."io.containerd.grpc.v1.cri"]
  disable_tcp_service = true
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
''' % {"root": self.cd_root, "state": self.cd_state, "sock": self.sock, "dir": d,
                "pause": images.PAUSE_IMAGE, "runc": runc, "cni": self.bins["cni"],
                "conf": self.cni_conf})
        env = dict(os.environ, PATH="%s:%s:%s" % (self.bins["containerd"], self.bins["runc"],
                                                  os.environ.get("PATH", "/usr/bin:/bin")))
        self.containerd = self._start("containerd", [
            os.path.join(self.bins["containerd"], "containerd"), "--config", cfg,
            "--log-level", os.environ.get("CZ_NODE_LOG_LEVEL", "warn")], env=env)
        self._wait(lambda: self.ctr("version", check=False).returncode == 0,
                   self.containerd, 60, "containerd")

    def ctr(self, *args, check=True, timeout=300):
        return run(os.path.join(self.bins["containerd"], "ctr"), "--address", self.sock,
                   "-n", "k8s.io", *args, check=check, timeout=timeout)

    def import_image(self, archive, tag=None):
        """`ctr images import` of a docker-archive (unpacked for the CRI's snapshotter); then
        @tag, (the name imported, the name to add), when the archive's name is not the one the
        pod spec asks for."""
        self.ctr("images", "import", archive)
        if tag:
            self.ctr("images", "tag", "--force", *tag)

    def _kubelet(self):
        d = os.path.join(self.dir, "kubelet")
        os.makedirs(d, exist_ok=True)
        # the node's cgroup tree, named for it, in every v1 hierarchy the kubelet uses
        for h in self._hierarchies():
            os.makedirs(h + self.cgroup_root, exist_ok=True)
            # a new v1 cpuset has no CPUs and no memory nodes: its parent's (the machine's)
            for f in ("cpuset.cpus", "cpuset.mems"):
                if os.path.exists(os.path.join(h, f)):
                    with open(os.path.join(h + self.cgroup_root, f), "w") as out:
                        out.write(open(os.path.join(h, f)).read())
        self.undo.append(("cgroups", self._remove_cgroups))
        self.kubelet_port, self.healthz_port = free_port(), free_port()
        cfg = os.path.join(d, "config.yaml")
        conf = {
            "apiVersion": "kubelet.config.k8s.io/v1beta1", "kind": "KubeletConfiguration",
            # this machine is cgroup v1 (hybrid): refused by default since 1.35
            "failCgroupV1": False,
            "cgroupDriver": "cgroupfs", "cgroupRoot": self.cgroup_root,
            "containerRuntimeEndpoint": "unix://" + self.sock,
            "address": GATEWAY, "port": self.kubelet_port, "readOnlyPort": 0,
            "healthzBindAddress": "127.0.0.1", "healthzPort": self.healthz_port,
            "authentication": {"anonymous": {"enabled": True}, "webhook": {"enabled": False},
                               "x509": {"clientCAFile": self.cp.ca}},
            "authorization": {"mode": "AlwaysAllow"},
            "failSwapOn": False, "resolvConf": "/etc/resolv.conf",
            "clusterDomain": "cluster.local",
            # the imported images are all there is: never collect them
            "imageGCHighThresholdPercent": 100, "imageGCLowThresholdPercent": 99,
            "evictionHard": {"memory.available": "100Mi", "nodefs.available": "1%",
                             "imagefs.available": "1%", "nodefs.inodesFree": "1%"},
            "registerNode": True, "serializeImagePulls": False,
            "syncFrequency": "10s", "fileCheckFrequency": "10s",
            "staticPodPath": "", "podPidsLimit": -1, "maxPods": 50,
            "volumeStatsAggPeriod": "0s",
        }
        with open(cfg, "w") as f:
            json.dump(conf, f, indent=1)
        self.kubelet_root = os.path.join(d, "root")
        self.kubelet = self._start("kubelet", [
            os.path.join(self.bins["kubelet"], "kubelet"), "--config", cfg,
            "--kubeconfig", self.kubeconfig, "--root-dir", self.kubelet_root,
            "--cert-dir", os.path.join(d, "pki"), "--hostname-override", self.name,
            "--node-ip", GATEWAY, "--volume-plugin-dir", os.path.join(d, "volume-plugins"),
            "--v", "1"])
        self.undo.append(("node object", lambda: self.cp.raw(
            "DELETE", "/api/v1/nodes/" + self.name)))

    def _kube_proxy(self):
        d = os.path.join(self.dir, "kube-proxy")
        os.makedirs(d, exist_ok=True)
        self.proxy_cfg = os.path.join(d, "config.yaml")
        with open(self.proxy_cfg, "w") as f:
            json.dump({
                "apiVersion": "kubeproxy.config.k8s.io/v1alpha1",
                "kind": "KubeProxyConfiguration", "mode": "iptables",
                "clientConnection": {"kubeconfig": self.proxy_kubeconfig},
                "hostnameOverride": self.name, "bindAddress": "127.0.0.1",
                "healthzBindAddress": "127.0.0.1:%d" % free_port(),
                "metricsBindAddress": "127.0.0.1:%d" % free_port(),
                "clusterCIDR": POD_CIDR, "nodePortAddresses": [GATEWAY + "/32"],
                # no machine-wide sysctl: conntrack sized as it is, no localhost NodePorts
                "conntrack": {"maxPerCore": 0, "min": 0, "tcpEstablishedTimeout": "0s",
                              "tcpCloseWaitTimeout": "0s"},
                "iptables": {"localhostNodePorts": False, "masqueradeAll": False},
            }, f, indent=1)
        self.undo.append(("kube-proxy rules", lambda: run(
            os.path.join(self.bins["kubelet"], "kube-proxy"), "--cleanup",
            "--config", self.proxy_cfg, check=False)))
        self.proxy = self._start("kube-proxy", [
            os.path.join(self.bins["kubelet"], "kube-proxy"), "--config", self.proxy_cfg,
            "--v", "1"])

    def _service_endpoints(self):
        """The `kubernetes` Service's endpoints: GATEWAY at the relay's port."""
        path = "/apis/discovery.k8s.io/v1/namespaces/default/endpointslices"
        name = "kubernetes-" + self.name
        st, obj = self.cp.raw("POST", path, {
            "apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
            "metadata": {"name": name, "labels": {
                "kubernetes.io/service-name": "kubernetes",
                "endpointslice.kubernetes.io/managed-by": "cpuzombie-tests"}},
            "addressType": "IPv4",
            "endpoints": [{"addresses": [GATEWAY], "conditions": {"ready": True}}],
            "ports": [{"name": "https", "port": self.relay.port, "protocol": "TCP"}]})
        if st != 201:
            raise RuntimeError("EndpointSlice for the kubernetes Service: %s %s" % (st, obj))
        self.undo.append(("endpointslice", lambda: self.cp.raw("DELETE", path + "/" + name)))

    # -- waiting and looking -------------------------------------------------------------------

    def _wait(self, ok, proc, seconds, what):
        deadline = time.monotonic() + seconds
        while not ok():
            proc.check()
            if time.monotonic() > deadline:
                raise RuntimeError("%s not ready after %d s; last lines of %s:\n%s" %
                                   (what, seconds, proc.log, tail(proc.log, 40)))
            time.sleep(0.5)

    def node(self):
        st, obj = self.cp.raw("GET", "/api/v1/nodes/" + self.name)
        return obj if st == 200 else None

    def ready(self):
        """Ready, and the not-ready taint the kubelet registers with lifted."""
        n = self.node()
        return bool(n) and any(c["type"] == "Ready" and c["status"] == "True"
                               for c in n.get("status", {}).get("conditions", [])) \
            and not any(t["key"] == "node.kubernetes.io/not-ready"
                        for t in n.get("spec", {}).get("taints", []))

    def wait_ready(self, seconds=180):
        self._wait(self.ready, self.kubelet, seconds, "node %s" % self.name)
        self.check()

    def check(self):
        for p in self.procs:
            p.check()

    # -- stop ----------------------------------------------------------------------------------

    def _hierarchies(self):
        """The cgroup v1 hierarchies' mount points (the unified one has no pods here)."""
        out = []
        with open("/proc/self/mountinfo") as f:
            for line in f:
                fields = line.split()
                fstype = fields[fields.index("-") + 1]
                if fstype == "cgroup" and fields[4].startswith("/sys/fs/cgroup/"):
                    out.append(fields[4])
        return out

    @staticmethod
    def _unified():
        """The hybrid layout's cgroup2 mount (runc makes the node's tree there too)."""
        with open("/proc/self/mountinfo") as f:
            for line in f:
                fields = line.split()
                if fields[fields.index("-") + 1] == "cgroup2":
                    return [fields[4]]
        return []

    def _remove_cgroups(self):
        for h in self._hierarchies() + self._unified():
            top = h + self.cgroup_root
            for root, dirs, _ in os.walk(top, topdown=False):
                for d in dirs:
                    try:
                        os.rmdir(os.path.join(root, d))
                    except OSError:
                        pass
            try:
                os.rmdir(top)
            except OSError:
                pass

    def _pods_on_node(self):
        st, obj = self.cp.raw("GET", "/api/v1/pods?fieldSelector=spec.nodeName%3D" + self.name)
        return obj.get("items", []) if st == 200 else []

    def _drain_pods(self, seconds=60):
        """Deletes the node's pods through the API and waits for the kubelet to have stopped
        them (their sandboxes gone from containerd's task list)."""
        for p in self._pods_on_node():
            m = p["metadata"]
            self.cp.raw("DELETE", "/api/v1/namespaces/%s/pods/%s" % (m["namespace"], m["name"]),
                        {"kind": "DeleteOptions", "apiVersion": "v1", "gracePeriodSeconds": 5})
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            if not self._pods_on_node() and not self._running_tasks():
                return
            time.sleep(1)

    def _tasks(self):
        """{task id: status} of containerd's tasks (RUNNING, STOPPED, ...)."""
        try:
            r = self.ctr("tasks", "ls", check=False, timeout=30)
        except (OSError, subprocess.TimeoutExpired):
            return {}
        if r.returncode != 0:
            return {}
        return {f[0]: f[-1] for f in (l.split() for l in r.stdout.splitlines()[1:]) if f}

    def _running_tasks(self):
        return [t for t, st in self._tasks().items() if st == "RUNNING"]

    def _end_containers(self):
        """What the kubelet left: every task killed and deleted, every container deleted."""
        for t in self._running_tasks():
            self.ctr("tasks", "kill", "-s", "SIGKILL", t, check=False)
        time.sleep(1)
        for t in self._tasks():
            self.ctr("tasks", "delete", "-f", t, check=False)
        r = self.ctr("containers", "ls", "-q", check=False)
        for c in r.stdout.split():
            self.ctr("containers", "delete", c, check=False)

    def _shim_pids(self):
        """The PIDs of the runc shims of this containerd: its binary, given this containerd's
        own socket (-address), unique to the node's work directory."""
        shim = os.path.join(self.bins["containerd"], "containerd-shim-runc-v2")
        pids = []
        for d in os.listdir("/proc"):
            if not d.isdigit():
                continue
            try:
                argv = open("/proc/%s/cmdline" % d, "rb").read().split(b"\0")
            except OSError:
                continue
            if os.path.basename(argv[0].decode(errors="replace")) == os.path.basename(shim) \
                    and self.sock.encode() in argv:
                pids.append(int(d))
        return pids

    def _unmount_all(self):
        """Every mount under the work directory, deepest first (the kubelet's volumes, the
        containers' roots, the pods' network namespaces)."""
        prefix = os.path.realpath(self.dir) + "/"
        for _ in range(3):
            with open("/proc/self/mountinfo") as f:
                mps = [l.split()[4] for l in f]
            mine = sorted({m for m in mps if m.startswith(prefix)}, key=len, reverse=True)
            if not mine:
                return
            for m in mine:
                subprocess.run(["umount", "-l", m], stderr=subprocess.DEVNULL, check=False)

    def stop(self):
        errors = []
        # first what makes pods (else the DaemonSet's would come back), then the pods through
        # the kubelet (each sandbox's network torn down by the CNI), then the node's processes
        for name in ("node-controller-manager", "kube-scheduler"):
            for p in self.procs:
                if p.name == name:
                    p.stop()
        alive = getattr(self, "kubelet", None) is not None and self.kubelet.p.poll() is None
        if alive and getattr(self, "containerd", None) is not None:
            try:
                self._drain_pods()
            except Exception as e:     # keep tearing down
                errors.append("draining the node's pods: %s" % e)
        for p in reversed(self.procs):
            if p.name in ("kubelet", "kube-proxy"):
                p.stop()
        if getattr(self, "containerd", None) is not None and self.containerd.p.poll() is None:
            self._end_containers()
            shims = self._shim_pids()
            self.containerd.stop()
            for pid in shims:
                try:
                    os.kill(pid, 9)
                except ProcessLookupError:
                    pass
        for p in self.procs:
            p.stop()            # stopped already: closes the logs
        self.procs = []
        for what, fn in reversed(self.undo):
            try:
                fn()
            except Exception as e:
                errors.append("%s: %s" % (what, e))
        self.undo = []
        if self.relay:
            self.relay.close()
            self.relay = None
        self._unmount_all()
        shutil.rmtree(self.dir, ignore_errors=True)
        if errors:
            raise RuntimeError("node teardown: " + "; ".join(errors))

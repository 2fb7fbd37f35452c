"""Deployment: the Helm chart, manifests/, the NPD configs, RBAC, the admission policy, the
image recipe and the systemd units line up with what the binary and NPD actually use.

Real helm and kubectl (tests/tools/get-kube-tools.sh), real promtool, systemd-analyze and the
binary under test; Kubernetes object schemas and a CEL evaluator from npm (pinned in
deploy_helpers.NPM_PKGS)."""
import glob
import json
import os
import re
import shutil
import subprocess

import pytest
import yaml

from conftest import ROOT, is_root, needs_root
from deploy_helpers import (CHART, VARIANTS, DiscoveryServer, container, find, helm, kube_tools,
                            node_eval, one, pod_spec, render)

NPD_DIR = os.path.join(ROOT, "config", "npd")
CONDITIONS = {"MemcgZombieLeak": ("ZombieMemcgsHigh", "ZombieMemcgsNormal"),
              "CPUCoreSaturation": ("CoreSaturationBursts", "NoCoreSaturation"),
              "ENADeviceReset": ("ENAResetsDetected", "NoENAResets")}
PLUGIN_BIN = "/opt/cpuzombie/bin/cpuzombie"   # where NPD's container finds the binary
API_VERSIONS = {"Namespace": "v1", "ServiceAccount": "v1", "ConfigMap": "v1",
                "DaemonSet": "apps/v1", "Deployment": "apps/v1", "ClusterRole": "rbac.authorization.k8s.io/v1",
                "ClusterRoleBinding": "rbac.authorization.k8s.io/v1",
                "Role": "rbac.authorization.k8s.io/v1", "RoleBinding": "rbac.authorization.k8s.io/v1",
                "ValidatingAdmissionPolicy": "admissionregistration.k8s.io/v1",
                "ValidatingAdmissionPolicyBinding": "admissionregistration.k8s.io/v1"}
CLUSTER_SCOPED = {"Namespace", "ClusterRole", "ClusterRoleBinding", "ValidatingAdmissionPolicy",
                  "ValidatingAdmissionPolicyBinding"}


@pytest.fixture(scope="module", autouse=True)
def tools():
    return kube_tools()


@pytest.fixture(scope="module")
def rendered():
    return {v: render(v)[1] for v in VARIANTS}


def npd_files():
    return sorted(glob.glob(os.path.join(NPD_DIR, "*.json")))


def check_of(rule):
    """The check a rule runs: the word after "check" in its args."""
    return rule["args"][rule["args"].index("check") + 1]


def rendered_config(objs):
    return one(objs, "ConfigMap", "cpuzombie-config")["data"]["cpuzombie.yaml"]


# --- helm --------------------------------------------------------------------------------------

@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_helm_lint_strict_is_clean(variant):
    p = helm("lint", "--strict", CHART, *VARIANTS[variant], check=False)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "0 chart(s) failed" in p.stdout
    assert not re.search(r"\[(WARNING|ERROR)\]", p.stdout), p.stdout


def test_values_schema_refuses_bad_values():
    bad = {"config.remediation.mode=false": "config.remediation.mode",   # a bare YAML off
           "mode=both": "mode",
           "config.cpu.bogus=1": "bogus",
           "config.cpu.min_burst=2": "config.cpu.min_burst",
           "config.remediation.max_unavailable=lots": "max_unavailable",
           "npd.checks.nonesuch=true": "nonesuch"}
    for setting, named in bad.items():
        p = helm("template", "x", CHART, "--set", setting, check=False)
        assert p.returncode != 0 and "schema" in p.stderr and named in p.stderr, (setting, p)
    # values.yaml quotes "off": a bare off would be YAML 1.1 false
    with open(os.path.join(CHART, "values.yaml")) as f:
        assert re.search(r'^\s+mode: "off"', f.read(), re.M)


def test_kinds_per_variant(rendered):
    kinds = {v: sorted((o["kind"], o["metadata"]["name"]) for o in objs)
             for v, objs in rendered.items()}
    base = {("Namespace", "cpuzombie"), ("ServiceAccount", "cpuzombie"),
            ("ConfigMap", "cpuzombie-config"), ("DaemonSet", "cpuzombie"),
            ("ClusterRole", "cpuzombie-conditions"), ("ClusterRoleBinding", "cpuzombie-conditions"),
            ("Role", "cpuzombie-events"), ("RoleBinding", "cpuzombie-events"),
            ("ValidatingAdmissionPolicy", "cpuzombie-own-node-only"),
            ("ValidatingAdmissionPolicyBinding", "cpuzombie-own-node-only")}
    # remediation on: the remediator Deployment, its ServiceAccount and rights, its Lease policy
    remed = {("ClusterRole", "cpuzombie-remediator"), ("ClusterRoleBinding", "cpuzombie-remediator"),
             ("Role", "cpuzombie-budget"), ("RoleBinding", "cpuzombie-budget"),
             ("Role", "cpuzombie-remediator-leader"),
             ("RoleBinding", "cpuzombie-remediator-leader"),
             ("Role", "cpuzombie-remediator-events"),
             ("RoleBinding", "cpuzombie-remediator-events"),
             ("ServiceAccount", "cpuzombie-remediator"), ("Deployment", "cpuzombie-remediator"),
             ("ValidatingAdmissionPolicy", "cpuzombie-remediator-leases"),
             ("ValidatingAdmissionPolicyBinding", "cpuzombie-remediator-leases"),
             ("ValidatingAdmissionPolicy", "cpuzombie-remediator-nodes"),
             ("ValidatingAdmissionPolicyBinding", "cpuzombie-remediator-nodes"),
             ("ValidatingAdmissionPolicy", "cpuzombie-node-marks"),
             ("ValidatingAdmissionPolicyBinding", "cpuzombie-node-marks")}
    assert set(kinds["default"]) == base | {("ConfigMap", "cpuzombie-npd")}
    assert set(kinds["remediation"]) == base | remed | {("ConfigMap", "cpuzombie-npd")}
    assert set(kinds["standalone"]) == base | remed
    for v, k in kinds.items():
        assert len(k) == len(set(k)), f"{v}: duplicate objects"


def test_objects_are_well_formed(rendered):
    for v, objs in rendered.items():
        for o in objs:
            assert o["apiVersion"] == API_VERSIONS[o["kind"]], (v, o["kind"])
            md = o["metadata"]
            assert re.fullmatch(r"[a-z0-9]([-a-z0-9.]*[a-z0-9])?", md["name"])
            assert ("namespace" in md) == (o["kind"] not in CLUSTER_SCOPED), (v, o["kind"])
            assert md["labels"]["app.kubernetes.io/name"] == "cpuzombie"
        for b in find(objs, "ClusterRoleBinding") + find(objs, "RoleBinding"):
            assert one(objs, b["roleRef"]["kind"], b["roleRef"]["name"])
            sa = "cpuzombie" if b["roleRef"]["name"] in ("cpuzombie-conditions",
                                                         "cpuzombie-events") \
                else "cpuzombie-remediator"
            assert b["subjects"] == [{"kind": "ServiceAccount", "name": sa,
                                      "namespace": "cpuzombie"}]
            assert one(objs, "ServiceAccount", sa)
        ds = one(objs, "DaemonSet")
        sel = ds["spec"]["selector"]["matchLabels"]
        labels = ds["spec"]["template"]["metadata"]["labels"]
        assert sel.items() <= labels.items()
        for dep in find(objs, "Deployment"):    # its pods are not the DaemonSet's
            dsel = dep["spec"]["selector"]["matchLabels"]
            dlabels = dep["spec"]["template"]["metadata"]["labels"]
            assert dsel.items() <= dlabels.items() and not sel.items() <= dlabels.items()
            for c in dep["spec"]["template"]["spec"]["containers"]:
                assert c["resources"]["requests"] and c["resources"]["limits"], (v, c["name"])
        spec = pod_spec(objs)
        vols = {x["name"] for x in spec["volumes"]}
        assert len(vols) == len(spec["volumes"])
        for c in spec["containers"] + spec.get("initContainers", []):
            for m in c["volumeMounts"]:
                assert m["name"] in vols, (v, c["name"], m)
            assert c["resources"]["requests"] and c["resources"]["limits"], (v, c["name"])
            assert c["image"] and ":" in c["image"]


def test_kubernetes_schemas_accept_every_object(rendered):
    """Types and required fields from the Kubernetes OpenAPI (kubernetes-models on npm).
    It does not flag unknown fields; the structural tests above and kubectl cover those."""
    script = """
import { readFileSync } from "node:fs";
const objs = JSON.parse(readFileSync(0, "utf8"));
const groups = {"v1": "v1", "apps/v1": "apps/v1", "rbac.authorization.k8s.io/v1":
  "rbac.authorization.k8s.io/v1", "admissionregistration.k8s.io/v1":
  "admissionregistration.k8s.io/v1"};
const out = [];
for (const o of objs) {
  const mod = await import(`kubernetes-models/${groups[o.apiVersion]}/${o.kind}`);
  try { new mod[o.kind](o).validate(); out.push("ok"); }
  catch (e) { out.push(`${o.kind}/${o.metadata.name}: ${e.message}`); }
}
console.log(JSON.stringify(out));
"""
    for v, objs in rendered.items():
        res = node_eval(script, objs)
        assert res == ["ok"] * len(objs), (v, res)
    # the validator is live: a wrong type is refused
    bad = json.loads(json.dumps(one(rendered["default"], "DaemonSet")))
    bad["spec"]["template"]["spec"]["hostNetwork"] = "yes"
    assert "must be boolean" in node_eval(script, [bad])[0]


# --- the pod: host access exactly as needed ------------------------------------------------------

def test_pod_host_access_and_privileges(rendered):
    for v, objs in rendered.items():
        spec = pod_spec(objs)
        assert spec["hostNetwork"] is True          # ethtool ioctl on the host's NICs
        assert spec.get("hostPID") in (None, False)  # see test_host_proc_without_host_pid
        assert "hostIPC" not in spec
        assert spec["dnsPolicy"] == "ClusterFirstWithHostNet"
        assert spec["priorityClassName"] == "system-node-critical"
        assert {"operator": "Exists"} in spec["tolerations"]
        hostpaths = {x["name"]: x["hostPath"]["path"] for x in spec["volumes"] if "hostPath" in x}
        # no D-Bus socket by default (root on the system bus runs any command on the host);
        # the kubelet's pod log directories, read-only, for pod names
        # /sys in the subtrees read only (test_privilege_chart.py per feature)
        assert hostpaths == {"host-proc": "/proc", "host-sys-fs-cgroup": "/sys/fs/cgroup",
                             "host-sys-class-net": "/sys/class/net",
                             "host-sys-devices": "/sys/devices", "state": "/var/lib/cpuzombie",
                             "run": "/run/cpuzombie", "pod-logs": "/var/log/pods"}
        # the run dir on the host's /run (tmpfs): the burst history outlives a replaced pod
        # (tests/e2e/test_real_node.py's helm upgrade); the agent writes it, NPD's checks read
        run = [x for x in spec["volumes"] if x["name"] == "run"][0]
        assert run["hostPath"] == {"path": "/run/cpuzombie", "type": "DirectoryOrCreate"}
        for c in spec["containers"]:
            m = next(m for m in c["volumeMounts"] if m["name"] == "run")
            assert bool(m.get("readOnly")) is (c["name"] != "agent"), (v, c["name"], m)
        for c in spec["containers"] + spec.get("initContainers", []):
            sc = c["securityContext"]
            assert sc["privileged"] is False and sc["allowPrivilegeEscalation"] is False
            assert sc["readOnlyRootFilesystem"] is True
            assert sc["capabilities"]["drop"] == ["ALL"]
            # no capability by default, but the two the agent's burst profiles need
            # (agent.profileBursts, default true): exactly those, to the agent only
            want = ["PERFMON", "SYSLOG"] if c["name"] == "agent" else None
            assert sc["capabilities"].get("add") == want, (v, c["name"])
            mounts = {m["mountPath"]: m for m in c["volumeMounts"]}
            for root in ("/host/proc", "/host/sys"):
                if root in mounts:
                    assert mounts[root].get("readOnly") is True
        for c in spec["containers"]:
            env = {e["name"]: e for e in c["env"]}
            assert env["NODE_NAME"]["valueFrom"]["fieldRef"]["fieldPath"] == "spec.nodeName"
    # a value turns the bus socket on: read-only, and only the agent (which asks systemd)
    # mounts it
    _, objs = render("default", ["--set", "agent.systemdBus=true"])
    spec = pod_spec(objs)
    assert [x["hostPath"]["path"] for x in spec["volumes"] if x["name"] == "systemd-bus"] == \
        ["/run/dbus/system_bus_socket"]
    for c in spec["containers"] + spec.get("initContainers", []):
        bus = [m for m in c["volumeMounts"] if m["name"] == "systemd-bus"]
        assert bus == ([{"name": "systemd-bus", "mountPath": "/run/dbus/system_bus_socket",
                         "readOnly": True}] if c["name"] == "agent" else []), c["name"]
    # the kernel-stack option adds exactly the two capabilities it needs, to the agent only
    _, objs = render("default", ["--set", "agent.readKernelStacks=true",
                                 "--set", "agent.profileBursts=false"])
    spec = pod_spec(objs)
    assert container(spec, "agent")["securityContext"]["capabilities"]["add"] == \
        ["SYS_ADMIN", "SYS_PTRACE"]
    assert "add" not in container(spec, "node-problem-detector")["securityContext"]["capabilities"]
    # profiles off: no capability at all, and the agent's config says so (it would only record
    # "no CAP_PERFMON" on every burst otherwise)
    _, objs = render("default", ["--set", "agent.profileBursts=false"])
    spec = pod_spec(objs)
    assert "add" not in container(spec, "agent")["securityContext"]["capabilities"]
    assert yaml.safe_load(rendered_config(objs))["cpu"]["profile"] is False
    # the zombie census: off by default (no census in the config), on it adds
    # exactly CAP_BPF and CAP_PERFMON (measured), to the agent only, once each
    assert yaml.safe_load(rendered_config(objs))["memcg"]["census_interval"] == "0"
    _, objs = render("default", ["--set", "agent.zombieCensus=true",
                                 "--set", "agent.profileBursts=false"])
    spec = pod_spec(objs)
    assert container(spec, "agent")["securityContext"]["capabilities"]["add"] == \
        ["BPF", "PERFMON"]
    assert "add" not in container(spec, "node-problem-detector")["securityContext"]["capabilities"]
    assert "census_interval" not in (yaml.safe_load(rendered_config(objs)).get("memcg") or {})
    _, objs = render("default", ["--set", "agent.zombieCensus=true"])
    assert container(pod_spec(objs), "agent")["securityContext"]["capabilities"]["add"] == \
        ["PERFMON", "SYSLOG", "BPF"]


@pytest.mark.parametrize("how", ["drop_caches", "memory.reclaim"])
def test_reclaim_mounts_exactly_what_it_writes(how, cz, tmp_path):
    """config.remediation.reclaim: the agent container, and only it, gets the host's
    /proc/sys/vm/drop_caches writable, that one file (memory.reclaim: also
    /sys/fs/cgroup), and no capability (uid 0 is what the kernel asks for: test_reclaim.py
    measures it); the rendered config is accepted."""
    _, objs = render("default", ["--set", "config.remediation.reclaim=" + how])
    spec = pod_spec(objs)
    want = {"host-drop-caches": "/proc/sys/vm/drop_caches"}
    if how == "memory.reclaim":
        want["host-cgroup"] = "/sys/fs/cgroup"
    hostpaths = {x["name"]: x["hostPath"]["path"] for x in spec["volumes"] if "hostPath" in x}
    assert {k: hostpaths.get(k) for k in want} == want, hostpaths
    for c in spec["containers"] + spec.get("initContainers", []):
        mounts = {m["name"]: m for m in c["volumeMounts"]}
        for name, host in want.items():
            if c["name"] != "agent":
                assert name not in mounts, (c["name"], name)
                continue
            assert mounts[name]["mountPath"] == "/host" + host, mounts[name]
            assert not mounts[name].get("readOnly"), mounts[name]
        if c["name"] == "agent":
            assert c["securityContext"]["capabilities"].get("add") == ["PERFMON", "SYSLOG"]
    f = tmp_path / "cpuzombie.yaml"
    f.write_text(rendered_config(objs))
    r = cz("-v", "config", "check", "--config", str(f), check=0)
    assert "  reclaim: %s\n" % how in r.out, r.out
    # off (the default): neither mount
    _, objs = render("default", [])
    names = {x["name"] for x in pod_spec(objs)["volumes"]}
    assert not names & {"host-drop-caches", "host-proc-sys-vm", "host-cgroup"}, names
    # a bare YAML off (false) or a typo is refused by the schema, not by the agent at start
    for bad in ("false", "echo3"):
        p = helm("template", "x", CHART, "--set", "config.remediation.reclaim=" + bad,
                 check=False)
        assert p.returncode != 0 and "reclaim" in p.stderr, p.stderr


@needs_root
def test_host_proc_without_host_pid(tmp_path):
    """Why the pod has no hostPID: from a child PID namespace, the host's /proc bind-mounted
    (what the hostPath /proc -> /host/proc mount is) still lists every host task, and their
    task stat files (processor, stime: what task attribution reads) are readable."""
    hp = tmp_path / "hostproc"
    hp.mkdir()
    script = ("mount --make-rprivate / && mount --bind /proc %s && mount -t proc proc /proc && "
              "ls /proc | grep -c '^[0-9]' && ls %s | grep -c '^[0-9]' && "
              "cat %s/1/task/1/stat" % (hp, hp, hp))
    p = subprocess.run(["unshare", "--pid", "--fork", "--mount", "sh", "-c", script],
                       capture_output=True, text=True, timeout=30)
    assert p.returncode == 0, p.stderr
    own, host, stat = p.stdout.splitlines()[:3]
    assert int(host) > int(own) >= 1
    fields = stat.rsplit(")", 1)[1].split()
    assert len(fields) >= 37 and fields[36].isdigit()  # field 39 (processor)


def test_mounts_match_the_config_paths(rendered, cz, tmp_path):
    for v, objs in rendered.items():
        cfg = yaml.safe_load(rendered_config(objs))
        assert cfg["paths"] == {"proc": "/host/proc", "sys": "/host/sys",
                                "state": "/var/lib/cpuzombie", "run": "/run/cpuzombie",
                                "pod_logs": "/host/var/log/pods"}
        assert cfg["agent"]["set_conditions"] is (v == "standalone")
        spec = pod_spec(objs)
        for c in spec["containers"]:
            mounts = {m["mountPath"]: m["name"] for m in c["volumeMounts"]}
            assert mounts["/host/proc"] == "host-proc" and "/host/sys" not in mounts
            for sub in ("fs/cgroup", "class/net", "devices"):       # at the same places
                assert mounts["/host/sys/" + sub] == "host-sys-" + sub.replace("/", "-")
            assert mounts["/var/lib/cpuzombie"] == "state" and mounts["/run/cpuzombie"] == "run"
            if c["name"] == "agent":
                assert mounts["/host/var/log/pods"] == "pod-logs"
            assert mounts["/etc/cpuzombie"] in ("config", "npd-config")
        # the rendered file is a configuration the binary accepts
        f = tmp_path / ("cpuzombie-%s.yaml" % v)
        f.write_text(rendered_config(objs))
        r = cz("config", "check", "--config", str(f), check=0)
        assert r.line.startswith("configuration OK"), r
        r = cz("-v", "config", "check", "--config", str(f), check=0)
        assert "set_conditions: %s" % ("true" if v == "standalone" else "false") in r.out
        mode = {"default": "off", "remediation": "drain", "standalone": "cordon"}[v]
        assert re.search(r"mode: \"?%s\"?" % mode, r.out), r.out


# --- NPD: configs, paths, flags -------------------------------------------------------------------

def test_npd_configmap_is_config_npd_byte_for_byte(rendered):
    files = npd_files()
    assert {os.path.basename(f) for f in files} == \
        {"cpuzombie-memcg.json", "cpuzombie-cpu.json", "cpuzombie-ena.json",
         "cpuzombie-ena-allowance.json"}
    for v in ("default", "remediation"):
        data = one(rendered[v], "ConfigMap", "cpuzombie-npd")["data"]
        assert sorted(data) == sorted(os.path.basename(f) for f in files)
        for f in files:
            assert data[os.path.basename(f)] == open(f).read(), f
    assert not find(rendered["standalone"], "ConfigMap", "cpuzombie-npd")


def test_npd_configs_conditions_and_timeouts():
    seen = {}
    for f in npd_files():
        c = json.load(open(f))
        assert c["plugin"] == "custom"
        pc = c["pluginConfig"]
        dur = lambda s: int(s[:-1]) * {"s": 1, "m": 60}[s[-1]]  # noqa: E731
        conds = {x["type"]: x for x in c["conditions"]}
        perm = [r for r in c["rules"] if r["type"] == "permanent"]
        assert all(r["type"] in ("permanent", "temporary") for r in c["rules"])
        for r in c["rules"]:
            assert dur(r["timeout"]) <= dur(pc["timeout"]) < dur(pc["invoke_interval"]), f
            i = r["args"].index("--max-output")
            assert int(r["args"][i + 1]) == pc["max_output_length"], f
        for r in perm:
            assert r["condition"] in conds, f
            assert seen.setdefault(r["condition"], f) == f, "two permanent rules on one condition"
            assert (r["reason"], conds[r["condition"]]["reason"]) == CONDITIONS[r["condition"]]
        temp = [r for r in c["rules"] if r["type"] == "temporary"]
        for r in temp:
            assert r["reason"] == "ENAAllowanceExceeded" and check_of(r) == "ena-allowance"
        assert len(perm) == len(conds), f
    assert set(seen) == set(CONDITIONS)


def test_npd_rules_point_where_the_init_container_puts_the_binary(rendered):
    spec = pod_spec(rendered["default"])
    init = container(spec, "install-plugin")
    npd = container(spec, "node-problem-detector")
    # init copies the image's /opt/cpuzombie/bin/cpuzombie into the "plugin" volume (the
    # agent's install-plugin, as the image ships no cp) ...
    assert init["command"] == ["/usr/local/bin/cpuzombie", "install-plugin", "/plugin"]
    assert {m["name"]: m["mountPath"] for m in init["volumeMounts"]} == {"plugin": "/plugin"}
    # ... which NPD's container mounts back at /opt/cpuzombie
    npd_mounts = {m["name"]: m for m in npd["volumeMounts"]}
    assert npd_mounts["plugin"]["mountPath"] == "/opt/cpuzombie"
    assert npd_mounts["plugin"]["readOnly"] is True
    # the image's layout puts the static check binary at /opt/cpuzombie/bin/cpuzombie
    df = open(os.path.join(ROOT, "manifests", "image", "Dockerfile")).read()
    assert "install -D -m 0755 build/cpuzombie-check /opt/cpuzombie/bin/cpuzombie" in df
    assert "COPY --from=build /opt/cpuzombie /opt/cpuzombie" in df
    for f in npd_files():
        for r in json.load(open(f))["rules"]:
            assert r["path"] == PLUGIN_BIN, f"{os.path.basename(f)}: rule path {r['path']} is " \
                f"not where the init container puts the binary ({PLUGIN_BIN})"
    # NPD is pointed at exactly the projected config files
    flag = [a for a in npd["command"] if a.startswith("--config.custom-plugin-monitor=")]
    listed = flag[0].split("=", 1)[1].split(",")
    vol = [x for x in spec["volumes"] if x["name"] == "npd-config"][0]["projected"]["sources"]
    items = [i["path"] for s in vol if s["configMap"]["name"] == "cpuzombie-npd"
             for i in s["configMap"]["items"]]
    assert sorted(listed) == sorted("/etc/cpuzombie/" + i for i in items)
    assert sorted(os.path.basename(x) for x in listed) == \
        sorted(os.path.basename(f) for f in npd_files())
    assert npd["command"][0] == "/node-problem-detector"
    assert npd_mounts["npd-config"]["mountPath"] == "/etc/cpuzombie"


def test_rule_and_agent_flags_are_the_binarys(cz, rendered):
    """Every flag the NPD rules and the agent container pass is one --help documents and the
    binary accepts (the runs in test_npd_rules_run_in_the_pod_layout use them for real)."""
    top = cz("--help", check=0).out
    documented = set(re.findall(r"(--[a-z][-a-z]*)", top))
    args = [a for f in npd_files() for r in json.load(open(f))["rules"] for a in r["args"]]
    agent = container(pod_spec(rendered["default"]), "agent")["command"]
    assert agent[0] == "/usr/local/bin/cpuzombie" and agent[-1] == "agent"
    for a in args + agent[1:]:
        if a.startswith("--"):
            assert a in documented, a
    assert re.search(r"^cpuzombie agent", top, re.M)
    for sub in ("memcg", "cpu", "ena", "ena-allowance"):
        assert sub in re.search(r"^cpuzombie check (\S+)", top, re.M).group(1).split("|")


def _check_bin():
    """The static check binary of the build under test (what the image puts in /opt)."""
    build = os.environ.get("CZ_BUILD") or os.path.join(ROOT, "build")
    return os.path.join(build, "cpuzombie-check")


def _is_static(path):
    """True when the ELF file at @path has no PT_INTERP (needs no loader, no shared objects)."""
    p = subprocess.run(["readelf", "-lW", path], capture_output=True, text=True, check=True)
    d = subprocess.run(["readelf", "-dW", path], capture_output=True, text=True, check=True)
    return "INTERP" not in p.stdout and "(NEEDED)" not in d.stdout


def _bundle(check_bin, root):
    """Lay the check binary out as the image does: one file, /opt/cpuzombie/bin/cpuzombie."""
    os.makedirs(os.path.join(root, "opt", "cpuzombie", "bin"))
    shutil.copy2(check_bin, os.path.join(root, "opt", "cpuzombie", "bin", "cpuzombie"))


class HostCmd(list):
    """A command of _in_pod_layout run outside the chroot (the agent's own container)."""


def _in_pod_layout(root, cfg, cmds, timeout=60):
    """Run @cmds (argv lists) chrooted into @root laid out like the NPD container: /opt/cpuzombie
    (the bundle), /etc/cpuzombie/cpuzombie.yaml, the host's /proc and /sys at /host/proc and
    /host/sys, /var/lib/cpuzombie, /run/cpuzombie, plus the /proc and /dev a container has."""
    for d in ("host/proc", "host/sys", "proc", "dev", "etc/cpuzombie", "var/lib/cpuzombie",
              "run/cpuzombie"):
        os.makedirs(os.path.join(root, d), exist_ok=True)
    with open(os.path.join(root, "etc/cpuzombie/cpuzombie.yaml"), "w") as f:
        f.write(cfg)
    q = lambda a: "'" + a.replace("'", "'\\''") + "'"  # noqa: E731
    lines = ["set -e", "mount --make-rprivate /"]
    for src, dst in (("/proc", "host/proc"), ("/sys", "host/sys"), ("/proc", "proc"),
                     ("/dev", "dev")):
        lines.append("mount --rbind %s %s/%s" % (src, root, dst))
    lines.append("set +e")
    for c in cmds:
        if isinstance(c, HostCmd):  # another container sharing the volumes: not chrooted
            lines.append("%s; echo \"rc=$?\"" % " ".join(q(a) for a in c))
        else:
            lines.append("chroot %s %s; echo \"rc=$?\"" % (root, " ".join(q(a) for a in c)))
    env = {"PATH": "/usr/bin:/bin:/usr/sbin:/sbin",
           "ASAN_OPTIONS": "detect_leaks=1:abort_on_error=0",
           "UBSAN_OPTIONS": "print_stacktrace=1:halt_on_error=1"}
    p = subprocess.run(["unshare", "--mount", "sh", "-c", "\n".join(lines)], capture_output=True,
                       text=True, timeout=timeout, env=env)
    assert p.returncode == 0, p.stderr
    out, res = [], []
    for l in p.stdout.splitlines():
        if l.startswith("rc="):
            res.append((int(l[3:]), out))
            out = []
        else:
            out.append(l)
    return res, p.stderr


@needs_root
def test_npd_rules_run_in_the_pod_layout(cz_bin, rendered, tmp_path):
    """The static check binary as the init container hands it over (one file, no loader, no
    libc) runs every NPD rule, path and args exactly as in config/npd, chrooted into a tree that
    has nothing but what the NPD container mounts, against this machine's real /proc and /sys.
    Then the agent (the full binary, in its own container: here outside the chroot, sharing the
    run dir) runs one cycle, and check cpu in the chroot sees its sampler."""
    check_bin = _check_bin()
    if not _is_static(check_bin):
        pytest.skip("%s is not static (an ASan+UBSan build links dynamically): the static one "
                    "is tested by the plain build" % check_bin)
    root = tmp_path / "pod"
    _bundle(check_bin, root)
    assert sorted(os.listdir(root)) == ["opt"]          # no /lib, no /usr: nothing borrowed
    rules = [r for f in npd_files() for r in json.load(open(f))["rules"]]
    cmds = [[r["path"], *r["args"]] for r in rules]
    agent = container(pod_spec(rendered["default"]), "agent")["command"]
    assert agent[0] == "/usr/local/bin/cpuzombie" and agent[1:3] == \
        ["--config", "/etc/cpuzombie/cpuzombie.yaml"]
    # the agent container's view: the same config, the host's /proc and /sys, the shared run dir
    agent_cmd = HostCmd([cz_bin, "--config", str(root / "etc/cpuzombie/cpuzombie.yaml"),
                         "--proc-root", "/proc", "--sys-root", "/sys",
                         "--run-dir", str(root / "run/cpuzombie"),
                         "--state-dir", str(tmp_path / "agent-state"), *agent[3:], "--once"])
    refused = [PLUGIN_BIN, "--config", "/etc/cpuzombie/cpuzombie.yaml", "agent", "--once"]
    cpu_rule = [r for r in rules if check_of(r) == "cpu"][0]
    cmds += [refused, agent_cmd, [cpu_rule["path"], *cpu_rule["args"]]]
    res, err = _in_pod_layout(str(root), rendered_config(rendered["default"]), cmds,
                              timeout=120)
    assert len(res) == len(cmds), err
    for (rc, out), c in zip(res, cmds):
        if c is agent_cmd:
            assert rc == 0, (c, out, err)
            continue
        if c is refused:   # the static binary has no agent: one line on stderr, exit 2
            assert rc == 2 and out == [], (c, rc, out, err)
            assert "'agent' is not in this binary" in err, err
            continue
        assert rc in (0, 1), (c, rc, out, err)         # a verdict, never "could not tell"
        assert len(out) == 1 and all(32 <= ord(ch) < 127 for ch in out[0]), (c, out)
        assert not re.match(r"(bad |cannot |usage)", out[0]), (c, out)
    first_cpu = res[[check_of(r) for r in rules].index("cpu")]
    assert "no sampler" in first_cpu[1][0], first_cpu     # before the agent ran: inline
    # after the agent's cycle, check cpu reads the sampler's heartbeat instead of sampling inline
    assert "no sampler" not in res[-1][1][0], res[-1]
    assert os.listdir(root / "run" / "cpuzombie"), "the agent wrote nothing to the run dir"


# --- RBAC --------------------------------------------------------------------------------------

# Every API call the pods make, as read in plugin/kube/event.c, agent/kube_agent.c (the node
# agent; agent/pods_publish.c makes none), remediator/remediate.c (the executor of the remediation
# plan), remediator/remediator.c (its leader Lease) and kube/fleet_fetch.c (the remediator's
# node and Lease lists; also `cpuzombie fleet`, with the user's own credentials); kube.c is only
# the transport:
# (file, method, path shape, the RBAC (group, resource, verb) it needs, role). Roles: the node
# agent's "conditions" (cluster-wide) and "events" (Role in "default"); the remediator's
# "remediator" (cluster-wide), "remediator-events" (Role in "default"), "budget" (Role in
# lease_namespace), "leader" (Role in the release namespace).
CALLS = [
    ("event.c", "POST", "/api/v1/namespaces/default/events", ("", "events", "create"), "events"),
    # a repeat of an Event within 10 minutes counts on the first (client-go's correlator)
    ("event.c", "PATCH", "/api/v1/namespaces/default/events/%s", ("", "events", "patch"),
     "events"),
    ("event.c", "POST", "/api/v1/namespaces/default/events", ("", "events", "create"),
     "remediator-events"),
    ("kube_agent.c", "GET", "/api/v1/nodes/%s", ("", "nodes", "get"), "conditions"),
    ("kube_agent.c", "PATCH", "/api/v1/nodes/%s/status", ("", "nodes/status", "patch"),
     "conditions"),
    # the one GET of its node serves both the condition patch and the remediator's drained
    # annotation (kured): get_node() in kube_agent.c
    ("remediate.c", "GET", "/api/v1/nodes/%s", ("", "nodes", "get"), "remediator"),
    ("remediate.c", "PATCH", "/api/v1/nodes/%s", ("", "nodes", "patch"), "remediator"),
    ("remediate.c", "GET", "/api/v1/nodes", ("", "nodes", "list"), "remediator"),
    ("remediate.c", "GET", "leases?labelSelector", ("coordination.k8s.io", "leases", "list"),
     "budget"),
    ("remediate.c", "POST", "leases", ("coordination.k8s.io", "leases", "create"), "budget"),
    ("remediate.c", "PUT", "leases/%s", ("coordination.k8s.io", "leases", "update"), "budget"),
    ("remediate.c", "DELETE", "leases/%s", ("coordination.k8s.io", "leases", "delete"), "budget"),
    # the fleet guards (guard.h): the cluster-wide pause ConfigMap, always read before acting;
    # the guard Lease (breaker_max or drain_gap on: role "guard", rendered only then)
    ("remediate.c", "GET", "/api/v1/namespaces/%s/configmaps/", ("", "configmaps", "get"),
     "budget"),
    ("remediate.c", "GET", "leases/%s", ("coordination.k8s.io", "leases", "get"), "guard"),
    ("remediate.c", "PUT", "leases/%s", ("coordination.k8s.io", "leases", "update"), "guard"),
    # the hand-off with medik8s NodeHealthCheck (medik8s_lease_namespace on: role "medik8s")
    ("remediate.c", "GET", "leases/%s", ("coordination.k8s.io", "leases", "get"), "medik8s"),
    ("remediate.c", "POST", "leases", ("coordination.k8s.io", "leases", "create"), "medik8s"),
    ("remediate.c", "PUT", "leases/%s", ("coordination.k8s.io", "leases", "update"), "medik8s"),
    ("remediate.c", "DELETE", "leases/%s", ("coordination.k8s.io", "leases", "delete"),
     "medik8s"),
    # the hand-off with kured (kured_daemonset on: role "kured"): its DaemonSet's lock, read,
    # taken and given back (a merge patch at the resourceVersion read)
    ("remediate.c", "GET", "/apis/apps/v1/namespaces/%.*s/daemonsets/%s",
     ("apps", "daemonsets", "get"), "kured"),
    ("remediate.c", "PATCH", "/apis/apps/v1/namespaces/%.*s/daemonsets/%s",
     ("apps", "daemonsets", "patch"), "kured"),
    ("remediate.c", "GET", "/api/v1/pods?fieldSelector=spec.nodeName", ("", "pods", "list"),
     "remediator"),
    ("remediate.c", "POST", "/api/v1/namespaces/%s/pods/%s/eviction",
     ("", "pods/eviction", "create"), "remediator"),
    ("remediate.c", "DELETE", "/api/v1/namespaces/%s/pods/%s", ("", "pods", "delete"),
     "remediator"),   # only with remediation.allow_delete
    ("fleet_fetch.c", "GET", "/api/v1/nodes", ("", "nodes", "list"), "remediator"),
    ("fleet_fetch.c", "GET", "/apis/coordination.k8s.io/v1/namespaces/%s/leases",
     ("coordination.k8s.io", "leases", "list"), "budget"),
    # the remediator's caches (informer.c): one LIST of the nodes and of the budget Leases
    # (fleet_fetch.c above), then a WATCH of each from the list's resourceVersion
    # (fleet_fetch_watch_path: ?watch=1&allowWatchBookmarks=true), the paths set in remediator.c
    ("remediator.c", "GET", "/api/v1/nodes", ("", "nodes", "watch"), "remediator"),
    ("remediator.c", "GET", "/apis/coordination.k8s.io/v1/namespaces/%s/leases",
     ("coordination.k8s.io", "leases", "watch"), "budget"),
    ("remediator.c", "GET", "/apis/coordination.k8s.io/v1/namespaces/%s/leases%s",
     ("coordination.k8s.io", "leases", "get"), "leader"),
    ("remediator.c", "POST", "/apis/coordination.k8s.io/v1/namespaces/%s/leases%s",
     ("coordination.k8s.io", "leases", "create"), "leader"),
    ("remediator.c", "PUT", "/apis/coordination.k8s.io/v1/namespaces/%s/leases%s",
     ("coordination.k8s.io", "leases", "update"), "leader"),
]
ROLES = {"cpuzombie-conditions": "ClusterRole", "cpuzombie-remediator": "ClusterRole",
         "cpuzombie-budget": "Role", "cpuzombie-remediator-leader": "Role",
         "cpuzombie-medik8s-handoff": "Role", "cpuzombie-kured-handoff": "Role",
         "cpuzombie-events": "Role", "cpuzombie-remediator-events": "Role"}
# NPD's k8s exporter: get nodes, patch nodes/status (the conditions role); its Events through
# client-go's recorder, in "default": create, and patch for a repeat (tools/record's
# recordEvent: Create or Patch, never Update, in both NPD versions' client-go).
NPD_NEEDS = {("", "nodes", "get"), ("", "nodes/status", "patch")}
NPD_EVENTS = {("", "events", "create"), ("", "events", "patch")}


def _grants(objs, name):
    kind = ROLES[name]
    got = set()
    for r in one(objs, kind, name)["rules"]:
        for g in r["apiGroups"]:
            for res in r["resources"]:
                for v in r["verbs"]:
                    got.add((g, res, v))
    return got


def test_rbac_source_calls_are_the_table():
    """The call table above is what the code does: as many call sites, each shape present.
    A new API call in the Kubernetes code fails here until the roles (and CALLS) cover it."""
    sites = {}
    for f in ("event.c", "kube_agent.c", "pods_publish.c", "remediate.c", "fleet_fetch.c",
              "remediator.c"):
        src = open(glob.glob(os.path.join(ROOT, "plugin", "*", f))[0]).read()
        # kube_get_object() is a GET of one object
        sites[f] = len(re.findall(r"kube_(?:request|json|get_object)\(\s*(?:\w+->)?kc\b", src))
        for cf, method, shape, *_ in CALLS:
            if cf == f:
                assert (f'"{method}"' in src or method == "GET" and "kube_get_object(" in src) \
                    and shape.split("?")[0].split("%")[0].rstrip("/") \
                    in src.replace('"/apis/coordination.k8s.io/v1/namespaces/%s/leases%s%s"',
                                   "leases leases/%s"), (f, method, shape)
    # remediate.c: 13 call sites (one does PUT or POST; one GET helper serves the node, the
    # node list and the pod list; one GET of an object that may be absent serves the pause
    # ConfigMap, the guard Lease, medik8s' Lease and kured's DaemonSet; one PUT or POST of the
    # guard Lease, one of medik8s' Lease, one DELETE of it; one PATCH of kured's lock);
    # kube_agent.c 2 (GET its node; one patch_status() PATCHes its status for the conditions,
    # for the removal of those turned off, and for that removal alone in NPD mode: the two
    # copies of the PATCH it had were made one, 3 -> 2); event.c 2 (POST an Event, PATCH a
    # repeat's count); pods_publish.c none (the
    # pods come from the node's pod log directories); fleet_fetch.c 1 (one page of nodes or
    # Leases); remediator.c 2 (GET the leader Lease; PUT or POST it)
    assert sites == {"event.c": 2, "kube_agent.c": 2, "pods_publish.c": 0, "remediate.c": 13,
                     "fleet_fetch.c": 1, "remediator.c": 2}, sites


def _rule_names(objs, kind, name, verb):
    """The resourceNames limiting @verb in role @name (None: not limited by name)."""
    got = [r.get("resourceNames") for r in one(objs, kind, name)["rules"] if verb in r["verbs"]]
    assert len(got) == 1, (name, verb, got)
    return got[0]


def _bound(objs, sa):
    """The roles bound to ServiceAccount @sa."""
    return {b["roleRef"]["name"] for b in find(objs, "ClusterRoleBinding") + find(objs, "RoleBinding")
            if any(s["name"] == sa for s in b["subjects"])}


def test_rbac_is_exactly_what_the_code_and_npd_call(rendered):
    d, r, s = rendered["default"], rendered["remediation"], rendered["standalone"]
    need = lambda role: {c[3] for c in CALLS if c[4] == role}  # noqa: E731
    assert _grants(d, "cpuzombie-conditions") == NPD_NEEDS | need("conditions")
    assert _grants(r, "cpuzombie-conditions") == NPD_NEEDS | need("conditions")
    assert _grants(s, "cpuzombie-conditions") == need("conditions") == NPD_NEEDS
    # Events in "default" only: NPD's create and patch; the agent alone (standalone) the same
    # (a repeat counts on the first Event: kube/event.c)
    for objs in (d, r):
        assert _grants(objs, "cpuzombie-events") == NPD_EVENTS | need("events")
    assert _grants(s, "cpuzombie-events") == need("events") == NPD_EVENTS
    # the node agent's ServiceAccount holds the conditions and events roles and nothing else:
    # no nodes list/patch, no eviction, no pod at all (not even list), no
    # Lease, no events update, no Events outside "default"
    for objs in (d, r, s):
        assert _bound(objs, "cpuzombie") == {"cpuzombie-conditions", "cpuzombie-events"}
        assert one(objs, "Role", "cpuzombie-events")["metadata"]["namespace"] == "default"
        assert one(objs, "RoleBinding", "cpuzombie-events")["metadata"]["namespace"] == "default"
    bad = {("", "nodes", "patch"), ("", "nodes", "list"), ("", "pods/eviction", "create"),
           ("", "pods", "delete"), ("", "pods", "list"), ("", "pods", "get"),
           ("", "events", "update"), ("", "events", "create")} | {
               g for g in need("budget") | need("leader")}
    for objs in (d, r, s):
        assert not _grants(objs, "cpuzombie-conditions") & bad
        assert ("", "events", "update") not in _grants(objs, "cpuzombie-events")
    # the remediator's: exactly its calls, cluster-wide, in lease_namespace, in the release ns
    assert _bound(r, "cpuzombie-remediator") == {"cpuzombie-remediator", "cpuzombie-budget",
                                                 "cpuzombie-remediator-leader",
                                                 "cpuzombie-remediator-events"}
    assert _grants(r, "cpuzombie-remediator") == need("remediator")     # allow_delete on
    assert ("", "events", "create") not in _grants(r, "cpuzombie-remediator")  # not cluster-wide
    assert _grants(r, "cpuzombie-remediator-events") == need("remediator-events")
    assert one(r, "Role", "cpuzombie-remediator-events")["metadata"]["namespace"] == "default"
    assert _grants(r, "cpuzombie-budget") == need("budget")
    assert _grants(r, "cpuzombie-remediator-leader") == need("leader")
    # lease_namespace "": the release namespace (no grant in kube-system)
    assert one(r, "Role", "cpuzombie-budget")["metadata"]["namespace"] == "cpuzombie"
    assert not [o for o in r if o["kind"] in ("Role", "RoleBinding")
                and o["metadata"]["namespace"] == "kube-system"]
    assert one(r, "Role", "cpuzombie-remediator-leader")["metadata"]["namespace"] == "cpuzombie"
    # by name where RBAC can: the slots of max_unavailable, the leader Lease; not create/list
    assert _rule_names(r, "Role", "cpuzombie-budget", "update") == ["cpuzombie-slot-0"]
    assert _rule_names(r, "Role", "cpuzombie-budget", "delete") == ["cpuzombie-slot-0"]
    assert _rule_names(r, "Role", "cpuzombie-budget", "create") is None
    assert _rule_names(r, "Role", "cpuzombie-remediator-leader", "get") == ["cpuzombie-remediator"]
    assert _rule_names(r, "Role", "cpuzombie-remediator-leader", "update") == \
        ["cpuzombie-remediator"]
    _, three = render("remediation", ["--set-string",
                                                 "config.remediation.max_unavailable=3"])
    assert _rule_names(three, "Role", "cpuzombie-budget", "update") == [
        "cpuzombie-slot-0", "cpuzombie-slot-1", "cpuzombie-slot-2"]
    _, pct = render("remediation", ["--set", "config.remediation.max_unavailable=10%"])
    assert _rule_names(pct, "Role", "cpuzombie-budget", "update") is None   # follows node count
    # without allow_delete no pod is ever deleted
    assert _grants(s, "cpuzombie-remediator") == need("remediator") - {("", "pods", "delete")}
    assert not find(d, "ClusterRole", "cpuzombie-remediator")       # remediation off: no role
    assert not find(d, "ServiceAccount", "cpuzombie-remediator")
    # agent.podNames either way: no pod grant (the names come from the node itself)
    for on in ("true", "false"):
        _, objs = render("default", ["--set", "agent.podNames=" + on])
        assert _grants(objs, "cpuzombie-conditions") == NPD_NEEDS
    # the pause ConfigMap by name, read only; the guard Lease only with breaker_max/drain_gap
    assert _rule_names(r, "Role", "cpuzombie-budget", "get") == ["cpuzombie-pause"]
    for opt in ("config.remediation.breaker_max=3", "config.remediation.drain_gap=10m"):
        _, brk = render("remediation", ["--set", opt])
        assert _grants(brk, "cpuzombie-budget") == need("budget") | need("guard"), opt
        rules = one(brk, "Role", "cpuzombie-budget")["rules"]
        assert [r_.get("resourceNames") for r_ in rules if "get" in r_["verbs"]] == [
            ["cpuzombie-pause"], ["cpuzombie-guard"]], rules
    # medik8s' Leases only with medik8s_lease_namespace, in that namespace
    assert not find(r, "Role", "cpuzombie-medik8s-handoff")
    _, m8 = render("remediation", ["--set",
                                   "config.remediation.medik8s_lease_namespace=medik8s-leases"])
    assert _grants(m8, "cpuzombie-medik8s-handoff") == need("medik8s")
    assert one(m8, "Role", "cpuzombie-medik8s-handoff")["metadata"]["namespace"] == \
        "medik8s-leases"
    assert "cpuzombie-medik8s-handoff" in _bound(m8, "cpuzombie-remediator")
    # kured's DaemonSet only with kured_daemonset, by name, in its namespace
    assert not find(r, "Role", "cpuzombie-kured-handoff")
    _, ku = render("remediation", ["--set", "config.remediation.kured_daemonset=kube-system/kured"])
    assert _grants(ku, "cpuzombie-kured-handoff") == need("kured")
    assert _rule_names(ku, "Role", "cpuzombie-kured-handoff", "get") == ["kured"]
    assert _rule_names(ku, "Role", "cpuzombie-kured-handoff", "patch") == ["kured"]
    assert one(ku, "Role", "cpuzombie-kured-handoff")["metadata"]["namespace"] == "kube-system"
    _, ns = render("remediation", ["--set", "config.remediation.lease_namespace=cz-budget"])
    assert one(ns, "Role", "cpuzombie-budget")["metadata"]["namespace"] == "cz-budget"


def test_remediator_deployment(rendered):
    """One replica of the same image running `cpuzombie remediator` as its own ServiceAccount,
    with the rendered config (the agents' copy says agent.remediate false), no host access,
    not root; its leader identity is the pod's name."""
    r = rendered["remediation"]
    dep = one(r, "Deployment", "cpuzombie-remediator")
    spec = dep["spec"]["template"]["spec"]
    assert dep["spec"]["replicas"] == 1
    assert spec["serviceAccountName"] == "cpuzombie-remediator"
    c, = spec["containers"]
    agent = container(pod_spec(r), "agent")
    assert c["image"] == agent["image"]
    assert c["command"] == [agent["command"][0], "--config", "/etc/cpuzombie/cpuzombie.yaml",
                            "remediator"]
    assert {"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}} \
        in c["env"]
    assert not spec.get("hostNetwork") and not spec.get("hostPID")
    assert all("hostPath" not in v for v in spec["volumes"])
    assert spec["securityContext"]["runAsNonRoot"] is True
    sc = c["securityContext"]
    assert sc["capabilities"] == {"drop": ["ALL"]} and sc["readOnlyRootFilesystem"] is True
    assert sc["allowPrivilegeEscalation"] is False and sc["runAsUser"] == 65534
    cfg = yaml.safe_load(rendered_config(r))
    assert cfg["agent"]["remediate"] is False and cfg["remediation"]["mode"] == "drain"
    for v in ("default", "standalone"):
        assert yaml.safe_load(rendered_config(rendered[v]))["agent"]["remediate"] is False


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_installs_into_the_release_namespace(variant):
    """`helm install -n monitoring`: every namespaced object in monitoring (the budget Role in
    remediation.lease_namespace, which is its own setting), every binding's subject and the
    admission policy's service account follow; no Namespace object unless asked for."""
    _, objs = render(variant, ns_args=("-n", "monitoring"))
    assert not find(objs, "Namespace")
    cfg = yaml.safe_load(rendered_config(objs))
    assert cfg["remediation"]["lease_namespace"] == "monitoring"   # "" = the release namespace
    for o in objs:
        if o["kind"] in CLUSTER_SCOPED:
            assert "namespace" not in o["metadata"], o["kind"]
        elif o["metadata"]["name"] in ("cpuzombie-events", "cpuzombie-remediator-events"):
            # the Events' one namespace (client-go's and event.c's for a Node)
            assert o["kind"] in ("Role", "RoleBinding") and \
                o["metadata"]["namespace"] == "default", o["metadata"]
        elif (o["kind"], o["metadata"]["name"]) in (("Role", "cpuzombie-cleanup"),
                                                    ("RoleBinding", "cpuzombie-cleanup")):
            # the uninstall hook's: the Leases of lease_namespace (""), the release's
            assert o["metadata"]["namespace"] == "monitoring"
        else:
            assert o["metadata"]["namespace"] == "monitoring", (o["kind"], o["metadata"])
    for b in find(objs, "ClusterRoleBinding") + find(objs, "RoleBinding"):
        sa = "cpuzombie" if b["roleRef"]["name"] in ("cpuzombie-conditions", "cpuzombie-events") \
            else "cpuzombie-cleanup" if b["roleRef"]["name"] == "cpuzombie-cleanup" \
            else "cpuzombie-remediator"
        assert b["subjects"] == [{"kind": "ServiceAccount", "name": sa,
                                  "namespace": "monitoring"}]
    pol = json.dumps(one(objs, "ValidatingAdmissionPolicy", "cpuzombie-own-node-only")["spec"])
    assert "system:serviceaccount:monitoring:cpuzombie'" in pol
    for p in find(objs, "ValidatingAdmissionPolicy"):
        assert "system:serviceaccount:cpuzombie:" not in json.dumps(p), p["metadata"]["name"]
    if find(objs, "ValidatingAdmissionPolicy", "cpuzombie-remediator-leases"):
        pol = json.dumps(one(objs, "ValidatingAdmissionPolicy",
                             "cpuzombie-remediator-leases")["spec"])
        assert "system:serviceaccount:monitoring:cpuzombie-remediator'" in pol
        assert "request.namespace == 'monitoring'" in pol
    # asked for: the Namespace is the release's, with the label the pod needs
    _, objs = render(variant, ns_args=("-n", "monitoring", "--set", "createNamespace=true"))
    ns = one(objs, "Namespace")
    assert ns["metadata"]["name"] == "monitoring"
    assert ns["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] == "privileged"
    # the old value is refused by the schema, not silently ignored
    p = helm("template", "x", CHART, "--set", "namespace=monitoring", check=False)
    assert p.returncode != 0 and "namespace" in p.stderr


# --- admission policy ----------------------------------------------------------------------------

SA = "system:serviceaccount:cpuzombie:cpuzombie"


def _req(op, resource, name, node=None, user=SA, obj=None, old=None, extra=None):
    ex = {} if node is None else {"authentication.kubernetes.io/node-name": [node]}
    ex.update(extra or {})
    return {"request": {"operation": op, "name": name,
                        "resource": {"group": "coordination.k8s.io" if resource == "leases"
                                     else "", "version": "v1", "resource": resource},
                        "userInfo": {"username": user, "extra": ex}},
            "object": obj, "oldObject": old}


def _event(kind, name):
    return {"involvedObject": {"kind": kind, "name": name}}


def _node(conds=("Ready",), labels=None, spec=None, capacity="2", status=None):
    """A Node as the policy sees it; @conds: "Type" (True) or ("Type", "False")."""
    cs = [dict(type=c, status="True") if isinstance(c, str) else dict(type=c[0], status=c[1])
          for c in conds]
    return {"metadata": {"name": "n", "labels": labels or {"kubernetes.io/hostname": "n"}},
            "spec": spec or {}, "status": dict({"conditions": cs, "capacity": {"cpu": capacity}},
                                               **(status or {}))}


OLD = _node()
# (request, allowed?)
SAMPLES = [
    # its own node's cpuzombie condition: the one write it has
    (_req("UPDATE", "nodes", "n1", "n1", obj=_node(("Ready", "MemcgZombieLeak")), old=OLD), True),
    (_req("UPDATE", "nodes", "n2", "n1", obj=_node(("Ready", "MemcgZombieLeak")), old=OLD),
     False),                                                         # another node
    (_req("UPDATE", "nodes", "n1", obj=_node(("Ready", "MemcgZombieLeak")), old=OLD),
     False),                                                         # token without the claim
    (_req("UPDATE", "nodes", "n2", user="system:node:n2", obj=_node(spec={"unschedulable": True}),
          old=OLD), True),                                           # not us: not matched
    (_req("UPDATE", "nodes", "n1", "n1", obj=_node(("Ready", "MemcgZombieLeak")), old=OLD, extra={
        "authentication.kubernetes.io/node-name": ["n1", "n2"]}), False),
    # on its own node, anything but cpuzombie's conditions
    (_req("UPDATE", "nodes", "n1", "n1", obj=_node(spec={"unschedulable": True}), old=OLD),
     False),                                                         # cordon itself
    (_req("UPDATE", "nodes", "n1", "n1", obj=_node((("Ready", "False"),)), old=OLD), False),
    (_req("UPDATE", "nodes", "n1", "n1", obj=_node(()), old=OLD), False),   # Ready removed
    (_req("UPDATE", "nodes", "n1", "n1", obj=_node(labels={"a": "b"}), old=OLD), False),
    (_req("UPDATE", "nodes", "n1", "n1", obj=_node(capacity="512"), old=OLD), False),
    (_req("UPDATE", "nodes", "n1", "n1", obj=_node(status={"addresses": []}), old=OLD), False),
    (_req("CREATE", "events", "", "n1", obj=_event("Node", "n1")), True),
    (_req("CREATE", "events", "", "n1", obj=_event("Node", "n2")), False),
    (_req("UPDATE", "events", "e", "n1", obj=_event("Pod", "n1")), False),
]
OURS = ("MemcgZombieLeak", "CPUCoreSaturation", "ENADeviceReset")
# The agent holds no Lease right at all (RBAC; test_remediator.py on the real server): the
# policy no longer looks at Leases.


def _policy_in_python(pol, r):
    """The policy's rule, re-implemented: is request @r allowed?"""
    req = r["request"]
    if req["userInfo"]["username"] != SA:
        return True                                          # matchConditions
    names = req["userInfo"]["extra"].get("authentication.kubernetes.io/node-name", [])
    node = names[0] if len(names) == 1 else ""
    res = req["resource"]["resource"]
    if not node:
        return False
    if res == "nodes":
        o, old = r["object"], r["oldObject"]
        others = [[c for c in x["status"].get("conditions", []) if c["type"] not in OURS]
                  for x in (o, old)]
        rest = [(x["metadata"], x["spec"], {k: v for k, v in x["status"].items()
                                             if k != "conditions"}) for x in (o, old)]
        return req["name"] == node and others[0] == others[1] and rest[0] == rest[1]
    if res == "events":
        o = r["object"]["involvedObject"]
        return o["kind"] == "Node" and o["name"] == node
    return True


CEL_SCRIPT = """
import { readFileSync } from "node:fs";
import { run } from "@bufbuild/cel";
const { policy, samples } = JSON.parse(readFileSync(0, "utf8"));
const toCel = (v) => v === null || typeof v !== "object" ? v
  : Array.isArray(v) ? v.map(toCel) : new Map(Object.entries(v).map(([k, x]) => [k, toCel(x)]));
// An evaluation error (a value that is not a plain answer) is an error, never a "no".
// (a variable may be a list: @bufbuild/cel's own list and map classes are values; its errors
// are CelError)
const value = (r) => { if (r !== null && typeof r === "object" && /Error/.test(r.constructor?.name ?? "Error")) throw new Error(String(r.message ?? r)); return r; };
const bool = (r) => { if (typeof value(r) !== "boolean") throw new Error("not a bool: " + r); return r; };
const out = [];
for (const s of samples) {
  const vars = { request: toCel(s.request), object: toCel(s.object), oldObject: toCel(s.oldObject) };
  try {
    if (!policy.matchConditions.every((m) => bool(run(m.expression, vars)))) { out.push(true); continue; }
    const variables = new Map();
    for (const v of policy.variables) variables.set(v.name, value(run(v.expression, { ...vars, variables })));
    out.push(policy.validations.every((v) => bool(run(v.expression, { ...vars, variables }))));
  } catch (e) { out.push("error: " + e.message); }
}
console.log(JSON.stringify(out));
"""


def test_admission_policy_lets_a_node_change_only_itself(rendered):
    """The ValidatingAdmissionPolicy's CEL, evaluated two ways on sample requests: a Python
    re-implementation of the rule, and the policy's own expressions run by a CEL evaluator
    (@bufbuild/cel; standard CEL, which is all these expressions use). The API server's own
    evaluation (its type checker, request.userInfo as it really arrives) needs a real API
    server, which these machines cannot run."""
    pol = one(rendered["default"], "ValidatingAdmissionPolicy")["spec"]
    assert pol == one(rendered["remediation"], "ValidatingAdmissionPolicy",
                      "cpuzombie-own-node-only")["spec"]
    assert all(v["reason"] == "Forbidden" for v in pol["validations"])   # 403, as RBAC's
    binding = one(rendered["default"], "ValidatingAdmissionPolicyBinding")["spec"]
    assert binding == {"policyName": "cpuzombie-own-node-only", "validationActions": ["Deny"]}
    assert pol["failurePolicy"] == "Fail"
    rules = {(tuple(r["apiGroups"]), tuple(r["resources"]), tuple(r["operations"]))
             for r in pol["matchConstraints"]["resourceRules"]}
    assert rules == {(("",), ("nodes", "nodes/status"), ("UPDATE",)),
                     (("",), ("events",), ("CREATE", "UPDATE"))}
    # every mutating call of the agent's role is under the policy
    for _, method, _, (group, res, verb), role in CALLS:
        if role == "conditions" and verb in ("patch", "update", "create", "delete"):
            assert any(res in r[1] and group in r[0] for r in rules), res
    want = [ok for _, ok in SAMPLES]
    assert [_policy_in_python(pol, r) for r, _ in SAMPLES] == want
    got = node_eval(CEL_SCRIPT, {"policy": pol, "samples": [r for r, _ in SAMPLES]})
    assert got == want, list(zip(got, want))
    # the evaluator is live: a syntax error is reported, not taken for an answer
    broken = dict(pol, validations=[{"expression": "request.name == ("}])
    assert str(node_eval(CEL_SCRIPT, {"policy": broken, "samples": [SAMPLES[0][0]]})[0]) \
        .startswith("error:")
    _, off = render("default", ["--set", "admissionPolicy.enabled=false"])
    assert not find(off, "ValidatingAdmissionPolicy")


REM = "system:serviceaccount:cpuzombie:cpuzombie-remediator"


def _lreq(op, ns, name, user=REM):
    r = _req(op, "leases", name, user=user)
    r["request"]["namespace"] = ns
    return r


# (request, allowed?): the remediator writes only its own Leases, slots within the budget
# (max_unavailable 1: cpuzombie-slot-0 alone)
LEASE_SAMPLES = [
    (_lreq("CREATE", "cpuzombie", "cpuzombie-slot-0"), True),
    (_lreq("UPDATE", "cpuzombie", "cpuzombie-slot-0"), True),
    (_lreq("DELETE", "cpuzombie", "cpuzombie-slot-0"), True),
    (_lreq("UPDATE", "cpuzombie", "cpuzombie-slot-12"), False),       # beyond the budget
    (_lreq("DELETE", "cpuzombie", "cpuzombie-slot-3"), False),
    (_lreq("CREATE", "cpuzombie", "cpuzombie-slot-99999"), False),
    (_lreq("CREATE", "cpuzombie", "cpuzombie-slot-00"), False),
    (_lreq("CREATE", "cpuzombie", "cpuzombie-remediator"), True),
    (_lreq("UPDATE", "cpuzombie", "cpuzombie-remediator"), True),
    (_lreq("CREATE", "kube-system", "kube-scheduler"), False),
    (_lreq("CREATE", "cpuzombie", "kube-scheduler"), False),           # not a name of ours
    (_lreq("CREATE", "cpuzombie", "cpuzombie-slot-"), False),
    (_lreq("CREATE", "cpuzombie", "cpuzombie-slot-0x"), False),
    (_lreq("CREATE", "kube-system", "cpuzombie-remediator"), False),   # wrong namespace
    (_lreq("CREATE", "kube-system", "cpuzombie-slot-0"), False),       # wrong namespace
    (_lreq("CREATE", "kube-node-lease", "n1"), False),
    (_lreq("CREATE", "kube-system", "kube-scheduler", user=SA), True),  # not matched here
]


def _lease_policy_in_python(r):
    req = r["request"]
    if req["userInfo"]["username"] != REM:
        return True
    ns, name = req["namespace"], req["name"]
    return (ns == "cpuzombie" and name == "cpuzombie-slot-0") \
        or (ns == "cpuzombie" and name == "cpuzombie-remediator")


def test_admission_policy_lets_the_remediator_write_only_its_leases(rendered):
    """RBAC cannot limit a create by name: the remediator's Lease policy does, evaluated as
    above (Python and the CEL evaluator; the real server: test_remediator.py)."""
    pol = one(rendered["remediation"], "ValidatingAdmissionPolicy",
              "cpuzombie-remediator-leases")["spec"]
    assert pol["failurePolicy"] == "Fail"
    assert all(v["reason"] == "Forbidden" for v in pol["validations"])
    assert one(rendered["remediation"], "ValidatingAdmissionPolicyBinding",
               "cpuzombie-remediator-leases")["spec"] == {
        "policyName": "cpuzombie-remediator-leases", "validationActions": ["Deny"]}
    assert [r["resources"] for r in pol["matchConstraints"]["resourceRules"]] == [["leases"]]
    want = [ok for _, ok in LEASE_SAMPLES]
    assert [_lease_policy_in_python(r) for r, _ in LEASE_SAMPLES] == want
    got = node_eval(CEL_SCRIPT, {"policy": pol, "samples": [r for r, _ in LEASE_SAMPLES]})
    assert got == want, list(zip(got, want))
    assert not find(rendered["default"], "ValidatingAdmissionPolicy",
                    "cpuzombie-remediator-leases")


# --- manifests/, kubectl, NOTES -----------------------------------------------------------------

def test_manifests_equal_the_charts_default_rendering():
    p = subprocess.run([os.path.join(ROOT, "tests", "tools", "render-manifests.sh"), "--check"],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr
    text, objs = render("default")
    with open(os.path.join(ROOT, "manifests", "cpuzombie.yaml")) as f:
        assert [d for d in yaml.safe_load_all(f) if d] == objs


def test_kubectl_accepts_the_manifests(tmp_path):
    """Real kubectl, client-side dry run (--validate=false: no OpenAPI offline) against a
    discovery-only server on 127.0.0.1 that knows the real group/version/resource names: kubectl
    parses every document, maps every kind, and would create each object."""
    srv = DiscoveryServer(tmp_path)
    try:
        p = subprocess.run([shutil.which("kubectl") and os.path.join(
            ROOT, "build", "tools", "bin", "kubectl"), "--kubeconfig", srv.kubeconfig, "apply",
            "--dry-run=client", "--validate=false", "-o", "name", "-f",
            os.path.join(ROOT, "manifests", "cpuzombie.yaml")],
            capture_output=True, text=True, timeout=120)
        assert p.returncode == 0, p.stderr
        _, objs = render("default")
        want = sorted("%s/%s" % (o["kind"].lower() + ("." + o["apiVersion"].split("/")[0]
                                                      if "/" in o["apiVersion"] else ""),
                                 o["metadata"]["name"]) for o in objs)
        assert sorted(p.stdout.split()) == want
        assert not [l for l in srv.log if not l.startswith("GET")]   # a dry run writes nothing
        # NOTES.txt: helm install --dry-run renders it (it asks the server's /version)
        env = dict(os.environ, KUBECONFIG=srv.kubeconfig)
        for v in VARIANTS:
            p = subprocess.run([os.path.join(ROOT, "build", "tools", "bin", "helm"), "install",
                                "--dry-run=client", "--disable-openapi-validation", "cpuzombie", CHART, *VARIANTS[v]],
                               capture_output=True, text=True, timeout=120, env=env)
            assert p.returncode == 0, p.stderr
            notes = p.stdout.split("NOTES:", 1)[1]
            assert "kubectl describe node" in notes and "custom-columns" in notes
            for c in CONDITIONS:
                assert '.status.conditions[?(@.type=="%s")].status' % c in notes
            assert ("node-problem-detector" in notes) == (v != "standalone")
    finally:
        srv.close()


# --- Prometheus rules, systemd units, image recipe -----------------------------------------------

def test_prometheus_rules(tmp_path):
    rules = os.path.join(ROOT, "manifests", "prometheus-rules.yaml")
    p = subprocess.run(["promtool", "check", "rules", rules], capture_output=True, text=True)
    assert p.returncode == 0, p.stdout + p.stderr
    types = set(re.findall(r'problem_gauge\{type="(\w+)"\}', open(rules).read()))
    assert types == set(CONDITIONS)
    spec = {r["alert"]: r for g in yaml.safe_load(open(rules))["groups"] for r in g["rules"]}

    def exp(alert, instance):
        ann = {k: v.replace("{{ $labels.instance }}", instance)
               for k, v in spec[alert]["annotations"].items()}
        return [{"exp_labels": dict(spec[alert]["labels"], instance=instance),
                 "exp_annotations": ann}]
    t = tmp_path / "t.yaml"
    t.write_text(yaml.safe_dump({"rule_files": [rules], "evaluation_interval": "1m", "tests": [{
        "interval": "1m",
        "input_series": [
            {"series": 'problem_gauge{type="MemcgZombieLeak",reason="ZombieMemcgsHigh",'
                       'instance="a"}', "values": "1x30"},
            {"series": 'problem_gauge{type="CPUCoreSaturation",reason="CoreSaturationBursts",'
                       'instance="a"}', "values": "0x10 1x20"},
            {"series": 'problem_gauge{type="MemcgZombieLeak",reason="ZombieMemcgsHigh",'
                       'instance="b"}', "values": "0x30"}],
        "alert_rule_test": [
            {"eval_time": "10m", "alertname": "CPUZombieMemcgLeak", "exp_alerts": []},
            {"eval_time": "20m", "alertname": "CPUZombieMemcgLeak",
             "exp_alerts": exp("CPUZombieMemcgLeak", "a")},
            {"eval_time": "12m", "alertname": "CPUZombieChain", "exp_alerts": []},
            {"eval_time": "20m", "alertname": "CPUZombieChain",
             "exp_alerts": exp("CPUZombieChain", "a")}]}]}))
    p = subprocess.run(["promtool", "test", "rules", str(t)], capture_output=True, text=True)
    assert p.returncode == 0, p.stdout + p.stderr
    # the chart's PrometheusRule carries the same groups
    _, objs = render("default", ["--set", "prometheusRule.enabled=true"])
    assert one(objs, "PrometheusRule")["spec"] == yaml.safe_load(open(rules))


def test_systemd_units_verify(cz_bin, tmp_path):
    if not shutil.which("systemd-analyze"):
        pytest.skip("systemd-analyze missing")
    src = os.path.join(ROOT, "config", "systemd")
    for u in ("cpuzombie-check@.service", "cpuzombie-check@.timer"):
        text = open(os.path.join(src, u)).read().replace("/usr/local/bin/cpuzombie", cz_bin)
        (tmp_path / u).write_text(text)
    exec_start = re.search(r"^ExecStart=(\S+) (.*)$", open(os.path.join(
        src, "cpuzombie-check@.service")).read(), re.M)
    assert exec_start.group(1) == "/usr/local/bin/cpuzombie"   # `make install` PREFIX default
    assert exec_start.group(2) == "check %i"
    units = [str(tmp_path / "cpuzombie-check@memcg.service"),
             str(tmp_path / "cpuzombie-check@memcg.timer")]
    p = subprocess.run(["systemd-analyze", "verify", *units], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    # verify is live: a typo is refused
    (tmp_path / "cpuzombie-check@.service").write_text(text.replace("Type=oneshot", "Type=oneshoot"))
    p = subprocess.run(["systemd-analyze", "verify", units[0]], capture_output=True, text=True)
    assert p.returncode != 0 or "oneshoot" in p.stderr


def test_image_recipe_uses_what_exists():
    """The recipe's text: every file it copies exists, it builds with the project's make, ships
    the copy the DaemonSet's init container copies and the agent binary its command names.
    test_image.py builds it with podman and runs it as the chart's pod spec says."""
    df = open(os.path.join(ROOT, "manifests", "image", "Dockerfile")).read()
    stages = re.findall(r"^FROM (\S+)", df, re.M)
    # the compiler's stage, the staging stage on the runtime base, the image FROM scratch
    assert stages == ["${BUILD_BASE}", "${RUNTIME_BASE}", "scratch"]
    # the bases, by tag unless a digest is passed (the local debootstrap bases have none),
    # recorded in the OCI labels
    assert re.findall(r"^ARG (BUILD_BASE|RUNTIME_BASE)=(\S+)$", df, re.M) == [
        ("BUILD_BASE", "debian:bookworm"), ("RUNTIME_BASE", "debian:bookworm-slim")]
    for label in ("title", "version", "licenses", "base.name", "description"):
        assert "org.opencontainers.image.%s=" % label in df, label
    # the final stage: stripped binaries, only the staging stage's /rootfs, which rootfs.sh
    # makes without setuid/setgid file and with an SBOM (test_image.py: what is in it), not root
    assert "strip --strip-unneeded build/cpuzombie build/cpuzombie-check" in df
    final = df[re.search(r"^FROM scratch$", df, re.M).start():]
    assert re.findall(r"^(?:COPY|ADD|RUN) .*$", final, re.M) == ["COPY --from=staging /rootfs/ /"]
    assert "rootfs.sh /rootfs" in df and "sbom.spdx.json" in final
    rootfs = open(os.path.join(ROOT, "manifests", "image", "rootfs.sh")).read()
    assert 'find "$root" -perm /6000' in rootfs and "sbom.spdx.json" in rootfs
    assert re.findall(r"^USER (\S+)$", final, re.M) == ["65534:65534"]
    for src in re.findall(r"^COPY (?!--from)(\S+)", df, re.M):
        assert glob.glob(os.path.join(ROOT, src.rstrip("*").rstrip("/")) + "*"), src
    assert "make -j" in df and "libcurl4 libsystemd0" in df
    assert "COPY --from=build /src/build/cpuzombie /usr/local/bin/cpuzombie" in df
    # the init container's copy is that agent's install-plugin: no cp, nor its
    # libraries, in the image, and rootfs.sh runs the copy as the chart does before it ships
    assert "/usr/bin/cp" not in rootfs and "install-plugin" in rootfs

# SPDX-License-Identifier: MIT
"""`cpuzombie cleanup` and the cordons, on the real control plane, as the chart's uninstall hook
ServiceAccount (cpuzombie-cleanup): a node cpuzombie cordoned (cpuzombie.io/cordoned, and still
unschedulable) is uncordoned in the same resourceVersion-checked patch that removes the marker,
so after `helm uninstall` no node stays cordoned by nobody; `--keep-cordons` (the chart value
cleanupKeepCordons) keeps it cordoned with its marker and the summary names it; a cordon
without our marker is someone else's and stays; a marker on a node a person already uncordoned
is only removed."""
import os
import subprocess

import kube_helpers as kh

BIN = os.environ.get("CZ_BIN", os.path.join(kh.ROOT, "build", "cpuzombie"))
OLD = "2024-01-01T00:00:00Z"


def mark(kube, name, annotations):
    st, obj = kube.cp.raw("PATCH", "/api/v1/nodes/" + name, {
        "metadata": {"annotations": annotations}}, "application/merge-patch+json")
    assert st == 200, (st, obj)


def nodes(kube, tag):
    pid = os.getpid()
    n = {k: "cc-%s-%s-%d" % (tag, k, pid) for k in ("ours", "theirs", "lifted")}
    kube.add(kh.node_obj(n["ours"], unschedulable=True),
             kh.node_obj(n["theirs"], unschedulable=True), kh.node_obj(n["lifted"]))
    mark(kube, n["ours"], {"cpuzombie.io/cordoned": OLD, "cpuzombie.io/drained": OLD,
                           "example.com/theirs": "x"})
    mark(kube, n["theirs"], {"example.com/cordoned-by": "an admin"})
    mark(kube, n["lifted"], {"cpuzombie.io/cordoned": OLD})
    return n


def cleanup(kube, tmp_path, *args):
    kc = kube.cp.kubeconfig(str(tmp_path / "cleanup.kc"),
                            {"token": kube.cp.token(kh.AGENT_NS, "cpuzombie-cleanup")},
                            server=kube.url)
    cfg = tmp_path / "cz.yaml"
    cfg.write_text("kubernetes:\n  kubeconfig: %s\nremediation:\n  lease_namespace: %s\n"
                   "  leader_namespace: %s\n" % (kc, kh.AGENT_NS, kh.AGENT_NS))
    mark_log = len(kube.log())
    p = subprocess.run([BIN, "--config", str(cfg), "cleanup", *args], capture_output=True,
                       text=True, timeout=120)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "Sanitizer" not in p.stderr and "runtime error" not in p.stderr, p.stderr
    return p.stdout, kube.log()[mark_log:]


def node_patches(calls, name):
    return [e for e in calls if e["method"] == "PATCH" and e["path"] == "/api/v1/nodes/" + name
            and e["status"] == 200]


def test_cleanup_uncordons_our_cordons_in_the_same_patch(kube, tmp_path):
    n = nodes(kube, "un")
    out, calls = cleanup(kube, tmp_path)
    ours = kube.node(n["ours"])
    assert not ours["spec"].get("unschedulable"), ours["spec"]
    assert not [k for k in ours["metadata"].get("annotations", {}) if k.startswith("cpuzombie.io/")]
    assert ours["metadata"]["annotations"]["example.com/theirs"] == "x"
    # one patch, checked against the resourceVersion read: the uncordon and the marker together
    p = node_patches(calls, n["ours"])
    assert len(p) == 1, p
    body = p[0]["body"]
    assert body["spec"] == {"unschedulable": False}, body
    assert body["metadata"]["annotations"]["cpuzombie.io/cordoned"] is None, body
    assert body["metadata"]["resourceVersion"], body
    # someone else's cordon stays; a cordon a person lifted is not ours to touch again
    assert kube.node(n["theirs"])["spec"].get("unschedulable") is True
    lifted = kube.node(n["lifted"])
    assert not lifted["spec"].get("unschedulable")
    assert "cpuzombie.io/cordoned" not in lifted["metadata"].get("annotations", {})
    assert all("unschedulable" not in (e["body"] or {}).get("spec", {})
               for e in calls if e["path"] in ("/api/v1/nodes/" + n["theirs"],
                                               "/api/v1/nodes/" + n["lifted"])), calls
    assert ", 1 uncordoned;" in out and "kept cordoned" not in out, out


def test_cleanup_keep_cordons_leaves_them_with_their_marker_and_names_them(kube, tmp_path):
    n = nodes(kube, "keep")
    out, calls = cleanup(kube, tmp_path, "--keep-cordons")
    ours = kube.node(n["ours"])
    assert ours["spec"].get("unschedulable") is True
    ann = ours["metadata"]["annotations"]
    assert ann["cpuzombie.io/cordoned"] == OLD and "cpuzombie.io/drained" not in ann, ann
    assert kube.node(n["theirs"])["spec"].get("unschedulable") is True
    assert ", 0 uncordoned;" in out, out
    assert out.rstrip("\n").endswith("; 1 kept cordoned (--keep-cordons): " + n["ours"]), out


def test_the_chart_value_runs_the_hook_with_keep_cordons():
    import deploy_helpers as dh
    import yaml
    dh.kube_tools()
    for values, want in (([], False), (["--set", "cleanupKeepCordons=true"], True)):
        text = dh.helm("template", "cpuzombie", dh.CHART, "-n", kh.AGENT_NS, *values).stdout
        job = [d for d in yaml.safe_load_all(text)
               if d and d["kind"] == "Job" and d["metadata"]["name"] == "cpuzombie-cleanup"]
        cmd = job[0]["spec"]["template"]["spec"]["containers"][0]["command"]
        # the subcommand's own option after its name
        assert cmd[cmd.index("cleanup") + 1:] == (["--keep-cordons"] if want else []), cmd

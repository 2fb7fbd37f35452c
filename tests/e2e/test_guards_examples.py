# SPDX-License-Identifier: MIT
"""The chart's example objects for other remediators (examples.nodeHealthCheck,
examples.nodeReadinessRule; off by default): rendered with exactly our condition types, and
applied (server-side dry-run, as the admin installing them) against those projects' own CRDs
in the real API server, the CRD YAML taken from their Go modules (`go mod download`). Where the
Go module proxy does not serve a module, the project's CRD file at the same version, copied from
its repository into tests/fixtures/crds (README there: source, commit), is used instead."""

import json
import os
import subprocess

import pytest
import yaml

import deploy_helpers as dh
import kube_helpers as kh

MODULES = {
    "NodeHealthCheck": ("github.com/medik8s/node-healthcheck-operator", "v0.12.0",
                        "config/crd/bases/remediation.medik8s.io_nodehealthchecks.yaml"),
    "NodeReadinessRule": ("sigs.k8s.io/node-readiness-controller", "v0.5.0",
                          "config/crd/bases/readiness.node.x-k8s.io_nodereadinessrules.yaml"),
}
ON = ("--set", "examples.nodeHealthCheck.enabled=true",
      "--set", "examples.nodeReadinessRule.enabled=true")


def render(*values):
    dh.kube_tools()
    text = dh.helm("template", "cpuzombie", dh.CHART, "-n", kh.AGENT_NS, *values).stdout
    return [d for d in yaml.safe_load_all(text) if d]


def test_examples_off_by_default_and_select_our_conditions():
    kinds = {d["kind"] for d in render()}
    assert not kinds & set(MODULES)
    objs = {d["kind"]: d for d in render(*ON) if d["kind"] in MODULES}
    # the conditions remediation acts on: by default the node-intrinsic ones (any tenant's
    # busy loop can make CPUCoreSaturation True, so it drains nothing unless a values file says)
    ours = ["MemcgZombieLeak", "ENADeviceReset"]
    values = yaml.safe_load(open(os.path.join(dh.CHART, "values.yaml")))
    assert values["config"]["remediation"]["conditions"] == ours
    nhc, nrr = objs["NodeHealthCheck"], objs["NodeReadinessRule"]
    assert [c["type"] for c in nhc["spec"]["unhealthyConditions"]] == ours
    assert {c["status"] for c in nhc["spec"]["unhealthyConditions"]} == {"True"}
    assert nhc["spec"]["maxUnhealthy"] == "20%"          # our storm guard's default
    assert [c["type"] for c in nrr["spec"]["conditions"]] == ours
    assert {(c["requiredStatus"], c["defaultStatus"]) for c in nrr["spec"]["conditions"]} == \
        {("False", "False")}                              # a problem gate: absent = healthy
    # and they follow the values: all three when a values file lists all three
    every = ["MemcgZombieLeak", "CPUCoreSaturation", "ENADeviceReset"]
    objs = {d["kind"]: d for d in render(*ON, "--set", "config.remediation.conditions={%s}"
                                            % ",".join(every)) if d["kind"] in MODULES}
    assert [c["type"] for c in objs["NodeHealthCheck"]["spec"]["unhealthyConditions"]] == every
    assert [c["type"] for c in objs["NodeReadinessRule"]["spec"]["conditions"]] == every


FIXTURE_CRDS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fixtures", "crds")


def crd_from_module(kind):
    """The CRD YAML of @kind from its Go module in the module cache; where the proxy refuses
    the module, the project's own file at that version from tests/fixtures/crds; else skip."""
    mod, ver, path = MODULES[kind]
    r = subprocess.run(["go", "mod", "download", "-json", "%s@%s" % (mod, ver)],
                       capture_output=True, text=True, timeout=300,
                       env=dict(os.environ, GOFLAGS="-mod=mod"), cwd="/tmp")
    try:
        info = json.loads(r.stdout)
    except ValueError:
        info = {"Error": r.stderr.strip()}
    if r.returncode != 0 or info.get("Error") or not info.get("Dir"):
        copy = os.path.join(FIXTURE_CRDS, os.path.basename(path))
        if os.path.exists(copy):
            return copy
        pytest.skip("go mod download %s@%s: %s" % (mod, ver, info.get("Error", r.stderr)
                                                    .strip().splitlines()[-1][:200]))
    return os.path.join(info["Dir"], path)


@pytest.mark.parametrize("kind", sorted(MODULES))
def test_example_is_valid_against_the_projects_crd(kube, tmp_path, kind):
    crd = crd_from_module(kind)
    kc = str(tmp_path / "admin")
    kube.admin_kubeconfig(kc)
    name = yaml.safe_load(open(crd))["metadata"]["name"]
    kh.kubectl(kc, "apply", "--server-side", "-f", crd)
    try:
        kh.kubectl(kc, "wait", "--for=condition=Established", "crd/" + name, "--timeout=60s")
        obj = next(d for d in render(*ON) if d["kind"] == kind)
        p = tmp_path / "example.yaml"
        p.write_text(yaml.safe_dump(obj))
        r = kh.kubectl(kc, "apply", "--dry-run=server", "-f", str(p))
        assert "created (server dry run)" in r.stdout, r.stdout + r.stderr
        # the CRD's schema is in force: a wrong field value is refused by the server
        bad = json.loads(json.dumps(obj))
        if kind == "NodeReadinessRule":
            bad["spec"]["enforcementMode"] = "sometimes"
        else:
            bad["spec"]["maxUnhealthy"] = "120%"
        p.write_text(yaml.safe_dump(bad))
        r = kh.kubectl(kc, "apply", "--dry-run=server", "-f", str(p), check=False)
        assert r.returncode != 0 and "Invalid" in r.stderr, r.stdout + r.stderr
    finally:
        kh.kubectl(kc, "delete", "crd", name, "--wait=false", check=False)

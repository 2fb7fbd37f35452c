# SPDX-License-Identifier: MIT
"""Helpers for the least-privilege tests: the real server's refusal with its audit
record (test_remediator.refused, one copy), a node's state as far as a refused write could have
changed it, and the rendered chart's host access per container (test_privilege_chart.py)."""

from test_remediator import refused  # noqa: F401  (the one copy of the refusal check)


def node_state(node):
    """What no refused write may have changed: metadata that a writer sets, the spec, the
    status fields, each condition's type, status and reason (kwok's heartbeat moves only the
    times, which are left out)."""
    md, st = node["metadata"], node.get("status", {})
    conds = sorted((c["type"], c["status"], c.get("reason")) for c in st.get("conditions", []))
    return (md.get("labels"), {k: v for k, v in (md.get("annotations") or {}).items()},
            md.get("ownerReferences"), md.get("finalizers"), node.get("spec"),
            st.get("capacity"), st.get("allocatable"), st.get("addresses"), conds)


def host_volumes(spec):
    """{volume name: (host path, hostPath type)} of a pod spec."""
    return {v["name"]: (v["hostPath"]["path"], v["hostPath"].get("type"))
            for v in spec["volumes"] if "hostPath" in v}


def mounts(container):
    return {m["name"]: m for m in container.get("volumeMounts", [])}


def containers(spec):
    return spec.get("initContainers", []) + spec["containers"]


def writable_host_mounts(spec):
    """[(container, volume, host path)] of every host path mounted writable."""
    hv = host_volumes(spec)
    return [(c["name"], name, hv[name][0]) for c in containers(spec)
            for name, m in mounts(c).items() if name in hv and not m.get("readOnly")]

# SPDX-License-Identifier: MIT
"""Real RBAC denials for the Kubernetes tests (what the retired emulator's rbac_deny faked).

restricted_sa(kube, "patch nodes/status", "get nodes") makes a ServiceAccount of its own in the
chart's namespace whose grants are the chart's, as applied on the server, minus the denied
verbs: each ClusterRole and Role bound to the chart's ServiceAccount is read from the server and
copied with those verbs taken off their resources, bound to the new ServiceAccount the same way
(ClusterRoleBinding or RoleBinding in the same namespace). The chart's own-node admission policy
names the chart's ServiceAccount by user name; it is copied for the new one too, so that the
restricted account is the chart's in everything but the denied verbs. Its credentials are a
token bound to a pod of it on a test node (kube.kubeconfig(path, node=..., sa=...)), so they
carry the node's name as the agent's do.

A denial is "VERB RESOURCE[/SUBRESOURCE]", as `kubectl auth can-i` spells it: "list leases",
"create pods/eviction", "patch nodes/status". A denial of a verb the chart does not grant is an
error (the test would deny nothing). Before it returns, the server's own authorizer is asked
(SubjectAccessReview) until it refuses every denied verb and allows every kept one, and, where
the account may create Events, until the copied admission policy refuses one about another node
(a dry-run create): the new objects are in force when the test starts. Everything is removed
with the test's other objects (kube.extra).
"""

import json
import re
import ssl
import urllib.error
import urllib.request

import kube_helpers as kh

RBAC = "/apis/rbac.authorization.k8s.io/v1"
VAP = "/apis/admissionregistration.k8s.io/v1"


def sa_user(sa, ns=kh.AGENT_NS):
    return "system:serviceaccount:%s:%s" % (ns, sa)


def parse_denial(text):
    """"verb resource[/sub]" -> (verb, "resource[/sub]")."""
    parts = text.split()
    if len(parts) != 2 or not re.fullmatch(r"[a-z]+", parts[0]) or \
            not re.fullmatch(r"[a-z.]+(/[a-z]+)?", parts[1]):
        raise ValueError("a denial is 'VERB RESOURCE[/SUBRESOURCE]', not %r" % text)
    return parts[0], parts[1]


def binds(binding, sa, ns):
    return any(s.get("kind") == "ServiceAccount" and s.get("name") == sa and
               s.get("namespace", binding["metadata"].get("namespace")) == ns
               for s in binding.get("subjects") or [])


def chart_grants(kube, sa=kh.AGENT_SA, ns=kh.AGENT_NS):
    """[(binding kind, namespace or None, role name, role kind, rules)] of every binding of the
    ServiceAccount @ns/@sa on the server, with the rules of the role it names."""
    out = []
    for b in kube.get(RBAC + "/clusterrolebindings")["items"]:
        if binds(b, sa, ns):
            role = kube.get(RBAC + "/clusterroles/" + b["roleRef"]["name"])
            out.append(("ClusterRoleBinding", None, role["metadata"]["name"], "ClusterRole",
                        role.get("rules") or []))
    for b in kube.get(RBAC + "/rolebindings")["items"]:
        if binds(b, sa, ns):
            bns = b["metadata"]["namespace"]
            ref = b["roleRef"]
            path = (RBAC + "/namespaces/%s/roles/%s" % (bns, ref["name"]) if ref["kind"] == "Role"
                    else RBAC + "/clusterroles/" + ref["name"])
            role = kube.get(path)
            out.append(("RoleBinding", bns, ref["name"], ref["kind"], role.get("rules") or []))
    assert out, ("no role is bound to %s on the server: the chart's access objects "
                 "(kube_helpers.apply_chart_rbac) are not applied" % sa_user(sa, ns))
    return out


def without(rules, denied, used):
    """@rules with the (verb, resource) pairs of @denied taken off; each pair that matched
    goes into @used. Resources that keep the same verbs stay together in one rule."""
    out = []
    for rule in rules:
        verbs, resources = rule.get("verbs") or [], rule.get("resources") or []
        hit = [d for d in denied if d[1] in resources and (d[0] in verbs or "*" in verbs)]
        if not hit:
            out.append(rule)
            continue
        if "*" in verbs or "*" in resources:
            raise ValueError("cannot take %s off a wildcard rule %s" % (hit, rule))
        by_verbs = {}
        for res in resources:
            keep = tuple(v for v in verbs if (v, res) not in denied)
            used.update((v, res) for v in verbs if (v, res) in denied)
            if keep:
                by_verbs.setdefault(keep, []).append(res)
        for keep, res in by_verbs.items():
            r = json.loads(json.dumps(rule))
            r["verbs"], r["resources"] = list(keep), res
            out.append(r)
    return out


class Restricted:
    """The ServiceAccount restricted_sa made: its name, user name, credentials."""

    def __init__(self, kube, name, kept, denied):
        self.kube, self.name, self.user = kube, name, sa_user(name)
        self.kept, self.denied = kept, denied

    def token(self, node):
        return self.kube.agent_token(node, sa=self.name)

    def kubeconfig(self, path, node=None, **kw):
        return self.kube.kubeconfig(path, node=node, sa=self.name, **kw)


def restricted_sa(kube, *denials, name=None, node=None, sa=kh.AGENT_SA):
    """A ServiceAccount with the grants of the chart's ServiceAccount @sa minus @denials (see
    the module's docstring); @node: the node its pod-bound token is for (default: the test's
    only node), used for the admission policy's readiness check. Returns a Restricted."""
    denied = {parse_denial(d) for d in denials}
    name = name or ("cz-deny-" + "-".join(re.sub(r"[^a-z]+", "-", "%s-%s" % d)
                                           for d in sorted(denied)))[:60].rstrip("-")
    ns = kh.AGENT_NS
    grants = chart_grants(kube, sa)
    objs = []

    def create(path, obj):
        st, got = kube.cp.raw("POST", path, obj)
        assert st == 201, (path, obj["metadata"]["name"], st, got)
        kube.extra.append(path + "/" + obj["metadata"]["name"])
        objs.append(got)
        return got

    create("/api/v1/namespaces/%s/serviceaccounts" % ns,
           {"apiVersion": "v1", "kind": "ServiceAccount",
            "metadata": {"name": name, "namespace": ns}})
    used, kept = set(), []
    subject = [{"kind": "ServiceAccount", "name": name, "namespace": ns}]
    labels = {"app.kubernetes.io/name": "cpuzombie", "cpuzombie.io/test": "rbac-restricted"}
    for bkind, bns, role, rkind, rules in grants:
        rules = without(rules, denied, used)
        rname = "%s-%s" % (name, role)
        if rkind == "ClusterRole" or bkind == "ClusterRoleBinding":
            create(RBAC + "/clusterroles", {"apiVersion": "rbac.authorization.k8s.io/v1",
                                            "kind": "ClusterRole", "rules": rules,
                                            "metadata": {"name": rname, "labels": labels}})
            ref = {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": rname}
        else:
            create(RBAC + "/namespaces/%s/roles" % bns,
                   {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
                    "rules": rules,
                    "metadata": {"name": rname, "namespace": bns, "labels": labels}})
            ref = {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": rname}
        binding = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": bkind,
                   "roleRef": ref, "subjects": subject,
                   "metadata": {"name": rname, "labels": labels}}
        if bkind == "ClusterRoleBinding":
            create(RBAC + "/clusterrolebindings", binding)
        else:
            binding["metadata"]["namespace"] = bns
            create(RBAC + "/namespaces/%s/rolebindings" % bns, binding)
        for rule in rules:
            for res in rule.get("resources") or []:
                for v in rule.get("verbs") or []:
                    # a rule held to names (the remediator's Leases) is asked for one of them
                    names = rule.get("resourceNames") or [None]
                    kept.append((v, (rule.get("apiGroups") or [""])[0], res, bns, names[0]))
    missing = denied - used
    assert not missing, ("the chart grants %s nothing of %s: this denies nothing"
                         % (sa_user(sa), sorted(missing)))
    copied = copy_admission_policy(kube, sa, name, create)
    r = Restricted(kube, name, kept, denied)
    wait_authorizer(kube, r, grants)
    # the agent's own-node policy: wait until it refuses an Event about another node (the
    # remediator's Lease policy has no such probe: nothing the tests deny depends on it)
    if copied and sa == kh.AGENT_SA and ("create", "events") not in denied:
        wait_admission(kube, r, node or kube.only_node())
    return r


def copy_admission_policy(kube, sa, name, create):
    """The chart's ValidatingAdmissionPolicies that name @sa's user, for @name's user too."""
    old, new = sa_user(sa), sa_user(name)
    n = 0
    for pol in kube.get(VAP + "/validatingadmissionpolicies")["items"]:
        conds = pol["spec"].get("matchConditions") or []
        if not any(old in c.get("expression", "") for c in conds):
            continue
        spec = json.loads(json.dumps(pol["spec"]).replace(json.dumps(old)[1:-1],
                                                          json.dumps(new)[1:-1]))
        pname = "%s-%s" % (name, pol["metadata"]["name"])
        create(VAP + "/validatingadmissionpolicies",
               {"apiVersion": "admissionregistration.k8s.io/v1",
                "kind": "ValidatingAdmissionPolicy", "metadata": {"name": pname},
                "spec": spec})
        for b in kube.get(VAP + "/validatingadmissionpolicybindings")["items"]:
            if b["spec"].get("policyName") == pol["metadata"]["name"]:
                bspec = dict(b["spec"], policyName=pname)
                create(VAP + "/validatingadmissionpolicybindings",
                       {"apiVersion": "admissionregistration.k8s.io/v1",
                        "kind": "ValidatingAdmissionPolicyBinding",
                        "metadata": {"name": "%s-%s" % (name, b["metadata"]["name"])},
                        "spec": bspec})
        n += 1
    return n


def can(kube, user, verb, group, resource, ns=None, name=None):
    """The server's authorizer's answer for @user (a ServiceAccount's groups too)."""
    res, _, sub = resource.partition("/")
    attrs = {"verb": verb, "group": group, "resource": res}
    if name:
        attrs["name"] = name
    if sub:
        attrs["subresource"] = sub
    if ns:
        attrs["namespace"] = ns
    sa_ns = user.split(":")[2]
    st, obj = kube.cp.raw("POST", "/apis/authorization.k8s.io/v1/subjectaccessreviews", {
        "apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview",
        "spec": {"user": user, "groups": ["system:serviceaccounts",
                                          "system:serviceaccounts:" + sa_ns,
                                          "system:authenticated"],
                 "resourceAttributes": attrs}})
    assert st == 201, (st, obj)
    return bool(obj["status"].get("allowed"))


def wait_authorizer(kube, r, grants):
    groups = {}
    for _, bns, _, _, rules in grants:
        for rule in rules:
            for res in rule.get("resources") or []:
                groups[(res, bns)] = (rule.get("apiGroups") or [""])[0]

    def in_force():
        for v, g, res, bns, name in r.kept:
            if not can(kube, r.user, v, g, res, bns, name):
                return False
        for v, res in r.denied:
            for (gres, bns), g in groups.items():
                if gres == res and can(kube, r.user, v, g, res, bns):
                    return False
        return True
    kh.wait_until(in_force, 60, "the server's authorizer to apply %s's roles" % r.name)


def wait_admission(kube, r, node):
    """Until the copied policy refuses @r an Event about another node (dry run: nothing is
    stored), asked of the server directly (not through the proxy: not in the test's log)."""
    token = r.token(node)
    ctx = ssl.create_default_context(cafile=kube.cp.ca)
    body = json.dumps({"apiVersion": "v1", "kind": "Event",
                       "metadata": {"name": "cz-admission-probe", "namespace": "default"},
                       "involvedObject": {"kind": "Node", "apiVersion": "v1",
                                          "name": node + "-not-this-one"},
                       "reason": "Probe", "message": "probe", "type": "Normal"}).encode()

    def refused():
        req = urllib.request.Request(kube.cp.url + "/api/v1/namespaces/default/events"
                                     "?dryRun=All", data=body, method="POST")
        req.add_header("Content-Type", "application/json")
        req.add_header("Authorization", "Bearer " + token)
        try:
            with urllib.request.urlopen(req, context=ctx, timeout=20) as resp:
                return False          # 201 (dry run): the policy is not in force yet
        except urllib.error.HTTPError as e:
            assert e.code == 403, (e.code, e.read())     # the policy's reason: Forbidden
            return True
    kh.wait_until(refused, 60, "the admission policy copied for %s to be in force" % r.name)

# SPDX-License-Identifier: MIT
"""Lists in pages and seeded fleets for kubeemu.py (imported by it).

Pages (limit/continue) behave as the real API server's etcd-backed lists: the first page fixes
a snapshot at the list's resourceVersion, every continued page comes from that snapshot (so an
object changing between pages shows up as it was, once), the continue token is opaque base64
JSON, metadata.remainingItemCount is set, and a token whose snapshot is gone (here: older than
the SNAPSHOTS_MAX most recent lists, or dropped with /_emu/expire-continue) is 410 Expired, as
after an etcd compaction.

Seeding (/_emu/seed-nodes) builds thousands of realistic Node objects in the emulator itself
(a request body of 10,000 nodes would be tens of MB). Seeded nodes are stored without watch
events, and identical sub-objects (the image list) are shared: objects in the store are never
changed in place, every write replaces them.
"""

import base64
import collections
import json
import random
import threading

SNAPSHOTS_MAX = 16
EXPIRED = ("The provided continue parameter is too old to display a consistent list result. You "
           "can start a new list without the continue parameter, or use the continue token in "
           "this response to retrieve the remainder of the results. Continuing with the provided "
           "token results in an inconsistent list - objects that were created, modified, or "
           "deleted between the time the first chunk was returned and now may show up in the list.")


class Pager:
    def __init__(self, api_error):
        self.api_error = api_error
        self.snaps = collections.OrderedDict()   # snapshot id -> (rv, items sorted by name)
        self.lock = threading.Lock()
        self.next_id = 1
        self.hooks = []                          # see take_hooks()
        self.pages = 0                           # pages served, for hooks

    def expire_all(self):
        with self.lock:
            self.snaps.clear()

    def set_hooks(self, hooks):
        with self.lock:
            self.hooks = list(hooks)
            self.pages = 0

    def take_hooks(self):
        """Hooks due after the page just served: [{"after_page": N, "patch_node": NAME,
        "merge": {...}} | {"after_page": N, "delete_node": NAME} | {"after_page": N, "expire": true}],
        N counting paged responses
        since the hooks were set."""
        with self.lock:
            self.pages += 1
            due = [h for h in self.hooks if h.get("after_page") == self.pages]
            self.hooks = [h for h in self.hooks if h.get("after_page") != self.pages]
        return due

    def page(self, items, q, rv):
        """items: the matching objects sorted by name (borrowed; never changed in place).
        Returns (page items, continue token or None, remaining count or None, list rv)."""
        limit_s, cont = q.get("limit"), q.get("continue")
        try:
            limit = int(limit_s) if limit_s else 0
        except ValueError:
            raise self.api_error(400, "BadRequest", "limit: invalid value %r" % limit_s)
        if cont:
            try:
                tok = json.loads(base64.b64decode(cont, validate=True))
                sid, start = int(tok["id"]), str(tok["start"])
            except (ValueError, KeyError, TypeError):
                raise self.api_error(400, "BadRequest", "continue key is not valid: %s" % cont)
            with self.lock:
                snap = self.snaps.get(sid)
            if snap is None:
                raise self.api_error(410, "Expired", EXPIRED)
            rv, items = snap[0], [o for o in snap[1] if o["metadata"]["name"] > start]
        elif limit <= 0:
            return items, None, None, rv
        else:
            with self.lock:
                sid = self.next_id
                self.next_id += 1
                self.snaps[sid] = (rv, items)
                while len(self.snaps) > SNAPSHOTS_MAX:
                    self.snaps.popitem(last=False)
        if limit <= 0 or len(items) <= limit:
            return items, None, None, rv
        page = items[:limit]
        tok = {"v": "meta.k8s.io/v1", "rv": int(rv), "start": page[-1]["metadata"]["name"],
               "id": sid}
        return page, base64.b64encode(json.dumps(tok).encode()).decode(), len(items) - limit, rv


# ---------------------------------------------------------------------------------------------
# Seeded fleets.

ZONES = ["us-east-1a", "us-east-1b", "us-east-1c", "us-east-1d"]
TYPES = ["m5.2xlarge", "c5.4xlarge", "p4d.24xlarge", "g5.12xlarge"]
IMAGES = [("Amazon Linux 2", "5.10.205-195.807.amzn2.x86_64"),
          ("Bottlerocket OS 1.19.2 (aws-k8s-1.29)", "6.1.72"),
          ("Deep Learning AMI GPU PyTorch 2.1 (Amazon Linux 2) 20240101",
           "5.10.205-195.807.amzn2.x86_64"),
          ("Ubuntu 22.04.3 LTS", "6.2.0-1017-aws")]
RUNTIME = "containerd://1.7.11"
T0 = "2024-05-01T00:00:00Z"


def _cond(typ, status, reason, message, t=T0):
    return {"type": typ, "status": status, "reason": reason, "message": message,
            "lastHeartbeatTime": t, "lastTransitionTime": t}


def _images():
    return [{"names": ["registry.example/team/app-%d@sha256:%064x" % (i, i * 7919),
                       "registry.example/team/app-%d:v1.%d.0" % (i, i)],
             "sizeBytes": 100000000 + i * 1234567} for i in range(12)]


def zombie_messages(rnd, i, leakers):
    """What our checks write on a True node (checks/condmsg.h's formats), varied."""
    dying = rnd.randrange(2000, 60000)
    live = rnd.randrange(80, 400)
    unit = leakers[i % len(leakers)]
    memcg = ("%d dying memcgs vs %d live (x%.0f >= x10); +%d/h; top restarts: %s=%d (+%d/h), "
             "containerd.service=2; Percpu %.1fGiB" % (dying, live, dying / live,
                                                       rnd.randrange(50, 900), unit,
                                                       rnd.randrange(300, 5000),
                                                       rnd.randrange(10, 400),
                                                       rnd.uniform(0.5, 4)))
    cpu = ("cpu%d 100%% sys %.1fs x%d/10m; serves eth0-Tx-Rx-%d +more; top kubelet %.1fs"
           % (rnd.randrange(0, 96), rnd.uniform(2, 9), rnd.randrange(1, 9), rnd.randrange(0, 8),
              rnd.uniform(1, 8)))
    ena = "eth0 %d resets/1h: poll starvation q%d (cpu%d burst %.1fs)" % (
        rnd.randrange(1, 4), rnd.randrange(0, 8), rnd.randrange(0, 96), rnd.uniform(5, 9))
    return dying, memcg, cpu, ena


def healthy_conditions(rnd):
    d, l = rnd.randrange(0, 300), rnd.randrange(80, 400)
    return [
        _cond("MemcgZombieLeak", "False", "ZombieMemcgsNormal",
              "%d dying memcgs vs %d live (x%.1f; limits 1000 dying and x10)" % (d, l, d / l)),
        _cond("CPUCoreSaturation", "False", "NoCoreSaturation",
              "no core >= 90% sys for >= 2.0s in 10m"),
        _cond("ENADeviceReset", "False", "NoENAResets", "eth0: no ENA resets in 1h"),
    ]


def node(name, zone, itype, image, kernel, ours, images, held=False, ready=True):
    conds = [_cond("Ready", "True" if ready else "False", "KubeletReady" if ready else
                   "KubeletNotReady", "kubelet is posting ready status"),
             _cond("MemoryPressure", "False", "KubeletHasSufficientMemory",
                   "kubelet has sufficient memory available"),
             _cond("DiskPressure", "False", "KubeletHasNoDiskPressure",
                   "kubelet has no disk pressure"),
             _cond("PIDPressure", "False", "KubeletHasSufficientPID",
                   "kubelet has sufficient PID available")] + ours
    ann = {"node.alpha.kubernetes.io/ttl": "0",
           "volumes.kubernetes.io/controller-managed-attach-detach": "true",
           "alpha.kubernetes.io/provided-node-ip": "10.0.0.1"}
    if held:
        ann["cpuzombie.io/cordoned"] = "MemcgZombieLeak True since " + T0
        ann["cpuzombie.io/last-action"] = "drain"
        ann["cpuzombie.io/drained"] = T0
    return {"kind": "Node", "apiVersion": "v1",
            "metadata": {"name": name, "creationTimestamp": T0, "annotations": ann, "labels": {
                "kubernetes.io/hostname": name, "kubernetes.io/os": "linux",
                "kubernetes.io/arch": "amd64", "beta.kubernetes.io/os": "linux",
                "topology.kubernetes.io/zone": zone, "topology.kubernetes.io/region": "us-east-1",
                "node.kubernetes.io/instance-type": itype,
                "eks.amazonaws.com/nodegroup": "ng-%s-%s" % (itype.split(".")[0], zone[-1]),
                "eks.amazonaws.com/capacityType": "ON_DEMAND"}},
            "spec": {"providerID": "aws:///%s/i-%s" % (zone, name[-12:]),
                     "unschedulable": True} if held else
            {"providerID": "aws:///%s/i-%s" % (zone, name[-12:])},
            "status": {
                "conditions": conds,
                "addresses": [{"type": "InternalIP", "address": "10.0.0.1"},
                              {"type": "Hostname", "address": name}],
                "capacity": {"cpu": "96", "memory": "1176322Mi", "pods": "737",
                             "ephemeral-storage": "104845292Ki"},
                "allocatable": {"cpu": "95690m", "memory": "1148672Mi", "pods": "737",
                                "ephemeral-storage": "95551679124"},
                "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
                "nodeInfo": {"machineID": "ec2" + name[-12:],
                             "systemUUID": "ec2" + name[-12:], "bootID": "b-" + name[-12:],
                             "kernelVersion": kernel, "osImage": image,
                             "containerRuntimeVersion": RUNTIME, "kubeletVersion": "v1.29.0",
                             "kubeProxyVersion": "v1.29.0", "operatingSystem": "linux",
                             "architecture": "amd64"},
                "images": images}}


def seed_nodes(spec):
    """spec: {"count": N, "zombies": K, "seed": S, "zone": Z, "image": index into IMAGES,
    "bare": fraction of nodes without our conditions, "held": H, "cut": [80, 256],
    "leakers": ["ecs.service", ...], "cpu": C, "ena": E, "prefix": "ip-"}. The K zombie nodes
    are K nodes spread over the name order (so over the pages) placed in zone Z with image Z;
    their MemcgZombieLeak turned True one a minute from 2024-05-01T00:00:00Z;
    of them the first C have CPUCoreSaturation True, E ENADeviceReset, H are held by remediation,
    and their memcg messages are cut in turn at the lengths in "cut". Every other node avoids
    the zone/image pair. Returns the node objects."""
    rnd = random.Random(spec.get("seed", 1))
    n, k = int(spec.get("count", 100)), int(spec.get("zombies", 0))
    zone, img = spec.get("zone", ZONES[0]), IMAGES[int(spec.get("image", 2))]
    leakers = spec.get("leakers") or ["ecs.service"]
    cuts = spec.get("cut") or []
    images = _images()
    rank = {j: r for r, j in enumerate(rnd.sample(range(n), k))}
    out = []
    for j in range(n):
        name = "%s%06d.ec2.internal" % (spec.get("prefix", "ip-10-0-"), j)
        i = rank.get(j, k)
        if i < k:
            dying, memcg, cpu, ena = zombie_messages(rnd, i, leakers)
            if cuts:
                memcg = memcg[:cuts[i % len(cuts)]].strip()
            since = "2024-05-01T%02d:%02d:00Z" % (i // 60 % 24, i % 60)   # one a minute
            ours = [_cond("MemcgZombieLeak", "True", "ZombieMemcgsHigh", memcg, since),
                    _cond("CPUCoreSaturation", "True" if i < int(spec.get("cpu", 0)) else "False",
                          "CoreSaturationBursts" if i < int(spec.get("cpu", 0)) else
                          "NoCoreSaturation", cpu if i < int(spec.get("cpu", 0)) else
                          "no core >= 90% sys for >= 2.0s in 10m"),
                    _cond("ENADeviceReset", "True" if i < int(spec.get("ena", 0)) else "False",
                          "ENAResetsDetected" if i < int(spec.get("ena", 0)) else "NoENAResets",
                          ena if i < int(spec.get("ena", 0)) else "eth0: no ENA resets in 1h")]
            z, im = zone, img
            held = i < int(spec.get("held", 0))
        else:
            ours = [] if rnd.random() < float(spec.get("bare", 0)) else healthy_conditions(rnd)
            while True:
                z, im = rnd.choice(ZONES), rnd.choice(IMAGES)
                if (z, im) != (zone, img):
                    break
            held = False
        out.append(node(name, z, rnd.choice(TYPES), im[0], im[1], ours, images, held=held))
    return out

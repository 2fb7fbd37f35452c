#!/usr/bin/python3
"""walk.py BINARY TRACE ROOT: count how one agent cycle walks plugin/ (callwalk.sh runs it).

Only the calls made inside periodic_cycle() are read, in every thread that runs it. A call is
"cross-file" when the callee's source file differs from the caller's. Over the distinct
cross-file call edges A -> B (a loop calling B a thousand times is one edge):
  returns  B was first entered before A was: the cycle goes back into a file it had left
           (B -> ... -> A -> B); counted also without base/ and host/, the floor every room uses
  climbs   B's room is above A's (a callback or a hook: the walk goes up the layers)
Rooms are ranked by the tree's own layering (old layout: base host checks|cluster report agent
cmd; new: check-layers.sh's allowed() order)."""
import collections, os, subprocess, sys

RANK = {"base": 0, "host": 1, "condition": 1, "kube": 2, "check": 2, "cluster": 2, "checks": 2,
        "klog": 3, "cpu": 4, "memcg": 4, "ena": 5, "node": 6, "report": 6, "view": 7, "fleet": 7,
        "remediator": 7, "agent": 8, "cmd": 9}

def main():
    binary, trace, root = sys.argv[1:4]
    events = [l.split() for l in open(trace)]
    offs = sorted({e[2] for e in events})
    a2l = subprocess.run(["addr2line", "-f", "-e", binary] + ["0x" + o for o in offs],
                         capture_output=True, text=True, check=True).stdout.splitlines()
    name, fil = {}, {}
    plug = os.path.join(root, "plugin") + "/"
    for i, o in enumerate(offs):
        name[o] = a2l[2 * i]
        path = a2l[2 * i + 1].rsplit(":", 1)[0]
        fil[o] = path[len(plug):] if path.startswith(plug) else os.path.basename(path)
    stacks = collections.defaultdict(list)
    active = collections.defaultdict(int)   # depth of periodic_cycle in the thread, or 0
    first = {}
    edges = collections.Counter()
    for kind, tid, o in events:
        st = stacks[tid]
        if kind == "E":
            if active[tid] and st:
                a, b = st[-1], fil[o]
                if a != b:
                    edges[(a, b)] += 1
                    first.setdefault(b, len(first))
            if name[o] == "periodic_cycle" and not active[tid]:
                active[tid] = len(st) + 1
                first.setdefault(fil[o], len(first))
            st.append(fil[o])
        else:
            if st:
                st.pop()
            if active[tid] and len(st) < active[tid]:
                active[tid] = 0
    if not first:
        sys.exit("walk.py: periodic_cycle() never ran (see the agent's stderr)")
    room = lambda f: f.split("/")[0]
    rk = lambda f: RANK.get(room(f), -1)
    floor = lambda f: room(f) in ("base", "host")
    ret = [(a, b) for (a, b) in edges if first[b] < first[a]]
    ret_nf = [(a, b) for (a, b) in ret if not floor(b)]
    climbs = [(a, b) for (a, b) in edges if rk(b) > rk(a)]
    print("files    %d (%d outside base/ and host/)" % (len(first), sum(not floor(f) for f in first)))
    print("calls    %d distinct cross-file edges (%d calls)" % (len(edges), sum(edges.values())))
    print("returns  %d edges back into a file left earlier (%d outside base/ and host/)"
          % (len(ret), len(ret_nf)))
    print("climbs   %d edges up the layers%s" % (len(climbs), "".join(
        "\n           %s -> %s" % e for e in sorted(climbs))))
    if os.environ.get("CALLWALK_EDGES"):
        for a, b in sorted(ret_nf):
            print("  back  %s -> %s" % (a, b))
    if os.environ.get("CALLWALK_EDGES") == "all":
        for f in sorted(first, key=first.get):
            print("  first %3d %s" % (first[f], f))
        for a, b in sorted(edges):
            print("  edge  %s -> %s (%d)" % (a, b, edges[(a, b)]))
    back = collections.Counter(b for (a, b) in ret_nf)
    print("re-entered (outside base/ and host/): " + ", ".join(
        "%s %d" % (f, n) for f, n in back.most_common(8)))

main()

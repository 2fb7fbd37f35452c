#!/usr/bin/env python3
"""The NPD CPU budget (runs last: it reads what bench_checks and bench_agent measured in this
run). Every check at its shipped interval (config/npd/*.json invoke_interval) at the measured
CPU per exec, plus the agent at 4 Hz, as a share of NPD's stock CPU limit of 10 millicores
(goal: under 1% of it). The exec floor at the same intervals is shown: it is what any NPD
plugin pays to be started, whatever it does."""
import glob
import json
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import benchlib as bl  # noqa: E402

LIMIT_M = 10.0  # NPD DaemonSet's stock CPU limit, millicores


def interval_s(text):
    m = re.fullmatch(r"(\d+)(ms|s|m|h)", text)
    return int(m.group(1)) * {"ms": 0.001, "s": 1, "m": 60, "h": 3600}[m.group(2)]


def shipped_checks():
    """[(check, invoke_interval_s, json file)] from config/npd."""
    out = []
    for f in sorted(glob.glob(os.path.join(bl.ROOT, "config", "npd", "*.json"))):
        with open(f) as fh:
            cfg = json.load(fh)
        every = interval_s(cfg["pluginConfig"]["invoke_interval"])
        for rule in cfg.get("rules", []):
            args = rule.get("args", [])
            if "check" in args:
                name = args[args.index("check") + 1]
                if name not in [c for c, _e, _f in out]:
                    out.append((name, every, os.path.basename(f)))
    return out


def main():
    res = bl.load_all()
    checks, agent = res.get("checks"), res.get("agent")
    if not checks:
        print("(no per-exec measurements from bench_checks in this run: budget skipped)")
        return 1
    floor = checks["floor"]["median"]
    rows, tot, tot_floor = [], 0.0, 0.0
    for name, every, f in shipped_checks():
        m = checks.get(name)
        if not m:
            rows.append([f"check {name}", f"{every:g} s", "not measured", "-", "-", "-"])
            continue
        per_h = 3600 / every
        ms_h = m["median"] * per_h
        tot += ms_h
        tot_floor += floor * per_h
        rows.append([f"check {name} ({f})", f"{every:g} s", f"{m['median']:.3f}",
                     f"{ms_h:.1f}", f"{ms_h / 3600:.4f}",
                     f"{ms_h / 3600 / LIMIT_M * 100:.3f}%"])
    rows.append(["(of which the exec floor: a do-nothing binary at the same intervals)", "-", f"{floor:.3f}",
                 f"{tot_floor:.1f}", f"{tot_floor / 3600:.4f}",
                 f"{tot_floor / 3600 / LIMIT_M * 100:.3f}%"])
    rows.append(["**all checks under NPD**", "-", "-", f"{tot:.1f}", f"{tot / 3600:.4f}",
                 f"**{tot / 3600 / LIMIT_M * 100:.3f}%**"])
    if agent:
        for key, label in (("agent", "agent at 4 Hz (shipped: sampler + checks every 30 s)"),
                           ("agent-sampler", "agent at 4 Hz, sampler only")):
            if key in agent:
                a = agent[key]["ms_per_s"]["median"] * 3600
                rows.append([label, "250 ms", "-", f"{a:.1f}", f"{a / 3600:.4f}",
                             f"{a / 3600 / LIMIT_M * 100:.3f}%"])
        a = agent["agent"]["ms_per_s"]["median"] * 3600
        rows.append(["**checks + shipped agent**", "-", "-", f"{tot + a:.1f}",
                     f"{(tot + a) / 3600:.4f}",
                     f"**{(tot + a) / 3600 / LIMIT_M * 100:.3f}%**"])
    bl.table(["what", "interval", "CPU ms/exec", "CPU ms per hour", "millicores",
              "share of NPD's 10m limit"], rows)
    print("\nGoal: under 1% of 10m (0.1 millicores = 360 ms of CPU per hour). NPD's own cost "
          "of forking each check is not included. The agent runs in its own container "
          "(manifests: limit 100m), so under NPD's limit only the checks count.")
    return 0


if __name__ == "__main__":
    sys.exit(main())

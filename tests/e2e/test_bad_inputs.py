# SPDX-License-Identifier: MIT
"""The bad-input catalogue (issue 9): one table of bad inputs across configuration, host files,
`ethtool -S` texts, Kubernetes API answers and command lines, each with its documented outcome.

Outcomes (DESIGN.md, "The NPD plugin protocol"):
  * a check or a one-shot command: exit 2 (Unknown), one line on stdout naming what was wrong
    (the file, key or option) - or, where the input is optional, the normal verdict without it;
  * never exit 1 (a false problem can trigger remediation), never a signal, never a sanitizer
    report, never a hang past the deadline (every case runs under a hard timeout, and the cases
    that could hang - FIFOs, slow API answers - assert how long they took).
The agent's cases are in test_agent_bad_inputs below: it logs and keeps running.

"Unreadable" as root: a file mode alone does not stop root, so those cases run the binary through
setpriv with CAP_DAC_OVERRIDE and CAP_DAC_READ_SEARCH dropped from the bounding and inheritable
sets (root without them obeys file modes like anyone else).
"""
import json
import os
import re
import shutil
import subprocess
import threading
import time
import zlib

import pytest

import hardening_helpers as hh
import kube_helpers as kh

MEMCG = os.path.join(hh.FIXTURES, "memcg", "this-vm-hybrid")
ENA = os.path.join(hh.FIXTURES, "ena")
FX01 = os.path.join(ENA, "01-ethq15-ena-1.2.0k-ethtool-i-and-S.txt")
FX02 = os.path.join(ENA, "02-sliderule518-ens34-ena-2.14-2.15-allowance-exceeded.txt")
NOCAP = hh.drop_caps_cmd("dac_override", "dac_read_search")
HUGE = 64 << 20  # far above every bounded read (hostfs, config, ethtool text)


def write(p, data):
    os.makedirs(os.path.dirname(p), exist_ok=True)
    if os.path.lexists(p):
        os.unlink(p)
    with open(p, "wb") as f:
        f.write(data if isinstance(data, bytes) else data.encode())
    return p


def sparse(p, size):
    """A file of @size zero bytes that takes no disk."""
    with open(p, "wb") as f:
        f.truncate(size)
    return p


# -- case builders: each returns (args, expectations) given the case's own tmp dir -----------

def memcg_tree(tmp, mutate=None):
    t = os.path.join(tmp, "tree")
    shutil.copytree(MEMCG, t, symlinks=True)
    if mutate:
        mutate(t)
    return ["--proc-root", t + "/proc", "--sys-root", t + "/sys"]


def cfg_case(text, key):
    """A bad configuration given to `check memcg`: Unknown naming file, line and @key."""
    def build(tmp):
        p = write(os.path.join(tmp, "cz.yaml"), text)
        return ([*memcg_tree(tmp), "--config", p, "check", "memcg"],
                dict(rc=2, line=r"^bad config: " + re.escape(p) + r"(:\d+)?: .*" + key))
    return build


def host_case(rel, data=None, how=None, expect_rc=2, line=None, prefix=None):
    """A memcg fixture tree with proc/@rel replaced by @data (bytes), removed (None), or changed
    by @how(path)."""
    def build(tmp):
        def mutate(t):
            p = os.path.join(t, rel)
            if how:
                how(p)
            elif data is None:
                os.unlink(p)
            else:
                write(p, data)
        args = [*memcg_tree(tmp, mutate), "check", "memcg"]
        exp = dict(rc=expect_rc, line=line or (r"^cannot read .*" + re.escape(os.path.basename(rel))))
        if prefix:
            exp["prefix"] = prefix
        return args, exp
    return build


def fifo(p):
    os.unlink(p)
    os.mkfifo(p)


def dev_zero(p):
    os.unlink(p)
    os.symlink("/dev/zero", p)


def loop(p):
    os.unlink(p)
    os.symlink(os.path.basename(p), p)


def huge(p):
    sparse(p, HUGE)


def unreadable(p):
    os.chmod(p, 0)


def as_dir(p):
    os.unlink(p)
    os.mkdir(p)


def cpu_case(stat=None, how=None, line=r"^cannot sample"):
    """check cpu with no agent running (so it samples /proc/stat inline) on a fake proc root."""
    def build(tmp):
        proc = os.path.join(tmp, "proc")
        os.makedirs(proc)
        p = os.path.join(proc, "stat")
        if stat is not None:
            write(p, stat)
        if how:
            write(p, "x")
            how(p)
        return ["--proc-root", proc, "--sys-root", proc, "check", "cpu"], dict(rc=2, line=line)
    return build


def envelope(name, payload):
    return b"cpuzombie-state 1 %s\n%send %08x\n" % (name.encode(), payload, zlib.crc32(payload))


def fresh_heartbeat():
    return envelope("cpu-heartbeat", b"pid 1\ntime_ms %d\ninterval_ms 250\nmetric system\n"
                    b"ncpu %d\nstopped 0\n" % (int(time.time() * 1000), os.cpu_count()))


def run_file_case(name, data, rc, line, how=None):
    """check cpu with a bad file in the agent's run dir beside a fresh heartbeat (so the check
    trusts the run dir and reads it). A bad heartbeat means sampling inline on the real /proc
    (threshold 100%: no real burst can make that a problem)."""
    def build(tmp):
        run = os.path.join(tmp, "run")
        if name != "cpu-heartbeat":
            write(os.path.join(run, "cpu-heartbeat"), fresh_heartbeat())
        write(os.path.join(run, name), data)
        if how:
            how(os.path.join(run, name))
        cfg = write(os.path.join(tmp, "cz.yaml"), "cpu:\n  inline_window: 2s\n  min_burst: 2s\n"
                    "  threshold_pct: 100\n")
        return ["--config", cfg, "--run-dir", run, "check", "cpu"], dict(rc=rc, line=line)
    return build


def diff_case(before, after, err):
    def build(tmp):
        b = before(tmp) if callable(before) else before
        a = after(tmp) if callable(after) else after
        return ["ena-diff", b, a], dict(rc=2, err=err)
    return build


def txt(name, data):
    return lambda tmp: write(os.path.join(tmp, name), data)


def fx01_with(old, new, count=1):
    return lambda tmp: write(os.path.join(tmp, "after.txt"),
                             open(FX01).read().replace(old, new, count))


def cli_case(*args, line=None, err=None, rc=2):
    def build(tmp):
        return list(args), dict(rc=rc, line=line, err=err)
    return build


CASES = [
    # -- configuration (26) -----------------------------------------------------------------
    ("cfg-binary", cfg_case(b"\x00\xff\xfe\x01garbage\x00", r"")),
    ("cfg-yaml-syntax", cfg_case("memcg:\n  min_dying: [1, 2\n", r"")),
    ("cfg-unknown-top-key", cfg_case("memcgg:\n  min_dying: 5\n", r"memcgg")),
    ("cfg-unknown-nested-key", cfg_case("memcg:\n  min_dyin: 5\n", r"min_dyin")),
    ("cfg-not-a-number", cfg_case("memcg:\n  min_dying: lots\n", r"min_dying")),
    ("cfg-negative", cfg_case("memcg:\n  min_dying: -1\n", r"min_dying")),
    ("cfg-overflow", cfg_case("memcg:\n  min_dying: 99999999999999999999999\n", r"min_dying")),
    ("cfg-bad-duration", cfg_case("cpu:\n  interval: 5 parsecs\n", r"interval")),
    ("cfg-zero-interval", cfg_case("cpu:\n  interval: 0ms\n", r"interval")),
    ("cfg-pct-over-100", cfg_case("cpu:\n  threshold_pct: 101\n", r"threshold_pct")),
    ("cfg-ratio-nan", cfg_case("memcg:\n  max_ratio: .nan\n", r"max_ratio")),
    ("cfg-duplicate-key", cfg_case("memcg:\n  min_dying: 5\n  min_dying: 6\n", r"min_dying")),
    ("cfg-list-for-map", cfg_case("memcg: [1, 2]\n", r"memcg")),
    ("cfg-map-for-list", cfg_case("ena:\n  drivers: {a: b}\n", r"drivers")),
    ("cfg-two-documents", cfg_case("memcg: {}\n---\ncpu: {}\n", r"")),
    ("cfg-deep-nesting", cfg_case("memcg: " + "[" * 5000 + "]" * 5000 + "\n", r"")),
    ("cfg-alias-bomb", cfg_case("a: &a [x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a]\n"
                                "c: &c [*b, *b, *b, *b, *b, *b]\nd: [*c, *c, *c, *c, *c, *c]\n", r"")),
    ("cfg-bad-mode", cfg_case("remediation:\n  mode: explode\n", r"mode")),
    ("cfg-iface-path-traversal", cfg_case("ena:\n  interfaces: [../../etc]\n", r"interfaces")),
    ("cfg-node-name-bad", cfg_case("kubernetes:\n  node_name: \"a b/c\"\n", r"node_name")),
    ("cfg-nul-inside", cfg_case(b"memcg:\n  min_dying: 5\x00\n", r"")),
    ("cfg-bad-utf8-key", cfg_case(b"memcg:\n  \xc3\x28: 5\n", r"")),
    ("cfg-huge", lambda tmp: ([*memcg_tree(tmp), "--config",
                               sparse(os.path.join(tmp, "cz.yaml"), HUGE), "check", "memcg"],
                              dict(rc=2, line=r"^bad config: .*cz\.yaml"))),
    ("cfg-is-directory", lambda tmp: ([*memcg_tree(tmp), "--config", tmp, "check", "memcg"],
                                      dict(rc=2, line=r"^bad config: " + re.escape(tmp)))),
    ("cfg-missing", lambda tmp: ([*memcg_tree(tmp), "--config", os.path.join(tmp, "nope.yaml"),
                                  "check", "memcg"],
                                 dict(rc=2, line=r"^bad config: .*nope\.yaml: cannot read"))),
    ("cfg-unreadable", lambda tmp: (
        [*memcg_tree(tmp), "--config", unreadable_file(os.path.join(tmp, "cz.yaml")), "check",
         "memcg"], dict(rc=2, line=r"^bad config: .*cz\.yaml: cannot read: Permission denied",
                        prefix=NOCAP))),
    # -- host files: memcg (20) ------------------------------------------------------------
    ("host-cgroups-missing", host_case("proc/cgroups")),
    ("host-cgroups-empty", host_case("proc/cgroups", b"")),
    ("host-cgroups-truncated", host_case(
        "proc/cgroups", b"#subsys_name\thierarchy\tnum_cgroups\tenabled\ncpuset\t2\t1\t1\nmemory\t4\t3")),
    ("host-cgroups-binary", host_case("proc/cgroups", os.urandom(4096))),
    ("host-cgroups-overflow", host_case(
        "proc/cgroups", b"#subsys_name\thierarchy\tnum_cgroups\tenabled\nmemory\t4\t99999999999999999999999\t1\n")),
    ("host-cgroups-huge", host_case("proc/cgroups", how=huge)),
    ("host-cgroups-dev-zero", host_case("proc/cgroups", how=dev_zero)),
    ("host-cgroups-fifo", host_case("proc/cgroups", how=fifo)),
    ("host-cgroups-symlink-loop", host_case("proc/cgroups", how=loop)),
    ("host-cgroups-directory", host_case("proc/cgroups", how=as_dir)),
    ("host-cgroups-unreadable", host_case("proc/cgroups", how=unreadable, prefix=NOCAP,
                                          line=r"^cannot read .*cgroups: Permission denied")),
    ("host-memory-hierarchy-missing", host_case("sys/fs/cgroup/memory", how=shutil.rmtree,
                                                line=r"memory")),
    ("host-memory-hierarchy-unreadable", host_case("sys/fs/cgroup/memory", how=unreadable,
                                                   prefix=NOCAP, line=r"memory")),
    # optional inputs: the verdict without them, never Unknown and never a problem
    ("host-mountinfo-garbage", host_case("proc/1/mountinfo", b"garbage\n\x00\xff\n", expect_rc=0,
                                         line=r"^25 dying memcgs")),
    ("host-meminfo-missing", host_case("proc/meminfo", expect_rc=0, line=r"^25 dying memcgs")),
    ("host-meminfo-binary", host_case("proc/meminfo", os.urandom(2048), expect_rc=0,
                                      line=r"^25 dying memcgs")),
    ("host-osrelease-garbage", host_case("proc/sys/kernel/osrelease", b"\xff\xfe junk", expect_rc=0,
                                         line=r"^25 dying memcgs")),
    ("host-cgroupstat-garbage", host_case("sys/fs/cgroup/unified/cgroup.stat", b"nr_dying_descendants x\n",
                                          expect_rc=0, line=r"^25 dying memcgs")),
    ("host-proc-root-missing", lambda tmp: (["--proc-root", os.path.join(tmp, "no"), "--sys-root",
                                             os.path.join(tmp, "no"), "check", "memcg"],
                                            dict(rc=2, line=r"^cannot read .*no/cgroups"))),
    ("host-proc-root-is-file", lambda tmp: (["--proc-root", write(os.path.join(tmp, "f"), "x"),
                                             "--sys-root", tmp, "check", "memcg"],
                                            dict(rc=2, line=r"^cannot read"))),
    # -- host files: cpu (8) ---------------------------------------------------------------
    ("cpu-stat-missing", cpu_case()),
    ("cpu-stat-empty", cpu_case(stat=b"")),
    ("cpu-stat-garbage", cpu_case(stat=b"cpu  a b c\ncpu0 1 2\n")),
    ("cpu-stat-binary", cpu_case(stat=os.urandom(4096))),
    ("cpu-stat-truncated", cpu_case(stat=b"cpu  10 0 20 300 0 0 0 0 0 0\ncpu0 10 0 2")),
    ("cpu-stat-huge", cpu_case(how=huge)),
    ("cpu-stat-fifo", cpu_case(how=fifo)),
    ("cpu-stat-unreadable", lambda tmp: (lambda a, e: (a, dict(e, prefix=NOCAP)))(
        *cpu_case(how=unreadable)(tmp))),
    # -- the agent's run-dir files as check cpu reads them (5) -----------------------------
    ("run-heartbeat-garbage", run_file_case("cpu-heartbeat", os.urandom(512), 0,
                                            r"inline 2s: sampler heartbeat unreadable")),
    ("run-bursts-torn", run_file_case("cpu-bursts", b"cpuzombie-state 1 cpu-bursts\nburst 1 2",
                                      2, r"^cannot read burst log in .*run.*: corrupt")),
    ("run-bursts-bad-payload", run_file_case("cpu-bursts", envelope("cpu-bursts", b"burst x\n"),
                                             2, r"^cannot read burst log in .*run.*: malformed")),
    ("run-bursts-huge", run_file_case("cpu-bursts", b"", 2, r"^cannot read burst log", how=huge)),
    ("run-history-garbage", run_file_case("cpu-history", b"CZHIST1\n" + os.urandom(200), 0,
                                          r"^no core")),
    # -- ethtool -S texts through ena-diff (14) ---------------------------------------------
    ("ethtool-empty", diff_case(txt("e.txt", ""), FX01, r"e\.txt")),
    ("ethtool-binary", diff_case(txt("b.txt", os.urandom(2048)), FX01, r"b\.txt")),
    ("ethtool-huge", diff_case(lambda tmp: sparse(os.path.join(tmp, "h.txt"), HUGE), FX01,
                               r"h\.txt")),
    ("ethtool-overflow-value", diff_case(FX01, fx01_with("tx_timeout: 0",
                                                         "tx_timeout: 99999999999999999999999"),
                                         r"after\.txt:\d+")),
    ("ethtool-negative-value", diff_case(FX01, fx01_with("tx_timeout: 0", "tx_timeout: -5"),
                                         r"after\.txt:\d+")),
    ("ethtool-name-too-long", diff_case(FX01, fx01_with("tx_timeout: 0", "x" * 40 + ": 0"),
                                        r"after\.txt:\d+")),
    ("ethtool-no-colon", diff_case(FX01, fx01_with("tx_timeout: 0", "tx_timeout 0"),
                                   r"after\.txt:\d+")),
    ("ethtool-truncated-line", diff_case(FX01, lambda tmp: write(
        os.path.join(tmp, "after.txt"), open(FX01).read() + "     queue_0_tx_cnt: 1"[:14]),
        r"after\.txt:\d+")),
    ("ethtool-missing-file", diff_case(lambda tmp: os.path.join(tmp, "none.txt"), FX01,
                                       r"none\.txt")),
    ("ethtool-directory", diff_case(lambda tmp: tmp, FX01, r"")),
    ("ethtool-unreadable", lambda tmp: (
        ["ena-diff", unreadable_file(os.path.join(tmp, "u.txt"), open(FX01).read()), FX01],
        dict(rc=2, err=r"u\.txt", prefix=NOCAP))),
    ("ethtool-other-device", diff_case(FX01, fx01_with("0000:00:05.0", "0000:00:06.0", 99),
                                       r"not the same device")),
    # a pipe is a legitimate input (ena-diff <(ssh node ethtool -S eth0) after.txt): garbage on it
    ("ethtool-pipe-garbage", lambda tmp: (["ena-diff", fifo_writer(os.path.join(tmp, "f.fifo"),
                                                                   os.urandom(3000)), FX01],
                                          dict(rc=2, err=r"f\.fifo"))),
    ("ethtool-nul-in-name", diff_case(FX01, fx01_with("tx_timeout: 0", "tx_ti\x00meout: 0"),
                                      r"after\.txt:\d+")),
    # -- report (6): never a crash; Unknown parts are said, exit 1 only for a True condition -
    ("report-svg-unwritable", cli_case("report", "--svg", "/nonexistent/dir/h.svg",
                                       err=r"/nonexistent/dir/h\.svg")),
    ("report-svg-is-directory", lambda tmp: (["report", "--svg", tmp],
                                             dict(rc=2, err=re.escape(tmp)))),
    ("report-no-host", lambda tmp: (["--proc-root", os.path.join(tmp, "no"), "--sys-root",
                                     os.path.join(tmp, "no"), "report"],
                                    dict(rc=0, line=r"cpuzombie report",
                                         out=r"MemcgZombieLeak\s+Unknown"))),
    ("report-json-no-host", lambda tmp: (["--proc-root", os.path.join(tmp, "no"), "--sys-root",
                                          os.path.join(tmp, "no"), "report", "--json"],
                                         dict(rc=0, json=True))),
    ("report-corrupt-run-files", lambda tmp: (
        [*corrupt_run(tmp), "report", "--json"], dict(rc=0, json=True))),
    ("report-bad-cgroups", lambda tmp: ([*memcg_tree(tmp, lambda t: write(
        os.path.join(t, "proc", "cgroups"), os.urandom(999))), "report"],
        dict(rc=0, out=r"MemcgZombieLeak\s+Unknown.*cgroups"))),
    # -- command lines (13) ------------------------------------------------------------------
    ("cli-unknown-subcommand", cli_case("frobnicate", err=r"frobnicate")),
    ("cli-check-no-name", cli_case("check", line=r"^usage: cpuzombie check")),
    ("cli-check-unknown", cli_case("check", "nonesuch", line=r"^unknown check 'nonesuch'")),
    # the one stdout line names the option (NPD never shows stderr)
    ("cli-max-output-zero", cli_case("check", "memcg", "--max-output", "0",
                                     line=r"^--max-output: expected 1\.\.1023, got '0'$",
                                     err=r"--max-output.*'0'")),
    ("cli-max-output-overflow", cli_case("check", "memcg", "--max-output",
                                         "99999999999999999999999", line=r"^--max-output: ",
                                         err=r"--max-output")),
    ("cli-max-output-negative", cli_case("check", "memcg", "--max-output", "-5",
                                         line=r"^--max-output: .*'-5'", err=r"--max-output.*'-5'")),
    ("cli-option-missing-arg", cli_case("check", "memcg", "--config",
                                        line=r"^unknown or incomplete option '--config'",
                                        err=r"'--config'")),
    ("cli-unknown-option", cli_case("check", "memcg", "--bogus",
                                    line=r"^unknown or incomplete option '--bogus'",
                                    err=r"'--bogus'")),
    ("cli-node-name-bad", cli_case("--node-name", "../../x y", "check", "memcg",
                                   line=r"^--node-name: not a valid node name",
                                   err=r"--node-name: not a valid node name")),
    ("cli-huge-argument", cli_case("--config", "x" * 100000, "check", "memcg",
                                   line=r"^bad config: x+")),
    ("cli-ena-diff-one-arg", cli_case("ena-diff", FX01, err=r"usage|ena-diff")),
    ("cli-agent-bogus-option", cli_case("agent", "--bogus", err=r"bogus")),
    ("cli-state-dir-is-file", lambda tmp: (
        [*memcg_tree(tmp), "--state-dir", write(os.path.join(tmp, "sf"), "x"), "check", "memcg"],
        dict(rc=0, line=r"^25 dying memcgs", err=r"state"))),
]


def unreadable_file(p, data="memcg:\n  min_dying: 5\n"):
    write(p, data)
    os.chmod(p, 0)
    return p


def corrupt_run(tmp):
    run = os.path.join(tmp, "rn")
    write(os.path.join(run, "cpu-heartbeat"), fresh_heartbeat())
    write(os.path.join(run, "cpu-bursts"), b"cpuzombie-state 1 cpu-bursts\nburst 1")
    write(os.path.join(run, "cpu-history"), b"CZHIST1\n" + os.urandom(4000))
    return ["--run-dir", run]


def fifo_writer(p, data):
    """A FIFO at @p whose writer (a daemon thread) sends @data once a reader opens it."""
    os.mkfifo(p)

    def feed():
        with open(p, "wb") as f:
            f.write(data)
    threading.Thread(target=feed, daemon=True).start()
    return p


DEADLINE = 20  # seconds: far above any legitimate case here (the slowest is an inline sample)


@pytest.mark.parametrize("name,build", CASES, ids=[c[0] for c in CASES])
def test_bad_input(name, build, tmp_path):
    args, exp = build(str(tmp_path))
    state, run = str(tmp_path / "st"), str(tmp_path / "rn")
    common = ["--state-dir", state] + ([] if "--run-dir" in args else ["--run-dir", run])
    if exp.get("prefix") and os.geteuid() != 0:
        pytest.skip("needs root to drop CAP_DAC_OVERRIDE with setpriv")
    p = hh.run(common + args, timeout=DEADLINE + 10, prefix=exp.get("prefix", ()))
    hh.assert_no_sanitizer(p.stderr)
    assert p.returncode >= 0, "killed by signal %d: %s" % (-p.returncode, p.stderr)
    assert p.elapsed < DEADLINE, "took %.1fs" % p.elapsed
    assert p.returncode == exp["rc"], (p.returncode, p.stdout, p.stderr)
    if args[0] in ("ena-diff", "agent") or "report" in args or exp.get("err") and \
            not exp.get("line"):
        pass
    elif "check" in args:
        # NPD's side: exactly one printable ASCII line
        assert p.stdout.count("\n") == 1 and p.stdout.endswith("\n"), repr(p.stdout)
        assert all(32 <= ord(c) < 127 for c in p.stdout[:-1]), repr(p.stdout)
    if exp.get("line"):
        assert re.search(exp["line"], p.stdout), (p.stdout, p.stderr)
    if exp.get("out"):
        assert re.search(exp["out"], p.stdout, re.S), (p.stdout, p.stderr)
    if exp.get("json"):
        json.loads(p.stdout)
    if exp.get("err"):
        assert re.search(exp["err"], p.stderr), (p.stdout, p.stderr)


def test_check_usage_line_names_the_option():
    """NPD sees only stdout: the one line of a check names the bad option itself."""
    p = hh.run(["check", "memcg", "--max-output", "0"])
    q = hh.run(["--node-name", "a/b", "check", "memcg"])
    assert p.returncode == 2 and "--max-output" in p.stderr and "--max-output" in p.stdout
    assert q.returncode == 2 and "--node-name" in q.stderr and "--node-name" in q.stdout


# -- Kubernetes API answers: agent --once against a raw TLS server ----------------------------

NODE = "n1"
OLD = "2024-01-01T00:00:00Z"


def good_api(overrides):
    """A minimal API server that answers what one cycle asks, except where @overrides (a list of
    (method, path regex, Reply or callable)) says otherwise."""
    def handler(method, path, body):
        for m, rx, r in overrides:
            if m == method and re.search(rx, path):
                return r(method, path, body) if callable(r) else r
        if method == "GET" and path.startswith("/api/v1/nodes/" + NODE):
            return hh.Reply(body=hh.node(NODE, [hh.zombie_cond(OLD)]))
        if method == "GET" and path.startswith("/api/v1/nodes"):
            return hh.Reply(body={"kind": "NodeList", "items": [hh.node(NODE)]})
        if method == "GET" and "/leases" in path:
            return hh.Reply(body={"kind": "LeaseList", "items": []})
        if method == "GET" and path.startswith("/api/v1/pods"):
            return hh.Reply(body={"kind": "PodList", "items": []})
        if method in ("POST", "PUT", "PATCH"):
            return hh.Reply(status=201 if method == "POST" else 200, body=body or b"{}")
        return hh.Reply(status=404, body={"kind": "Status", "message": "not found"})
    return handler


def pod(**spec_md):
    p = {"kind": "Pod", "metadata": {"name": "p", "namespace": "default"},
         "spec": {"nodeName": NODE}, "status": {"phase": "Running"}}
    for k, v in spec_md.items():
        sect, key = k.split("__")
        p[sect][key] = v
    return p


NODE_PATH = r"^/api/v1/nodes/" + NODE
# What may follow from each answer. The node itself unreadable: nothing is done, the cycle fails.
# A field of the wrong type: it counts as absent (so never as a True condition). A list that is
# not a list: that step fails, and what depends on it (the budget, the drain) is not done.
FAIL = dict(rcs=(2,), cordon=False)              # nothing done, the cycle fails
CALM = dict(rcs=(0,), cordon=False)              # read, nothing to act on
MAY_CORDON = dict(rcs=(0,), cordon=True)         # the node's own condition is readable and old
DRAIN_FAILS = dict(rcs=(0, 2), cordon=True)      # cordoned, but no eviction on a bad pod list
API_CASES = [
    # (id, overrides, expectation, remediation mode, extra remediation config)
    ("api-node-malformed-json", [("GET", NODE_PATH, hh.Reply(body=b'{"kind": "Node", '))], FAIL),
    ("api-node-is-array", [("GET", NODE_PATH, hh.Reply(body=b"[1, 2, 3]"))], FAIL),
    ("api-node-null", [("GET", NODE_PATH, hh.Reply(body=b"null"))], FAIL),
    ("api-node-html", [("GET", NODE_PATH, hh.Reply(body=b"<html>oops</html>",
                                                    ctype="text/html"))], FAIL),
    ("api-node-empty-body", [("GET", NODE_PATH, hh.Reply(body=b""))], FAIL),
    ("api-node-binary", [("GET", NODE_PATH, hh.Reply(body=os.urandom(4096)))], FAIL),
    ("api-node-deep-json", [("GET", NODE_PATH, hh.Reply(body=b"[" * 200000 + b"]" * 200000))],
     FAIL),
    ("api-node-huge-body", [("GET", NODE_PATH, hh.Reply(
        body=b'{"kind":"Node","x":"' + b"a" * (20 << 20) + b'"}'))], FAIL),
    ("api-node-short-body", [("GET", NODE_PATH, hh.Reply(body=b'{"kind":', length=100000,
                                                          close=True))], FAIL),
    ("api-node-slow-drip", [("GET", NODE_PATH, hh.Reply(body=json.dumps(hh.node(NODE)).encode(),
                                                         drip=50))], FAIL),
    ("api-always-500", [("GET", NODE_PATH, hh.Reply(status=500, body=b"{}"))], FAIL),
    ("api-401-huge-status", [("GET", NODE_PATH, hh.Reply(status=401, body={
        "kind": "Status", "message": "no\n" * 300000}))], FAIL),
    ("api-connection-closed", [("GET", NODE_PATH, hh.Reply(status=200, body=b"", length=50,
                                                            close=True))], FAIL),
    ("api-conditions-object", [("GET", NODE_PATH, hh.Reply(body=hh.node(NODE, {"a": 1})))], CALM),
    ("api-conditions-wrong-field-types", [("GET", NODE_PATH, hh.Reply(body=hh.node(NODE, [
        {"type": 5, "status": True, "lastTransitionTime": 7, "message": ["x"]},
        {"type": "MemcgZombieLeak", "status": "True", "lastTransitionTime": "yesterday"}])))],
     CALM),
    ("api-metadata-wrong-types", [("GET", NODE_PATH, hh.Reply(body=dict(
        hh.node(NODE, [hh.zombie_cond(OLD)]), metadata={"name": 5, "labels": [1],
                                                       "annotations": "x"})))], MAY_CORDON),
    ("api-leases-items-object", [("GET", r"/leases", hh.Reply(body={"items": {"a": 1}}))], FAIL),
    ("api-leases-items-string", [("GET", r"/leases", hh.Reply(body={"items": "x"}))], FAIL),
    ("api-lease-fields-wrong-types", [("GET", r"/leases", hh.Reply(body={"items": [
        {"metadata": {"name": 7}, "spec": {"holderIdentity": ["n2"], "renewTime": 1}},
        "not-an-object", None]}))], MAY_CORDON),
    ("api-lease-holder-path-injection", [("GET", r"/leases", hh.Reply(body={"items": [
        {"metadata": {"name": "cpuzombie-slot-0"},
         "spec": {"holderIdentity": "../../namespaces/kube-system/secrets/x?",
                  "renewTime": "2024-01-01T00:00:00.000000Z"}}]}))], CALM),  # slot stays taken
    ("api-nodes-items-object", [("GET", r"^/api/v1/nodes$", hh.Reply(body={"items": {}}))], FAIL,
     "cordon", "  max_unavailable: 10%\n"),
    ("api-pods-items-number", [("GET", r"^/api/v1/pods", hh.Reply(body={"items": 5}))],
     DRAIN_FAILS, "drain"),
    ("api-pod-volumes-object", [("GET", r"^/api/v1/pods", hh.Reply(body={"items": [
        pod(spec__volumes={"emptyDir": {}})]}))], dict(DRAIN_FAILS, evict=True), "drain"),
    ("api-pod-ownerrefs-string", [("GET", r"^/api/v1/pods", hh.Reply(body={"items": [
        pod(metadata__ownerReferences="DaemonSet")]}))], dict(DRAIN_FAILS, evict=True), "drain"),
    ("api-pod-items-not-objects", [("GET", r"^/api/v1/pods", hh.Reply(body={"items": [
        1, "x", None, [], {"metadata": []}]}))], DRAIN_FAILS, "drain"),
    ("api-pod-name-injection", [("GET", r"^/api/v1/pods", hh.Reply(body={"items": [
        pod(metadata__name='x/../../nodes/n1?"', metadata__namespace="default")]}))],
     DRAIN_FAILS, "drain"),
]


def kube_cycle_config(tmp, url, ca, mode="cordon", extra=""):
    kc = hh.kubeconfig(os.path.join(tmp, "kc"), url, ca)
    p = os.path.join(tmp, "cz.yaml")
    with open(p, "w") as f:
        f.write(kh.AGENT_CPU)
        f.write("kubernetes:\n  node_name: %s\n  kubeconfig: %s\n  timeout: 2s\n"
                "agent:\n  set_conditions: true\n"
                "remediation:\n  mode: %s\n  for: 1s\n  drain_timeout: 3s\n%s"
                % (NODE, kc, mode, extra))
    return p, kh.agent_tree(tmp, "v1-zombies")     # memcg: 12840 dying memcgs


@pytest.mark.parametrize("case", API_CASES, ids=[c[0] for c in API_CASES])
def test_bad_api_answer(case, certs, tmp_path):
    name, overrides, exp = case[:3]
    mode = case[3] if len(case) > 3 else "cordon"
    srv = hh.RawApi(certs, good_api(overrides))
    try:
        cfg, tree = kube_cycle_config(str(tmp_path), srv.url, certs.ca, mode,
                                      case[4] if len(case) > 4 else "")
        p = hh.run(kh.agent_once_args("", cfg, tree, tmp_path)[1:], timeout=DEADLINE + 40)
    finally:
        srv.stop()
    hh.assert_no_sanitizer(p.stderr)
    assert p.returncode >= 0, "killed by signal %d: %s" % (-p.returncode, p.stderr)
    # timeout 2s a request, a few retries with capped backoff, drain_timeout 3s
    assert p.elapsed < DEADLINE + 20, "took %.1fs" % p.elapsed
    assert p.returncode in exp["rcs"], (p.returncode, p.stdout, p.stderr)
    assert p.stdout.count("\n") == 1, p.stdout  # the cycle's one summary line
    if p.returncode == 2:
        assert "cannot" in p.stdout + p.stderr or "HTTP" in p.stdout + p.stderr, (p.stdout, p.stderr)
    reqs = srv.requests
    for method, path, body in reqs:
        assert method != "DELETE", reqs
        assert "//" not in path and ".." not in path and '"' not in path, reqs
        if not exp.get("evict"):
            assert not path.endswith("/eviction"), reqs
        if not exp["cordon"]:
            assert b'"unschedulable":true' not in body.replace(b" ", b""), reqs


# -- the agent: logs and keeps running ---------------------------------------------------------

def heartbeat_time(run):
    try:
        for line in open(os.path.join(run, "cpu-heartbeat")):
            if line.startswith("time_ms "):
                return int(line.split()[1])
    except (OSError, ValueError):
        pass
    return 0


def stop_agent(p):
    p.send_signal(15)
    out, err = p.communicate(timeout=20)
    return p.returncode, err


def test_agent_survives_bad_host_and_run_files(tmp_path):
    """Corrupt run-dir files at start, then /proc/stat turning to garbage, binary, empty and
    truncated under a running agent: it logs, skips those samples, and samples again once the
    file is good; SIGTERM still ends it cleanly."""
    proc, run = tmp_path / "proc", tmp_path / "run"
    proc.mkdir()
    run.mkdir()
    good = open("/proc/stat", "rb").read()
    write(str(proc / "stat"), good)
    write(str(run / "cpu-bursts"), b"cpuzombie-state 1 cpu-bursts\nburst x y\nend 00000000\n")
    write(str(run / "cpu-heartbeat"), os.urandom(300))
    write(str(run / "cpu-history"), b"CZHIST1\n" + os.urandom(5000))
    p = subprocess.Popen([hh.bin_path(), "--proc-root", str(proc), "--sys-root", "/sys",
                          "--run-dir", str(run), "--state-dir", str(tmp_path / "st"), "agent"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        time.sleep(1.0)
        for bad in (b"cpu  garbage\n", os.urandom(4096), b"", b"cpu  1 2 3\ncpu0 1", good):
            with open(proc / "stat", "r+b") as f:   # in place: the agent keeps its fd open
                f.truncate(0)
                f.write(bad)
            time.sleep(0.8)
            assert p.poll() is None, p.communicate()
        t1 = heartbeat_time(run)
        time.sleep(2.5)     # HISTORY_HEARTBEAT_MS = 2 s
        assert heartbeat_time(run) > t1, "sampling did not resume"
    finally:
        rc, err = stop_agent(p)
    err = err.decode(errors="replace")
    hh.assert_no_sanitizer(err)
    assert rc == 0, err
    assert "Failed to sample /proc/stat" in err, err
    assert "\nstopped 1\n" in open(run / "cpu-heartbeat").read()


def test_agent_survives_bad_api_answers(certs, tmp_path):
    """The agent publishing conditions every second to an API server that answers garbage,
    errors, or too slowly: it logs each failed cycle and keeps sampling."""
    answers = [hh.Reply(body=b"<html>"), hh.Reply(status=500, body=b"{}"),
               hh.Reply(body={"items": 5}), hh.Reply(body=b"[" * 100000),
               hh.Reply(body=json.dumps(hh.node(NODE)).encode(), drip=200)]
    seq = iter(range(10 ** 6))
    srv = hh.RawApi(certs, lambda m, path, b: answers[next(seq) % len(answers)])
    run = tmp_path / "run"
    try:
        kc = hh.kubeconfig(str(tmp_path / "kc"), srv.url, certs.ca)
        cfg = write(str(tmp_path / "cz.yaml"),
                    "kubernetes:\n  node_name: %s\n  kubeconfig: %s\n  timeout: 1s\n"
                    "agent:\n  set_conditions: true\n  check_interval: 1s\n"
                    "remediation:\n  mode: cordon\n  for: 1s\n" % (NODE, kc))
        p = subprocess.Popen([hh.bin_path(), "--config", cfg, "--run-dir", str(run),
                              "--state-dir", str(tmp_path / "st"), "agent"],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        try:
            time.sleep(6)
            assert p.poll() is None, p.communicate()
            assert heartbeat_time(run) > 0
        finally:
            rc, err = stop_agent(p)
    finally:
        srv.stop()
    err = err.decode(errors="replace")
    hh.assert_no_sanitizer(err)
    assert rc == 0, err
    assert len(srv.requests) >= 3, srv.requests
    assert "cannot read node" in err, err
    for method, path, body in srv.requests:
        assert b'"unschedulable":true' not in body.replace(b" ", b""), srv.requests

# SPDX-License-Identifier: MIT
"""The bad-input catalogue, its bounds: inputs just past what a reader may take on trust - a line
longer than a read, its tail inside the next chunk, text that is not text, a kernel message
quoted in a file name, counts past the kernel's int, a file bigger than its bound, values past
a key's range, run-dir files stamped by a clock ahead of ours or by another boot, a second agent
on one run dir. Outcomes as in test_bad_inputs.py: our own failure is exit 2 with one line naming
what was wrong, never 1, never a signal, never a sanitizer report."""
import os
import subprocess
import re

import pytest

import hardening_helpers as hh
from proc_helpers import stop

KLOG = os.path.join(hh.FIXTURES, "klog")
KEEPALIVE = "ena 0000:00:05.0 eth0: Keep alive watchdog timeout."
CHUNK = 64 << 10  # explain's read size


def write(p, data):
    os.makedirs(os.path.dirname(p), exist_ok=True)
    with open(p, "wb") as f:
        f.write(data if isinstance(data, bytes) else data.encode())
    return p


def run(*args, timeout=60, **kw):
    p = hh.run(list(args), timeout=timeout, **kw)
    hh.assert_no_sanitizer(p.stderr)
    assert p.returncode >= 0, "killed by signal %d: %s" % (-p.returncode, p.stderr)
    return p


# -- explain: long lines, their tails, text that is not text -------------------------------------

def test_explain_long_line_not_at_chunk_start(tmp_path):
    """A read that ends inside an over-long line that began after the chunk start: the next read
    stays inside its buffer (no heap overflow, no abort), and the message after it is found."""
    p = write(str(tmp_path / "a.log"), "short\n" + "Jul 14 14:17:34 host kubelet: " +
              "y" * 200000 + "\n" + "[ 5.000000] " + KEEPALIVE + "\n")
    r = run("explain", p)
    assert r.returncode == 1, (r.returncode, r.stdout, r.stderr)
    # the line after the long one is read, and is line 3
    assert re.search(r"^ENA reset 1 \(line 3", r.stdout, re.M), r.stdout


def test_explain_syslog_of_long_kubelet_lines(tmp_path):
    """A 364 KB syslog of long kubelet lines (each above the kept line length, some starting
    mid-chunk) is read to its end: no crash, no event, every line counted once."""
    lines = []
    for i in range(120):
        lines.append("Jul 14 14:17:%02d ip-10-0-1-23 kubelet[2212]: I0714 %s" %
                     (i % 60, ("reflector.go:%d " % i) * (150 + 13 * (i % 7))))
    text = "\n".join(lines) + "\n"
    assert len(text) > 300000
    r = run("explain", write(str(tmp_path / "syslog"), text))
    assert r.returncode == 0, (r.returncode, r.stdout, r.stderr)
    assert r.stdout.rstrip().endswith("in 0 kernel lines (120 lines of other programs skipped)"), \
        r.stdout


def test_explain_tail_of_long_line_is_not_a_line(tmp_path):
    """One user-space syslog line padded so that a later chunk starts with an ENA driver message:
    that tail is part of the user's line, not a kernel message: no reset, exit 0."""
    head = "Jul 14 14:17:34 host myapp: "
    p = write(str(tmp_path / "b.log"), head + "x" * (CHUNK - len(head)) + KEEPALIVE + "\n")
    r = run("explain", p)
    assert r.returncode == 0, (r.returncode, r.stdout, r.stderr)
    assert "0 ENA resets" in r.stdout and "in 0 kernel lines (1 line of other" in r.stdout


def test_explain_tail_inside_a_chunk_is_not_a_line(tmp_path):
    """The same with the long line starting mid-chunk and its tail inside the same chunk."""
    head = "Jul 14 14:17:34 host myapp: "
    p = write(str(tmp_path / "c.log"), "x\n" + head + "x" * 3000 + KEEPALIVE + "\n")
    r = run("explain", p)
    assert r.returncode == 0, (r.returncode, r.stdout, r.stderr)
    assert "0 ENA resets" in r.stdout


def test_explain_dev_zero_is_not_text():
    """/dev/zero is no kernel log: exit 2 naming the line, not thousands of "kernel lines"."""
    r = run("explain", "/dev/zero", timeout=30)
    assert r.returncode == 2, (r.returncode, r.stdout, r.stderr)
    assert "kernel lines" not in r.stdout
    assert re.search(r"/dev/zero:1: .*NUL", r.stderr), r.stderr


@pytest.mark.parametrize("enc", ["utf-16", "utf-16-le", "utf-16-be"])
def test_explain_utf16_is_not_text(enc, tmp_path):
    """A kernel log saved as UTF-16 (Windows editors, PowerShell redirection) is unreadable input,
    not "0 ENA resets": exit 2 (as ena-diff does with NULs)."""
    text = open(os.path.join(KLOG, "keepalive.kmsg")).read()
    p = write(str(tmp_path / "u.log"), text.encode(enc))
    r = run("explain", p)
    assert r.returncode == 2, (r.returncode, r.stdout, r.stderr)
    assert r.stdout == "" and re.search(re.escape(p) + r":1: .*(UTF-16|NUL)", r.stderr), r.stderr


def test_explain_nul_on_a_later_line_names_it(tmp_path):
    text = open(os.path.join(KLOG, "keepalive.kmsg")).read().split("\n")
    text[3] = text[3][:5] + "\0" + text[3][5:]
    p = write(str(tmp_path / "n.log"), "\n".join(text))
    r = run("explain", p)
    assert r.returncode == 2 and re.search(re.escape(p) + r":4: .*NUL", r.stderr), r.stderr


# -- the kernel's own word, not text it quotes ---------------------------------------------------

QUOTED = [
    # arch/x86/mm/fault.c show_signal_msg(): the crashing file's name follows " in "
    "evil[4242]: segfault at 0 ip 0000000000401000 sp 00007ffc2c3d1e40 error 4 in "
    "BUG: soft lockup - CPU#0 stuck for 99s! [kubelet:1][400000+1000] likely on CPU 0",
    "evil[4243]: segfault at 0 ip 0 sp 0 error 4 in watchdog: Watchdog detected hard LOCKUP on "
    "cpu 1[400000+1000]",
    "evil[4244]: segfault at 0 ip 0 sp 0 error 4 in INFO: task a:1 blocked for more than 999 "
    "seconds.[400000+1000]",
    "evil[4245]: segfault at 0 ip 0 sp 0 error 4 in rcu: INFO: rcu_sched self-detected stall on "
    "CPU[400000+1000]",
    "evil[4246]: segfault at 0 ip 0 sp 0 error 4 in NETDEV WATCHDOG: eth0 (ena): transmit queue "
    "5 timed out[400000+1000]",
]


def test_explain_quoted_lockup_is_not_a_lockup(tmp_path):
    """Kernel records (facility 0, /dev/kmsg format) that quote a lockup, hung-task, RCU-stall or
    NETDEV WATCHDOG message inside a file name: no event, exit 0 (a pattern matches where the
    kernel prints it, not anywhere in the record)."""
    recs = "".join("6,%d,%d,-;%s\n" % (100 + i, 5000000 + i, m) for i, m in enumerate(QUOTED))
    r = run("explain", write(str(tmp_path / "q.kmsg"), recs))
    assert r.returncode == 0, (r.returncode, r.stdout, r.stderr)
    assert "0 lockup/stall/hung-task/watchdog events in 5 kernel lines" in r.stdout, r.stdout
    # the kernel's own lines beside them still count
    own = recs + "0,200,6000000,-;watchdog: BUG: soft lockup - CPU#2 stuck for 23s! [kubelet:7]\n"
    r = run("explain", write(str(tmp_path / "o.kmsg"), own))
    assert r.returncode == 1 and "1 lockup/stall/hung-task/watchdog event in 6" in r.stdout, \
        r.stdout


# -- memcg counts no kernel keeps ----------------------------------------------------------------

MEMCG = os.path.join(hh.FIXTURES, "memcg", "this-vm-hybrid")


@pytest.mark.parametrize("num", [2 ** 64 - 1000, 2 ** 31])
def test_memcg_num_cgroups_past_int_is_damage(num, tmp_path):
    """/proc/cgroups num_cgroups near 2^64 is no ratio to judge: the kernel counts cgroups in an
    int, so such a count is damage: exit 2 naming the file."""
    import shutil
    t = str(tmp_path / "tree")
    shutil.copytree(MEMCG, t, symlinks=True)
    p = os.path.join(t, "proc", "cgroups")
    text = open(p).read()
    text = re.sub(r"^(memory\t\d+\t)\d+", lambda m: m.group(1) + str(num), text, flags=re.M)
    write(p, text)
    r = run("--proc-root", t + "/proc", "--sys-root", t + "/sys", "--state-dir",
            str(tmp_path / "st"), "check", "memcg")
    assert r.returncode == 2, (r.returncode, r.stdout, r.stderr)
    assert re.match(r"^cannot read .*cgroups", r.stdout), r.stdout


# -- ena-diff: texts that are no pair of dumps of one device -------------------------------------

FX01 = os.path.join(hh.FIXTURES, "ena", "01-ethq15-ena-1.2.0k-ethtool-i-and-S.txt")


def test_ena_diff_counter_twice_in_one_dump(tmp_path):
    """A counter twice in one dump: which value is the device's? Not the order of the lines:
    exit 2 naming FILE:LINE."""
    text = open(FX01).read()
    assert "tx_timeout: 0" in text
    after = write(str(tmp_path / "after.txt"), text.replace("tx_timeout: 0",
                                                             "tx_timeout: 5\n     tx_timeout: 0", 1))
    for order in ((FX01, after), (after, FX01)):
        r = run("ena-diff", *order)
        assert r.returncode == 2, (order, r.returncode, r.stdout, r.stderr)
        assert re.search(r"after\.txt:\d+: counter 'tx_timeout' appears twice", r.stderr), r.stderr


def test_ena_diff_no_counter_in_common(tmp_path):
    """Two dumps with no counter in common are not "no reset": there is nothing to compare,
    exit 2."""
    b = write(str(tmp_path / "b.txt"), "NIC statistics:\n     alpha: 1\n     beta: 2\n")
    a = write(str(tmp_path / "a.txt"), "NIC statistics:\n     gamma: 1\n     delta: 2\n")
    r = run("ena-diff", b, a)
    assert r.returncode == 2, (r.returncode, r.stdout, r.stderr)
    assert "no counter in common" in r.stderr and "no reset" not in r.stdout


# -- check cpu: a stopped sampler's bursts -------------------------------------------------------

def envelope(name, payload):
    import zlib
    return b"cpuzombie-state 1 %s\n%send %08x\n" % (name.encode(), payload, zlib.crc32(payload))


def test_check_cpu_stopped_sampler_keeps_its_bursts(tmp_path):
    """After the agent exits (heartbeat 'stopped 1'), check cpu still counts the burst it logged
    seconds before (exit 1, "sampler stopped"), as report lists it, beside its inline sample."""
    import time
    run_dir = str(tmp_path / "run")
    now = int(time.time() * 1000)
    write(os.path.join(run_dir, "cpu-heartbeat"), envelope("cpu-heartbeat", (
        b"pid 1\ntime_ms %d\ninterval_ms 250\nmetric system\nncpu %d\nstopped 1\n"
        % (now - 1000, os.cpu_count()))))
    write(os.path.join(run_dir, "cpu-bursts"), envelope("cpu-bursts", (
        b"burst 0 %d %d 99.0 98.0 system irqs=- tasks=4242/4242/kubelet/3000 stack=-\n"
        % (now - 7000, now - 2200))))
    # threshold 99%: the logged burst (peak 99) counts; an idle-enough machine gives none inline
    cfg = write(str(tmp_path / "cz.yaml"), "cpu:\n  inline_window: 2s\n  min_burst: 2s\n"
                "  threshold_pct: 99\n")
    r = run("--config", cfg, "--run-dir", run_dir, "--state-dir", str(tmp_path / "st"),
            "check", "cpu")
    assert r.returncode == 1, (r.returncode, r.stdout, r.stderr)
    assert r.stdout.startswith("cpu0 ") and "sampler stopped" in r.stdout, r.stdout


# -- bounded reads: judged by the size a file says it has ----------------------------------------

# A fresh, small python forks and execs the binary and writes the child's own peak RSS. Linux
# keeps the peak of the memory image a process exec'd from (exec_mmap: setmax_mm_hiwater_rss),
# and pytest's children are spawned from pytest's own image (vfork): in a long session their
# ru_maxrss was pytest's 135 MB, not theirs. A child forked by this small trampoline starts
# from its few MB.
TRAMPOLINE = """import os, sys
pid = os.fork()
if pid == 0:
    os.execve(sys.argv[2], sys.argv[2:], os.environ)
_, status, ru = os.wait4(pid, 0)
open(sys.argv[1], "w").write("%d %d" % (status, ru.ru_maxrss))
"""


def run_rusage(args, tmp_path):
    """Run the binary, returning (exit status, stdout, stderr, peak RSS in KiB) from wait4()."""
    out, err = str(tmp_path / "rus.out"), str(tmp_path / "rus.err")
    res = str(tmp_path / "rus.res")
    env = dict(os.environ)
    env.setdefault("ASAN_OPTIONS", "detect_leaks=1:abort_on_error=0")
    with open(out, "wb") as fo, open(err, "wb") as fe:
        subprocess.run(["/usr/bin/python3", "-c", TRAMPOLINE, res, hh.bin_path(), *args],
                       stdout=fo, stderr=fe, env=env, timeout=300, check=True)
    status, maxrss = (int(x) for x in open(res).read().split())
    so, se = open(out, errors="replace").read(), open(err, errors="replace").read()
    hh.assert_no_sanitizer(se)
    assert not os.WIFSIGNALED(status), se
    return os.WEXITSTATUS(status), so, se, maxrss


def test_sparse_history_refused_by_its_size(tmp_path):
    """A 10 GB sparse cpu-history is refused by the size fstat() says, before a byte is read (not
    read 256 MiB deep, the ring's bound, before -EFBIG): the report's peak RSS stays small."""
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    with open(run_dir / "cpu-history", "wb") as f:
        f.truncate(10 << 30)
    rc, so, se, rss_kib = run_rusage(["--run-dir", str(run_dir), "--state-dir",
                                      str(tmp_path / "st"), "report"], tmp_path)
    assert rc in (0, 1, 2), (rc, so, se)
    assert rss_kib < 128 << 10, "peak RSS %d KiB" % rss_kib


def test_huge_kubeconfig_and_token_file_say_their_bound(tmp_path):
    """A 100 MB kubeconfig, and a 20 MB token file: one line naming the file and the bound (not
    "Argument list too long", -E2BIG through %m), exit 2, nothing read past it."""
    big = tmp_path / "big.kubeconfig"
    with open(big, "wb") as f:
        f.truncate(100 << 20)
    rc, so, se, rss_kib = run_rusage(["--kubeconfig", str(big), "fleet"], tmp_path)
    assert rc == 2, (rc, so, se)
    assert "Argument list too long" not in se, se
    assert re.search(r"^cpuzombie: Failed to read kubeconfig '%s': larger than 1048576 bytes$"
                     % re.escape(str(big)), se, re.M), se
    assert rss_kib < 128 << 10, "peak RSS %d KiB" % rss_kib
    tok = tmp_path / "token"
    tok.write_bytes(b"a" * (20 << 20))
    kc = write(str(tmp_path / "kc"), "apiVersion: v1\nkind: Config\nclusters: [{name: c, "
               "cluster: {server: 'https://127.0.0.1:9', insecure-skip-tls-verify: true}}]\n"
               "users: [{name: u, user: {tokenFile: '%s'}}]\ncontexts: [{name: x, context: "
               "{cluster: c, user: u}}]\ncurrent-context: x\n" % tok)
    r = run("--kubeconfig", kc, "fleet")
    assert r.returncode == 2, (r.returncode, r.stdout, r.stderr)
    assert "Argument list too long" not in r.stderr, r.stderr
    assert "Failed to read token file '%s': larger than 16384 bytes" % tok in r.stderr, r.stderr


# -- config: values that are cut or make no sense ------------------------------------------------

@pytest.mark.parametrize("text,line,want", [
    ('systemd:\n  bus: "system\\0garbage"\n', 2, r"key 'systemd\.bus': the value contains a NUL"),
    ('cpu:\n  metric: "busy\\0"\n', 2, r"key 'cpu\.metric': the value contains a NUL"),
    ('ena:\n  interfaces: [eth0, "eth1\\0x"]\n', 2, r"key 'ena\.interfaces': an entry contains a"
     r" NUL"),
    ("cpu:\n  min_burst: 1s\n  inline_window: 25h\n", 3,
     r"key 'cpu\.inline_window': out of range, expected 0s\.\.8s .*got '25h'"),
    ("agent:\n  check_interval: 1ms\n", 2,
     r"key 'agent\.check_interval': out of range, expected 100ms\.\.1d"),
    ("ena:\n  min_read_interval: 1ms\n", 2,
     r"key 'ena\.min_read_interval': out of range, expected 0 or 1s\.\.1h"),
], ids=["nul-str", "nul-enum", "nul-list", "inline-25h", "check-1ms", "ena-read-1ms"])
def test_config_cut_or_senseless_values_refused(text, line, want, tmp_path):
    """An embedded NUL ("system\0garbage" is not "system") and values past a key's lower or upper
    bound (a 25 h inline window under NPD's 10 s timeout): refused at FILE:LINE naming the key
    and the range, exit 2, by `config check` and by a check that loads the file."""
    cfg = write(str(tmp_path / "cz.yaml"), text)
    r = run("config", "check", "--config", cfg)
    assert r.returncode == 2, (r.returncode, r.stdout, r.stderr)
    assert re.search(re.escape(cfg) + ":%d: " % line + want, r.stderr), r.stderr
    r = run("--config", cfg, "--run-dir", str(tmp_path / "run"), "--state-dir",
            str(tmp_path / "st"), "check", "cpu", timeout=30)
    assert r.returncode == 2, (r.returncode, r.stdout, r.stderr)
    assert re.search(re.escape(cfg) + ":%d: " % line + want, r.stderr), r.stderr


def test_config_zero_and_bounds_still_accepted(tmp_path):
    """0 keeps its meaning (no inline sampling, no read limit) and the ends of each range are
    in it."""
    cfg = write(str(tmp_path / "cz.yaml"), "cpu:\n  inline_window: 8s\n  interval: 10ms\n"
                "  min_burst: 1s\nena:\n  min_read_interval: 0s\nagent:\n  check_interval: 24h\n"
                "memcg:\n  census_interval: 0\n")
    r = run("config", "check", "--config", cfg)
    assert r.returncode == 0, (r.returncode, r.stdout, r.stderr)


# -- one agent per run dir -----------------------------------------------------------------------

def test_second_agent_on_one_run_dir_refused(tmp_path):
    """One run dir, one agent (two would flip the heartbeat's pid, interleave the ring and log every
    burst twice): the second one (long-running or --once) exits 2 naming the first one's pid;
    after the first ends, the run dir is free again."""
    import subprocess
    import time
    run_dir, st = str(tmp_path / "run"), str(tmp_path / "st")
    cfg = write(str(tmp_path / "cz.yaml"), "agent:\n  check_interval: 24h\n")
    common = ["--config", cfg, "--run-dir", run_dir, "--state-dir", st]
    first = subprocess.Popen([hh.bin_path(), *common, "agent"], stdout=subprocess.DEVNULL,
                             stderr=subprocess.PIPE)
    try:
        hb = os.path.join(run_dir, "cpu-heartbeat")
        for _ in range(300):
            if os.path.exists(hb) or first.poll() is not None:
                break
            time.sleep(0.1)
        assert first.poll() is None and os.path.exists(hb), "the first agent did not start"
        for args in (["agent", "--once"], ["agent"]):
            r = run(*common, *args, timeout=30)
            assert r.returncode == 2, (args, r.returncode, r.stdout, r.stderr)
            assert re.search(r"^cpuzombie: Failed to start: run dir '%s' in use by pid %d$"
                             % (re.escape(run_dir), first.pid), r.stderr, re.M), r.stderr
        assert first.poll() is None
    finally:
        _, _, err = stop(first, 30, strict=True, communicate=True)
    hh.assert_no_sanitizer(err.decode(errors="replace"))
    r = run(*common, "agent", "--once", timeout=60)
    assert r.returncode == 0, (r.returncode, r.stdout, r.stderr)


# -- run-dir files from another clock, another boot, a gone agent --------------------------------

def dead_pid():
    import subprocess
    p = subprocess.Popen(["/bin/true"])
    p.wait()
    return p.pid


def boot_id():
    return open("/proc/sys/kernel/random/boot_id").read().strip()


def heartbeat(run_dir, time_ms, extra=b""):
    write(os.path.join(run_dir, "cpu-heartbeat"), envelope("cpu-heartbeat", (
        b"pid 1\n%stime_ms %d\ninterval_ms 250\nmetric system\nncpu %d\nstopped 0\n"
        % (extra, time_ms, os.cpu_count()))))


def check_cpu(tmp_path, run_dir):
    cfg = write(str(tmp_path / "cz.yaml"), "cpu:\n  inline_window: 1s\n  min_burst: 1s\n"
                "  threshold_pct: 99.9\n")
    return run("--config", cfg, "--run-dir", run_dir, "--state-dir", str(tmp_path / "st"),
               "check", "cpu")


def now_ms():
    import time
    return int(time.time() * 1000)


def test_check_cpu_future_heartbeat_is_no_sampler(tmp_path):
    """A heartbeat stamped an hour ahead with a dead pid is not "fresh": the check does not trust
    the agent's empty log, it samples inline."""
    run_dir = str(tmp_path / "run")
    heartbeat(run_dir, now_ms() + 3600 * 1000, b"host_pid %d\n" % dead_pid())
    r = check_cpu(tmp_path, run_dir)
    assert r.returncode in (0, 1), (r.returncode, r.stdout, r.stderr)
    assert "inline 1s: sampler heartbeat from the future" in r.stdout, r.stdout


@pytest.mark.parametrize("case", ["dead-pid", "other-boot"])
def test_check_cpu_judges_liveness_by_host_pid_and_boot(case, tmp_path):
    """A heartbeat stamped ahead of now (inside the slack: a clock stepped back a little) by an
    agent that is gone (its host pid has no /proc entry), or a fresh one from another boot: the
    sampler is not running, the check samples inline. (A heartbeat stamped in the past is judged
    by its age: `agent --once` leaves one to be trusted, test_cpu.py.)"""
    run_dir = str(tmp_path / "run")
    stamp = now_ms() + (5000 if case == "dead-pid" else 0)
    if case == "dead-pid":
        pid = dead_pid()
        extra, want = b"host_pid %d\nboot_id %s\n" % (pid, boot_id().encode()), \
            "sampler gone (pid %d)" % pid
    else:
        other = "00000000-0000-4000-8000-000000000000"
        assert other != boot_id()
        extra, want = b"host_pid %d\nboot_id %s\n" % (os.getpid(), other.encode()), \
            "sampler from another boot"
    heartbeat(run_dir, stamp, extra)
    r = check_cpu(tmp_path, run_dir)
    assert r.returncode in (0, 1), (r.returncode, r.stdout, r.stderr)
    assert "inline 1s: " + want in r.stdout, r.stdout


def test_agent_records_host_pid_and_boot_id(tmp_path):
    """The agent's heartbeat says its pid as --proc-root's namespace sees it and the boot id;
    a live agent's heartbeat is trusted (no inline sampling)."""
    run_dir = str(tmp_path / "run")
    cfg = write(str(tmp_path / "cz.yaml"), "agent:\n  check_interval: 24h\n")
    r = run("--config", cfg, "--run-dir", run_dir, "--state-dir", str(tmp_path / "st"),
            "agent", "--once", timeout=60)
    assert r.returncode == 0, r.stderr
    text = open(os.path.join(run_dir, "cpu-heartbeat")).read()
    assert re.search(r"^host_pid [1-9]\d*$", text, re.M), text
    assert "\nboot_id %s\n" % boot_id() in text, text
    # stamped ahead of now by a pid that lives (ours): a running sampler, trusted
    fields = dict(line.split(" ", 1) for line in text.splitlines()[1:-1] if " " in line)
    heartbeat(run_dir, now_ms() + 5000, b"host_pid %d\nboot_id %s\n" % (
        os.getpid(), fields["boot_id"].encode()))
    r = check_cpu(tmp_path, run_dir)
    assert r.returncode == 0 and "inline" not in r.stdout, (r.returncode, r.stdout, r.stderr)


def test_check_cpu_future_burst_is_not_recent(tmp_path):
    """A burst stamped in the future is not "recent" until the clock catches up (exit 1 for hours):
    it is damage: dropped, exit 0."""
    run_dir = str(tmp_path / "run")
    now = now_ms()
    heartbeat(run_dir, now)
    write(os.path.join(run_dir, "cpu-bursts"), envelope("cpu-bursts", (
        b"burst 0 %d %d 99.0 98.0 system irqs=- tasks=- stack=-\n"
        % (now + 3600 * 1000, now + 3605 * 1000))))
    cfg = write(str(tmp_path / "cz.yaml"), "cpu:\n  inline_window: 0s\n")
    r = run("--config", cfg, "--run-dir", run_dir, "--state-dir", str(tmp_path / "st"),
            "check", "cpu")
    assert r.returncode == 0, (r.returncode, r.stdout, r.stderr)


def test_history_slot_from_the_future_does_not_stretch_the_heatmap(tmp_path):
    """One slot stamped near 2^63 ms does not stretch the heatmap over 106751970378 days: it is
    dropped and the heatmap spans the minute that was sampled."""
    from report_helpers import write_ring
    run_dir = str(tmp_path / "run")
    os.makedirs(run_dir)
    now = now_ms()
    samples = [(now - (60 - i) * 1000, [3, 3]) for i in range(60)]
    samples.append(((1 << 63) - 1000, [50, 50]))
    write_ring(os.path.join(run_dir, "cpu-history"), 2, samples)
    heartbeat(run_dir, now, b"host_pid %d\n" % os.getpid())
    r = run("--run-dir", run_dir, "--state-dir", str(tmp_path / "st"), "report")
    assert r.returncode in (0, 1), (r.returncode, r.stdout, r.stderr)
    m = re.search(r"HEATMAP .*\((\S+)\)", r.stdout)
    assert m and m.group(1) in ("59s", "1m"), r.stdout

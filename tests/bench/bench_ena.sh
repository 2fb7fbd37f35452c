#!/usr/bin/env bash
# bench_ena.sh BINARY: per-invocation CPU and peak memory of `cpuzombie check ena` on this
# machine's own NIC (ena.drivers set to its driver), next to the exec floor (a do-nothing C
# binary) and the naive shell plugin (`ethtool -S IF | awk ...`), all measured in this run.
# CPU is the kernel's accounting of each child (wait4 rusage: user+sys, children included for
# the shell pipeline); peak RSS from GNU time. Wall time from hyperfine when installed.
# Not a timed test: it prints a table of ratios against the floor.
set -euo pipefail
bin=${1:?usage: bench_ena.sh BINARY}
bin=$(readlink -f "$bin")
tmp=$(mktemp -d /tmp/cz-bench-ena.XXXXXX)
trap 'rm -rf "$tmp"' EXIT

ifname=$(ip -o route show default 2>/dev/null | awk '{for (i = 1; i < NF; i++) if ($i == "dev") {print $(i + 1); exit}}')
[ -n "$ifname" ] || ifname=$(ls /sys/class/net | grep -v '^lo$' | head -1)
driver=$(ethtool -i "$ifname" | awk '/^driver:/ {print $2}')
if [ -z "$driver" ]; then echo "bench_ena: no driver for '$ifname', skipped"; exit 0; fi

printf 'int main(void) { return 0; }\n' >"$tmp/noop.c"
cc -O2 -fPIE -pie -o "$tmp/noop" "$tmp/noop.c"
# min_read_interval 0: every run really reads the device (the worst case; the default 5s
# interval makes most NPD runs answer from state without an ioctl)
printf 'ena:\n  drivers: [%s]\n  min_read_interval: 0s\n' "$driver" >"$tmp/cz.yaml"
cat >"$tmp/naive.sh" <<NAIVE
#!/bin/sh
ethtool -S $ifname | awk '/total_resets|tx_timeout|wd_expired|reset_fail|suspected_poll_starvation/ {s += \$2} END {print s " resets"; exit s > 0}'
NAIVE
chmod +x "$tmp/naive.sh"

echo "NIC $ifname (driver $driver), $(nproc) CPUs; 5 batches x 40 execs each"
/usr/bin/python3 - "$tmp" "$bin" <<'PY'
import os, statistics, subprocess, sys

tmp, cz = sys.argv[1], sys.argv[2]
null = os.open(os.devnull, os.O_RDWR)
cmds = [
    ("do-nothing C binary (floor)", [f"{tmp}/noop"]),
    ("cpuzombie check ena", [cz, "--config", f"{tmp}/cz.yaml", "--state-dir", f"{tmp}/state",
                             "check", "ena"]),
    ("cpuzombie check ena (rate-limited, default 5s)",
     [cz, "--state-dir", f"{tmp}/state2", "check", "ena"]),
    ("naive: ethtool -S + awk", [f"{tmp}/naive.sh"]),
]


def once(argv):
    pid = os.posix_spawn(argv[0], argv, os.environ,
                         file_actions=[(os.POSIX_SPAWN_DUP2, null, 0),
                                       (os.POSIX_SPAWN_DUP2, null, 1),
                                       (os.POSIX_SPAWN_DUP2, null, 2)])
    _, st, ru = os.wait4(pid, 0)
    return (ru.ru_utime + ru.ru_stime) * 1000.0, os.waitstatus_to_exitcode(st)


def rss(argv):
    p = subprocess.run(["/usr/bin/time", "-f", "%M", *argv], capture_output=True, text=True)
    return int(p.stderr.strip().splitlines()[-1])


rows = []
for name, argv in cmds:
    once(argv)
    means, codes = [], set()
    for _ in range(5):
        tot = 0.0
        for _ in range(40):
            ms, rc = once(argv)
            tot += ms
            codes.add(rc)
        means.append(tot / 40)
    rows.append((name, statistics.median(means), min(means), max(means), rss(argv), codes))

floor = rows[0][1] or 1e-9
floor_rss = rows[0][4] or 1
print()
print("| command | CPU ms/exec median (min-max) | x floor | peak RSS KiB | x floor | exit |")
print("|---|---|---|---|---|---|")
for name, med, lo, hi, r, codes in rows:
    print(f"| {name} | {med:.3f} ({lo:.3f}-{hi:.3f}) | {med / floor:.2f} | {r} | "
          f"{r / floor_rss:.2f} | {','.join(map(str, sorted(codes)))} |")
PY

if command -v hyperfine >/dev/null; then
	echo
	echo "wall time (hyperfine):"
	hyperfine -N --warmup 20 --runs 200 --style basic --export-markdown "$tmp/h.md" \
		"$tmp/noop" \
		"$bin --config $tmp/cz.yaml --state-dir $tmp/state check ena" \
		"$tmp/naive.sh" >/dev/null 2>&1 || true
	[ -s "$tmp/h.md" ] && sed "s#$tmp/##g; s#$bin#cpuzombie#g" "$tmp/h.md"
fi

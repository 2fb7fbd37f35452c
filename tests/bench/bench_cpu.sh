#!/usr/bin/env bash
# bench_cpu.sh BIN [SECONDS]: CPU cost of the per-core sampler (`cpuzombie agent`, 4 Hz) next
# to `mpstat -P ALL 1` over the same seconds (utime+stime from /proc/PID/stat, kernel time
# included), one sample's cost on a 192-CPU /proc/stat fixture, peak RSS, run-dir sizes.
set -euo pipefail
bin=${1:-build/cpuzombie}
secs=${2:-${BENCH_SECONDS:-60}}
root=$(cd "$(dirname "$0")/../.." && pwd)
tmp=$(mktemp -d)
hz=$(getconf CLK_TCK)
# on-CPU nanoseconds (user + kernel) of a running process: /proc/PID/schedstat field 1
ticks() { awk '{print $1}' "/proc/$1/schedstat"; }

"$bin" --run-dir "$tmp/run" --state-dir "$tmp/state" agent & apid=$!
LC_ALL=C mpstat -P ALL 1 >/dev/null & mpid=$!
sleep 0.5
a0=$(ticks $apid); m0=$(ticks $mpid)
sleep "$secs"
a1=$(ticks $apid); m1=$(ticks $mpid)
arss=$(awk '/VmHWM/{print $2}' /proc/$apid/status)
kill $apid $mpid; wait $apid 2>/dev/null || true; wait $mpid 2>/dev/null || true

# one sample on a 192-CPU fixture: --once over an inline window of N samples, user+sys time
mkdir -p "$tmp/p192"; cp "$root/tests/fixtures/cpu/stat-192cpu.txt" "$tmp/p192/stat"
printf 'cpu:\n  inline_window: 10s\n  interval: 250ms\n' > "$tmp/c.yaml"
"$bin" --config "$tmp/c.yaml" --proc-root "$tmp/p192" --sys-root "$tmp/nosys" \
	--run-dir "$tmp/run192" agent & bpid=$!
sleep 1; b0=$(ticks $bpid); sleep 10; b1=$(ticks $bpid)
m192=$(awk '/VmHWM/{print $2}' /proc/$bpid/status); kill $bpid; wait $bpid 2>/dev/null || true

awk -v a=$((a1 - a0)) -v m=$((m1 - m0)) -v hz="$hz" -v secs="$secs" -v rss="$arss" \
	-v b=$((b1 - b0)) -v m192="$m192" -v ring="$(stat -c %s "$tmp/run/cpu-history")" \
	-v ring192="$(stat -c %s "$tmp/run192/cpu-history")" 'BEGIN {
	as = a / 1e6 / (secs * 4); ms = m / 1e6 / secs
	printf "%-52s %12s\n", "measure (" secs " s, schedstat ns)", "value"
	printf "%-52s %12.3f\n", "agent CPU per sample, ms (4 Hz)", as
	printf "%-52s %12.3f\n", "mpstat -P ALL 1 CPU per sample, ms (1 Hz)", ms
	printf "%-52s %12.3f\n", "ratio agent/mpstat per sample (goal <= 0.5)", (ms > 0 ? as / ms : 0)
	printf "%-52s %12.4f\n", "agent % of one core at 4 Hz (goal < 0.02)", a / 1e9 / secs * 100
	printf "%-52s %12.2f\n", "agent CPU per hour, s", a / 1e9 / secs * 3600
	printf "%-52s %12.2f\n", "mpstat CPU per hour, s", m / 1e9 / secs * 3600
	printf "%-52s %12.3f\n", "192-CPU fixture: CPU per sample, ms (40 samples)", b / 1e6 / 40
	printf "%-52s %12d\n", "agent peak RSS, KiB", rss
	printf "%-52s %12d\n", "192-CPU agent peak RSS, KiB", m192
	printf "%-52s %12d\n", "history ring bytes (fixed), this node", ring
	printf "%-52s %12d\n", "history ring bytes (fixed), 192 CPUs", ring192
	printf "%-52s %12s\n", "burst log bound", "256 events"
}'
rm -rf "$tmp"

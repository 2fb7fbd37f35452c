#!/usr/bin/env bash
# make bench: every benchmark of tests/bench, one report on stdout (markdown). Not a timed test:
# it prints tables of measured ratios against the floor and the naive alternatives, all measured
# in the same run. Needs root for the dying-memcg curve (skipped with a note otherwise).
#   run.sh BINARY [CHECK_BINARY]
#                          BENCH_N (execs per batch, 40), BENCH_AGENT_SECONDS (120),
#                          BENCH_MEMCG_SIZES, BENCH_LIVE_SIZES, BENCH_CPU_SIZES (comma lists),
#                          BENCH_DRAIN_PODS (10,50), BENCH_DRAIN_REPS (3),
#                          BENCH_LATENCY_REPS (3), BENCH_WATCH_SIZES (1000,5000,10000),
#                          BENCH_WATCH_SECONDS (45), BENCH_LATENCY_NPD_REPS (1),
#                          BENCH_WRITES_SECONDS (660),
#                          BENCH_MEMORY_BASELINE (a binary to compare with), BENCH_MEMORY_SECONDS,
#                          BENCH_ONLY (e.g. "bench_checks.py": only these parts)
set -u
bin=${1:?usage: run.sh BINARY [CHECK_BINARY]}
bin=$(readlink -f "$bin")
check=$(readlink -f "${2:-$(dirname "$bin")/cpuzombie-check}")
here=$(cd "$(dirname "$0")" && pwd)
"$here/install-bench-deps.sh" || exit 1
out=$(mktemp -d /tmp/cz-bench.XXXXXX)
trap 'rm -rf "$out"' EXIT
export BENCH_OUT=$out

model=$(awk -F': ' '/^model name/ {print $2; exit}' /proc/cpuinfo)
echo "# cpuzombie benchmarks"
echo
echo "$(date -u '+%Y-%m-%d %H:%M UTC'); kernel $(uname -r); $(nproc) CPUs: ${model:-unknown};" \
	"$(awk '/MemTotal/ {printf "%.0f GiB RAM", $2 / 1048576}' /proc/meminfo);" \
	"$("$bin" --version 2>/dev/null | head -1); $(. /etc/os-release && echo "$PRETTY_NAME")"
echo "CPU = user + kernel time from the kernel's accounting; every figure a median over batches"
echo "(range = min-max of the batch means), every ratio measured in this run."
rc=0
start=$(date +%s)
for b in ${BENCH_ONLY:-bench_checks.py bench_agent.py bench_scale.py bench_profile.py bench_flame.py bench_census.py bench_fleet.py bench_watch.py bench_drain.py bench_latency.py bench_agent_writes.py bench_latency_peek.py bench_memory.py bench_zbudget.py}; do
	t0=$(date +%s)
	case $b in
	bench_checks.py) echo; echo "## Per invocation: every check vs the exec floor and naive plugins" ;;
	bench_agent.py) echo; echo "## The agent at 4 Hz vs mpstat and node_exporter, same minutes" ;;
	bench_scale.py) echo; echo "## Scale curves" ;;
	bench_profile.py) echo; echo "## Burst profiles and history tiers" ;;
	bench_flame.py) echo; echo "## Looking into a burst: flame graphs and the --html page" ;;
	bench_census.py) echo; echo "## The zombie census (BPF) over real dying memcgs" ;;
	bench_fleet.py) echo; echo "## The fleet view: cpuzombie fleet over 10,000 nodes" ;;
	bench_watch.py) echo; echo "## The remediator's steady state: polling vs watching vs client-go's informer" ;;
	bench_drain.py) echo; echo "## Drain: cpuzombie vs kubectl drain on the real control plane" ;;
	bench_latency.py) echo; echo "## Condition latency: burst start to CPUCoreSaturation True (agent vs NPD)" ;;
	bench_agent_writes.py) echo; echo "## API cost per node: the agent's writes and reads vs NPD's exporter and kubelet" ;;
	bench_latency_peek.py) echo; echo "## The cost of the mid-burst links (profile so far, NIC IRQs)" ;;
	bench_memory.py) echo; echo "## The agent's idle memory: VmRSS by configuration, mapping and CPU count" ;;
	bench_zbudget.py) echo; echo "## NPD CPU budget (from the per-exec costs above)" ;;
	esac
	echo
	/usr/bin/python3 "$here/$b" "$bin" "$check" || { rc=1; echo "($b failed)"; }
	echo >&2 "bench: $b took $(($(date +%s) - t0)) s"
done
echo
echo "(make bench took $(($(date +%s) - start)) s)"
exit $rc

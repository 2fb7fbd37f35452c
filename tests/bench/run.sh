#!/usr/bin/env bash
# make bench: every benchmark of tests/bench, one report on stdout. Not a timed test: it prints
# tables of measured ratios against the naive alternatives, measured in the same run.
set -u
bin=${1:?usage: run.sh BINARY}
here=$(cd "$(dirname "$0")" && pwd)
echo "# cpuzombie benchmarks — $(date -u +%Y-%m-%d) on $(uname -r), $(nproc) CPUs, $(awk '/model name/{$1=$2=$3="";print;exit}' /proc/cpuinfo)"
rc=0
for b in "$here"/bench_*; do
	echo
	echo "## $(basename "$b")"
	case $b in
	*.py) /usr/bin/python3 "$b" "$bin" || rc=1 ;;
	*.sh) bash "$b" "$bin" || rc=1 ;;
	esac
done
exit $rc

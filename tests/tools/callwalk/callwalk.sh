#!/usr/bin/env bash
# callwalk.sh [ROOT]: follow one agent cycle call by call and count how it walks the tree.
#
# Builds ROOT's plugin/ (default: this clone) with gcc -finstrument-functions and trace.c,
# runs `cpuzombie agent --once` on this host (metrics on, Kubernetes off, its own state and run
# dirs), and reads the calls made inside periodic_cycle() (the agent's periodic work: units,
# pods, census, the checks, metrics): each call's caller and callee file, from addr2line.
# Prints (walk.py says exactly how each is counted):
#   files      distinct source files the cycle runs code in
#   calls      calls from one file into another
#   returns    of those, calls into a file the cycle had already left (came back to)
#   climbs     of those, calls into a room above the caller's (a callback: up the layers)
#   top re-entered files, with their counts
# Its figures for one agent cycle: docs/design.md ("One agent cycle, call by call"); not part
# of make test.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "${1:-$here/../../..}" && pwd)
out=$(mktemp -d /tmp/cz-callwalk.XXXXXX)
trap 'rm -rf "$out"' EXIT
mkdir -p "$out/obj" "$out/state" "$out/run"
cflags=(-std=gnu11 -D_GNU_SOURCE -O1 -g -fno-inline -finstrument-functions
	-finstrument-functions-exclude-file-list=/usr/include,.h -DCZ_VERSION='"callwalk"'
	-I"$root/plugin")
srcs=()
for s in "$root"/plugin/*/*.c; do
	case $(basename "$s") in *_none.c) continue ;; esac
	srcs+=("$s")
done
printf '%s\n' "${srcs[@]}" | xargs -P 2 -I{} sh -c \
	'f={}; f=${f#*/plugin/}; gcc "$@" -c -o "$0/obj/$(echo "${f%.c}" | tr / _).o" {}' \
	"$out" "${cflags[@]}"
gcc -O1 -c -o "$out/trace.o" "$here/trace.c"
gcc -o "$out/cpuzombie" "$out"/obj/*.o "$out/trace.o" -ljson-c -lyaml -lcurl -lsystemd -lm -ldl
cat >"$out/config.yaml" <<YAML
agent:
  metrics_textfile: $out/state/metrics.prom
YAML
mkdir -p "$out/state"	# a host file lies in the state dir
CZ_CALLWALK_OUT="$out/trace" "$out/cpuzombie" --config "$out/config.yaml" \
	--state-dir "$out/state" --run-dir "$out/run" --node-name callwalk agent --once \
	>/dev/null 2>"$out/agent.err" || true
/usr/bin/python3 "$here/walk.py" "$out/cpuzombie" "$out/trace" "$root"

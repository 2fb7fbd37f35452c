#!/usr/bin/env bash
# Captures what `check memcg` reads on this node into a fixture tree (util-linux mk-input.sh
# style): tests/fixtures/memcg/<name>/{proc,sys}. Directory skeleton of the memory hierarchy
# only (each dir gets a .keep so git tracks it), never the per-memcg files.
set -euo pipefail
name=${1:?usage: capture-memcg-fixture.sh NAME [PROC] [SYS]}
proc=${2:-/proc} sys=${3:-/sys}
out=$(cd "$(dirname "$0")/../fixtures/memcg" && pwd)/$name
mkdir -p "$out/proc/1" "$out/proc/sys/kernel" "$out/sys"
cp "$proc/cgroups" "$out/proc/cgroups"
cp "$proc/1/mountinfo" "$out/proc/1/mountinfo"
grep -E '^(MemTotal|Percpu|Slab|SUnreclaim):' "$proc/meminfo" >"$out/proc/meminfo"
cp "$proc/sys/kernel/osrelease" "$out/proc/sys/kernel/osrelease"
mem=$(awk '{split($0,a," - "); split(a[2],b," "); split(a[1],c," ");
	if (b[1]=="cgroup" && b[3] ~ /(^|,)memory(,|$)/) print c[5]}' "$proc/1/mountinfo" | head -1)
if [ -n "$mem" ]; then
	(cd "$sys/${mem#/sys/}" && find . -type d) | while read -r d; do
		mkdir -p "$out/sys/${mem#/sys/}/$d" && touch "$out/sys/${mem#/sys/}/$d/.keep"
	done
fi
v2=$(awk '{split($0,a," - "); split(a[2],b," "); split(a[1],c," "); if (b[1]=="cgroup2") print c[5]}' \
	"$proc/1/mountinfo" | head -1)
if [ -n "$v2" ]; then
	mkdir -p "$out/sys/${v2#/sys/}" && cp "$sys/${v2#/sys/}/cgroup.stat" "$out/sys/${v2#/sys/}/"
fi
echo "captured into $out"

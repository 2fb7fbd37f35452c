#!/usr/bin/env bash
# check-layers.sh PLUGIN_DIR [CHECK_BINARY CHECK_OBJ... -- ONLINE_OBJ...]
#
# The architecture of plugin/, enforced (make check-layers, part of make test):
#  1. Includes go down the layers only. Each folder is a room and may include only the rooms
#     listed for it in allowed() below (and itself; system headers are not looked at):
#        cmd > agent > view, fleet > node > ena > cpu > klog;  memcg;  > check > host > base
#        agent > remediator > kube > host > base;  condition > base (the pure condition model)
#        (the Kubernetes rooms and the domain rooms never include each other; the agent calls
#        the remediator's per-node cycle when it remediates its own node)
#     The domain rooms (klog, cpu, memcg, ena) may read a lower domain's files but never its
#     check edge (check_*.h): ena links a reset to cpu's bursts and klog's incidents, cpu reads
#     klog's soft lockups; memcg stands alone. The table is a DAG, so there are no circles.
#  2. The objects of the static check binary (make's CHECK_OBJS) reference no libcurl
#     (curl_*), no libsystemd (sd_*), no libbpf (bpf_*, libbpf_*) and no dlopen/dlsym: an
#     undefined symbol of that kind in one of them is a check path that reaches the network or
#     systemd.
#  3. The check binary links no object of an online room ($CZ_ONLINE_ROOMS: the Makefile's
#     ONLINE_ROOMS) and holds no code of the online objects (those rooms, the online
#     subcommands, host/systemd.c): none of the functions they define is in its symbol table. (--gc-sections
#     drops what nothing reaches, so this is about what the checks actually call.)
# Prints one line per violation, then a summary; exit 1 on any violation.
set -u
dir=${1:?usage: check-layers.sh PLUGIN_DIR [CHECK_BINARY CHECK_OBJ... -- ONLINE_OBJ...]}
shift
bad=0

# allowed ROOM: the rooms ROOM may include besides itself (empty: not a room)
allowed() {
	case $1 in
	base) echo "" ;;
	host) echo "base" ;;
	check) echo "base host" ;;
	condition) echo "base" ;;
	kube) echo "base host" ;;
	klog) echo "base host check" ;;
	cpu) echo "base host check klog" ;;
	memcg) echo "base host check" ;;
	ena) echo "base host check klog cpu" ;;
	node) echo "base host check condition klog cpu memcg ena" ;;
	view) echo "base host check condition klog cpu memcg ena node" ;;
	remediator) echo "base host condition kube" ;;
	fleet) echo "base host check condition kube remediator" ;;
	agent) echo "base host check condition kube remediator klog cpu memcg ena node view fleet" ;;
	cmd) echo "base host check condition kube remediator klog cpu memcg ena node view fleet agent" ;;
	*) echo "-" ;;
	esac
}
domain() { case $1 in klog | cpu | memcg | ena) return 0 ;; esac; return 1; }

nfiles=0
for f in "$dir"/*/*.[ch]; do
	nfiles=$((nfiles + 1))
	from=$(basename "$(dirname "$f")")
	ok=$(allowed "$from")
	if [ "$ok" = - ]; then
		echo "check-layers: $f: '$from' is not a room (see allowed() in $0)"
		bad=$((bad + 1))
		continue
	fi
	while IFS=: read -r line inc; do
		to=${inc%%/*}
		if [ "$to" = "$inc" ]; then
			echo "check-layers: $f:$line: #include \"$inc\" names no room folder"
			bad=$((bad + 1))
			continue
		fi
		[ "$to" = "$from" ] && continue
		case " $ok " in
		*" $to "*)
			if domain "$from" && domain "$to" && [[ ${inc#*/} == check_* ]]; then
				echo "check-layers: $f:$line: $from/ includes another domain's check edge \"$inc\""
				bad=$((bad + 1))
			fi
			;;
		*)
			echo "check-layers: $f:$line: $from/ includes \"$inc\" (upward or sideways:" \
				"$from/ may include ${ok:-nothing} only)"
			bad=$((bad + 1))
			;;
		esac
	done < <(awk 'match($0, /^[ \t]*#[ \t]*include[ \t]*"[^"]*"/) {
		s = substr($0, RSTART, RLENGTH); sub(/^[^"]*"/, "", s); sub(/"$/, "", s)
		print FNR ":" s }' "$f")
done

nobjs=0
if [ $# -gt 0 ]; then
	bin=$1
	shift
	check=() online=()
	while [ $# -gt 0 ] && [ "$1" != -- ]; do check+=("$1"); shift; done
	[ $# -gt 0 ] && shift
	online=("$@")
	for o in "${check[@]}"; do
		nobjs=$((nobjs + 1))
		for r in ${CZ_ONLINE_ROOMS:-}; do
			case $o in
			*/obj/"$r"/*)
				echo "check-layers: $o (check binary) is an object of the online room $r/"
				bad=$((bad + 1))
				;;
			esac
		done
		refs=$(nm -u "$o" | awk '{print $NF}' | grep -E '^(curl_|sd_|bpf_|libbpf_|dlopen|dlsym|dlmopen|dlvsym)' |
			sort -u | tr '\n' ' ')
		if [ -n "$refs" ]; then
			echo "check-layers: $o (check binary) references $refs"
			bad=$((bad + 1))
		fi
	done
	if [ ${#online[@]} -gt 0 ]; then
		# functions the online objects define, and those the check binary has
		nm --defined-only "${online[@]}" | awk '$2 == "T" {print $3}' | sort -u \
			>"${TMPDIR:-/tmp}/cz-layers-online.$$"
		nm --defined-only "$bin" | awk '$2 ~ /^[Tt]$/ {print $3}' | sort -u |
			comm -12 - "${TMPDIR:-/tmp}/cz-layers-online.$$" >"${TMPDIR:-/tmp}/cz-layers-both.$$"
		if [ -s "${TMPDIR:-/tmp}/cz-layers-both.$$" ]; then
			echo "check-layers: $bin holds online code:" \
				"$(head -8 "${TMPDIR:-/tmp}/cz-layers-both.$$" | tr '\n' ' ')"
			bad=$((bad + 1))
		fi
		rm -f "${TMPDIR:-/tmp}/cz-layers-online.$$" "${TMPDIR:-/tmp}/cz-layers-both.$$"
	fi
fi

if [ "$bad" -gt 0 ]; then
	echo "check-layers: $bad violation(s)"
	exit 1
fi
echo "check-layers: $nfiles files include only down the layers; $nobjs check-binary objects" \
	"reference no libcurl, libsystemd, libbpf or dlopen"

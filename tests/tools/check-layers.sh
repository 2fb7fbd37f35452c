#!/usr/bin/env bash
# check-layers.sh PLUGIN_DIR [CHECK_BINARY CHECK_OBJ... -- ONLINE_OBJ...]
# check-layers.sh --graph PLUGIN_DIR: print the include graph of the rooms (below) and exit
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
#  4. No room holds more than ROOM_MAX_PCT (15) percent of the lines of plugin/ (.c and .h).
# Prints one line per violation, then a summary; exit 1 on any violation.
# --graph prints, per room, its files, lines, share of plugin/'s lines and the rooms it includes
# (with how many #include lines), then the arrows between rooms, those that run up (an include
# allowed() does not list), the circles (tsort's loops) and the biggest room's share.
set -u
graph=0
[ "${1:-}" = --graph ] && { graph=1; shift; }
dir=${1:?usage: check-layers.sh [--graph] PLUGIN_DIR [CHECK_BINARY CHECK_OBJ... -- ONLINE_OBJ...]}
shift
bad=0
ROOM_MAX_PCT=15

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
tmp=$(mktemp -d "${TMPDIR:-/tmp}/cz-layers.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
: >"$tmp/edges"
: >"$tmp/lines"
for f in "$dir"/*/*.[ch]; do
	nfiles=$((nfiles + 1))
	from=$(basename "$(dirname "$f")")
	echo "$from $(wc -l <"$f")" >>"$tmp/lines"
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
		up=1
		case " $ok " in *" $to "*) up=0 ;; esac
		echo "$from $to $up" >>"$tmp/edges"
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

# The graph of rooms: lines per room, arrows (room pairs, with their #include lines), the arrows
# that run up, the circles (tsort names the rooms of each loop) and the biggest room's share.
rooms=$(awk '{ n[$1] += $2; t += $2 } END { for (r in n) printf "%s %d %d\n", r, n[r], t }' \
	"$tmp/lines" | sort -k2,2nr -k1,1)
total=$(awk '{ t += $2 } END { print t + 0 }' "$tmp/lines")
sort "$tmp/edges" | uniq -c | awk '{ print $2, $3, $4, $1 }' >"$tmp/arrows"
narrows=$(wc -l <"$tmp/arrows")
nincs=$(awk '{ n += $4 } END { print n + 0 }' "$tmp/arrows")
nup=$(awk '$3 == 1' "$tmp/arrows" | wc -l)
loops=$(awk '{ print $1, $2 }' "$tmp/arrows" | tsort 2>&1 >/dev/null | grep -v 'input contains a loop' |
	sed 's/^tsort: //' | tr '\n' ' ')
loops=${loops% }
biggest=$(echo "$rooms" | head -1)
big_room=${biggest%% *}
big_lines=$(echo "$biggest" | awk '{ print $2 }')
big_pct=$(awk -v n="$big_lines" -v t="$total" 'BEGIN { printf "%.1f", t ? 100 * n / t : 0 }')
if [ $graph = 1 ]; then
	printf '%-11s %5s %6s %6s  %s\n' room files lines share 'includes (room:#include lines)'
	while read -r r n _; do
		nf=$(awk -v r="$r" '$1 == r' "$tmp/lines" | wc -l)
		to=$(awk -v r="$r" '$1 == r { printf "%s%s:%d", sep, $2, $4; sep = " " }' "$tmp/arrows")
		printf '%-11s %5d %6d %5.1f%%  %s\n' "$r" "$nf" "$n" \
			"$(awk -v n="$n" -v t="$total" 'BEGIN { print 100 * n / t }')" "${to:--}"
	done <<<"$rooms"
	echo "rooms $(echo "$rooms" | wc -l), files $nfiles, lines $total"
	echo "arrows $narrows between rooms ($nincs #include lines); up $nup;" \
		"circles ${loops:-none}"
	echo "biggest room $big_room: $big_pct% of the lines (at most $ROOM_MAX_PCT%)"
	exit 0
fi
if awk -v p="$big_pct" -v m="$ROOM_MAX_PCT" 'BEGIN { exit !(p > m) }'; then
	echo "check-layers: $dir/$big_room/ holds $big_pct% of the lines (at most $ROOM_MAX_PCT%)"
	bad=$((bad + 1))
fi
if [ -n "$loops" ]; then
	echo "check-layers: the rooms include each other in a circle: $loops"
	bad=$((bad + 1))
fi

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
			>"$tmp/online"
		nm --defined-only "$bin" | awk '$2 ~ /^[Tt]$/ {print $3}' | sort -u |
			comm -12 - "$tmp/online" >"$tmp/both"
		if [ -s "$tmp/both" ]; then
			echo "check-layers: $bin holds online code:" \
				"$(head -8 "$tmp/both" | tr '\n' ' ')"
			bad=$((bad + 1))
		fi
	fi
fi

if [ "$bad" -gt 0 ]; then
	echo "check-layers: $bad violation(s)"
	exit 1
fi
echo "check-layers: $nfiles files include only down the layers ($narrows arrows, no circle;" \
	"biggest room $big_room/ $big_pct% of the lines); $nobjs check-binary objects reference" \
	"no libcurl, libsystemd, libbpf or dlopen"

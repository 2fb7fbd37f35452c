#!/usr/bin/env bash
# check-layers.sh PLUGIN_DIR [CHECK_BINARY CHECK_OBJ... -- ONLINE_OBJ...]
#
# The architecture of plugin/, enforced (make check-layers, part of make test):
#  1. Includes go down the layers only. Top to bottom: cmd > agent > report > cluster|checks >
#     host > base; cluster and checks do not include each other. A file may include its own
#     layer and the layers below (#include "layer/file.h"; system headers are not looked at).
#  2. The objects of the static check binary (make's CHECK_OBJS) reference no libcurl
#     (curl_*), no libsystemd (sd_*), no libbpf (bpf_*, libbpf_*) and no dlopen/dlsym: an undefined symbol of that kind in
#     one of them is a check path that reaches the network or systemd.
#  3. The check binary holds no code of the online objects (agent/, the cluster transport,
#     host/systemd.c): none of the functions they define is in its symbol table. (--gc-sections
#     drops what nothing reaches, so this is about what the checks actually call.)
# Prints one line per violation, then a summary; exit 1 on any violation.
set -u
dir=${1:?usage: check-layers.sh PLUGIN_DIR [CHECK_BINARY CHECK_OBJ... -- ONLINE_OBJ...]}
shift
bad=0

rank() {
	case $1 in
	base) echo 0 ;; host) echo 1 ;; checks | cluster) echo 2 ;; report) echo 3 ;;
	agent) echo 4 ;; cmd) echo 5 ;; *) echo -1 ;;
	esac
}

nfiles=0
for f in "$dir"/*/*.[ch]; do
	nfiles=$((nfiles + 1))
	from=$(basename "$(dirname "$f")")
	rf=$(rank "$from")
	if [ "$rf" -lt 0 ]; then
		echo "check-layers: $f: '$from' is not a layer (base host checks cluster report agent cmd)"
		bad=$((bad + 1))
		continue
	fi
	while IFS=: read -r line inc; do
		to=${inc%%/*}
		if [ "$to" = "$inc" ]; then
			echo "check-layers: $f:$line: #include \"$inc\" names no layer folder"
			bad=$((bad + 1))
			continue
		fi
		rt=$(rank "$to")
		if [ "$rt" -lt 0 ] || [ "$rt" -gt "$rf" ] ||
			{ [ "$rt" -eq "$rf" ] && [ "$to" != "$from" ]; }; then
			echo "check-layers: $f:$line: $from/ includes \"$inc\" (upward or sideways:" \
				"cmd > agent > report > cluster|checks > host > base)"
			bad=$((bad + 1))
		fi
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

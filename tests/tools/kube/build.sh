#!/usr/bin/env bash
# Builds the real control plane the Kubernetes tests run on, from the Go modules at the versions
# in versions.sh, into $CZ_KUBE_CACHE/<name>-<version>/ (outside the clone: one build per machine
# and version). Prints the bin directory of each component, one "name=dir" line per component.
#   build.sh [all|kube|etcd|kwok|npd|npd-old]...     (default: all)
# all: what the control plane fixture starts (etcd, kube-apiserver and kube-controller-manager,
# kwok). The NPD releases are built where a test asks for them (npd_helpers.py); make test
# builds them in its node stage, beside the Kubernetes tests, not before them.
# The node's components (kubelet, containerd, runc, CNI) are built by ../node/build.sh with the
# same functions (this file, sourced, only defines them).
# Already built: nothing is done (a stamp file per component). Building says so on stderr with
# the time it took.
#
# Why go.mod files of our own: k8s.io/kubernetes replaces its staging modules (k8s.io/api, ...)
# with ./staging paths, and go.etcd.io/etcd/server/v3 replaces its siblings with ../ paths, so
# neither can be `go install`ed; a module of ours requires them and pins every replaced module
# to its published twin (staging v0.<minor>.<patch>, etcd's siblings at the same v3.6.x).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=versions.sh
. "$here/versions.sh"
export CGO_ENABLED=0 GOFLAGS=-mod=mod GOTOOLCHAIN=local
command -v go >/dev/null || PATH=$PATH:/usr/local/go/bin
command -v go >/dev/null || { echo "kube/build.sh: 'go' is required (Go 1.26)" >&2; exit 1; }

# The one module our own go.mod requires, plus "old => new" pins read from its go.mod's replace
# directives of local paths.
write_mod() {	# DIR MODULE VERSION PIN_VERSION
	local dir=$1 mod=$2 ver=$3 pin=$4 gomod
	gomod=$(go mod download -json "$mod@$ver" | sed -n 's/^\s*"GoMod": "\(.*\)",$/\1/p')
	[ -s "$gomod" ] || { echo "kube/build.sh: cannot download $mod@$ver" >&2; exit 1; }
	{
		echo "module cpuzombie.test/build"
		echo "go $(go env GOVERSION | sed 's/^go//')"
		echo "require $mod $ver"
		awk -v pin="$pin" '
			/^replace \(/ { inr = 1; next }
			inr && /^\)/ { inr = 0; next }
			{ line = $0; sub(/^replace /, "", line) }
			(inr || /^replace /) && line ~ /=> \.\.?\// && line !~ /FORBIDDEN/ {
				split(line, f, " "); print "replace " f[1] " => " f[1] " " pin }
		' "$gomod"
	} >"$dir/go.mod"
}

stamp_ok() { [ -f "$1/.built" ] && [ "$(cat "$1/.built")" = "$2" ]; }

# BUILD_TAGS (go build -tags) and BUILD_CGO (CGO_ENABLED, default 0) apply when set: runc needs
# cgo for its nsenter and libseccomp.
build_one() {	# NAME VERSION MODULE PIN_VERSION LDFLAGS PKG:OUT...
	local name=$1 ver=$2 mod=$3 pin=$4 ldflags=$5; shift 5
	local out=$CZ_KUBE_CACHE/$name-$ver want
	want="$ver $*"
	if stamp_ok "$out" "$want"; then echo "$name=$out/bin"; return; fi
	# CZ_KUBE_QUERY=1: only whether it is built (exit 3 when not), never a build
	[ -z "${CZ_KUBE_QUERY:-}" ] || exit 3
	# One build per component and version at a time: make test starts this build in the
	# background while test sessions that need it may ask for it too; the later ones wait here
	# and find it built.
	local lk
	mkdir -p "$CZ_KUBE_CACHE"
	exec {lk}>"$CZ_KUBE_CACHE/.lock-$name-$ver"
	flock "$lk"
	if stamp_ok "$out" "$want"; then exec {lk}>&-; echo "$name=$out/bin"; return; fi
	local t0=$SECONDS work
	echo "kube/build.sh: building $name $ver from $mod (first use on this machine)" >&2
	work=$(mktemp -d "$CZ_KUBE_CACHE/.build-$name.XXXXXX")
	# shellcheck disable=SC2064
	trap "rm -rf '$work'" RETURN
	if [ -n "$pin" ]; then
		write_mod "$work" "$mod" "$ver" "$pin"
	else
		printf 'module cpuzombie.test/build\ngo %s\nrequire %s %s\n' \
			"$(go env GOVERSION | sed 's/^go//')" "$mod" "$ver" >"$work/go.mod"
	fi
	mkdir -p "$work/bin"
	local p cgo=${BUILD_CGO:-0} tags=${BUILD_TAGS:-} pkgs=() outs=()
	for p in "$@"; do pkgs+=("${p%%:*}"); outs+=("${p#*:}"); done
	# One go build for a component's commands when each is named after its package (go build
	# -o dir/ names them so): the go command then compiles their shared packages and links the
	# binaries side by side on both cores, where one build after another links one at a time.
	local together=1
	for p in "$@"; do [ "${p#*:}" = "$(basename "${p%%:*}")" ] || together=0; done
	if [ $# -gt 1 ] && [ $together = 1 ]; then set -- "${pkgs[*]}:bin/"; else
		set --; for p in "${!pkgs[@]}"; do set -- "$@" "${pkgs[$p]}:bin/${outs[$p]}"; done
	fi
	for p in "$@"; do
		# shellcheck disable=SC2086 # the packages of one build, space-separated by us
		# -dwarf=false: the linker drops the DWARF anyway (-w); the compiler then need not
		# make it (a few per cent of a cold build's CPU). GOGC=400: the compiler collects a
		# quarter as often (kwok cold: 256 s of user CPU against 278 s, 0.85 GB at most)
		(cd "$work" && GOGC=${CZ_BUILD_GOGC:-400} CGO_ENABLED=$cgo go build -trimpath -tags "$tags" \
			-gcflags=all=-dwarf=false -ldflags "-s -w $ldflags" -o "${p##*:}" ${p%:*}) \
			>"$work/build.log" 2>&1 || {
			echo "kube/build.sh: building $name ${p%:*} failed; last lines:" >&2
			tail -n 20 "$work/build.log" >&2; exit 1; }
	done
	for p in "${outs[@]}"; do
		[ -x "$work/bin/$p" ] || { echo "kube/build.sh: building $name made no $p" >&2; exit 1; }
	done
	rm -rf "$out"
	mkdir -p "$out"
	mv "$work/bin" "$out/bin"
	echo "$want" >"$out/.built"
	echo "kube/build.sh: built $name $ver in $((SECONDS - t0)) s" >&2
	exec {lk}>&-
	echo "$name=$out/bin"
}

kube() {
	local v=${KUBE_VERSION#v} major minor
	major=${v%%.*}; minor=${v#*.}; minor=${minor%%.*}
	local x=k8s.io/component-base/version
	build_one kube "$KUBE_VERSION" k8s.io/kubernetes "v0.${v#*.}" \
		"-X $x.gitVersion=$KUBE_VERSION -X $x.gitMajor=$major -X $x.gitMinor=$minor -X $x.gitTreeState=clean" \
		k8s.io/kubernetes/cmd/kube-apiserver:kube-apiserver \
		k8s.io/kubernetes/cmd/kube-controller-manager:kube-controller-manager
}
etcd() {
	build_one etcd "$ETCD_VERSION" go.etcd.io/etcd/server/v3 "$ETCD_VERSION" "" \
		go.etcd.io/etcd/server/v3:etcd
}
kwok() {
	build_one kwok "$KWOK_VERSION" sigs.k8s.io/kwok "" \
		"-X sigs.k8s.io/kwok/pkg/consts.Version=$KWOK_VERSION" sigs.k8s.io/kwok/cmd/kwok:kwok
}
npd_at() {	# VERSION
	build_one npd "$1" k8s.io/node-problem-detector "" \
		"-X k8s.io/node-problem-detector/pkg/version.version=$1" \
		k8s.io/node-problem-detector/cmd/nodeproblemdetector:node-problem-detector
}
npd() { npd_at "$NPD_VERSION"; }
npd-old() { npd_at "$NPD_OLD_VERSION"; }

# Sourced (by ../node/build.sh): the functions only.
[ "${BASH_SOURCE[0]}" = "$0" ] || return 0

# all: the three side by side, the longest first. One go build leaves a core idle in its
# download and link phases and on its longest package chains; three fill them, and the
# control plane (on a fresh machine the longest path of make test, its Kubernetes e2e after it)
# takes the cores' share of three builds beside the tests, not of one.
all_at_once() {
	local pids=() p rc=0
	kube & pids+=($!)
	kwok & pids+=($!)
	etcd & pids+=($!)
	for p in "${pids[@]}"; do wait "$p" || rc=$?; done
	return $rc
}

[ $# -eq 0 ] && set -- all
for c in "$@"; do
	case $c in
	all) all_at_once ;;
	kube|etcd|kwok|npd|npd-old) "$c" ;;
	*) echo "kube/build.sh: unknown component '$c' (all, kube, etcd, kwok, npd, npd-old)" >&2
		exit 2 ;;
	esac
done

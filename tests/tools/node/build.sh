#!/usr/bin/env bash
# Builds the real node the Kubernetes tests run pods on, from the Go modules at the versions in
# ../kube/versions.sh, into $CZ_KUBE_CACHE/<name>-<version>/ beside the control plane (one build
# per machine and version, flock'd, a stamp per component; building says so on stderr with the
# time it took). Prints one "name=bin_dir" line per component.
#   build.sh [all|kubelet|kube-scheduler|containerd|runc|cni]...     (default: all)
#   kubelet     kubelet and kube-proxy from k8s.io/kubernetes at KUBE_VERSION (the control
#               plane's; staging modules pinned as ../kube/build.sh does)
#   kube-scheduler  from the same module: the control plane the other tests use binds their
#               pods itself (nodeName); a node's DaemonSet and Deployment need a scheduler
#   containerd  containerd, containerd-shim-runc-v2 and ctr (static, no cgo: as upstream ships)
#   runc        runc with cgo and libseccomp (tags seccomp; libpathrs, a Rust library, is left
#               out: runc then resolves paths with filepath-securejoin)
#   cni         the bridge, host-local, loopback and portmap plugins
set -euo pipefail
node_here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=../kube/build.sh
. "$node_here/../kube/build.sh"

kube_part() {	# NAME CMD...: commands of k8s.io/kubernetes at KUBE_VERSION
	local name=$1 v=${KUBE_VERSION#v} major minor x=k8s.io/component-base/version c cmds=()
	shift
	major=${v%%.*}; minor=${v#*.}; minor=${minor%%.*}
	for c in "$@"; do cmds+=("k8s.io/kubernetes/cmd/$c:$c"); done
	local ld="-X $x.gitVersion=$KUBE_VERSION -X $x.gitMajor=$major -X $x.gitMinor=$minor"
	build_one "$name" "$KUBE_VERSION" k8s.io/kubernetes "v0.${v#*.}" \
		"$ld -X $x.gitTreeState=clean" "${cmds[@]}"
}
kubelet() { kube_part kubelet kubelet kube-proxy; }
kube-scheduler() { kube_part kube-scheduler kube-scheduler; }
containerd() {
	local m=github.com/containerd/containerd/v2
	BUILD_TAGS="urfave_cli_no_docs osusergo netgo static_build no_btrfs" \
	build_one containerd "$CONTAINERD_VERSION" "$m" "" \
		"-X $m/version.Version=$CONTAINERD_VERSION -X $m/version.Package=$m" \
		"$m/cmd/containerd:containerd" "$m/cmd/ctr:ctr" \
		"$m/cmd/containerd-shim-runc-v2:containerd-shim-runc-v2"
}
runc() {
	[ -e /usr/include/seccomp.h ] || {
		echo "node/build.sh: runc needs libseccomp-dev (apt-get install libseccomp-dev)" >&2
		exit 1; }
	BUILD_CGO=1 BUILD_TAGS="seccomp urfave_cli_no_docs" \
	build_one runc "$RUNC_VERSION" github.com/opencontainers/runc "" \
		"-X main.version=${RUNC_VERSION#v}" github.com/opencontainers/runc:runc
}
cni() {
	local m=github.com/containernetworking/plugins p=() n
	for n in main/bridge ipam/host-local main/loopback meta/portmap; do
		p+=("$m/plugins/$n:${n#*/}")
	done
	build_one cni "$CNI_VERSION" $m "" \
		"-X $m/pkg/utils/buildversion.BuildVersion=$CNI_VERSION" "${p[@]}"
}

[ $# -eq 0 ] && set -- all
for c in "$@"; do
	case $c in
	all) runc; cni; containerd; kubelet; kube-scheduler ;;
	kubelet|kube-scheduler|containerd|runc|cni) "$c" ;;
	*) echo "node/build.sh: unknown component '$c'" \
		"(all, kubelet, kube-scheduler, containerd, runc, cni)" >&2
		exit 2 ;;
	esac
done

#!/usr/bin/env bash
# Builds the client-go informer of main.go into OUT (default build/bench-informer/informer),
# with client-go pinned to the staging version of the control plane the benchmarks run on
# (tests/tools/kube/versions.sh: Kubernetes v1.X.Y -> k8s.io/client-go v0.X.Y), from the Go
# module proxy like the control plane. Prints the binary's path. Built once per version.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
# shellcheck source=../../tools/kube/versions.sh
. "$root/tests/tools/kube/versions.sh"
export CGO_ENABLED=0 GOFLAGS=-mod=mod GOTOOLCHAIN=local
command -v go >/dev/null || PATH=$PATH:/usr/local/go/bin
out=${1:-$root/build/bench-informer/informer}
cg="v0.${KUBE_VERSION#v1.}"
want="$cg $(sha256sum "$here/main.go" | cut -c1-16)"
if [ -x "$out" ] && [ "$(cat "$out.built" 2>/dev/null)" = "$want" ]; then echo "$out"; exit 0; fi
work=$(mktemp -d /tmp/cz-informer-build.XXXXXX)
trap 'rm -rf "$work"' EXIT
sed -e "s/GOVERSION/$(go env GOVERSION | sed 's/^go//')/" -e "s/CLIENT_GO/$cg/" \
	"$here/go.mod.in" >"$work/go.mod"
cp "$here/main.go" "$work/"
mkdir -p "$(dirname "$out")"
(cd "$work" && go mod tidy >"$work/build.log" 2>&1 &&
	go build -trimpath -ldflags "-s -w" -o "$out" . >>"$work/build.log" 2>&1) || {
	echo "informer/build.sh: building the client-go informer failed; last lines:" >&2
	tail -n 20 "$work/build.log" >&2; exit 1; }
echo "$want" >"$out.built"
echo "$out"

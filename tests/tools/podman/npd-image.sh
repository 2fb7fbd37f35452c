#!/usr/bin/env bash
# A node-problem-detector image made from a real binary (v1.36.0, the version the chart
# deploys, or v1.34.0, built by tests/tools/kube/build.sh, or v0.8.20 from ../shared/bin;
# upstream's image is Debian bookworm with the binary at
# /node-problem-detector, the chart's command path). Usage: npd-image.sh NPD_BINARY IMAGE
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
export CONTAINERS_CONF=${CONTAINERS_CONF:-$here/containers.conf}
bin=${1:?usage: npd-image.sh NPD_BINARY IMAGE} image=${2:?usage: npd-image.sh NPD_BINARY IMAGE}
"$here/bases.sh"
ctx=$(mktemp -d)
trap 'rm -rf "$ctx"' EXIT
cp "$bin" "$ctx/node-problem-detector"
printf '%s\n' 'FROM docker.io/library/debian:bookworm-slim' \
	'COPY node-problem-detector /node-problem-detector' \
	'ENTRYPOINT ["/node-problem-detector"]' >"$ctx/Containerfile"
podman build -q --network host -f "$ctx/Containerfile" -t "$image" "$ctx" >/dev/null

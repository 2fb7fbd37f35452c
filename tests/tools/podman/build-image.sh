#!/usr/bin/env bash
# make image: builds manifests/image/Dockerfile with podman as IMAGE (default
# localhost/cpuzombie/cpuzombie:VERSION). podman's layer cache keeps the apt layers between
# runs; only a change under plugin/, config/ or manifests/image/ rebuilds the binary.
# Output in build/image-build.log. Usage: build-image.sh [IMAGE]
set -euo pipefail
root=$(cd "$(dirname "$0")/../../.." && pwd)
here=$root/tests/tools/podman
export CONTAINERS_CONF=${CONTAINERS_CONF:-$here/containers.conf}
image=${1:-localhost/cpuzombie/cpuzombie:$(cat "$root/VERSION")}
command -v podman >/dev/null || { echo "build-image: podman is not installed (make deps)" >&2; exit 1; }
"$here/bases.sh"
mkdir -p "$root/build"
log=$root/build/image-build.log
echo "build-image: building $image (log: $log)" >&2
if ! podman build --network host --layers -f "$root/manifests/image/Dockerfile" -t "$image" \
	"$root" >"$log" 2>&1; then
	tail -30 "$log" >&2
	exit 1
fi
echo "build-image: $image $(podman image inspect --format '{{.Id}}' "$image" | cut -c1-12)" >&2

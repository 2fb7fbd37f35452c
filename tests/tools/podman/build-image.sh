#!/usr/bin/env bash
# make image: builds manifests/image/Dockerfile with podman as IMAGE (default
# localhost/cpuzombie/cpuzombie:VERSION). podman's layer cache keeps the apt layers between
# runs; only a change under plugin/, config/ or manifests/image/ rebuilds the binary.
# Output in build/image-build.log. Usage: build-image.sh [IMAGE [STAGE]] (STAGE: build only up to
# that stage of the Dockerfile, e.g. staging for test_image.py's dpkg cross-check of the SBOM).
set -euo pipefail
root=$(cd "$(dirname "$0")/../../.." && pwd)
here=$root/tests/tools/podman
export CONTAINERS_CONF=${CONTAINERS_CONF:-$here/containers.conf}
image=${1:-localhost/cpuzombie/cpuzombie:$(cat "$root/VERSION")}
[ -z "${2:-}" ] || target=(--target "$2")
command -v podman >/dev/null || { echo "build-image: podman is not installed (make deps)" >&2; exit 1; }
"$here/bases.sh"
mkdir -p "$root/build"
log=$root/build/image-build${2:+-$2}.log
# The bases by digest where there is one (manifests/image/Dockerfile's header): a base that
# came from a registry is built FROM repository@sha256:<its manifest digest>; one bases.sh
# imported (debootstrap: its digest is of a local manifest no registry serves) by tag, with its
# image ID in the labels.
args=()
for b in BUILD_BASE=docker.io/library/debian:bookworm \
	RUNTIME_BASE=docker.io/library/debian:bookworm-slim; do
	var=${b%%=*} ref=${b#*=}
	id=$(podman image inspect --format '{{.Id}}' "$ref")
	hist=$(podman history --no-trunc --format '{{.Comment}}' "$ref")
	if [ "${hist%%$'\n'*}" = "imported from tarball" ]; then	# its top layer
		echo "build-image: $var $ref: built here (bases.sh), image ID sha256:$id" >&2
	else
		digest=$(podman image inspect --format '{{.Digest}}' "$ref")
		[[ $digest == sha256:* ]] || { echo "build-image: $ref: no digest" >&2; exit 1; }
		ref=${ref%:*}@$digest
		echo "build-image: $var $ref (from a registry), image ID sha256:$id" >&2
		[ "$var" = BUILD_BASE ] || args+=(--build-arg "RUNTIME_BASE_DIGEST=$digest")
	fi
	args+=(--build-arg "$var=$ref" --build-arg "${var}_ID=sha256:$id")
done
echo "build-image: building $image (log: $log)" >&2
args+=(--build-arg "VERSION=$(cat "$root/VERSION")" ${target[@]+"${target[@]}"})
if ! podman build --network host --layers "${args[@]}" -f "$root/manifests/image/Dockerfile" \
	-t "$image" "$root" >"$log" 2>&1; then
	tail -30 "$log" >&2
	exit 1
fi
echo "build-image: $image $(podman image inspect --format '{{.Id}}' "$image" | cut -c1-12)" >&2

#!/usr/bin/env bash
# The Debian bases the Dockerfiles start from, made locally when no registry is reachable:
# debootstrap --variant=minbase bookworm, imported as debian:bookworm and debian:bookworm-slim
# (with PATH set: an imported rootfs has no ENV, and podman kube play then finds no sh).
# Idempotent: nothing happens when both images exist. Where a registry is reachable, set
# CZ_PULL_BASES=1 to pull them instead.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
export CONTAINERS_CONF=${CONTAINERS_CONF:-$here/containers.conf}
if podman image exists docker.io/library/debian:bookworm &&
	podman image exists docker.io/library/debian:bookworm-slim; then
	exit 0
fi
if [ "${CZ_PULL_BASES:-0}" = 1 ]; then
	podman pull -q docker.io/library/debian:bookworm docker.io/library/debian:bookworm-slim
	exit 0
fi
root=$(mktemp -d /var/tmp/cz-debootstrap.XXXXXX)
trap 'rm -rf "$root"' EXIT
echo "bases: debootstrap --variant=minbase bookworm (about a minute)" >&2
debootstrap --variant=minbase bookworm "$root" >"$root.log" 2>&1 || { tail -20 "$root.log" >&2; exit 1; }
rm -f "$root.log"
rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/*
tar -C "$root" -c . | podman import -q \
	--change 'ENV=PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
	--change 'CMD=["bash"]' - docker.io/library/debian:bookworm >/dev/null
podman tag docker.io/library/debian:bookworm docker.io/library/debian:bookworm-slim
echo "bases: debian:bookworm and debian:bookworm-slim imported" >&2

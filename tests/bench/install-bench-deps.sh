#!/usr/bin/env bash
# Installs the Debian packages `make bench` needs, when missing and run as root (tests/bench/run.sh
# calls it). Idempotent and quiet when everything is there (one dpkg-query).
set -euo pipefail

pkgs=(
	gcc make python3 time			# build the floor binary and simday.c; GNU time for peak RSS
	valgrind				# callgrind instruction counts
	hyperfine				# wall time per exec
	sysstat					# mpstat, the naive per-core sampler
	ethtool iproute2			# the naive ENA plugin; the default route's NIC
	prometheus-node-exporter curl		# node_exporter (cpu + ethtool collectors), its scraper
)

missing=()
status=$(dpkg-query -W -f='${Package} ${db:Status-Abbrev}\n' "${pkgs[@]}" 2>/dev/null || true)
for p in "${pkgs[@]}"; do
	grep -qE "^$p ii" <<<"$status" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

if [ "$(id -u)" -ne 0 ]; then
	echo "install-bench-deps: missing Debian packages: ${missing[*]} (run as root, or apt-get install them)" >&2
	exit 1
fi
echo "install-bench-deps: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq >&2
# the Debian package starts node_exporter as a service on :9100; the bench runs its own copy on
# a free 127.0.0.1 port, so keep the packaged service from starting
printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d.cz-bench
chmod +x /usr/sbin/policy-rc.d.cz-bench
had_policy=0
[ -e /usr/sbin/policy-rc.d ] && had_policy=1
[ $had_policy -eq 1 ] || cp /usr/sbin/policy-rc.d.cz-bench /usr/sbin/policy-rc.d
rc=0
apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2 || rc=$?
[ $had_policy -eq 1 ] || rm -f /usr/sbin/policy-rc.d
rm -f /usr/sbin/policy-rc.d.cz-bench
exit $rc

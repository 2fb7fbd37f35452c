#!/usr/bin/env bash
# Installs the Debian packages that building and testing cpuzombie need, when missing and run as
# root. Idempotent and quiet when everything is there (one dpkg-query).
#   install-deps.sh                          the build and test packages below
#   install-deps.sh [--no-service-start] PKG...   these packages instead (make bench's list);
#        --no-service-start keeps a package's daemon from being started by its postinst
set -euo pipefail

no_start=0
if [ "${1:-}" = --no-service-start ]; then no_start=1; shift; fi

pkgs=(
	gcc make pkg-config
	libcurl4-openssl-dev libjson-c-dev libsystemd-dev libyaml-dev	# the product card's libraries
	libcmocka-dev python3 python3-pytest python3-yaml		# unit and end-to-end tests
	clang libclang-rt-14-dev					# libFuzzer targets
	sysstat ethtool iproute2 util-linux procps			# mpstat, ethtool -S, ip netns, taskset
	openssl ca-certificates unzip nodejs				# API emulator TLS, kubectl/helm from npm
	prometheus							# promtool
	systemd dbus							# a real systemd --user manager in tests
	hyperfine time valgrind						# make bench
	chromium							# renders the report's SVG heatmap
)

[ $# -gt 0 ] && pkgs=("$@")

missing=()
status=$(dpkg-query -W -f='${Package} ${db:Status-Abbrev}\n' "${pkgs[@]}" 2>/dev/null || true)
for p in "${pkgs[@]}"; do
	grep -qE "^$p ii" <<<"$status" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

if [ "$(id -u)" -ne 0 ]; then
	echo "install-deps: missing Debian packages: ${missing[*]} (run as root, or apt-get install them)" >&2
	exit 1
fi
echo "install-deps: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq >&2
if [ $no_start -eq 0 ] || [ -e /usr/sbin/policy-rc.d ]; then
	exec apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
fi
# policy-rc.d answering 101 tells invoke-rc.d not to start services (Debian policy 9.3.3)
printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d
chmod +x /usr/sbin/policy-rc.d
rc=0
apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2 || rc=$?
rm -f /usr/sbin/policy-rc.d
exit $rc

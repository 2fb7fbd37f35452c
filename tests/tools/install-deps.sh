#!/usr/bin/env bash
# Installs the Debian packages that building and testing cpuzombie need, when missing and run as
# root. Idempotent and quiet when everything is there (one dpkg-query).
set -euo pipefail

pkgs=(
	gcc make pkg-config
	libcurl4-openssl-dev libjson-c-dev libsystemd-dev libyaml-dev	# the product card's libraries
	libcmocka-dev python3 python3-pytest python3-yaml		# unit and end-to-end tests
	clang libclang-rt-14-dev					# libFuzzer targets
	sysstat ethtool iproute2 util-linux procps			# mpstat, ethtool -S, ip netns, taskset
	openssl ca-certificates unzip nodejs patchelf				# API emulator TLS, kubectl/helm from npm
	prometheus							# promtool
	systemd dbus							# a real systemd --user manager in tests
	hyperfine time valgrind						# make bench
	chromium							# renders the report's SVG heatmap
)

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
apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2

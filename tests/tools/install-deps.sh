#!/usr/bin/env bash
# Installs the Debian packages a make target needs, when missing and run as root. Idempotent and
# quiet when everything is there (one dpkg-query).
#   install-deps.sh GROUP...      build | run | test | image: the lists below (make run: build run;
#                                 make test: build test image)
#   install-deps.sh PKG...        these packages instead (make bench's list)
#   install-deps.sh --list GROUP...  print the packages, install nothing
#   (no argument: build test, the old behaviour)
# No install starts or enables a service: every apt-get call runs under a policy-rc.d that
# answers 101 (Debian policy 9.3.3: invoke-rc.d starts nothing), the machine's own policy-rc.d
# is put back afterwards, and a unit that a package's postinst enabled is disabled again.
set -euo pipefail

# Building the binary and the agent: the product card's libraries.
build=(gcc libc6-dev make pkg-config libcurl4-openssl-dev libjson-c-dev libsystemd-dev libyaml-dev)
# Running the report (make run): nothing beyond the build; ethtool data comes from the ioctl.
run=()
# The tests: unit, end-to-end, fuzz smoke, and the extras some tests use.
test=(
	libcmocka-dev python3 python3-pytest python3-yaml		# unit and end-to-end tests
	python3-pytest-xdist		# the Kubernetes e2e in two workers (tests/tools/stages.py)
	clang libclang-rt-14-dev					# libFuzzer targets
	bpftool libbpf-dev		# the zombie census (with clang): built when these are there
	qemu-system-x86 busybox-static	# the census on pure cgroup v2 in a VM (test_census_v2)
	e2fsprogs			# mkfs.ext4: the reclaim VM's disk (test_reclaim_v2)
	sysstat ethtool iproute2 util-linux procps			# mpstat, ethtool -S, ip netns, taskset
	openssl ca-certificates unzip nodejs				# the test CA's TLS, kubectl/helm from npm
	prometheus							# promtool (its server is not started)
	systemd dbus							# a real systemd --user manager in tests
	valgrind							# test_valgrind
	chromium							# renders the report's SVG heatmap
	tmux								# drives `cpuzombie top` in a real terminal (test_top)
	libseccomp-dev			# runc of the real node, built with cgo (tests/tools/node/build.sh)
)
# The image tests (make image, test_image.py): podman with runc, bases from debootstrap.
image=(podman runc debootstrap)

pkgs=()
list=0
[ $# -eq 0 ] && set -- build test
for a in "$@"; do
	case $a in
	build) pkgs+=("${build[@]}") ;;
	run) pkgs+=("${run[@]+"${run[@]}"}") ;;
	test) pkgs+=("${test[@]}") ;;
	image) pkgs+=("${image[@]}") ;;
	--no-service-start) ;;		# the old flag: every call is like that now
	--list) list=1 ;;
	*) pkgs+=("$a") ;;
	esac
done
if [ $list -eq 1 ]; then	# --list: print the packages asked for, install nothing
	printf '%s\n' "${pkgs[@]+"${pkgs[@]}"}"
	exit 0
fi
[ ${#pkgs[@]} -eq 0 ] && exit 0

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
echo "install-deps: installing ${missing[*]} (output in /tmp/cz-install-deps.log)" >&2
export DEBIAN_FRONTEND=noninteractive

policy=${CZ_POLICY_RC_D:-/usr/sbin/policy-rc.d}	# (tests point these two elsewhere)
units_dir=${CZ_SYSTEMD_ETC:-/etc/systemd/system}
saved=
if [ -e "$policy" ] || [ -L "$policy" ]; then
	saved=$(mktemp "$(dirname "$policy")/.policy-rc.d.cpuzombie.XXXXXX")
	cp -a "$policy" "$saved"
fi
restore() {
	if [ -n "$saved" ]; then mv -f "$saved" "$policy"; else rm -f "$policy"; fi
}
trap restore EXIT
printf '#!/bin/sh\n# cpuzombie install-deps: start no service while installing\nexit 101\n' >"$policy"
chmod 0755 "$policy"

# The units enabled before, to disable only what this install enabled.
enabled_units() {
	find "$units_dir" -type l \( -name '*.service' -o -name '*.socket' -o -name '*.timer' \
		-o -name '*.path' \) -printf '%f\n' 2>/dev/null | sort -u
}
before=$(enabled_units)

log=/tmp/cz-install-deps.log
rc=0
{ apt-get update -qq && apt-get install -y -qq --no-install-recommends "${missing[@]}"; } \
	>"$log" 2>&1 || rc=$?
if [ $rc -ne 0 ]; then
	tail -20 "$log" >&2
	exit $rc
fi
for u in $(comm -13 <(echo "$before") <(enabled_units)); do
	echo "install-deps: disabling $u, enabled by a package's postinst" >&2
	# (and tell deb-systemd-helper, so an upgrade does not enable it again)
	if [ "$units_dir" = /etc/systemd/system ] && command -v deb-systemd-helper >/dev/null; then
		deb-systemd-helper disable "$u" >/dev/null 2>&1 || true
	fi
	find "$units_dir" -type l -name "$u" -delete
done
exit 0

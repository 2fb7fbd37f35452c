#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Boots Debian's kernel on pure cgroup v2 in qemu and runs one guest script there: the zombie
# census (tests/e2e/test_census_v2.py, guest /init census-v2-init.sh, the default) or reclaim
# (tests/e2e/test_reclaim_v2.py, reclaim-v2-init.sh), chosen by CZVM_INIT.
#
#   census-v2-vm.sh CPUZOMBIE OUTDIR
#
# CPUZOMBIE is the binary under test (its shared libraries are copied in through ldd; a static
# cpuzombie-check beside it is copied too). The kernel is the vmlinuz of the package that
# Debian's linux-image-amd64 depends on, fetched with `apt-get download` (never installed) and
# kept in CZ_VM_CACHE (default /var/cache/cpuzombie/vm) under its package version.
# The environment chooses the rest:
#   CZVM_INIT     the guest's /init: a file next to this script (default census-v2-init.sh)
#   CZVM_MODULES  kernel modules the guest needs ("virtio_pci virtio_blk ext4"): taken with
#                 their dependencies from the same package (cached beside the vmlinuz), put in
#                 the initramfs, and listed in load order in /etc/czvm-modules for the guest
#   CZVM_DISK     a raw disk image attached as a virtio disk (/dev/vda in the guest)
#   CZVM_FILES    "SRC:DST ..." more files for the guest (the flood's own module, soak_vm.py)
#   CZVM_*        the guest's parameters, in its /etc/czvm.conf without the prefix (the census's
#                 zombies: CZVM_NAME, CZVM_FLAT, CZVM_NESTS, CZVM_PER_NEST, CZVM_SIZE)
# Writes OUTDIR/console.log (the guest's serial console) and OUTDIR/accel (kvm or tcg).
# Exit 0: the guest ran (the test judges the console); 77: skipped, the reason on the last line
# of stdout ("SKIP: ..."); anything else: a failure, the reason on stderr.
set -euo pipefail

cz=${1:?usage: census-v2-vm.sh CPUZOMBIE OUTDIR}
out=${2:?usage: census-v2-vm.sh CPUZOMBIE OUTDIR}
here=$(cd "$(dirname "$0")" && pwd)
cache=${CZ_VM_CACHE:-/var/cache/cpuzombie/vm}

skip() {
	echo "SKIP: $*"
	exit 77
}

[ "$(id -u)" -eq 0 ] || skip "needs root (apt-get download into the cache, qemu with /dev/kvm)"
command -v qemu-system-x86_64 >/dev/null || skip "no qemu-system-x86_64 (Debian qemu-system-x86)"
[ -x /bin/busybox ] && ! ldd /bin/busybox >/dev/null 2>&1 ||
	skip "no static /bin/busybox (Debian busybox-static)"
[ -x "$cz" ] || { echo "no binary at $cz" >&2; exit 2; }
init=${CZVM_INIT:-census-v2-init.sh}
[ -f "$here/$init" ] || { echo "no guest script $here/$init (CZVM_INIT)" >&2; exit 2; }
disk=${CZVM_DISK:-}
[ -z "$disk" ] || [ -f "$disk" ] || { echo "no disk image at $disk (CZVM_DISK)" >&2; exit 2; }
read -r -a want_mods <<<"${CZVM_MODULES:-}"
mkdir -p "$out" "$cache"

# -- the kernel: linux-image-amd64's dependency, its vmlinuz cached by package version --------
kernel_pkg() {
	apt-cache depends linux-image-amd64 2>/dev/null |
		awk '$1 == "Depends:" && $2 ~ /^linux-image-[0-9]/ { print $2; exit }'
}
download() {	# download DIR PKG: the .deb into DIR
	# (stale lists name a version the mirror dropped: update once and retry)
	(cd "$1" && apt-get download -qq -o APT::Sandbox::User=root "$2" >/dev/null 2>&1) && return
	apt-get update -qq >/dev/null 2>&1 || true
	(cd "$1" && apt-get download -qq -o APT::Sandbox::User=root "$2" >/dev/null 2>&1)
}
# modules_closure TREE NAME...: the .ko files (relative to TREE, the package's
# lib/modules/<version>) that NAME... need, dependencies first, from TREE/modules.dep
modules_closure() {
	local tree=$1 k v name p
	shift
	declare -A dep=() seen=() byname=()
	while IFS= read -r k; do
		v=${k#*:}
		k=${k%%:*}
		dep[$k]=$v
		name=${k##*/}
		name=${name%.ko*}
		byname[${name//-/_}]=$k
	done <"$tree/modules.dep"
	visit() {
		local d
		[ -n "${seen[$1]:-}" ] && return 0
		seen[$1]=1
		for d in ${dep[$1]}; do visit "$d"; done
		echo "$1"
	}
	for name in "$@"; do
		p=${byname[${name//-/_}]:-}
		[ -n "$p" ] || { echo "no module $name in the kernel package" >&2; return 1; }
		visit "$p"
	done
}
fetch_kernel() {	# prints the cached vmlinuz path; the .deb itself is not kept (70 MB)
	local pkg ver f dl mods key tree
	pkg=$(kernel_pkg)
	if [ -z "$pkg" ]; then
		apt-get update -qq >/dev/null 2>&1 || true
		pkg=$(kernel_pkg)
	fi
	[ -n "$pkg" ] || return 1
	ver=$(apt-cache policy "$pkg" | awk '$1 == "Candidate:" { print $2 }')
	f="$cache/vmlinuz-${pkg}_${ver//[^A-Za-z0-9.+~-]/_}"
	# the modules asked for so far, with their dependencies and a list in load order per set
	mods="$cache/modules-${pkg}_${ver//[^A-Za-z0-9.+~-]/_}"
	key=$(printf '%s\n' "${want_mods[@]}" | sort -u | tr '\n' ' ' | tr -c 'A-Za-z0-9_-' _)
	if [ ! -s "$f" ] || { [ ${#want_mods[@]} -gt 0 ] && [ ! -s "$mods/$key.order" ]; }; then
		dl=$(mktemp -d "$cache/dl.XXXXXX")
		download "$dl" "$pkg" || { rm -rf "$dl"; return 1; }
		if [ ! -s "$f" ]; then
			dpkg-deb --fsys-tarfile "$dl"/*.deb | tar -x -C "$dl" --wildcards './boot/vmlinuz-*'
			mv "$dl"/boot/vmlinuz-* "$f.tmp" && mv "$f.tmp" "$f"
		fi
		if [ ${#want_mods[@]} -gt 0 ]; then
			# the package has no modules.dep (depmod writes it at install): busybox's
			# depmod writes one for the unpacked tree
			dpkg-deb --fsys-tarfile "$dl"/*.deb | tar -x -C "$dl" './lib/modules'
			tree=$(echo "$dl"/lib/modules/*)
			busybox depmod -b "$dl" "${tree##*/}" || { rm -rf "$dl"; return 1; }
			modules_closure "$tree" "${want_mods[@]}" >"$dl/order" || { rm -rf "$dl"; return 1; }
			mkdir -p "$mods"
			(cd "$tree" && xargs -a "$dl/order" cp --parents -t "$mods/")
			echo "${tree##*/}" >"$mods/version"
			mv "$dl/order" "$mods/$key.order"
		fi
		rm -rf "$dl"
	fi
	echo "$f"
	[ ${#want_mods[@]} -eq 0 ] || echo "$mods" "$mods/$key.order"
}
exec 8>"$cache/.lock"
flock 8	# two checkouts fetching at once share one download
fetched=$(fetch_kernel) ||
	skip "could not fetch Debian's kernel package (apt-get download linux-image-amd64's dependency)"
flock -u 8
kernel=$(sed -n 1p <<<"$fetched")
echo "kernel: $kernel" >"$out/kernel"

# -- the initramfs: busybox, the binary with its libraries, /init ------------------------------
root="$out/root"
rm -rf "$root"
mkdir -p "$root"/{bin,cz,etc,proc,sys,dev,run,tmp,var/lib}
cp /bin/busybox "$root/bin/busybox"
cp "$here/$init" "$root/init"
chmod 0755 "$root/init"
mkdir -p "$root/lib"
cp "$here/guest-lib.sh" "$root/lib/czvm.sh"
for f in ${CZVM_FILES:-}; do
	mkdir -p "$root$(dirname "${f#*:}")" && cp "${f%%:*}" "$root${f#*:}"
done
: >"$root/etc/czvm-modules"
if [ ${#want_mods[@]} -gt 0 ]; then
	read -r mods order <<<"$(sed -n 2p <<<"$fetched")"
	kver=$(cat "$mods/version")
	while read -r m; do
		mkdir -p "$root/lib/modules/$kver/$(dirname "$m")"
		cp "$mods/$m" "$root/lib/modules/$kver/$m"
		echo "/lib/modules/$kver/$m" >>"$root/etc/czvm-modules"
	done <"$order"
fi
cp "$cz" "$root/cz/cpuzombie"
if [ -x "$(dirname "$cz")/cpuzombie-check" ]; then
	cp "$(dirname "$cz")/cpuzombie-check" "$root/cz/cpuzombie-check"
fi
for bin in "$root"/cz/*; do
	# "name => /path (addr)" and the loader's own "/path (addr)"; vdso has no path
	ldd "$bin" 2>/dev/null | awk '{ for (i = 1; i <= NF; i++) if ($i ~ /^\//) print $i }' |
		while read -r lib; do
			mkdir -p "$root$(dirname "$lib")"
			cp -L "$lib" "$root$lib"
		done
done
cat >"$root/etc/czvm.conf" <<EOF
NAME=${CZVM_NAME:-czvmcensus}
FLAT=${CZVM_FLAT:-20}
NESTS=${CZVM_NESTS:-2}
PER_NEST=${CZVM_PER_NEST:-5}
SIZE=${CZVM_SIZE:-65536}
EOF
# the guest script's own parameters: every other CZVM_ variable, quoted for its shell
for v in $(compgen -v CZVM_); do
	case ${v#CZVM_} in NAME | FLAT | NESTS | PER_NEST | SIZE | INIT | MODULES | DISK | FILES) continue ;; esac
	printf '%s=%q\n' "${v#CZVM_}" "${!v}" >>"$root/etc/czvm.conf"
done
printf 'cpu:\n  inline_window: 1s\nmemcg:\n  systemd_hints: false\n  min_dying: 5\n  max_ratio: 0.001\n  census_interval: 10m\n' \
	>"$root/etc/cz.yaml"
printf 'cpu:\n  inline_window: 1s\nmemcg:\n  systemd_hints: false\n  min_dying: 5\n  max_ratio: 0.001\n  census_interval: 0\n' \
	>"$root/etc/cz-nocensus.yaml"
(cd "$root" && find . | busybox cpio -o -H newc -R 0:0 2>/dev/null) >"$out/initrd.cpio"

# -- boot: KVM, else TCG ----------------------------------------------------------------------
qpid=
stuck=
trap '[ -n "$qpid" ] && kill "$qpid" 2>/dev/null; true' EXIT	# never leave a guest behind
began() { grep -q '^CZVM begin' "$out/console.log" 2>/dev/null; }
boot() {	# accel seconds-to-begin seconds-in-all: 0 when the guest ran to its end
	local accel=$1 wait_begin=$2 t=$3 cpu=max i
	[ "$accel" = kvm ] && cpu=host
	rm -f "$out/console.log"
	qemu-system-x86_64 -accel "$accel" -cpu "$cpu" -m 1024 -smp 1 \
		-nodefaults -no-user-config -display none -no-reboot -serial "file:$out/console.log" \
		-kernel "$kernel" -initrd "$out/initrd.cpio" \
		${disk:+-drive "file=$disk,if=virtio,format=raw,cache=unsafe"} \
		-append "console=ttyS0 panic=-1 loglevel=4 cgroup_no_v1=all rdinit=/init" \
		>"$out/qemu-$accel.log" 2>&1 &
	qpid=$!
	for ((i = 0; i < t * 5; i++)); do
		kill -0 "$qpid" 2>/dev/null || break
		# a guest that has not reached /init by then is stuck (seen: nested KVM under
		# Firecracker hangs right after the decompressor), not slow
		[ "$i" -ge $((wait_begin * 5)) ] && ! began && break
		sleep 0.2
	done
	stuck=
	if kill "$qpid" 2>/dev/null; then
		began && echo "qemu ($accel): the guest did not finish in $t s" >&2 ||
			{ stuck=1; echo "qemu ($accel): the guest did not reach /init in $wait_begin s" >&2; }
	fi
	wait "$qpid" 2>/dev/null || true
	qpid=
	began && grep -q '^CZVM end' "$out/console.log"
}
accel=kvm
# A host whose KVM hung a guest before (nested KVM under Firecracker, this project's CI) is
# remembered per host kernel and qemu: every later boot goes straight to TCG, instead of
# spending the probe's 15 s with a core at 100% system time (which other tests would see as a
# saturation burst if they ran beside it).
hung="$cache/kvm-hangs-$(uname -r)-$(qemu-system-x86_64 --version | head -1 | tr -c 'A-Za-z0-9.\n' _)"
[ -e "$hung" ] && echo "KVM hung a guest on this host before ($hung): TCG" >&2
if [ -e "$hung" ] || ! { [ -w /dev/kvm ] && boot kvm "${CZ_VM_BEGIN_KVM:-15}" "${CZ_VM_TIMEOUT_KVM:-180}"; }; then
	if [ ! -e "$hung" ] && began; then	# KVM booted it and it did not finish: a failure
		echo "the guest did not finish under KVM (console in $out/console.log)" >&2
		exit 1
	fi
	[ -n "${stuck:-}" ] && : >"$hung"	# KVM ran, the guest never reached /init
	# KVM refused or hung (no module, nested virtualization off or broken): TCG, slower
	echo "falling back to TCG" >&2
	accel=tcg
	if ! boot tcg "${CZ_VM_BEGIN_TCG:-300}" "${CZ_VM_TIMEOUT_TCG:-900}"; then
		began || skip "neither KVM nor TCG booted the guest (qemu said:" \
			"$(tail -c 200 "$out/qemu-tcg.log" | tr '\n' ' '))"
		echo "the guest did not finish under TCG (console in $out/console.log)" >&2
		exit 1
	fi
fi
echo "$accel" >"$out/accel"
exit 0

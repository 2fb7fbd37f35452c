# SPDX-License-Identifier: MIT
# Shared by the guests' /init scripts (census-v2-init.sh, reclaim-v2-init.sh), sourced from
# /lib/czvm.sh: the base mounts, the serial-console protocol ("CZVM <tag> <text>" lines, which
# the tests parse) and the power-off at the end.

# proc, sys, dev, tmpfs /run and /tmp, the state dirs, and /etc/czvm.conf's parameters
czvm_setup() {
	/bin/busybox --install -s /bin
	export PATH=/bin
	mount -t proc proc /proc
	mount -t sysfs sysfs /sys
	mount -t devtmpfs dev /dev 2>/dev/null
	mount -t tmpfs tmpfs /run
	mount -t tmpfs tmpfs /tmp
	mkdir -p /var/lib/cz /run/cz /data
	. /etc/czvm.conf
}

say() { echo "CZVM $*"; }
# a file as "CZVM <tag> <line>" lines, so kernel messages on the same console cannot pass for it
show() { sed "s/^/CZVM $1 /" "$2" 2>/dev/null || say "$1-missing $2"; }
finish() {
	dmesg | grep -iE 'bpf|cgroup|memcg|oops|bug|warn' | tail -40 | sed 's/^/CZVM dmesg /'
	say end
	sync
	poweroff -f
	echo o >/proc/sysrq-trigger
	sleep 60
}

# the modules census-v2-vm.sh put in, in load order (CZVM_MODULES); "CZVM fail" on a refusal
load_modules() {
	while read -r m; do
		insmod "$m" || { say fail insmod "$m"; return 1; }
	done </etc/czvm-modules
}

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

# charge REL FILE: a shell moves itself into CG/REL, writes SIZE bytes to /data/FILE (page cache
# charged to the memcg), with CZVM_CHARGE_SYNC=1 syncs it (clean, reclaimable: reclaim-v2-init.sh
# says why sync and not fsync), moves back to the root (the one cgroup with controllers in
# subtree_control that may hold processes), and the cgroup is rmdir'd: a dying memcg.
charge() {
	mkdir "$CG/$1" || return 1
	sh -c "echo \$\$ >'$CG/$1/cgroup.procs' && \
		dd if=/dev/zero of='/data/$2' bs=4096 count=$((SIZE / 4096)) 2>/dev/null && \
		{ [ '${CZVM_CHARGE_SYNC:-0}' != 1 ] || sync; }; \
		echo \$\$ >'$CG/cgroup.procs'" || return 1
	rmdir "$CG/$1"
}

# zombies NAME FLAT NESTS PER_NEST: NAME/ga-* and NAME/nest-*/nb-* dying (the nest-* parents
# dying too, after their children), and NAME/live-a live beside them
zombies() {
	mkdir "$CG/$1" && echo +memory >"$CG/$1/cgroup.subtree_control" || return 1
	i=0
	while [ $i -lt "$2" ]; do
		charge "$1/ga-$i" "$1-ga-$i" || return 1
		i=$((i + 1))
	done
	j=0
	while [ $j -lt "$3" ]; do
		mkdir "$CG/$1/nest-$j" && echo +memory >"$CG/$1/nest-$j/cgroup.subtree_control" ||
			return 1
		i=0
		while [ $i -lt "$4" ]; do
			charge "$1/nest-$j/nb-$i" "$1-nb-$j-$i" || return 1
			i=$((i + 1))
		done
		rmdir "$CG/$1/nest-$j" || return 1	# a dying parent of dying children
		j=$((j + 1))
	done
	mkdir "$CG/$1/live-a"	# one live memcg beside them: never listed as dying
}

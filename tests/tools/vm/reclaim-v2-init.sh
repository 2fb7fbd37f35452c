#!/bin/busybox sh
# SPDX-License-Identifier: MIT
# /init of the reclaim VM (tests/tools/vm/census-v2-vm.sh with CZVM_INIT=reclaim-v2-init.sh,
# tests/e2e/test_reclaim_v2.py): remediation.reclaim on pure cgroup v2 with a real kernel.
# The zombies must pin reclaimable page cache: tmpfs pages (the census VM's) are freed by no
# reclaim without swap, and the initramfs root is no better. So the test attaches an ext4 disk
# image (/dev/vda; virtio and ext4 are modules in Debian's kernel, loaded from
# /etc/czvm-modules), and each zombie writes its file there and syncs before it dies, and two
# journal commits follow: clean and settled, as a real zombie's old pages are.
# Two sets of named zombies: A (NAME, FLAT, NESTS, PER_NEST) and B (B_NAME, B_FLAT, B_NESTS,
# B_PER_NEST), A the larger, so the subtree holding most is A's. Then:
#   mr: `agent --once` with remediation.reclaim memory.reclaim: A's subtree only, B untouched;
#   dc: `agent --once` with drop_caches (fresh state): B's (and what A left) go too.
# Each phase prints the agent's stdout, its reclaim state, the census it published after the
# reclaim, and cgroup.stat and memory.stat before and after, as "CZVM <phase>-<what>" lines.
. /lib/czvm.sh	# czvm_setup say show finish load_modules (guest-lib.sh)
czvm_setup

say begin kernel $(uname -r)
load_modules || finish
mount -t ext4 /dev/vda /data || { say fail mount ext4 /dev/vda; finish; }
grep ' /data ' /proc/mounts | sed 's/^/CZVM data /'
mount -t cgroup2 cgroup2 /sys/fs/cgroup || { say fail mount cgroup2; finish; }
CG=/sys/fs/cgroup
echo +memory >$CG/cgroup.subtree_control || { say fail enable memory at the root; finish; }
show proc-cgroups /proc/cgroups

# guest-lib.sh's charge() and zombies(), with CZVM_CHARGE_SYNC=1: each zombie syncs its file
# (clean page cache charged to the memcg) before it moves out.
# sync, not just the file's fsync: fsync writes the pages but leaves the inode on the memcg's
# writeback list, and the kernel moves only clean inodes to the parent's writeback when the
# memcg dies; a dirty one keeps the dead memcg's writeback, and so the memcg, until the inode
# is evicted (measured: with fsync alone, drop_caches freed the page cache of the last set made
# and none of its 15 zombies in 3 of 5 boots; drop_caches=2, the inodes, then freed 14 of the
# 16 left in both boots that tried it)
CZVM_CHARGE_SYNC=1

# counts PHASE WHEN: the root's and each set's cgroup.stat, and each set's file pages
counts() {
	show "$1-root-$2" $CG/cgroup.stat
	for n in "$NAME" "$B_NAME"; do
		sed "s/^/CZVM $1-stat-$2 $n /" $CG/$n/cgroup.stat
		grep -E '^(file|active_file|inactive_file) ' $CG/$n/memory.stat |
			sed "s/^/CZVM $1-mem-$2 $n /"
	done
}

# phase PHASE METHOD: one agent cycle with remediation.reclaim METHOD, its own state and run dir
phase() {
	mkdir -p /var/lib/cz-$1 /run/cz-$1
	printf '%s\n' 'cpu:' '  inline_window: 1s' '  min_burst: 1h' 'memcg:' \
		'  systemd_hints: false' '  census_interval: 10m' '  min_dying: 5' \
		'  max_ratio: 0.001' 'remediation:' "  reclaim: $2" '  for: 0s' >/etc/cz-$1.yaml
	counts "$1" before
	/cz/cpuzombie --config /etc/cz-$1.yaml --state-dir /var/lib/cz-$1 --run-dir /run/cz-$1 \
		agent --once >/tmp/$1.out 2>/tmp/$1.err
	say "$1-rc" $?
	counts "$1" after
	show "$1-out" /tmp/$1.out
	show "$1-err" /tmp/$1.err
	show "$1-state" /var/lib/cz-$1/reclaim
	show "$1-census" /run/cz-$1/memcg-census
	sleep 5	# what the kernel frees later than the agent's wait (at most 5 s) says it is done
	show "$1-root-later" $CG/cgroup.stat
}

zombies "$NAME" "$FLAT" "$NESTS" "$PER_NEST" && zombies "$B_NAME" "$B_FLAT" "$B_NESTS" "$B_PER_NEST" ||
	{ say fail making the zombies; finish; }
# Clean and old, as a real zombie's pages are: sync writes back the data and the metadata their
# files dirtied (inode, bitmap and directory blocks, charged to whichever zombie first read
# them), and the journal keeps those blocks on its checkpoint list, unfreeable, until a later
# commit drops them (measured: with one sync, drop_caches left 4 of 32 that it frees after two
# more commits). Two more commits, as any later activity on the filesystem makes.
sync
touch /data/.commit-1 && sync
touch /data/.commit-2 && sync
say made a=$NAME/$FLAT/$NESTS/$PER_NEST b=$B_NAME/$B_FLAT/$B_NESTS/$B_PER_NEST size=$SIZE
phase mr memory.reclaim
phase dc drop_caches
# not the product (it never drops slab): what stays once all their page cache went, if
# anything, is pinned by something else, and drop_caches=2 (dentries, inodes) says whether that
# is their files' inodes (their cgroup-writeback association holds the memcg)
show slab-before $CG/cgroup.stat
echo 2 >/proc/sys/vm/drop_caches
sleep 3
show slab-after $CG/cgroup.stat
finish

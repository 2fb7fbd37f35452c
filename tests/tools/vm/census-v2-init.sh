#!/bin/busybox sh
# SPDX-License-Identifier: MIT
# /init of the pure cgroup v2 VM (tests/tools/vm/census-v2-vm.sh, tests/e2e/test_census_v2.py).
# Mounts cgroup2 at /sys/fs/cgroup (the kernel boots with cgroup_no_v1=all: no v1 hierarchy at
# all), enables +memory down a private parent, makes real dying memcgs one and two levels down
# (mkdir, a process inside charges tmpfs page cache, the process moves out, rmdir), runs one
# census with the agent, then `check memcg` twice (with the census, and without it: the
# nr_dying_descendants path and its subtree hint), and prints everything on the serial console
# as "CZVM <what> <text>" lines that the test parses. Powers off at the end, whatever happened.
. /lib/czvm.sh	# czvm_setup say show finish (guest-lib.sh)
czvm_setup	# NAME FLAT NESTS PER_NEST SIZE from /etc/czvm.conf (written by census-v2-vm.sh)
mount -t tmpfs tmpfs /data

say begin kernel $(uname -r)
mount -t cgroup2 cgroup2 /sys/fs/cgroup || { say fail mount cgroup2; finish; }
CG=/sys/fs/cgroup
echo +memory >$CG/cgroup.subtree_control || { say fail enable memory at the root; finish; }
show proc-cgroups /proc/cgroups
grep cgroup /proc/self/mountinfo | sed 's/^/CZVM mountinfo /'

# the zombies: guest-lib.sh's zombies(), charged with tmpfs pages (pinned after rmdir: tmpfs
# pages are never written back), which is all the census needs
zombies "$NAME" "$FLAT" "$NESTS" "$PER_NEST" || { say fail making the zombies; finish; }
say made name=$NAME flat=$FLAT nests=$NESTS per_nest=$PER_NEST size=$SIZE
show root-cgroup-stat $CG/cgroup.stat
show parent-cgroup-stat $CG/$NAME/cgroup.stat
say parent-memory-current $(cat $CG/$NAME/memory.current)

cz() { /cz/cpuzombie --config /etc/cz.yaml --state-dir /var/lib/cz --run-dir /run/cz "$@"; }
check() {
	c=/cz/cpuzombie-check
	[ -x $c ] || c=/cz/cpuzombie
	$c --config "$1" --state-dir /var/lib/cz --run-dir /run/cz check memcg
}
cz agent --once >/tmp/agent.out 2>/tmp/agent.err
say agent-rc $?
show agent-err /tmp/agent.err
show census /run/cz/memcg-census
check /etc/cz.yaml >/tmp/check.out 2>/tmp/check.err
say check-rc $?
show check /tmp/check.out
show check-err /tmp/check.err
cz report --json >/tmp/report.json 2>/tmp/report.err
say report-rc $?
show report-json /tmp/report.json
show report-err /tmp/report.err
# no census (census_interval 0): the v2 counters alone, and the subtree hint from them
rm -f /run/cz/memcg-census
check /etc/cz-nocensus.yaml >/tmp/check.out 2>/tmp/check.err
say check-nocensus-rc $?
show check-nocensus /tmp/check.out
show check-nocensus-err /tmp/check.err
finish

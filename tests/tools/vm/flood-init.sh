#!/bin/busybox sh
# SPDX-License-Identifier: MIT
# /init of the kernel-log flood VM (tests/tools/vm/census-v2-vm.sh with CZVM_INIT=flood-init.sh
# and CZVM_FILES naming czflood.ko: tests/bench/soak_vm.py). The agent follows the real
# /dev/kmsg of this guest, as on a node (agent.kmsg /dev/kmsg), with the sampler, the checks,
# the metrics textfile and the census; after IDLE seconds, czflood.ko writes the kernel log at
# RATE lines a second for SECONDS, an ENA reset every ENA_EVERY seconds among them. Every
# SAMPLE seconds, one "CZVM sample" line: uptime (ms), the agent's utime and stime (ticks),
# VmRSS (KiB), and the kernel-event log's next_seq, lost and overruns. Then `check ena`, the
# kernel-event log and the module's own counts.
. /lib/czvm.sh	# czvm_setup say show finish (guest-lib.sh)
czvm_setup

say begin kernel $(uname -r)
say ticks $(getconf CLK_TCK 2>/dev/null || echo 100)
mount -t cgroup2 cgroup2 /sys/fs/cgroup 2>/dev/null
mkdir -p /var/lib/cz/metrics	# a host file lies in the state dir
printf '%s\n' 'cpu:' '  interval: 250ms' '  attribute_tasks: true' 'memcg:' \
	'  systemd_hints: false' 'ena:' '  window: 1h' 'agent:' '  check_interval: 30s' \
	'  kmsg: /dev/kmsg' '  metrics_textfile: /var/lib/cz/metrics/cz.prom' >/etc/cz-flood.yaml
/cz/cpuzombie --config /etc/cz-flood.yaml --state-dir /var/lib/cz --run-dir /run/cz agent \
	>/tmp/agent.out 2>/tmp/agent.err &
agent=$!
say agent-pid $agent

kev() {	# the kernel-event log's value of KEY (0 when absent)
	v=$(awk -v k="$1" '$1 == k { print $2; exit }' /run/cz/kernel-events 2>/dev/null)
	echo "${v:-0}"
}
sample() {
	up=$(awk '{ printf "%d", $1 * 1000 }' /proc/uptime)
	st=$(awk '{ sub(/.*\) /, ""); print $12, $13 }' /proc/$agent/stat 2>/dev/null)
	rss=$(awk '$1 == "VmRSS:" { print $2 }' /proc/$agent/status 2>/dev/null)
	say sample "$1" "$up" ${st:-x x} ${rss:-x} "$(kev next_seq)" "$(kev lost)" "$(kev overruns)"
}
# every SAMPLE seconds for SECS seconds: sample PHASE
sample_for() {
	n=$(($2 / SAMPLE))
	i=0
	while [ $i -lt $n ]; do
		sleep "$SAMPLE"
		sample "$1"
		i=$((i + 1))
	done
}

sleep 3
sample idle
sample_for idle "$IDLE"
say flood-start $(awk '{ printf "%d", $1 * 1000 }' /proc/uptime)
insmod /lib/czflood.ko rate="$RATE" seconds="$SECONDS" ena_every="$ENA_EVERY" ||
	{ say fail insmod czflood.ko; finish; }
while [ "$(cat /sys/module/czflood/parameters/finished)" != 1 ]; do
	sleep "$SAMPLE"
	sample flood
done
say flood-end $(awk '{ printf "%d", $1 * 1000 }' /proc/uptime)
say module noise $(cat /sys/module/czflood/parameters/noise_done) \
	ena $(cat /sys/module/czflood/parameters/ena_done)
sample_for after "$IDLE"
kill -0 $agent 2>/dev/null && say agent alive || say agent EXITED
kill -TERM $agent
wait $agent
say agent-rc $?
/cz/cpuzombie --config /etc/cz-flood.yaml --state-dir /var/lib/cz --run-dir /run/cz check ena \
	>/tmp/ena.out 2>/tmp/ena.err
say ena-rc $?
show ena-out /tmp/ena.out
show ena-err /tmp/ena.err
show kevents /run/cz/kernel-events
grep -E '^cpuzombie_kernel' /var/lib/cz/metrics/cz.prom 2>/dev/null | sed 's/^/CZVM prom /'
tail -20 /tmp/agent.err | sed 's/^/CZVM agent-err /'
rmmod czflood
finish

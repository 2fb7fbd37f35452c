#!/usr/bin/env bash
# `make run`: report on this node with the embedded default config. Until `cpuzombie report`
# exists this runs every implemented check and prints one line each with its verdict.
# As root the real state dir is used; otherwise a private one under build/.
set -u
bin=${1:?usage: run-node.sh BINARY}
args=()
if [ "$(id -u)" -ne 0 ]; then
	args+=(--state-dir "$(dirname "$bin")/state" --run-dir "$(dirname "$bin")/run")
fi
if "$bin" --help 2>/dev/null | grep -q '^cpuzombie report'; then
	# report exits 1 when a condition is True: that is this node's verdict, not a failed run
	"$bin" "${args[@]}" report
	rc=$?
	[ $rc -le 1 ] && exit 0
	exit $rc
fi
worst=0
for chk in $("$bin" --help | sed -n 's/^cpuzombie check \(.*\)$/\1/p' | tr '|' ' '); do
	line=$("$bin" "${args[@]}" check "$chk")
	rc=$?
	case $rc in 0) v=OK ;; 1) v=PROBLEM ;; *) v=UNKNOWN ;; esac
	printf '%-14s %-8s %s\n' "$chk" "$v" "$line"
	[ $rc -gt $worst ] && [ $rc -le 2 ] && worst=$rc
done
exit 0

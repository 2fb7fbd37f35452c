#!/usr/bin/env bash
# `make run`: report on this node with the embedded default config.
# As root the real state dir is used; otherwise a private one under build/.
set -u
bin=${1:?usage: run-node.sh BINARY}
args=()
if [ "$(id -u)" -ne 0 ]; then
	args+=(--state-dir "$(dirname "$bin")/state" --run-dir "$(dirname "$bin")/run")
fi
# report exits 1 when a condition is True: that is this node's verdict, not a failed run
"$bin" "${args[@]}" report
rc=$?
[ $rc -le 1 ] && exit 0
exit $rc

#!/usr/bin/env bash
# Installs the Debian packages `make bench` needs, when missing and run as root (tests/bench/run.sh
# calls it), through the project's installer. node_exporter's package would start its own daemon
# on :9100; the bench runs its own copy on a free 127.0.0.1 port, so services are not started.
exec "$(dirname "$0")/../tools/install-deps.sh" --no-service-start \
	gcc make python3 time \
	valgrind hyperfine sysstat \
	ethtool iproute2 \
	prometheus-node-exporter curl

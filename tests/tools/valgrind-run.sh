#!/usr/bin/env bash
# valgrind-run.sh LOG BINARY ARGS... - run BINARY under valgrind memcheck: any memory error or
# definite leak makes the exit code 99 (whatever the program's own exit code was) and is written to
# LOG. Used by tests/e2e/test_valgrind.py; handy by hand on one failing run too.
set -euo pipefail
log=$1
shift
exec valgrind --quiet --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite \
	--show-leak-kinds=definite --track-origins=yes --trace-children=no \
	--child-silent-after-fork=yes --suppressions="$(dirname "$0")/valgrind-libbpf.supp" \
	--log-file="$log" "$@"

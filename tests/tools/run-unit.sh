#!/usr/bin/env bash
# Runs every cmocka unit test binary given; fails if any fails. Prints one summary line.
# The binaries that burn a core for real (HOST_UNITS: a CPU-wide perf profile of a burner) run
# under the e2e tests' host lock (tests/e2e/conftest.py, HOST): make test and make check run
# the unit stage beside the e2e sessions, and a burn there is a real 100% core to a host test's
# check cpu.
set -u
HOST_UNITS="test_profile"
host_lock=$("${PYTHON:-python3}" "$(dirname "$0")/../e2e/hostlock.py") || exit 2
pass=0 fail=0
for t in "$@"; do
	run=("$t")
	case " $HOST_UNITS " in *" $(basename "$t") "*) run=(flock "$host_lock" "$t") ;; esac
	if "${run[@]}"; then pass=$((pass + 1)); else fail=$((fail + 1)); echo "FAILED: $t" >&2; fi
done
echo "unit: $pass passed, $fail failed"
[ "$fail" -eq 0 ]

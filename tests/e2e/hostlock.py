# SPDX-License-Identifier: MIT
"""Where the e2e host lock is, for everything that takes it: the tests of the modules that change
or measure the whole host (conftest.py, HOST), the unit binaries that burn a core
(tests/tools/run-unit.sh runs this file for the path) and the bench that makes dying memcgs
beside a real kubelet (tests/bench/bench_kubelet_memcg.py). CZ_HOST_LOCK overrides it
(test_stages: a lock of its own)."""

import os


def path():
    d = "/run/lock" if os.path.isdir("/run/lock") else "/tmp"
    return os.environ.get("CZ_HOST_LOCK", d + "/cpuzombie-e2e-host.lock")


if __name__ == "__main__":
    print(path())

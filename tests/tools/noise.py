#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""noise.py N [PCT]: N CPU spinners, each busy PCT% (default 40) of every 100 ms, until
SIGTERM; the test suite must pass beside them (CZ_TEST_NOISE=N in tests/tools/stages.py).

The spinners burn user time in their own processes (not pinned: the scheduler moves them as it
would a noisy neighbour), so every per-core measurement a test makes has another task on the
machine. Each spinner is a child process of this one and ends with it (SIGTERM to this process,
or its parent going away)."""

import os
import signal
import sys
import time


def spin(pct):
    period = 0.1
    busy = period * pct / 100.0
    ppid = os.getppid()
    while os.getppid() == ppid:
        t0 = time.monotonic()
        while time.monotonic() - t0 < busy:
            pass
        time.sleep(max(0.0, period - (time.monotonic() - t0)))
    os._exit(0)


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 2
    pct = float(sys.argv[2]) if len(sys.argv) > 2 else 40.0
    kids = []
    for _ in range(n):
        pid = os.fork()
        if pid == 0:
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            spin(pct)
        kids.append(pid)

    def stop(*_):
        for k in kids:
            try:
                os.kill(k, signal.SIGTERM)
            except ProcessLookupError:
                pass
        for k in kids:
            try:
                os.waitpid(k, 0)
            except ChildProcessError:
                pass
        sys.exit(0)

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    while True:
        signal.pause()


if __name__ == "__main__":
    main()

# SPDX-License-Identifier: MIT
"""The processes a test starts: one way to start one with its output in a log file of its own,
and one way to stop any (SIGTERM, a bounded wait, then SIGKILL, always reaped), so no test
leaves a process behind and a failure shows the last lines the process wrote.

    p = Proc("agent", [cz_bin, "agent"], str(tmp_path))   # stdout+stderr in tmp_path/agent.log
    p.check()                      # still running? else RuntimeError with the log's tail
    rc = p.stop()                  # SIGTERM, 10 s, SIGKILL: the exit status
    rc = stop(popen, 20)           # the same for a subprocess.Popen started elsewhere
    rc = stop(popen, 10, strict=True)   # needing SIGKILL is a failure (StopTimeout)
    rc, out, err = stop(popen, 30, strict=True, communicate=True)   # its pipes, read to the end
    stop(popen, 15, fail="agent did not stop on SIGTERM (blocked?)")  # strict, saying so

Only the process started is signalled, by its PID; nothing is found or killed by name.
Long-lived servers that a session fixture owns (the control plane) are started with
die_with_parent: if the pytest process itself is killed (a SIGTERM to `make test`, CI's time
limit) and no teardown runs, the kernel SIGKILLs them (kube-apiserver can take a minute over a
SIGTERM with etcd gone) instead of leaving them behind."""
import ctypes
import os
import signal
import subprocess

PR_SET_PDEATHSIG = 1


def die_with_parent():
    """preexec_fn: SIGKILL this child when the thread that started it exits (prctl(2)
    PR_SET_PDEATHSIG). Only for a process started from the main thread of a process that
    outlives it in every normal run (a session fixture's servers)."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)


def tail(path, n=25):
    """The last @n lines of the file at @path, or why there are none."""
    try:
        with open(path, errors="replace") as f:
            return "".join(f.readlines()[-n:])
    except OSError as e:
        return "(no log: %s)" % e


class StopTimeout(subprocess.TimeoutExpired):
    """A process that did not end within its timeout after SIGTERM (it has been SIGKILLed and
    reaped by then). A subprocess.TimeoutExpired, so what caught a plain wait's catches it."""

    def __init__(self, cmd, timeout, log=None, output=None, stderr=None, what=None):
        super().__init__(cmd, timeout, output=output, stderr=stderr)
        self.log = log
        self.what = what

    def __str__(self):
        s = "%r did not stop within %g s of SIGTERM (SIGKILLed)" % (self.cmd, self.timeout)
        if self.what:
            s = "%s: %s" % (self.what, s)
        if self.log:
            s += "; last lines of %s:\n%s" % (self.log, tail(self.log))
        elif self.stderr:
            err = self.stderr.decode(errors="replace") if isinstance(self.stderr, bytes) \
                else self.stderr
            s += "; its stderr ends:\n" + "".join(err.splitlines(True)[-25:])
        return s


def _end(p, timeout, communicate):
    """Waits up to @timeout for @p; (True, out, err) if it ended, else (False, None, None)."""
    try:
        if communicate:
            out, err = p.communicate(timeout=timeout)
            return True, out, err
        p.wait(timeout=timeout)
        return True, None, None
    except subprocess.TimeoutExpired:
        return False, None, None


def _kill(p, communicate):
    p.kill()
    if communicate:
        return p.communicate()
    p.wait()
    return None, None


def stop(p, timeout=10, strict=False, communicate=False, log=None, fail=None,
         sig=signal.SIGTERM):
    """Stops the subprocess.Popen @p: @sig (SIGTERM) unless it has already exited, then waits
    up to @timeout seconds; past that, SIGKILL and reap. Returns its exit status (negative: the
    signal that ended it), or with @communicate (status, stdout, stderr) with its pipes read to
    the end. @strict: a process that needed the SIGKILL is a failure: StopTimeout, raised after
    it is reaped, naming @log's last lines (or its stderr) when known; @fail (implies @strict)
    is the message it starts with."""
    if p.poll() is None:
        p.send_signal(sig)
    ended, out, err = _end(p, timeout, communicate)
    if not ended:
        out, err = _kill(p, communicate)
        if strict or fail:
            raise StopTimeout(p.args, timeout, log=log, output=out, stderr=err, what=fail)
    return (p.returncode, out, err) if communicate else p.returncode


def stop_all(ps, timeout=10, strict=False):
    """stop() for several processes at once: each gets its signal first, then each is waited
    for (so they end together, not one after the other). Returns their exit statuses."""
    for p in ps:
        if p.poll() is None:
            p.send_signal(signal.SIGTERM)
    return [stop(p, timeout, strict=strict) for p in ps]


class Proc:
    """A process started with stdout and stderr in LOGDIR/NAME.log (or @log), stdin /dev/null,
    in a session of its own unless @start_new_session is False."""

    def __init__(self, name, args, logdir=None, env=None, log=None, start_new_session=True,
                 **popen):
        self.name = name
        self.log = log or os.path.join(logdir, name + ".log")
        self.logf = open(self.log, "w")
        self.p = subprocess.Popen(args, stdout=self.logf, stderr=subprocess.STDOUT,
                                  stdin=subprocess.DEVNULL, env=env,
                                  start_new_session=start_new_session, **popen)

    @property
    def pid(self):
        return self.p.pid

    def tail(self, n=25):
        return tail(self.log, n)

    def check(self):
        """Raises RuntimeError, with the log's last lines, when the process has exited."""
        if self.p.poll() is not None:
            raise RuntimeError("%s exited with %s; last lines of %s:\n%s" %
                               (self.name, self.p.returncode, self.log, tail(self.log)))

    def stop(self, timeout=10, strict=False):
        """stop() of the process, then its log closed; returns the exit status."""
        try:
            return stop(self.p, timeout, strict=strict, log=self.log)
        finally:
            self.logf.close()

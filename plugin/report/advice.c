/* SPDX-License-Identifier: MIT */
#include <errno.h>

#include "report/advice.h"

#define AS_ROOT "run it as root (or with the agent's capabilities)"

const char *advice_restarts(int rc)
{
	switch (rc) {
	case -ENOSYS:
		return "libsystemd is not installed here: install libsystemd0, read the restarts "
		       "where `cpuzombie agent` runs (it keeps them in the state dir), or set "
		       "memcg.systemd_hints: false";
	case -ENOENT:
	case -ECONNREFUSED:
	case -ENOTCONN:
		return "no systemd bus here: on a host without systemd there are no unit restarts "
		       "to read; in a container mount the host's /run/dbus/system_bus_socket and "
		       "point systemd.bus at it, or read what the agent published (run the report "
		       "in the agent's container)";
	case -EACCES:
	case -EPERM:
		return "the bus refused us: " AS_ROOT;
	case -ETIMEDOUT:
		return "systemd did not answer in time (a busy PID 1 is a symptom too): try again";
	case -EINVAL:
		return "systemd.bus is not a bus we can use: set it to system, user or a "
		       "unix:path= address";
	default:
		return "check systemd.bus in the configuration (system, user or a unix:path= "
		       "address), or set memcg.systemd_hints: false";
	}
}

const char *advice_canary(int rc)
{
	switch (rc) {
	case -ENODATA:
		return "this kernel has no memory cgroup controller, so there is no walk to time";
	case -ENOENT:
		return "the memory cgroup files are not under the sys root: mount the host's /sys "
		       "and /proc and pass --sys-root/--proc-root";
	case -EACCES:
	case -EPERM:
		return AS_ROOT;
	default:
		return "set memcg.latency_canary: 0 to turn the canary off";
	}
}

const char *advice_irq_map(int rc)
{
	switch (rc) {
	case -EACCES:
	case -EPERM:
		return AS_ROOT;
	default:
		return "mount the host's /sys and /proc and pass --sys-root/--proc-root";
	}
}

const char *advice_ena_state(int rc)
{
	switch (rc) {
	case -EBADMSG:
		return "the file is corrupt: the next `cpuzombie check ena` moves it aside and "
		       "starts a new baseline";
	case -EACCES:
	case -EPERM:
		return AS_ROOT " or pass the --state-dir the checks use";
	default:
		return "pass the --state-dir the checks use";
	}
}

const char *advice_history(int rc)
{
	switch (rc) {
	case 0:
		return "the sampler has just started: run the report again in a few seconds";
	case -ENOENT:
		return "start `cpuzombie agent` (it keeps the history in the run dir), or pass the "
		       "--run-dir it uses";
	case -EACCES:
	case -EPERM:
		return AS_ROOT;
	default:
		return "the history file is unreadable: restarting `cpuzombie agent` recreates it";
	}
}

/* SPDX-License-Identifier: MIT */
#include <errno.h>

#include "node/advice.h"

#define AS_ROOT "run it as root (or with the agent's capabilities)"

const char *advice_restarts(int rc)
{
	/* @rc is units_load()'s: the report reads what the agent published, it never asks systemd
	 * */
	switch (rc) {
	case -ENOENT:
		return "the agent has published no unit restarts here: run `cpuzombie agent` with "
		       "this "
		       "run dir (it asks systemd every minute), or set memcg.systemd_hints: false";
	case -ESTALE:
		return "the agent's unit restarts are old: is `cpuzombie agent` still running with "
		       "this run dir?";
	case -EIO:
		return "the agent cannot ask systemd: on a host without systemd there are no unit "
		       "restarts to read; in a container mount the host's "
		       "/run/dbus/system_bus_socket (chart: agent.systemdBus) and point "
		       "systemd.bus "
		       "at it";
	case -EINVAL:
		return "the published unit restarts are corrupt: the agent rewrites them within a "
		       "minute";
	case -EACCES:
	case -EPERM:
		return "the run dir refused us: " AS_ROOT;
	default:
		return "check --run-dir (where the agent publishes), or set "
		       "memcg.systemd_hints: false";
	}
}

const char *advice_census(int rc)
{
	/* @rc is census_load()'s: the census is the agent's (BPF), the report only reads it */
	switch (rc) {
	case -ENOENT:
		return "run `cpuzombie agent` with this run dir (its BPF census needs CAP_BPF and "
		       "CAP_PERFMON; chart: agent.zombieCensus), or set memcg.census_interval: 0";
	case -ESTALE:
		return "is `cpuzombie agent` still running with this run dir? It redoes the census "
		       "every memcg.census_interval";
	case -EIO:
		return "the agent could not take a census (its reason above): give it CAP_BPF and "
		       "CAP_PERFMON, a kernel with BTF, or set memcg.census_interval: 0";
	case -EINVAL:
		return "the published census is corrupt: the agent rewrites it at its next census";
	case -EACCES:
	case -EPERM:
		return "the run dir refused us: " AS_ROOT;
	default:
		return "check --run-dir (where the agent publishes), or set memcg.census_interval: "
		       "0";
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
	case -E2BIG:
		return "a run dir from a larger node? read it with that node's --sys-root";
	default:
		return "the history file is unreadable: restarting `cpuzombie agent` recreates it";
	}
}

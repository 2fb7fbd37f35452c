/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <linux/capability.h>
#include <sys/prctl.h>
#include <sys/syscall.h>

#include "host/caps.h"
#include "base/util.h"

/* capability(7)'s names, by number (include/uapi/linux/capability.h, 6.x: 0..40) */
static const char *const names[] = {
	"chown",	    "dac_override",    "dac_read_search", "fowner",
	"fsetid",	    "kill",	       "setgid",	  "setuid",
	"setpcap",	    "linux_immutable", "net_bind_service", "net_broadcast",
	"net_admin",	    "net_raw",	       "ipc_lock",	  "ipc_owner",
	"sys_module",	    "sys_rawio",       "sys_chroot",	  "sys_ptrace",
	"sys_pacct",	    "sys_admin",       "sys_boot",	  "sys_nice",
	"sys_resource",	    "sys_time",	       "sys_tty_config",  "mknod",
	"lease",	    "audit_write",     "audit_control",	  "setfcap",
	"mac_override",	    "mac_admin",       "syslog",	  "wake_alarm",
	"block_suspend",    "audit_read",      "perfmon",	  "bpf",
	"checkpoint_restore",
};

/* The highest capability the running kernel knows: PR_CAPBSET_READ says EINVAL beyond it. */
static int last_cap(void)
{
	int c = 0;

	while (c < 63 && prctl(PR_CAPBSET_READ, (unsigned long)(c + 1), 0, 0, 0) >= 0)
		c++;
	return c;
}

static int get3(uint64_t *inh, uint64_t *prm, uint64_t *eff)
{
	struct __user_cap_header_struct h = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct d[2] = { 0 };

	if (syscall(SYS_capget, &h, d) < 0)
		return -errno;
	*inh = (uint64_t)d[1].inheritable << 32 | d[0].inheritable;
	*prm = (uint64_t)d[1].permitted << 32 | d[0].permitted;
	*eff = (uint64_t)d[1].effective << 32 | d[0].effective;
	return 0;
}

static int set3(uint64_t inh, uint64_t prm, uint64_t eff)
{
	struct __user_cap_header_struct h = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct d[2] = {
		{ (uint32_t)eff, (uint32_t)prm, (uint32_t)inh },
		{ (uint32_t)(eff >> 32), (uint32_t)(prm >> 32), (uint32_t)(inh >> 32) },
	};

	return syscall(SYS_capset, &h, d) < 0 ? -errno : 0;
}

int caps_read(struct caps_state *ret)
{
	struct caps_state s = { 0 };
	int last = last_cap(), r;

	r = get3(&s.inh, &s.prm, &s.eff);
	if (r < 0)
		return r;
	for (int c = 0; c <= last; c++) {
		if (prctl(PR_CAPBSET_READ, (unsigned long)c, 0, 0, 0) > 0)
			s.bnd |= 1ull << c;
		if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_IS_SET, (unsigned long)c, 0, 0) > 0)
			s.amb |= 1ull << c;
	}
	s.nnp = prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0) > 0;
	*ret = s;
	return 0;
}

/* Every capability but @keep out of the bounding set, with CAP_SETPCAP raised for it when
 * permitted. Returns 0, or -EPERM when CAP_SETPCAP is not permitted (nothing changed). */
static int drop_bounding(uint64_t keep, uint64_t inh, uint64_t prm, uint64_t eff)
{
	const uint64_t setpcap = 1ull << CAP_SETPCAP;
	int last = last_cap(), r = 0;

	if (!(prm & setpcap))
		return -EPERM;
	if (!(eff & setpcap)) {
		r = set3(inh, prm, eff | setpcap);
		if (r < 0)
			return r;
	}
	for (int c = 0; c <= last; c++) {
		if (keep >> c & 1 || c == CAP_SETPCAP ||
		    prctl(PR_CAPBSET_READ, (unsigned long)c, 0, 0, 0) <= 0)
			continue;
		if (prctl(PR_CAPBSET_DROP, (unsigned long)c, 0, 0, 0) < 0 && r == 0)
			r = -errno;
	}
	/* the tool that did it goes last */
	if (!(keep & setpcap) && prctl(PR_CAPBSET_DROP, (unsigned long)CAP_SETPCAP, 0, 0, 0) < 0 &&
	    r == 0)
		r = -errno;
	return r;
}

int caps_drop(uint64_t keep, struct caps_state *ret)
{
	uint64_t inh, prm, eff;
	int r, first = 0;

	r = get3(&inh, &prm, &eff);
	if (r < 0)
		return r;
	r = drop_bounding(keep, inh, prm, eff);
	if (r < 0 && r != -EPERM)
		first = r;
	if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0 && first == 0 &&
	    errno != EINVAL) /* EINVAL: a kernel before 4.3, without ambient capabilities */
		first = -errno;
	r = set3(0, prm & keep, prm & keep);
	if (r < 0 && first == 0)
		first = r;
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 && first == 0)
		first = -errno;
	(void)caps_read(ret);
	return first;
}

int caps_format(uint64_t mask, char *buf, size_t size)
{
	size_t len = 0;
	int n;

	if (size == 0)
		return -ENOBUFS;
	buf[0] = '\0';
	if (mask == 0) {
		if (size < sizeof("none"))
			return -ENOBUFS;
		memcpy(buf, "none", sizeof("none"));
		return (int)sizeof("none") - 1;
	}
	for (unsigned c = 0; c < 64; c++) {
		if (!(mask >> c & 1))
			continue;
		if (c < ARRAY_SIZE(names))
			n = snprintf(buf + len, size - len, "%s%s", len ? "," : "", names[c]);
		else
			n = snprintf(buf + len, size - len, "%scap_%u", len ? "," : "", c);
		if (n < 0 || (size_t)n >= size - len) {
			buf[0] = '\0';
			return -ENOBUFS;
		}
		len += (size_t)n;
	}
	return (int)len;
}

/* SPDX-License-Identifier: MIT */
/* Our pid on the host and the boot id, from the host's procfs: see hostid.h. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "host/hostid.h"
#include "base/util.h"

int hostid_self_pid(const struct hostfs *hf, int *ret_pid)
{
	char buf[32];
	uint64_t v;
	ssize_t n = hostfs_readlink(hf, HOSTFS_PROC, "self", buf, sizeof(buf));

	if (n < 0)
		return (int)n;
	if (parse_u64(buf, &v) < 0 || v == 0 || v > INT32_MAX)
		return -EINVAL;
	*ret_pid = (int)v;
	return 0;
}

bool hostid_boot_id_valid(const char *s)
{
	if (!s || strlen(s) != HOSTID_BOOT_ID_LEN)
		return false;
	for (size_t i = 0; i < HOSTID_BOOT_ID_LEN; i++) {
		bool dash = i == 8 || i == 13 || i == 18 || i == 23;

		if (dash ? s[i] != '-' : !((s[i] >= '0' && s[i] <= '9') ||
					   (s[i] >= 'a' && s[i] <= 'f')))
			return false;
	}
	return true;
}

int hostid_boot_id(const struct hostfs *hf, char *buf, size_t size)
{
	char tmp[64];
	ssize_t n = hostfs_read(hf, HOSTFS_PROC, "sys/kernel/random/boot_id", tmp, sizeof(tmp));

	if (n < 0)
		return (int)n;
	if (n > 0 && tmp[n - 1] == '\n')
		tmp[--n] = '\0';
	if (!hostid_boot_id_valid(tmp) || size <= HOSTID_BOOT_ID_LEN)
		return -EINVAL;
	memcpy(buf, tmp, HOSTID_BOOT_ID_LEN + 1);
	return 0;
}

int hostid_pid_exists(const struct hostfs *hf, int pid)
{
	char rel[16];
	int fd;

	if (pid <= 0)
		return -EINVAL;
	snprintf(rel, sizeof(rel), "%d", pid);
	fd = hostfs_openat(hf, HOSTFS_PROC, rel, O_PATH | O_DIRECTORY);
	if (fd < 0)
		return fd == -ENOENT ? 0 : fd;
	close(fd);
	return 1;
}

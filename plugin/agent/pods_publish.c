/* SPDX-License-Identifier: MIT */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "agent/pods_publish.h"
#include "memcg/pods.h"
#include "memcg/units.h"
#include "base/fileio.h"
#include "base/log.h"
#include "base/util.h"

static void closedirp(DIR **d)
{
	if (*d)
		closedir(*d);
}

/* The file's text from the directory @dir: header, stamp, a line per pod directory. */
static int collect(const char *dir, uint64_t now_ms, char *buf, size_t size, size_t *ret_len)
{
	__attribute__((cleanup(closedirp))) DIR *d = NULL;
	struct dirent *de;
	size_t off, seen = 0;
	int fd;

	fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	d = fdopendir(fd);
	if (!d) {
		int r = -errno;

		close(fd);
		return r;
	}
	off = (size_t)snprintf(buf, size, "cpuzombie-pods 1\nt %llu\n", (unsigned long long)now_ms);
	while ((errno = 0, de = readdir(d)) && seen++ < PODS_DIRS_MAX) {
		/* a name that is not NAMESPACE_NAME_UID of valid names is left out, never
		 * published;
		 * d_type may be DT_UNKNOWN on some filesystems: the name alone decides */
		if (de->d_type != DT_DIR && de->d_type != DT_UNKNOWN)
			continue;
		off += pods_log_dir_line(de->d_name, buf + off, size - off);
	}
	if (errno && !de)
		return -errno;
	*ret_len = off;
	return 0;
}

static int publish(const struct cz_config *cfg, uint64_t now_ms, int last_rc)
{
	_cleanup_free_ char *buf = malloc(PODS_FILE_MAX);
	size_t len = 0;
	int r;

	if (!buf)
		return -ENOMEM;
	r = collect(cfg->paths.pod_logs, now_ms, buf, PODS_FILE_MAX, &len);
	if (r == -ENOENT)
		return 0;	/* no kubelet on this host (a plain install): no pods to name */
	if (r < 0) {
		if (last_rc != r)
			log_warning("pods not published: cannot list '%s': %s", cfg->paths.pod_logs,
				    strerror(-r));
		return r;
	}
	r = fileio_write_atomic(cfg->paths.run, PODS_FILE,
				&(struct iovec){ .iov_base = buf, .iov_len = len }, 1, 0644, 0);
	if (r < 0)
		return log_error_errno(r, "Failed to write '%s/%s': %m", cfg->paths.run, PODS_FILE);
	return 1;
}

int pods_publish_due(struct pods_publisher *p, const struct cz_config *cfg, uint64_t mono_ms,
		     uint64_t now_ms)
{
	int r;

	if (!cfg->paths.pod_logs[0] || (p->next_ms && mono_ms < p->next_ms))
		return 0;
	p->next_ms = mono_ms + UNITS_PUBLISH_MS;
	r = publish(cfg, now_ms, p->last_rc);
	p->last_rc = r;
	return r;
}

void pods_publisher_clear(struct pods_publisher *p)
{
	(void)p;
}

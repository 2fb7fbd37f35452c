/* SPDX-License-Identifier: MIT */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>

#include "host/irq.h"
#include "base/util.h"

static bool is_digit(char c)
{
	return c >= '0' && c <= '9';
}

/* Parses a decimal at *p (digits only, bounded); advances *p. */
static int take_u64(const char **p, uint64_t *ret)
{
	size_t n = 0;

	while (is_digit((*p)[n]))
		n++;
	if (n == 0 || n > 19 || parse_u64_n(*p, n, ret) < 0)
		return -EINVAL;
	*p += n;
	return 0;
}

int irq_parse_cpulist(const char *s, uint64_t *mask, size_t words)
{
	uint64_t tmp[IRQ_MASK_WORDS] = { 0 };
	const char *p = s;
	int count = 0;

	if (!s || !mask || words == 0 || words > IRQ_MASK_WORDS)
		return -EINVAL;
	while (*p && *p != '\n') {
		uint64_t a, b;

		if (take_u64(&p, &a) < 0)
			return -EINVAL;
		b = a;
		if (*p == '-') {
			p++;
			if (take_u64(&p, &b) < 0 || b < a)
				return -EINVAL;
		}
		for (uint64_t c = a; c <= b && c < 64 * words; c++) {
			if (!(tmp[c / 64] & (1ULL << (c % 64))))
				count++;
			tmp[c / 64] |= 1ULL << (c % 64);
		}
		if (*p == ',')
			p++;
		else if (*p && *p != '\n')
			return -EINVAL;
	}
	if ((p > s && p[-1] == ',') || (*p == '\n' && p[1] != '\0'))
		return -EINVAL;
	memcpy(mask, tmp, words * sizeof(*mask));
	return count;
}

bool irq_mask_test(const uint64_t *mask, size_t words, unsigned cpu)
{
	return cpu < 64 * words && (mask[cpu / 64] & (1ULL << (cpu % 64)));
}

/* Copies the token [s, s+n) into @buf of @size, cutting it. */
static void copy_tok(char *buf, size_t size, const char *s, size_t n)
{
	if (n >= size)
		n = size - 1;
	memcpy(buf, s, n);
	buf[n] = '\0';
}

static size_t tok_len(const char *p, const char *end)
{
	size_t n = 0;

	while (p + n < end && p[n] != ' ' && p[n] != '\t')
		n++;
	return n;
}

static const char *skip_ws(const char *p, const char *end)
{
	while (p < end && (*p == ' ' || *p == '\t'))
		p++;
	return p;
}

/* "3-edge", "524289-edge", "edge", "level", "fasteoi": the hwirq/flow column. */
static bool is_hwirq(const char *t, size_t n, uint64_t *ret_index)
{
	size_t d = 0;

	while (d < n && is_digit(t[d]))
		d++;
	if (d > 0 && d < n && d <= 19 && t[d] == '-') {
		if (parse_u64_n(t, d, ret_index) < 0)
			return false;
		return true;
	}
	*ret_index = UINT64_MAX;
	return (n == 4 && !strncmp(t, "edge", 4)) || (n == 5 && !strncmp(t, "level", 5));
}

/* Fills @l from the text after the count columns: "chip [hwirq] [name...]". */
static void parse_tail(const char *p, const char *end, struct irq_line *l)
{
	uint64_t idx = UINT64_MAX;
	size_t n = tok_len(p, end);

	copy_tok(l->chip, sizeof(l->chip), p, n);
	p = skip_ws(p + n, end);
	n = tok_len(p, end);
	/* older kernels glue the flow onto the chip ("PCI-MSI-edge") and have no hwirq column */
	if (n > 0 && !strstr(l->chip, "-edge") && !strstr(l->chip, "-level") &&
	    is_hwirq(p, n, &idx))
		p = skip_ws(p + n, end);
	/* per-device domains ("PCI-MSIX-<bdf>", 6.2+) give the index; the global one ("PCI-MSI",
	 * "IR-PCI-MSI") encodes (bdf << 11) | index: the low 11 bits are the index either way */
	if (idx != UINT64_MAX && strstr(l->chip, "PCI-MSI"))
		l->msix_index = (int)(idx & 0x7ff);
	while (end > p && (end[-1] == ' ' || end[-1] == '\t' || end[-1] == '\r'))
		end--;
	copy_tok(l->name, sizeof(l->name), p, (size_t)(end - p));
}

static int parse_irq_row(const char *line, size_t len, struct irq_line *ret)
{
	const char *p = skip_ws(line, line + len), *end = line + len;
	struct irq_line l = { .msix_index = -1 };
	uint64_t irq, v;

	if (take_u64(&p, &irq) < 0 || irq > UINT32_MAX || p >= end || *p != ':')
		return -EINVAL;
	l.irq = (unsigned)irq;
	p++;
	for (;;) {
		const char *q = skip_ws(p, end);
		size_t n = tok_len(q, end);
		size_t d = 0;

		while (d < n && is_digit(q[d]))
			d++;
		if (n == 0 || d != n)
			break;
		if (take_u64(&q, &v) < 0)
			return -EINVAL;
		p = q;
	}
	p = skip_ws(p, end);
	if (p < end)
		parse_tail(p, end, &l);
	*ret = l;
	return 0;
}

int irq_parse_interrupts(const char *buf, struct irq_line *ret, size_t max)
{
	const char *pos = buf, *line;
	size_t len;
	int n = 0;

	if (!buf || (max > 0 && !ret))
		return -EINVAL;
	while (next_line(&pos, &line, &len)) {
		const char *p = line, *end = line + len;
		struct irq_line l;

		p = skip_ws(p, end);
		if (p >= end || !is_digit(*p))
			continue; /* header, "NMI:", "ERR:", blank */
		if (parse_irq_row(line, len, &l) < 0)
			return -EINVAL;
		if ((size_t)n < max)
			ret[n] = l;
		if (n == INT32_MAX)
			return -E2BIG;
		n++;
	}
	return n;
}

/* Parses the decimal right after @prefix at the start of @s, which must end there. */
static int suffix_num(const char *s, const char *prefix)
{
	const char *p = startswith(s, prefix);
	uint64_t v;

	if (!p || !*p || strlen(p) > 6 || parse_u64(p, &v) < 0)
		return -1;
	return (int)v;
}

int irq_queue_from_name(const char *name, const char *ifname, const char *dev)
{
	static const char *const if_forms[] = { "-Tx-Rx-", "-TxRx-", "-rx-", "-tx-" };
	static const char *const dev_forms[] = { "-input.", "-output." };
	char pre[96];

	if (!name || !*name)
		return -1;
	for (size_t i = 0; ifname && *ifname && i < ARRAY_SIZE(if_forms); i++) {
		snprintf(pre, sizeof(pre), "%s%s", ifname, if_forms[i]);
		if (suffix_num(name, pre) >= 0)
			return suffix_num(name, pre);
	}
	for (size_t i = 0; dev && *dev && i < ARRAY_SIZE(dev_forms); i++) {
		snprintf(pre, sizeof(pre), "%s%s", dev, dev_forms[i]);
		if (suffix_num(name, pre) >= 0)
			return suffix_num(name, pre);
	}
	return -1;
}

/* Reads a small sysfs/procfs text file, strips the trailing newline. */
static int read_small(const struct hostfs *hf, enum hostfs_root root, const char *rel, char *buf,
		      size_t size)
{
	ssize_t n = hostfs_read(hf, root, rel, buf, size);

	if (n < 0)
		return (int)n;
	while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == ' '))
		buf[--n] = '\0';
	return 0;
}

static void link_basename(const struct hostfs *hf, const char *rel, char *buf, size_t size)
{
	char target[512];
	const char *b;

	buf[0] = '\0';
	if (hostfs_readlink(hf, HOSTFS_SYS, rel, target, sizeof(target)) < 0)
		return;
	b = strrchr(target, '/');
	b = b ? b + 1 : target;
	copy_tok(buf, size, b, strlen(b));
}

/* The IRQ's delivery CPUs: effective_affinity_list, else smp_affinity_list. */
static void read_affinity(const struct hostfs *hf, struct irq_info *in)
{
	static const char *const files[] = { "effective_affinity_list", "smp_affinity_list" };
	char rel[64], text[4096];

	for (size_t i = 0; i < ARRAY_SIZE(files); i++) {
		snprintf(rel, sizeof(rel), "irq/%u/%s", in->irq, files[i]);
		if (read_small(hf, HOSTFS_PROC, rel, text, sizeof(text)) < 0 || !text[0])
			continue; /* missing before 4.15, or empty where not supported */
		if (irq_parse_cpulist(text, in->cpus, IRQ_MASK_WORDS) <= 0)
			continue;
		copy_tok(in->cpulist, sizeof(in->cpulist), text, strlen(text));
		return;
	}
}

static const struct irq_line *find_line(const struct irq_line *lines, size_t n, unsigned irq)
{
	for (size_t i = 0; i < n; i++)
		if (lines[i].irq == irq)
			return &lines[i];
	return NULL;
}

static void add_irq(const struct hostfs *hf, struct irq_map *m, unsigned irq,
		    const struct irq_line *lines, size_t nlines)
{
	const struct irq_line *l = find_line(lines, nlines, irq);
	struct irq_info *in;

	if (m->n >= IRQ_MAP_MAX)
		return;
	in = &m->irq[m->n++];
	memset(in, 0, sizeof(*in));
	in->irq = irq;
	in->msix_index = l ? l->msix_index : -1;
	if (l)
		snprintf(in->name, sizeof(in->name), "%s", l->name);
	in->queue = irq_queue_from_name(in->name, m->ifname, m->device);
	read_affinity(hf, in);
}

static int cmp_irq(const void *a, const void *b)
{
	const struct irq_info *x = a, *y = b;

	return x->irq < y->irq ? -1 : x->irq > y->irq;
}

/* PCI_SLOT_NAME= from a uevent file, "" when absent. */
static void read_pci_slot(const struct hostfs *hf, const char *rel, char *buf, size_t size)
{
	char ue[2048];
	const char *v;

	buf[0] = '\0';
	if (read_small(hf, HOSTFS_SYS, rel, ue, sizeof(ue)) == 0 &&
	    (v = strstr(ue, "PCI_SLOT_NAME=")))
		snprintf(buf, size, "%.*s", (int)strcspn(v + 14, "\n"), v + 14);
}

/* msi_irqs of the device or one of its parents; returns IRQs added or -ENOENT. */
static int read_msi_irqs(const struct hostfs *hf, struct irq_map *m, const struct irq_line *lines,
			 size_t nlines)
{
	static const char *const ups[] = { "", "../", "../../" };
	char rel[192];

	for (size_t level = 0; level < ARRAY_SIZE(ups); level++) {
		const char *up = ups[level];
		_cleanup_close_ int fd = -1;
		DIR *d;
		struct dirent *de;

		snprintf(rel, sizeof(rel), "class/net/%s/device/%smsi_irqs", m->ifname, up);
		fd = hostfs_openat(hf, HOSTFS_SYS, rel, O_RDONLY | O_DIRECTORY);
		if (fd < 0)
			continue;
		d = fdopendir(fd);
		if (!d)
			return -errno;
		TAKE_FD(fd);
		while ((de = readdir(d))) {
			uint64_t irq;

			if (parse_u64(de->d_name, &irq) == 0 && irq <= UINT32_MAX)
				add_irq(hf, m, (unsigned)irq, lines, nlines);
		}
		closedir(d);
		snprintf(rel, sizeof(rel), "class/net/%s/device/%suevent", m->ifname, up);
		read_pci_slot(hf, rel, m->pci, sizeof(m->pci));
		m->source = IRQ_SOURCE_MSI;
		return (int)m->n;
	}
	return -ENOENT;
}

/* Does a /proc/interrupts name belong to interface @m? */
static bool name_matches(const struct irq_map *m, const char *name)
{
	const char *rest;
	char tag[64];

	if (!*name)
		return false;
	if ((rest = startswith(name, m->ifname)) && (*rest == '\0' || *rest == '-'))
		return true;
	if (m->device[0] && (rest = startswith(name, m->device)) && *rest == '-')
		return true;
	snprintf(tag, sizeof(tag), "@pci:%s", m->pci[0] ? m->pci : m->device);
	return (m->pci[0] || m->device[0]) && strstr(name, tag) != NULL;
}

int irq_map_read(const struct hostfs *hf, const char *ifname, const struct irq_line *lines,
		 size_t nlines, struct irq_map *ret)
{
	char rel[128], text[16];
	int r;

	if (!valid_ifname(ifname) || !ret)
		return -EINVAL;
	memset(ret, 0, offsetof(struct irq_map, irq));
	snprintf(ret->ifname, sizeof(ret->ifname), "%s", ifname);
	snprintf(rel, sizeof(rel), "class/net/%s/device", ifname);
	link_basename(hf, rel, ret->device, sizeof(ret->device));
	if (!ret->device[0])
		return -ENOENT;
	snprintf(rel, sizeof(rel), "class/net/%s/device/driver", ifname);
	link_basename(hf, rel, ret->driver, sizeof(ret->driver));
	snprintf(rel, sizeof(rel), "class/net/%s/threaded", ifname);
	ret->threaded = read_small(hf, HOSTFS_SYS, rel, text, sizeof(text)) < 0 ? -1 :
			streq(text, "1");
	r = read_msi_irqs(hf, ret, lines, nlines);
	if (r == -ENOENT) {
		ret->source = IRQ_SOURCE_PROC_NAMES;
		for (size_t i = 0; i < nlines; i++)
			if (name_matches(ret, lines[i].name))
				add_irq(hf, ret, lines[i].irq, lines, nlines);
		r = (int)ret->n;
	}
	if (r < 0)
		return r;
	qsort(ret->irq, ret->n, sizeof(ret->irq[0]), cmp_irq);
	return (int)ret->n;
}

int irq_map_all(const struct hostfs *hf, struct irq_map **ret_maps)
{
	_cleanup_free_ char *buf = malloc(IRQ_INTERRUPTS_BUF);
	_cleanup_free_ struct irq_line *lines = NULL;
	_cleanup_free_ struct irq_map *maps = NULL;
	_cleanup_close_ int fd = -1;
	struct dirent *de;
	size_t nmaps = 0;
	ssize_t n;
	int nl;
	DIR *d;

	if (!buf)
		return -ENOMEM;
	n = hostfs_read(hf, HOSTFS_PROC, "interrupts", buf, IRQ_INTERRUPTS_BUF);
	nl = n < 0 ? 0 : irq_parse_interrupts(buf, NULL, 0); /* names are optional */
	if (nl > 0) {
		lines = calloc((size_t)nl, sizeof(*lines));
		if (!lines)
			return -ENOMEM;
		nl = irq_parse_interrupts(buf, lines, (size_t)nl);
	}
	if (nl < 0)
		nl = 0;
	fd = hostfs_openat(hf, HOSTFS_SYS, "class/net", O_RDONLY | O_DIRECTORY);
	if (fd < 0)
		return fd;
	maps = calloc(IRQ_IFACES_MAX, sizeof(*maps));
	d = maps ? fdopendir(fd) : NULL;
	if (!d)
		return -ENOMEM;
	TAKE_FD(fd);
	while ((de = readdir(d)) && nmaps < IRQ_IFACES_MAX) {
		if (!valid_ifname(de->d_name))
			continue;
		if (irq_map_read(hf, de->d_name, lines, (size_t)nl, &maps[nmaps]) > 0)
			nmaps++;
	}
	closedir(d);
	*ret_maps = nmaps > 0 ? TAKE_PTR(maps) : NULL;
	return (int)nmaps;
}

/* Appends ",text" (or "text" first) to @buf; stops quietly when full. */
static void list_add(char *buf, size_t size, const char *text)
{
	size_t l = strlen(buf);

	if (l + 1 < size)
		snprintf(buf + l, size - l, "%s%s", l ? "," : "", text);
}

size_t irq_served_by(const struct irq_map *maps, size_t nmaps, unsigned cpu, char *buf,
		     size_t size)
{
	size_t count = 0;
	char tmp[IRQ_NAME_MAX + 16];

	if (size == 0)
		return 0;
	buf[0] = '\0';
	/* queue vectors first: they are what a starved core stalls */
	for (int pass = 0; pass < 2; pass++)
		for (size_t i = 0; i < nmaps; i++)
			for (size_t j = 0; j < maps[i].n; j++) {
				const struct irq_info *in = &maps[i].irq[j];

				if ((in->queue >= 0) != (pass == 0) ||
				    !irq_mask_test(in->cpus, IRQ_MASK_WORDS, cpu))
					continue;
				if (in->name[0])
					snprintf(tmp, sizeof(tmp), "%s", in->name);
				else
					snprintf(tmp, sizeof(tmp), "irq%u", in->irq);
				list_add(buf, size, tmp);
				count++;
			}
	return count;
}

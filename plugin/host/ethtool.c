/* SPDX-License-Identifier: MIT */
/*
 * ethtool statistics: live through SIOCETHTOOL (one scriptable seam) and from pasted text.
 * The ioctl protocol is <linux/ethtool.h> and net/ethtool/ioctl.c: GSTRINGS and GSTATS write as
 * many entries as the driver has *now* (ethtool_get_strings()/ethtool_get_stats() ignore the
 * length userspace passed), so we size buffers with headroom and compare the count the kernel
 * returns with the one we asked for.
 */
#include <errno.h>
#include <stdarg.h>
#include <inttypes.h>
#include <net/if.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <linux/ethtool.h>
#include <linux/sockios.h>

#include "host/ethtool.h"
#include "base/textsafe.h"
#include "base/util.h"

void ethtool_dump_free(struct ethtool_devdump *d)
{
	if (!d)
		return;
	free(d->stats);
	memset(d, 0, sizeof(*d));
}

void ethtool_dumps_free(struct ethtool_devdump *d, size_t n)
{
	if (!d)
		return;
	for (size_t i = 0; i < n; i++)
		ethtool_dump_free(&d[i]);
	free(d);
}

const struct ethtool_stat *ethtool_dump_find(const struct ethtool_devdump *d, const char *name)
{
	for (size_t i = 0; i < d->n; i++)
		if (strncmp(d->stats[i].name, name, ETHTOOL_NAME_MAX) == 0)
			return &d->stats[i];
	return NULL;
}

const struct ethtool_stat *ethtool_dump_find_near(const struct ethtool_devdump *d,
						  const char *name, size_t hint)
{
	if (hint < d->n && strncmp(d->stats[hint].name, name, ETHTOOL_NAME_MAX) == 0)
		return &d->stats[hint];
	return ethtool_dump_find(d, name);
}

int ethtool_dump_key(const struct ethtool_devdump *d, char *buf, size_t size)
{
	int r;

	if (d->bus_info[0])
		r = snprintf(buf, size, "pci:%s", d->bus_info);
	else if (d->ifname[0])
		r = snprintf(buf, size, "if:%s", d->ifname);
	else
		return -EINVAL;
	return r < 0 || (size_t)r >= size ? -ENOBUFS : 0;
}

/* Copy a fixed-size kernel string (maybe not NUL-terminated) into a C string, printable only. */
static void copy_kstr(char *dst, size_t dst_size, const char *src, size_t src_size)
{
	size_t n = strnlen(src, src_size);

	if (n > dst_size - 1)
		n = dst_size - 1;
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)src[i];
		dst[i] = c > 0x20 && c < 0x7f ? (char)c : '?';
	}
	dst[n] = '\0';
}

/* ---- the kernel seam ---------------------------------------------------------------------- */

static int kernel_ioctl(void *userdata, const char *ifname, void *cmd)
{
	int fd = (int)(intptr_t)userdata;
	struct ifreq ifr = { 0 };

	if (strlen(ifname) >= sizeof(ifr.ifr_name))
		return -EINVAL;
	memcpy(ifr.ifr_name, ifname, strlen(ifname));
	ifr.ifr_data = cmd;
	if (ioctl(fd, SIOCETHTOOL, &ifr) < 0)
		return -errno;
	return 0;
}

static int kernel_list(void *userdata, char (*names)[ETHTOOL_IFNAME_MAX + 1], size_t max)
{
	struct if_nameindex *ni = if_nameindex();
	size_t n = 0;

	if (!ni)
		return -errno;
	for (struct if_nameindex *p = ni; p->if_index != 0 && p->if_name; p++) {
		if (n == max)
			break;
		if (strlen(p->if_name) > ETHTOOL_IFNAME_MAX)
			continue;
		memcpy(names[n], p->if_name, strlen(p->if_name) + 1);
		n++;
	}
	if_freenameindex(ni);
	return (int)n;
}

int ethtool_ops_kernel(struct ethtool_ops *ops)
{
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return -errno;
	ops->ioctl = kernel_ioctl;
	ops->list = kernel_list;
	ops->userdata = (void *)(intptr_t)fd;
	return 0;
}

void ethtool_ops_kernel_close(struct ethtool_ops *ops)
{
	if (ops && ops->ioctl == kernel_ioctl && (intptr_t)ops->userdata >= 0) {
		close((int)(intptr_t)ops->userdata);
		ops->userdata = (void *)(intptr_t)-1;
	}
}

/* ---- live reads ----------------------------------------------------------------------------- */

int ethtool_read_drvinfo(const struct ethtool_ops *ops, const char *ifname,
			 struct ethtool_devdump *d)
{
	struct ethtool_drvinfo di = { .cmd = ETHTOOL_GDRVINFO };
	int r;

	if (!valid_ifname(ifname))
		return -EINVAL;
	r = ops->ioctl(ops->userdata, ifname, &di);
	if (r < 0)
		return r;
	memcpy(d->ifname, ifname, strlen(ifname) + 1);
	copy_kstr(d->driver, sizeof(d->driver), di.driver, sizeof(di.driver));
	copy_kstr(d->version, sizeof(d->version), di.version, sizeof(di.version));
	copy_kstr(d->bus_info, sizeof(d->bus_info), di.bus_info, sizeof(di.bus_info));
	d->has_drvinfo = true;
	return 0;
}

/* ETHTOOL_GSSET_INFO for ETH_SS_STATS: the current count. */
static int read_count(const struct ethtool_ops *ops, const char *ifname, size_t *ret)
{
	/* one u32 of data follows the header for the one set asked for */
	union {
		struct ethtool_sset_info hdr;
		uint8_t raw[sizeof(struct ethtool_sset_info) + sizeof(uint32_t)];
	} si = { .hdr = { .cmd = ETHTOOL_GSSET_INFO, .sset_mask = 1ULL << ETH_SS_STATS } };
	uint32_t len;
	int r = ops->ioctl(ops->userdata, ifname, &si);

	if (r < 0)
		return r;
	memcpy(&len, si.raw + sizeof(struct ethtool_sset_info), sizeof(len));
	if (!(si.hdr.sset_mask & (1ULL << ETH_SS_STATS)) || len == 0)
		return -EOPNOTSUPP;
	if (len > ETHTOOL_MAX_STATS)
		return -E2BIG;
	*ret = len;
	return 0;
}

/* Room for the count we were told plus what a reconfiguration could add before we notice. */
static size_t with_headroom(size_t n)
{
	return n + (n < 256 ? 256 : n);
}

/*
 * One attempt: names and values for @n stats. Returns 0, -EAGAIN when the kernel's count was
 * not @n in either call, or -errno.
 */
static int read_once(const struct ethtool_ops *ops, const char *ifname, size_t n,
		     struct ethtool_stat *out)
{
	size_t cap = with_headroom(n);
	_cleanup_free_ struct ethtool_gstrings *gs = NULL;
	_cleanup_free_ struct ethtool_stats *st = NULL;
	int r;

	gs = calloc(1, sizeof(*gs) + cap * ETH_GSTRING_LEN);
	st = calloc(1, sizeof(*st) + cap * sizeof(uint64_t));
	if (!gs || !st)
		return -ENOMEM;
	gs->cmd = ETHTOOL_GSTRINGS;
	gs->string_set = ETH_SS_STATS;
	gs->len = (uint32_t)n;
	r = ops->ioctl(ops->userdata, ifname, gs);
	if (r < 0)
		return r;
	if (gs->len != n)
		return -EAGAIN;
	st->cmd = ETHTOOL_GSTATS;
	st->n_stats = (uint32_t)n;
	r = ops->ioctl(ops->userdata, ifname, st);
	if (r < 0)
		return r;
	if (st->n_stats != n)
		return -EAGAIN;
	for (size_t i = 0; i < n; i++) {
		copy_kstr(out[i].name, sizeof(out[i].name),
			  (const char *)gs->data + i * ETH_GSTRING_LEN, ETH_GSTRING_LEN);
		out[i].value = st->data[i];
	}
	return 0;
}

int ethtool_read_stats(const struct ethtool_ops *ops, const char *ifname, struct ethtool_devdump *d)
{
	if (!valid_ifname(ifname))
		return -EINVAL;
	for (int attempt = 0; attempt < ETHTOOL_READ_RETRIES; attempt++) {
		_cleanup_free_ struct ethtool_stat *stats = NULL;
		size_t n, again;
		int r;

		r = read_count(ops, ifname, &n);
		if (r < 0)
			return r;
		stats = calloc(n, sizeof(*stats));
		if (!stats)
			return -ENOMEM;
		r = read_once(ops, ifname, n, stats);
		if (r == -EAGAIN)
			continue;
		if (r < 0)
			return r;
		/* The names and values agree with each other; do they still describe the device? */
		r = read_count(ops, ifname, &again);
		if (r < 0)
			return r;
		if (again != n)
			continue;
		free(d->stats);
		d->stats = TAKE_PTR(stats);
		d->n = n;
		return (int)n;
	}
	return -EAGAIN;
}

int ethtool_read(const struct ethtool_ops *ops, const char *ifname, struct ethtool_devdump *ret)
{
	struct ethtool_devdump d = { 0 };
	int r;

	r = ethtool_read_drvinfo(ops, ifname, &d);
	if (r < 0)
		return r;
	r = ethtool_read_stats(ops, ifname, &d);
	if (r < 0)
		return r;
	*ret = d;
	return 0;
}

static const char *shown(const char *s, char *buf, size_t size)
{
	return textsafe_is_plain(s) ? s : textsafe(TEXTSAFE_TEXT, s, buf, size);
}

int ethtool_format_text(const struct ethtool_devdump *d, FILE *out)
{
	char ifname[4 * ETHTOOL_IFNAME_MAX + 1], a[4 * ETHTOOL_INFO_MAX + 1];
	char b[4 * ETHTOOL_INFO_MAX + 1], c[4 * ETHTOOL_INFO_MAX + 1],
		name[4 * ETHTOOL_NAME_MAX + 1];

	/* names from a driver or an interface name (any bytes but '/', ':' and spaces): printed as
	 * they are when plain, so the dump reads back the same, else escaped */
	if (d->has_drvinfo)
		fprintf(out, "# ethtool -i %s\ndriver: %s\nversion: %s\nbus-info: %s\n",
			shown(d->ifname, ifname, sizeof(ifname)), shown(d->driver, a, sizeof(a)),
			shown(d->version, b, sizeof(b)), shown(d->bus_info, c, sizeof(c)));
	fprintf(out, "# ethtool -S %s\nNIC statistics:\n",
		shown(d->ifname, ifname, sizeof(ifname)));
	for (size_t i = 0; i < d->n; i++)
		fprintf(out, "     %s: %" PRIu64 "\n", shown(d->stats[i].name, name, sizeof(name)),
			d->stats[i].value);
	return ferror(out) ? -EIO : 0;
}

/* ---- pasted text ---------------------------------------------------------------------------- */

enum text_section {
	SEC_NONE,	/* nothing yet: a "name: number" line starts statistics */
	SEC_DRVINFO,	/* after `ethtool -i` or a "driver:" line */
	SEC_STATS,	/* after `ethtool -S` or "NIC statistics:" */
	SEC_SKIP,	/* after some other command: its output is not ours */
};

struct text_parser {
	struct ethtool_devdump *d;	/* ETHTOOL_MAX_DUMPS slots */
	size_t n;		/* dumps in use */
	ssize_t cur;		/* the dump lines go to, -1 before the first */
	enum text_section sec;
	size_t total;		/* stats over all dumps */
	unsigned line;
	struct ethtool_text_error *err;
	uint32_t *seen;		/* SEEN_SLOTS: (dump << 16 | stat + 1) of every stat, by name */
};

#define SEEN_SLOTS (2 * ETHTOOL_MAX_STATS) /* never more than half full: open addressing */

static int text_fail(struct text_parser *p, int r, const char *fmt, ...) _printf_(3, 4);
static int text_fail(struct text_parser *p, int r, const char *fmt, ...)
{
	va_list ap;

	if (p->err) {
		p->err->line = p->line;
		va_start(ap, fmt);
		vsnprintf(p->err->what, sizeof(p->err->what), fmt, ap);
		va_end(ap);
	}
	return r;
}

/* A short printable copy of untrusted text for an error message. */
static const char *quote(const char *s, size_t len, char *buf, size_t size)
{
	size_t n = len < size - 1 ? len : size - 1;

	for (size_t i = 0; i < n; i++)
		buf[i] = s[i] >= 0x20 && s[i] < 0x7f ? s[i] : '?';
	buf[n] = '\0';
	return buf;
}

static void trim(const char **s, size_t *len)
{
	while (*len && (**s == ' ' || **s == '\t')) {
		(*s)++;
		(*len)--;
	}
	while (*len && ((*s)[*len - 1] == ' ' || (*s)[*len - 1] == '\t' || (*s)[*len - 1] == '\r'))
		(*len)--;
}

static bool token_eq(const char *s, size_t len, const char *word)
{
	return strlen(word) == len && memcmp(s, word, len) == 0;
}

/* Start a new dump for @ifname (may be ""), or -E2BIG. */
static int text_new_dump(struct text_parser *p, const char *ifname, size_t ifname_len)
{
	if (p->n == ETHTOOL_MAX_DUMPS)
		return text_fail(p, -E2BIG, "more than %d interfaces", ETHTOOL_MAX_DUMPS);
	memcpy(p->d[p->n].ifname, ifname, ifname_len);
	p->d[p->n].ifname[ifname_len] = '\0';
	p->cur = (ssize_t)p->n++;
	return 0;
}

/* Select the dump of @ifname, creating it; for -S refuse a second statistics block. */
static int text_select(struct text_parser *p, const char *ifname, size_t len, bool stats)
{
	for (size_t i = 0; len > 0 && i < p->n; i++) {
		if (!token_eq(ifname, len, p->d[i].ifname))
			continue;
		if (stats && p->d[i].n > 0)
			return text_fail(p, -EINVAL, "second 'ethtool -S %s' in one text",
					 p->d[i].ifname);
		p->cur = (ssize_t)i;
		return 0;
	}
	return text_new_dump(p, ifname, len);
}

/* Split the next white-space separated token off [*s, *s + *len). */
static bool next_token(const char **s, size_t *len, const char **ret_tok, size_t *ret_tok_len)
{
	size_t i = 0;

	trim(s, len);
	if (*len == 0)
		return false;
	while (i < *len && (*s)[i] != ' ' && (*s)[i] != '\t')
		i++;
	*ret_tok = *s;
	*ret_tok_len = i;
	*s += i;
	*len -= i;
	return true;
}

/*
 * A shell line mentioning `ethtool`: "$ ethtool -S eth0", "[ec2-user ~]$ ethtool –S ethN"
 * (the AWS docs' en dash), "ethtool -S ens5 | grep x". Returns 1 when handled as a command line,
 * 0 when the line is not one, or -errno.
 */
static int text_command(struct text_parser *p, const char *s, size_t len)
{
	const char *at = memmem(s, len, "ethtool ", 8), *tok, *ifname = NULL;
	size_t tok_len, ifname_len = 0;
	int mode = 0; /* 'S', 'i' or 0 for another ethtool command */

	if (!at)
		return 0;
	len -= (size_t)(at - s) + 8;
	s = at + 8;
	while (next_token(&s, &len, &tok, &tok_len) && !token_eq(tok, tok_len, "|")) {
		if (token_eq(tok, tok_len, "-S") || token_eq(tok, tok_len, "--statistics") ||
		    token_eq(tok, tok_len, "\xe2\x80\x93S"))
			mode = 'S';
		else if (token_eq(tok, tok_len, "-i") || token_eq(tok, tok_len, "--driver"))
			mode = 'i';
		else if (tok[0] != '-' && !ifname) {
			ifname = tok;
			ifname_len = tok_len;
		}
	}
	if (mode == 0) {
		p->sec = SEC_SKIP;
		return 1;
	}
	if (!ifname || ifname_len > ETHTOOL_IFNAME_MAX)
		ifname_len = 0;
	p->sec = mode == 'S' ? SEC_STATS : SEC_DRVINFO;
	return text_select(p, ifname ? ifname : "", ifname_len, mode == 'S') < 0 ? -EINVAL : 1;
}

static const char *const drvinfo_keys[] = {
	"driver", "version", "firmware-version", "expansion-rom-version", "bus-info",
	"supports-statistics", "supports-test", "supports-eeprom-access", "supports-register-dump",
	"supports-priv-flags",
};

static bool is_drvinfo_key(const char *k, size_t len)
{
	for (size_t i = 0; i < ARRAY_SIZE(drvinfo_keys); i++)
		if (token_eq(k, len, drvinfo_keys[i]))
			return true;
	return false;
}

static void set_field(char *dst, size_t size, const char *v, size_t len)
{
	char tmp[ETHTOOL_INFO_MAX + 1];

	quote(v, len, tmp, sizeof(tmp));
	memcpy(dst, tmp, size < sizeof(tmp) ? size : sizeof(tmp));
	dst[size - 1] = '\0';
}

/* An `ethtool -i` line "key: value" (value may be empty). */
static int text_drvinfo(struct text_parser *p, const char *k, size_t klen, const char *v,
			size_t vlen)
{
	struct ethtool_devdump *d;

	if (p->cur < 0 || (token_eq(k, klen, "driver") && p->d[p->cur].has_drvinfo &&
			   p->d[p->cur].driver[0]))
		if (text_new_dump(p, "", 0) < 0)
			return -E2BIG;
	d = &p->d[p->cur];
	d->has_drvinfo = true;
	if (token_eq(k, klen, "driver"))
		set_field(d->driver, sizeof(d->driver), v, vlen);
	else if (token_eq(k, klen, "version"))
		set_field(d->version, sizeof(d->version), v, vlen);
	else if (token_eq(k, klen, "bus-info"))
		set_field(d->bus_info, sizeof(d->bus_info), v, vlen);
	if (p->sec != SEC_STATS)
		p->sec = SEC_DRVINFO;
	return 0;
}

/* A counter named twice in one dump: which value is the device's? (the verdict would depend on
 * the order of the lines) -EINVAL. Remembers @k as the next stat of @d. */
static int text_seen(struct text_parser *p, const struct ethtool_devdump *d, const char *k,
		     size_t klen)
{
	uint32_t h = 2166136261u, want = (uint32_t)p->cur << 16;
	char q[48];

	for (size_t i = 0; i < klen; i++)
		h = (h ^ (unsigned char)k[i]) * 16777619u;
	for (size_t i = h % SEEN_SLOTS;; i = (i + 1) % SEEN_SLOTS) {
		uint32_t v = p->seen[i];

		if (v == 0) {
			p->seen[i] = want | (uint32_t)(d->n + 1);
			return 0;
		}
		if ((v & 0xffff0000u) == want && strlen(d->stats[(v & 0xffff) - 1].name) == klen &&
		    !memcmp(d->stats[(v & 0xffff) - 1].name, k, klen))
			return text_fail(p, -EINVAL, "counter '%s' appears twice in one dump",
					 quote(k, klen, q, 40));
	}
}

static int text_add_stat(struct text_parser *p, const char *k, size_t klen, uint64_t value)
{
	struct ethtool_devdump *d;
	char q[48];
	int r;

	if (klen > ETHTOOL_NAME_MAX)
		return text_fail(p, -EINVAL, "stat name '%s...' is longer than %d characters",
				 quote(k, klen, q, 40), ETHTOOL_NAME_MAX);
	for (size_t i = 0; i < klen; i++)
		if ((unsigned char)k[i] <= 0x20 || (unsigned char)k[i] >= 0x7f)
			return text_fail(p, -EINVAL, "not an ethtool -S line: '%s'",
					 quote(k, klen, q, 40));
	if (p->total == ETHTOOL_MAX_STATS)
		return text_fail(p, -E2BIG, "more than %d statistics", ETHTOOL_MAX_STATS);
	if (p->cur < 0 && text_new_dump(p, "", 0) < 0)
		return -E2BIG;
	d = &p->d[p->cur];
	r = text_seen(p, d, k, klen);
	if (r < 0)
		return r;
	if (d->n == 0 || (d->n >= 16 && (d->n & (d->n - 1)) == 0)) {
		struct ethtool_stat *ns =
			realloc(d->stats, (d->n < 16 ? 16 : d->n * 2) * sizeof(*ns));

		if (!ns)
			return text_fail(p, -ENOMEM, "out of memory");
		d->stats = ns;
	}
	memcpy(d->stats[d->n].name, k, klen);
	d->stats[d->n].name[klen] = '\0';
	d->stats[d->n].value = value;
	d->n++;
	p->total++;
	p->sec = SEC_STATS;
	return 0;
}

/* "NIC statistics:": continue a dump that has none yet, else start the next one. */
static int text_header(struct text_parser *p)
{
	p->sec = SEC_STATS;
	if (p->cur >= 0 && p->d[p->cur].n == 0)
		return 0;
	return text_new_dump(p, "", 0);
}

/* A "key: value" line. */
static int text_pair(struct text_parser *p, const char *s, size_t len)
{
	const char *colon = memchr(s, ':', len), *k = s, *v;
	size_t klen, vlen;
	uint64_t value;
	char q[48];
	int r;

	if (!colon)
		return text_fail(p, -EINVAL, "not an ethtool -S line: '%s'", quote(s, len, q, 40));
	klen = (size_t)(colon - s);
	v = colon + 1;
	vlen = len - klen - 1;
	trim(&k, &klen);
	trim(&v, &vlen);
	r = vlen ? parse_u64_n(v, vlen, &value) : -EINVAL;
	if (is_drvinfo_key(k, klen) && (r < 0 || p->sec != SEC_STATS))
		return text_drvinfo(p, k, klen, v, vlen);
	if (klen == 0 || r < 0) {
		char qk[40];

		return text_fail(p, -EINVAL, "value '%s' of '%s' is not a counter",
				 quote(v, vlen, q, 24), quote(k, klen, qk, 32));
	}
	return text_add_stat(p, k, klen, value);
}

static int text_line(struct text_parser *p, const char *s, size_t len)
{
	int r;

	trim(&s, &len);
	if (len == 0 || token_eq(s, len, "...") || token_eq(s, len, "\xe2\x80\xa6"))
		return 0;
	r = text_command(p, s, len);
	if (r != 0)
		return r < 0 ? r : 0;
	if (s[0] == '#')
		return 0; /* a comment, or a root prompt running something else */
	if (s[0] == '$') {
		p->sec = SEC_SKIP;
		return 0;
	}
	if (token_eq(s, len, "NIC statistics:"))
		return text_header(p);
	if (p->sec == SEC_SKIP)
		return 0;
	return text_pair(p, s, len);
}

/* Drop dumps without stats (an `ethtool -i` alone); returns how many are left. */
static size_t text_compact(struct ethtool_devdump *d, size_t n)
{
	size_t k = 0;

	for (size_t i = 0; i < n; i++) {
		if (d[i].n == 0) {
			ethtool_dump_free(&d[i]);
			continue;
		}
		if (k != i) {
			d[k] = d[i];
			memset(&d[i], 0, sizeof(d[i]));
		}
		k++;
	}
	return k;
}

int ethtool_parse_text(const char *text, size_t len, struct ethtool_devdump **ret_dumps,
		       size_t *ret_n, struct ethtool_text_error *err)
{
	struct text_parser p = { .cur = -1, .err = err };
	const char *pos = text, *end = text + len;
	size_t n;
	int r = 0;

	if (err)
		*err = (struct ethtool_text_error){ 0 };
	p.d = calloc(ETHTOOL_MAX_DUMPS, sizeof(*p.d));
	p.seen = calloc(SEEN_SLOTS, sizeof(*p.seen));
	if (!p.d || !p.seen) {
		free(p.d);
		free(p.seen);
		return -ENOMEM;
	}
	while (pos < end && r >= 0) {
		const char *nl = memchr(pos, '\n', (size_t)(end - pos));
		size_t l = nl ? (size_t)(nl - pos) : (size_t)(end - pos);

		p.line++;
		if (memchr(pos, '\0', l))
			r = text_fail(&p, -EINVAL, "NUL byte in text");
		else
			r = text_line(&p, pos, l);
		pos += l + 1;
	}
	free(p.seen);
	n = text_compact(p.d, p.n);
	if (r >= 0 && n == 0) {
		p.line = 0;
		r = text_fail(&p, -ENODATA, "no ethtool statistics found");
	}
	if (r < 0) {
		ethtool_dumps_free(p.d, p.n);
		return r;
	}
	*ret_dumps = p.d;
	*ret_n = n;
	return 0;
}

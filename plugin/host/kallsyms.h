/* SPDX-License-Identifier: MIT */
#ifndef CZ_KALLSYMS_H
#define CZ_KALLSYMS_H

/*
 * Kernel symbols for the burst profiler: /proc/kallsyms (under the host's proc root) loaded once,
 * sorted by address, looked up by binary search. Only text symbols (types t/T, and w/W for weak
 * functions) are kept; module symbols ("addr t name\t[module]") too, with their module.
 *
 * Real addresses need CAP_SYSLOG or kernel.kptr_restrict=0; otherwise the kernel prints every
 * address as 0, which kallsyms_parse() reports as -EPERM so the caller can say why a burst has no
 * profile instead of symbolizing everything as one function.
 */

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "host/hostfs.h"

/* /proc/kallsyms is ~5 MiB on a 6.x distribution kernel with modules; refuse beyond this. */
#define KALLSYMS_FILE_MAX (64u << 20)
/* An address further than this past the last symbol below it is not in that function. */
#define KALLSYMS_FUNC_MAX (1u << 20)

struct ksym {
	uint64_t addr;
	uint32_t name; /* offset of the NUL-terminated name in kallsyms.strings */
	uint32_t mod;  /* offset of the module name, or UINT32_MAX for the core kernel */
};

struct kallsyms {
	struct ksym *syms; /* sorted by addr */
	size_t n;
	char *strings;
	size_t strings_len;
};

/*
 * kallsyms_parse - pure: the text symbols of a /proc/kallsyms image (@len bytes, need not be
 * NUL-terminated) into *@ret (free with kallsyms_free). Malformed lines are skipped. Returns the
 * number of symbols, -EPERM when every address is 0 (kptr_restrict), -ENODATA when no text
 * symbol was found, -ENOMEM, -E2BIG beyond UINT32_MAX bytes of names. *@ret untouched on failure.
 */
ssize_t kallsyms_parse(const char *text, size_t len, struct kallsyms *ret);

/*
 * kallsyms_load - kallsyms_parse of @hf's proc root "kallsyms". Returns the count or -errno
 * (-ENOENT, -EACCES, -EFBIG beyond KALLSYMS_FILE_MAX, and kallsyms_parse's errors).
 */
ssize_t kallsyms_load(const struct hostfs *hf, struct kallsyms *ret);

/*
 * kallsyms_lookup - the function containing @addr: its name, and in *@ret_module the module
 * ("" for the core kernel) when @ret_module is not NULL. NULL when @addr is below the first
 * symbol or more than KALLSYMS_FUNC_MAX past the nearest one.
 */
const char *kallsyms_lookup(const struct kallsyms *ks, uint64_t addr, const char **ret_module);

/* kallsyms_free - release and zero; safe on a zeroed struct. */
void kallsyms_free(struct kallsyms *ks);

#endif

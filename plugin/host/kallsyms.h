/* SPDX-License-Identifier: MIT */
#ifndef CZ_KALLSYMS_H
#define CZ_KALLSYMS_H

/*
 * Kernel symbols for the burst profiler: /proc/kallsyms (under the host's proc root) loaded once,
 * sorted by address, looked up by binary search. Only text symbols (types t/T, and w/W for weak
 * functions) are kept; module symbols ("addr t name\t[module]") too, with their module.
 *
 * The table is compact because the agent holds it for its whole life (~120,000 symbols on a 6.x
 * distribution kernel): per symbol 4 bytes of address and 4 of name offset, plus the name in one
 * string block; no allocation per symbol. Addresses are kept as their low 32 bits, in runs that
 * share the upper 32 (one run on x86-64, where the kernel and its modules both live in the top
 * 2 GiB), and modules as runs of consecutive symbols. At equal addresses (aliases such as
 * __do_sys_getpid / __x64_sys_getpid) one name is kept: a global one over a local one, then the
 * one with fewer leading underscores, then the first listed (perf's choose_best_symbol()).
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
/* KSYM_NAME_LEN (include/linux/kallsyms.h, 512 since 6.1) and MODULE_NAME_LEN (64 - 8): a
 * longer name is not the kernel's, and its line is skipped. */
#define KALLSYMS_NAME_MAX 511
#define KALLSYMS_MODULE_MAX 63

/* A run of consecutive symbols (by index) sharing one value. */
struct kallsyms_run {
	uint32_t first; /* index of the run's first symbol */
	uint32_t value; /* upper 32 address bits, or a module name's offset (UINT32_MAX: core) */
};

struct kallsyms {
	uint32_t *lo;	/* low 32 address bits of each symbol; full addresses ascend, unique */
	uint32_t *name; /* offset of each symbol's NUL-terminated name in strings */
	size_t n;
	struct kallsyms_run *hi;  /* upper address bits, by run */
	size_t nhi;
	struct kallsyms_run *mod; /* module, by run */
	size_t nmod;
	char *strings;
	size_t strings_len;
};

/*
 * kallsyms_parse - pure: the text symbols of a /proc/kallsyms image (@len bytes, need not be
 * NUL-terminated) into *@ret (free with kallsyms_free). Malformed lines (no address, no type,
 * no name, a name or module name too long, an unclosed module) are skipped, as are symbols at
 * address 0 in a listing that has real ones; of symbols at one address one is kept (see above).
 * Returns the number of symbols kept, -EPERM when every address is 0 (kptr_restrict), -ENODATA
 * when no text symbol was found, -ENOMEM, -E2BIG beyond UINT32_MAX symbols or bytes of names.
 * *@ret untouched on failure.
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

/* kallsyms_addr - the address of symbol @i (< ks->n), in ascending order. */
uint64_t kallsyms_addr(const struct kallsyms *ks, size_t i);

/* kallsyms_bytes - the heap bytes @ks holds (its arrays and string block), for accounting. */
size_t kallsyms_bytes(const struct kallsyms *ks);

/* kallsyms_free - release and zero; safe on a zeroed struct. */
void kallsyms_free(struct kallsyms *ks);

#endif

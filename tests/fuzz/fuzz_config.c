/* SPDX-License-Identifier: MIT */
/* The YAML configuration loader: any bytes give 0 or an error list, never a crash. */
#include "base/config.h"

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
	struct cz_config cfg;
	char errs[2048];

	(void)config_load_string("fuzz", (const char *)data, size, &cfg, errs, sizeof(errs));
	return 0;
}

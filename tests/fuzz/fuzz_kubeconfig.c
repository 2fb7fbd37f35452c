/* SPDX-License-Identifier: MIT */
/* libFuzzer: kubeconfig_parse() on arbitrary bytes must never crash or leak. */
#include <stddef.h>
#include <stdint.h>

#include "cluster/kubeconfig.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct kube_auth a = { 0 };
	char err[256];

	if (kubeconfig_parse((const char *)data, size, "/d", &a, err, sizeof(err)) == 0)
		kubeconfig_free(&a);
	return 0;
}

/* SPDX-License-Identifier: MIT */
/* libFuzzer: kubeconfig_parse() on arbitrary bytes must never crash or leak. */
#include <stddef.h>
#include <stdint.h>

#include "base/log.h"
#include "kube/kubeconfig.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct kube_auth a = { 0 };
	log_set_max_level((enum log_prio)0);	/* every refusal is logged: keep the fuzzer quiet */
	if (kubeconfig_parse((const char *)data, size, "/d", &a) == 0)
		kubeconfig_free(&a);
	return 0;
}

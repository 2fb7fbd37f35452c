/* SPDX-License-Identifier: MIT */
/* dlopen("libcurl.so.4") on first use: see curl_dl.h for why. */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>

#include "cluster/curl_dl.h"
#include "base/util.h"

static struct curl_dl dl;
static const char *dl_err;
static pthread_once_t dl_once = PTHREAD_ONCE_INIT;
static char dl_errbuf[256];

#define SYM(field, name)                                                                           \
	do {                                                                                       \
		*(void **)&dl.field = dlsym(h, name);                                              \
		if (!dl.field) {                                                                   \
			snprintf(dl_errbuf, sizeof(dl_errbuf), "libcurl.so.4 lacks %s", name);     \
			goto fail;                                                                 \
		}                                                                                  \
	} while (0)

static void load(void)
{
	void *h = dlopen("libcurl.so.4", RTLD_NOW | RTLD_LOCAL);

	if (!h) {
		snprintf(dl_errbuf, sizeof(dl_errbuf), "cannot load libcurl.so.4: %s", dlerror());
		dl_err = dl_errbuf;
		return;
	}
	SYM(global_init, "curl_global_init");
	SYM(easy_init, "curl_easy_init");
	SYM(easy_setopt, "curl_easy_setopt");
	SYM(easy_perform, "curl_easy_perform");
	SYM(easy_getinfo, "curl_easy_getinfo");
	SYM(easy_cleanup, "curl_easy_cleanup");
	SYM(easy_reset, "curl_easy_reset");
	SYM(easy_strerror, "curl_easy_strerror");
	SYM(slist_append, "curl_slist_append");
	SYM(slist_free_all, "curl_slist_free_all");
	if (dl.global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
		snprintf(dl_errbuf, sizeof(dl_errbuf), "curl_global_init failed");
		goto fail;
	}
	dl.handle = h;
	return;
fail:
	dl_err = dl_errbuf;
	dlclose(h);
	dl = (struct curl_dl){ 0 };
}

const struct curl_dl *curl_dl_load(const char **ret_err)
{
	pthread_once(&dl_once, load);
	if (!dl.handle) {
		if (ret_err)
			*ret_err = dl_err ? dl_err : "libcurl not loaded";
		return NULL;
	}
	return &dl;
}

int curl_dl_loaded(void)
{
	return dl.handle != NULL;
}

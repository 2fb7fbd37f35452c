/* SPDX-License-Identifier: MIT */
#ifndef CZ_CURL_DL_H
#define CZ_CURL_DL_H

/*
 * libcurl, loaded with dlopen("libcurl.so.4") only by the code paths that talk to the API server
 * (kube.c). A check never calls curl_dl_load(), so NPD's every-30-s exec of a check pays for no
 * libcurl and its ~40 dependent shared objects. <curl/curl.h> is used for types and constants
 * only; nothing links against -lcurl.
 */

#include <curl/curl.h>

struct curl_dl {
	void *handle;
	CURLcode (*global_init)(long flags);
	CURL *(*easy_init)(void);
	CURLcode (*easy_setopt)(CURL *c, CURLoption opt, ...);
	CURLcode (*easy_perform)(CURL *c);
	CURLcode (*easy_getinfo)(CURL *c, CURLINFO info, ...);
	void (*easy_cleanup)(CURL *c);
	void (*easy_reset)(CURL *c);
	const char *(*easy_strerror)(CURLcode code);
	struct curl_slist *(*slist_append)(struct curl_slist *l, const char *s);
	void (*slist_free_all)(struct curl_slist *l);
};

/*
 * curl_dl_load - dlopen libcurl.so.4 once per process, resolve every symbol and run
 * curl_global_init. Returns the table (shared, never freed), or NULL with *@ret_err set to a
 * static one-line reason (dlerror text or the missing symbol).
 */
const struct curl_dl *curl_dl_load(const char **ret_err);

/* curl_dl_loaded - true when this process has loaded libcurl (tests assert checks never do). */
int curl_dl_loaded(void);

#endif

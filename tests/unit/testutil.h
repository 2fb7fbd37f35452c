/* SPDX-License-Identifier: MIT */
#ifndef CZ_TESTUTIL_H
#define CZ_TESTUTIL_H

/* Common includes for cmocka unit tests. FIXTURES is the absolute tests/fixtures path. */

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <string.h>

#ifndef FIXTURES
#define FIXTURES "tests/fixtures"
#endif

#endif

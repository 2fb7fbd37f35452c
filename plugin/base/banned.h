/* SPDX-License-Identifier: MIT */
#ifndef CZ_BANNED_H
#define CZ_BANNED_H

/*
 * Functions that make overflows or silent number parsing easy, banned the way git's banned.h
 * does it: any use is a compile error naming the function. Use snprintf (checking truncation),
 * parse_u64() and strtok_r/strsep instead.
 */
#define BANNED(func) sorry_##func##_is_a_banned_function

#undef strcpy
#define strcpy(x, y) BANNED(strcpy)
#undef strcat
#define strcat(x, y) BANNED(strcat)
#undef sprintf
#define sprintf(...) BANNED(sprintf)
#undef vsprintf
#define vsprintf(...) BANNED(vsprintf)
#undef strtok
#define strtok(x, y) BANNED(strtok)
#undef atoi
#define atoi(x) BANNED(atoi)
#undef atol
#define atol(x) BANNED(atol)
#undef atoll
#define atoll(x) BANNED(atoll)
#undef gets
#define gets(x) BANNED(gets)

#endif

/* SPDX-License-Identifier: MIT */
#ifndef CZ_ENA_DEFAULTS_H
#define CZ_ENA_DEFAULTS_H

/*
 * Defaults of ena.reset_counters / risk_counters / allowance_counters (ena_defaults.c): stat
 * names, '*' standing for a queue number; each list NULL-terminated. ena/ena.h says what the
 * classes mean.
 */

extern const char *const ena_default_reset_counters[];
extern const char *const ena_default_risk_counters[];
extern const char *const ena_default_allowance_counters[];

#endif

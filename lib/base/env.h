/* SPDX-License-Identifier: MIT */
/* Reading devq's environment variables.  Every parser here is fed
 * outside input and is fuzzed (tests/fuzz). */
#ifndef DEVQ_LIB_ENV_H
#define DEVQ_LIB_ENV_H

#include <stdint.h>

/* getenv that returns NULL in setuid/setgid programs (secure_getenv). */
const char *devq__getenv(const char *name);

/* Parse a byte count with optional K/M/G/T suffix (powers of 1024, an
 * optional trailing 'B' or 'iB').  On error returns -EINVAL with a detail
 * naming `var` and the value. */
int devq__parse_size(const char *var, const char *text, uint64_t *out);

/* Parse a non-negative decimal integer no larger than max. */
int devq__parse_uint(const char *var, const char *text, uint64_t max, uint64_t *out);

/* 1/on/yes or 0/off/no; unset and empty are 0. */
int devq__parse_flag(const char *var, const char *text, int *out);

/* Every variable of the environment table (env_table.c) checked as a
 * whole: 0, or -EINVAL naming the first bad variable and its value.
 * Called by every devq_device_open, so a bad value is the same error
 * whichever call meets it first (DESIGN §5a). */
int devq__env_config_error(void);

#endif

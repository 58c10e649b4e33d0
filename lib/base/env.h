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

#endif

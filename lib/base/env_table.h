/* SPDX-License-Identifier: MIT */
/* The one table of devq's environment variables: name, meaning, accepted
 * values and the check of a value.  lib reads and validates through it,
 * devq-info -e prints it, and tests/test_env_docs.sh checks that devq(7),
 * devq-info(1) and README.md list exactly its variables.
 *
 * Pure C over libc: devq-info compiles this file in (it cannot reach
 * lib's hidden symbols), and the fuzzers link it without the rest of lib.
 * Checks write a one-line reason naming the variable and the value. */
#ifndef DEVQ_LIB_ENV_TABLE_H
#define DEVQ_LIB_ENV_TABLE_H

#include <stddef.h>
#include <stdint.h>

/* Limits shared with the cpu backend, which parses its own variables. */
#define DEVQ_ENV_CPU_DEVICES_MAX 64
#define DEVQ_ENV_CPU_THREADS_MAX 1024

struct devq_env_var {
    const char *name;
    const char *meaning; /* one line */
    const char *values;  /* accepted values, one line */
    const char *reader;  /* who reads it: "lib", "cpu", "cuda", "hip" */
    /* 0, or -EINVAL with a reason in msg naming the variable and value.
     * NULL: every value is accepted. */
    int (*check)(const char *name, const char *value, char *msg, size_t len);
};

extern const struct devq_env_var devq__env_vars[];
extern const size_t devq__env_nvars;

/* The table entry of a variable, or NULL. */
const struct devq_env_var *devq__env_find(const char *name);

/* Check the value in force of one variable (unset and empty pass). */
int devq__env_check_var(const struct devq_env_var *v, const char *value, char *msg, size_t len);

/* Check every variable as the process sees it (secure_getenv); 0, or the
 * first failure with its reason in msg. */
int devq__env_check_all(char *msg, size_t len);

/* The parsers behind the checks, used by the readers too.  0, or
 * -EINVAL with a reason in msg. */
int devq__env_size(const char *var, const char *text, uint64_t *out, char *msg, size_t len);
int devq__env_uint(const char *var, const char *text, uint64_t max, uint64_t *out, char *msg, size_t len);
/* 1/on/yes or 0/off/no (unset and empty: 0). */
int devq__env_flag(const char *var, const char *text, int *out, char *msg, size_t len);

/* secure_getenv where the C library has it. */
const char *devq__env_get(const char *name);

#endif

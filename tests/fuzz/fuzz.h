/* SPDX-License-Identifier: MIT */
/* Shared by devq's fuzz targets (tests/fuzz).  Each target is one file
 * defining LLVMFuzzerTestOneInput; built with clang -fsanitize=fuzzer it
 * is a libFuzzer binary (make fuzz), linked with standalone.c it replays
 * corpus files under gcc (make check: tests/scripts/fuzz-corpora).
 *
 * FUZZ_CHECK is the targets' assert: a broken property is a crash the
 * fuzzer keeps as a reproducer, in every build mode (NDEBUG-proof). */
#ifndef DEVQ_FUZZ_H
#define DEVQ_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_CHECK(cond, ...)                                                           \
    do {                                                                                \
        if (!(cond)) {                                                                  \
            fprintf(stderr, "%s:%d: property failed: %s: ", __FILE__, __LINE__, #cond); \
            fprintf(stderr, __VA_ARGS__);                                               \
            fputc('\n', stderr);                                                        \
            abort();                                                                    \
        }                                                                               \
    } while (0)

/* The input as a NUL-terminated heap string of exactly size+1 bytes, so
 * a parser that reads past the terminator trips ASan.  NULs inside the
 * input end the string early, as they would in an environment value. */
static inline char *fuzz_cstring(const uint8_t *data, size_t size)
{
    char *s = malloc(size + 1);
    if (!s)
        abort();
    memcpy(s, data, size);
    s[size] = '\0';
    return s;
}

/* Set one environment variable to fuzzer bytes, for parsers that read
 * getenv.  Not setenv: glibc keeps every value ever given to setenv (so
 * old getenv results stay valid), and millions of distinct values make
 * the fuzzer run out of memory.  putenv takes a string we own instead;
 * the previous one is freed once the environment points at the new one.
 * One variable per target (the previous string is shared). */
static inline int fuzz_setenv(const char *name, const char *value)
{
    static char *current;
    size_t n = strlen(name), m = strlen(value);
    char *s = malloc(n + m + 2);
    if (!s)
        abort();
    memcpy(s, name, n);
    s[n] = '=';
    memcpy(s + n + 1, value, m + 1);
    if (putenv(s) != 0) {
        free(s);
        return -1;
    }
    free(current);
    current = s;
    return 0;
}

#endif

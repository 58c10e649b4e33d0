/* SPDX-License-Identifier: MIT */
/* What the test programs that run without Check share.  Assertions (the
 * vulkan programs run under tests/scripts/vulkan-run, which also fails
 * on any validation-layer message): EXPECT counts a failure and goes
 * on; CHECK_MSG(x, msg) exits when x is negative, printing msg (the
 * error text of the API the program drives: devq_errmsg() or the test
 * host's host_errbuf).  main returns failures ? 1 : 0.  And
 * plain_read_src: a file of the source tree ($top_srcdir/rel, at most
 * 64 KiB: shaders), malloc'd; exits when it cannot be opened. */
#ifndef DEVQ_TEST_PLAIN_EXPECT_H
#define DEVQ_TEST_PLAIN_EXPECT_H

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int failures;

#define EXPECT(c, ...)                                           \
    do {                                                         \
        if (!(c)) {                                              \
            failures++;                                          \
            fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__); \
            fprintf(stderr, __VA_ARGS__);                        \
            fprintf(stderr, "\n");                               \
        }                                                        \
    } while (0)

#define CHECK_MSG(x, msg)                                                                  \
    do {                                                                                   \
        int r_ = (x);                                                                      \
        if (r_ < 0) {                                                                      \
            fprintf(stderr, "FAIL %s:%d: %s: %d %s\n", __FILE__, __LINE__, #x, r_, (msg)); \
            exit(1);                                                                       \
        }                                                                                  \
    } while (0)

static inline void *plain_read_src(const char *rel, size_t *size)
{
    char path[4096];
    const char *top = getenv("top_srcdir");
    snprintf(path, sizeof path, "%s/%s", top && *top ? top : ".", rel);
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "FAIL: %s: %s\n", path, strerror(errno));
        exit(1);
    }
    void *p = malloc(1 << 16);
    *size = fread(p, 1, 1 << 16, f);
    fclose(f);
    return p;
}

#endif

/* SPDX-License-Identifier: MIT */
/* Plain assertions for the test programs that run without Check (the
 * vulkan programs run under tests/scripts/vulkan-run, which also fails
 * on any validation-layer message): EXPECT counts a failure and goes
 * on; CHECK_MSG(x, msg) exits when x is negative, printing msg (the
 * error text of the API the program drives: devq_errmsg() or the test
 * host's host_errbuf).  main returns failures ? 1 : 0. */
#ifndef DEVQ_TEST_PLAIN_EXPECT_H
#define DEVQ_TEST_PLAIN_EXPECT_H

#include <stdio.h>
#include <stdlib.h>

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

#endif

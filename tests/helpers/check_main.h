/* SPDX-License-Identifier: MIT */
/* What every Check test's main() does, written once: run the suites,
 * free the runner, exit 1 when a test failed (automake's harness reads
 * 0 pass, 1 fail, 77 skip, 99 hard error).  Plus the small helpers
 * several tests share: the sanitizer scale, a nap and a monotonic clock.
 * Header-only (static inline), so a test needs no extra source. */
#ifndef DEVQ_TESTS_CHECK_MAIN_H
#define DEVQ_TESTS_CHECK_MAIN_H

#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

/* Sanitized builds (gcc defines __SANITIZE_*, clang has __has_feature)
 * run fewer rounds: they are 5-20 times slower.  SCALE divides a round
 * count. */
#if defined(__SANITIZE_THREAD__)
#define DEVQ_TSAN 1
#endif
#if defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define DEVQ_TSAN 1
#endif
#if __has_feature(address_sanitizer)
#define DEVQ_ASAN 1
#endif
#endif
#if defined(DEVQ_TSAN) || defined(DEVQ_ASAN) || defined(__SANITIZE_ADDRESS__)
#define SCALE 10
#else
#define SCALE 1
#endif

/* Run every suite of sr and free it: EXIT_SUCCESS, or EXIT_FAILURE when
 * a test failed. */
static inline int check_run_runner(SRunner *sr)
{
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

static inline int check_run(Suite *su)
{
    return check_run_runner(srunner_create(su));
}

/* For a test whose cases need a fresh process each (state loaded once
 * per process, environment read once): skipped (77) under CK_FORK=no. */
static inline int check_run_forked(Suite *su, const char *test)
{
    SRunner *sr = srunner_create(su);
    if (srunner_fork_status(sr) == CK_NOFORK) {
        fprintf(stderr, "%s needs Check's fork mode (unset CK_FORK)\n", test);
        srunner_free(sr);
        return 77;
    }
    return check_run_runner(sr);
}

/* A suite of the one case tc, which times out after timeout s. */
static inline Suite *check_suite_of(const char *name, TCase *tc, double timeout)
{
    Suite *su = suite_create(name);
    tcase_set_timeout(tc, timeout);
    suite_add_tcase(su, tc);
    return su;
}

static inline void check_nap_ms(long ms)
{
    struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
    nanosleep(&ts, NULL);
}

static inline uint64_t check_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

#endif

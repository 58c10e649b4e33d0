/* SPDX-License-Identifier: MIT */
/* What the stand-alone host tables of the tests (cpu_test_host.c for the
 * cpu backend, emu/test_host.c for the GPU plugins) share: the calling
 * thread's last error text, the monotonic clock, real futexes.  Each
 * table keeps its own logging policy (host_log_level).  Static: included by one .c each. */
#ifndef DEVQ_TESTS_HOST_FNS_H
#define DEVQ_TESTS_HOST_FNS_H

#include <errno.h>
#include <linux/futex.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <devq/devq_plugin.h>

static _Thread_local char host_errbuf[512];

/* Also on stderr when DEVQ_TEST_VERBOSE is set. */
static int host_error(int err, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(host_errbuf, sizeof host_errbuf, fmt, ap);
    va_end(ap);
    if (getenv("DEVQ_TEST_VERBOSE"))
        fprintf(stderr, "error %d: %s\n", err, host_errbuf);
    return err;
}

static uint64_t host_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int host_futex_wait(const uint32_t *word, uint32_t expected, uint64_t deadline_ns)
{
    struct timespec ts, *tsp = NULL;
    if (deadline_ns != UINT64_MAX) {
        if (host_now_ns() >= deadline_ns)
            return -ETIMEDOUT;
        ts.tv_sec = (time_t)(deadline_ns / 1000000000ull);
        ts.tv_nsec = (long)(deadline_ns % 1000000000ull);
        tsp = &ts;
    }
    long r = syscall(SYS_futex, word, FUTEX_WAIT_BITSET | FUTEX_PRIVATE_FLAG, expected, tsp, NULL,
                     FUTEX_BITSET_MATCH_ANY);
    return r == -1 && errno == ETIMEDOUT ? -ETIMEDOUT : 0;
}

static void host_futex_wake(const uint32_t *word, int n)
{
    syscall(SYS_futex, word, FUTEX_WAKE | FUTEX_PRIVATE_FLAG, n, NULL, NULL, 0);
}

static const char *host_getenv(const char *name)
{
    return getenv(name);
}

/* The includer's logging policy: the level host_log lets through. */
static int host_log_level(void);

static void host_log(int level, const char *fmt, ...)
{
    if (level > host_log_level())
        return;
    va_list ap;
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}

/* The table, for `const struct devq_host name = HOST_FNS_TABLE;`. */
#define HOST_FNS_TABLE                                                                               \
    {                                                                                                \
        .abi_version = DEVQ_HOST_ABI_VERSION, .size = sizeof(struct devq_host), .error = host_error, \
        .log = host_log, .log_level = host_log_level, .futex_wait = host_futex_wait,                 \
        .futex_wake = host_futex_wake, .now_ns = host_now_ns, .getenv = host_getenv,                 \
    }

#endif

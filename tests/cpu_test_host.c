/* Test host table: what libdevq would give the cpu backend, re-done in a
 * few lines so the backend can be tested on its own. */
#include "config.h"
#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include "cpu_test_host.h"

static _Thread_local char test_errmsg[512];

const char *cpu_test_errmsg(void) { return test_errmsg; }
void cpu_test_errmsg_clear(void) { test_errmsg[0] = '\0'; }

static int test_error(int err, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(test_errmsg, sizeof test_errmsg, fmt, ap);
    va_end(ap);
    return err;
}

static int test_log_level(void)
{
    const char *v = getenv("DEVQ_LOG");
    return v && *v && *v != 'o' ? (v[0] == 'f' ? DEVQ_LOG_FULL : DEVQ_LOG_BASIC) : DEVQ_LOG_OFF;
}

static void test_log(int level, const char *fmt, ...)
{
    if (level > test_log_level())
        return;
    va_list ap;
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}

static uint64_t test_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int test_futex_wait(const uint32_t *word, uint32_t expected, uint64_t deadline_ns)
{
    struct timespec ts, *tsp = NULL;
    if (deadline_ns != UINT64_MAX) {
        if (test_now_ns() >= deadline_ns)
            return -ETIMEDOUT;
        ts.tv_sec = (time_t)(deadline_ns / 1000000000ull);
        ts.tv_nsec = (long)(deadline_ns % 1000000000ull);
        tsp = &ts;
    }
    long r = syscall(SYS_futex, word, FUTEX_WAIT_BITSET | FUTEX_PRIVATE_FLAG, expected, tsp,
                     NULL, FUTEX_BITSET_MATCH_ANY);
    return r == -1 && errno == ETIMEDOUT ? -ETIMEDOUT : 0;
}

static void test_futex_wake(const uint32_t *word, int n)
{
    syscall(SYS_futex, word, FUTEX_WAKE | FUTEX_PRIVATE_FLAG, n, NULL, NULL, 0);
}

static const char *test_getenv(const char *name)
{
    return getenv(name);
}

const struct devq_host cpu_test_host = {
    .abi_version = DEVQ_HOST_ABI_VERSION,
    .size = sizeof(struct devq_host),
    .error = test_error,
    .log = test_log,
    .log_level = test_log_level,
    .futex_wait = test_futex_wait,
    .futex_wake = test_futex_wake,
    .now_ns = test_now_ns,
    .getenv = test_getenv,
};

const struct devq_backend_ops *cpu_test_ops(void)
{
    const struct devq_backend_ops *ops = NULL;
    if (devq__cpu_plugin_init(&cpu_test_host, DEVQ_HOST_ABI_VERSION, &ops) != 0)
        return NULL;
    return ops;
}

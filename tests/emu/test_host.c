/* The host table of the plugin tests: errors into a thread-local buffer,
 * log lines on stderr when DEVQ_TEST_VERBOSE is set, real futexes. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <linux/futex.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include "test_host.h"

static __thread char errbuf[512];

const char *test_errmsg(void) { return errbuf; }
void test_errmsg_clear(void) { errbuf[0] = '\0'; }

static int host_error(int err, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(errbuf, sizeof errbuf, fmt, ap);
    va_end(ap);
    if (getenv("DEVQ_TEST_VERBOSE"))
        fprintf(stderr, "error %d: %s\n", err, errbuf);
    return err;
}

static void host_log(int level, const char *fmt, ...)
{
    if (!getenv("DEVQ_TEST_VERBOSE"))
        return;
    va_list ap;
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}

static int host_log_level(void) { return getenv("DEVQ_TEST_VERBOSE") ? DEVQ_LOG_FULL : DEVQ_LOG_OFF; }

static uint64_t host_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int host_futex_wait(const uint32_t *word, uint32_t expected, uint64_t deadline_ns)
{
    struct timespec ts, *tp = NULL;
    if (deadline_ns != UINT64_MAX) {
        ts.tv_sec = (time_t)(deadline_ns / 1000000000ull);
        ts.tv_nsec = (long)(deadline_ns % 1000000000ull);
        tp = &ts;
    }
    long rc = syscall(SYS_futex, word, FUTEX_WAIT_BITSET | FUTEX_PRIVATE_FLAG, expected, tp, NULL,
                      FUTEX_BITSET_MATCH_ANY);
    return rc == -1 && errno == ETIMEDOUT ? -ETIMEDOUT : 0;
}

static void host_futex_wake(const uint32_t *word, int n)
{
    syscall(SYS_futex, word, FUTEX_WAKE | FUTEX_PRIVATE_FLAG, n, NULL, NULL, 0);
}

static const char *host_getenv(const char *name) { return getenv(name); }

const struct devq_host test_host = {
    .abi_version = DEVQ_HOST_ABI_VERSION,
    .size = sizeof(struct devq_host),
    .error = host_error,
    .log = host_log,
    .log_level = host_log_level,
    .futex_wait = host_futex_wait,
    .futex_wake = host_futex_wake,
    .now_ns = host_now_ns,
    .getenv = host_getenv,
};

const struct devq_backend_ops *test_plugin_load(const char *build_dir, const char *rel)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", build_dir, rel);
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        fprintf(stderr, "dlopen %s: %s\n", path, dlerror());
        return NULL;
    }
    devq_plugin_init_fn init = (devq_plugin_init_fn)dlsym(h, DEVQ_PLUGIN_INIT_SYMBOL);
    const struct devq_backend_ops *ops = NULL;
    if (!init || init(&test_host, DEVQ_HOST_ABI_VERSION, &ops) != 0) {
        fprintf(stderr, "%s: devq_plugin_init failed: %s\n", path, test_errmsg());
        return NULL;
    }
    return ops;
}

/* Test host table: what libdevq would give the cpu backend, re-done in a
 * few lines so the backend can be tested on its own.  Logs at DEVQ_LOG's
 * level; the rest is tests/host_fns.h. */
#include "config.h"
#include "host_fns.h"
#include "cpu_test_host.h"

const char *cpu_test_errmsg(void) { return host_errbuf; }
void cpu_test_errmsg_clear(void) { host_errbuf[0] = '\0'; }

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

const struct devq_host cpu_test_host = {
    .abi_version = DEVQ_HOST_ABI_VERSION,
    .size = sizeof(struct devq_host),
    .error = host_error,
    .log = test_log,
    .log_level = test_log_level,
    .futex_wait = host_futex_wait,
    .futex_wake = host_futex_wake,
    .now_ns = host_now_ns,
    .getenv = host_getenv,
};

const struct devq_backend_ops *cpu_test_ops(void)
{
    const struct devq_backend_ops *ops = NULL;
    if (devq__cpu_plugin_init(&cpu_test_host, DEVQ_HOST_ABI_VERSION, &ops) != 0)
        return NULL;
    return ops;
}

/* SPDX-License-Identifier: MIT */
/* The service table libdevq hands to every plugin. */
#include "config.h"
#include <stdarg.h>
#include <devq/devq_plugin.h>
#include "env.h"
#include "error.h"
#include "futex.h"
#include "host.h"
#include "log.h"

static int host_error(int err, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    devq__verr(err, fmt, ap);
    va_end(ap);
    return err;
}

static void host_log(int level, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    devq__vlog(level, fmt, ap);
    va_end(ap);
}

static int host_futex_wait(const uint32_t *word, uint32_t expected, uint64_t deadline_ns)
{
    return devq__futex_wait(word, expected, deadline_ns, 0);
}

static void host_futex_wake(const uint32_t *word, int n)
{
    devq__futex_wake(word, n, 0);
}

const struct devq_host devq__host = {
    .abi_version = DEVQ_HOST_ABI_VERSION,
    .size = sizeof(struct devq_host),
    .error = host_error,
    .log = host_log,
    .log_level = devq__log_level,
    .futex_wait = host_futex_wait,
    .futex_wake = host_futex_wake,
    .now_ns = devq__now_ns,
    .getenv = devq__getenv,
};

/* SPDX-License-Identifier: MIT */
/* Test host table: what libdevq would give the cpu backend, re-done in a
 * few lines so the backend can be tested on its own.  Logs at DEVQ_LOG's
 * level; the rest is tests/helpers/host_fns.h. */
#include "config.h"
#include "host_fns.h"
#include "cpu_test_host.h"

const char *cpu_test_errmsg(void)
{
    return host_errbuf;
}
void cpu_test_errmsg_clear(void)
{
    host_errbuf[0] = '\0';
}

static int host_log_level(void)
{
    const char *v = getenv("DEVQ_LOG");
    return v && *v && *v != 'o' ? (v[0] == 'f' ? DEVQ_LOG_FULL : DEVQ_LOG_BASIC) : DEVQ_LOG_OFF;
}

const struct devq_host cpu_test_host = HOST_FNS_TABLE;

const struct devq_backend_ops *cpu_test_ops(void)
{
    const struct devq_backend_ops *ops = NULL;
    if (devq__cpu_plugin_init(&cpu_test_host, DEVQ_HOST_ABI_VERSION, &ops) != 0)
        return NULL;
    return ops;
}

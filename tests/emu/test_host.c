/* SPDX-License-Identifier: MIT */
/* The host table of the plugin tests: errors into a thread-local buffer,
 * log lines on stderr when DEVQ_TEST_VERBOSE is set, real futexes (the
 * shared parts in tests/helpers/host_fns.h). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include "../helpers/host_fns.h"
#include "test_host.h"

const char *test_errmsg(void)
{
    return host_errbuf;
}
void test_errmsg_clear(void)
{
    host_errbuf[0] = '\0';
}

static int host_log_level(void)
{
    return getenv("DEVQ_TEST_VERBOSE") ? DEVQ_LOG_FULL : DEVQ_LOG_OFF;
}

const struct devq_host test_host = HOST_FNS_TABLE;

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

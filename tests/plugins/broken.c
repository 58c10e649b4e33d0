/* SPDX-License-Identifier: MIT */
/* One test plugin per way a plugin can be wrong.  Built several times
 * (mk/loader.mk), each with one BROKEN_* macro, as devq-<kind>.so; each
 * names its backend after its kind so that reports can be told apart.
 *   noentry     no devq_plugin_init symbol at all
 *   initfail    devq_plugin_init fails with a reason
 *   nulltable   devq_plugin_init succeeds but hands back no table
 *   future      table from ABI version 99
 *   small       table too small to hold the required ops
 *   nullop      a required op (event_wait) is NULL
 *   badname     backend name outside [a-z0-9_]{1,15}
 *   halfkernel  kernel_load without launch
 *   old         an older, smaller table that stops before the kernel ops:
 *               accepted, and its kernel ops (set past `size`) are ignored */
#include <stddef.h>
#include <devq/devq_plugin.h>
#if defined(BROKEN_NULLOP)
#define STUB_EVENT_WAIT NULL
#endif
#include "stub_ops.h"

#if defined(BROKEN_NOENTRY)
/* Exports something, just not the entry point. */
int devq_plugin_inti(void);
int devq_plugin_inti(void)
{
    return 0;
}
#else

#if defined(BROKEN_FUTURE)
#define KIND "future"
#define ABI (DEVQ_PLUGIN_ABI_VERSION + 98)
#elif defined(BROKEN_SMALL)
#define KIND "small"
#define SIZE offsetof(struct devq_backend_ops, host_fn)
#elif defined(BROKEN_NULLOP)
#define KIND "nullop"
#elif defined(BROKEN_BADNAME)
#define KIND "Bad-Name"
#elif defined(BROKEN_HALFKERNEL)
#define KIND "halfkernel"
#elif defined(BROKEN_OLD)
#define KIND "old"
#define SIZE offsetof(struct devq_backend_ops, kernel_load)
#elif defined(BROKEN_INITFAIL)
#define KIND "initfail"
#elif defined(BROKEN_NULLTABLE)
#define KIND "nulltable"
#else
#error "define one BROKEN_* kind"
#endif
#ifndef ABI
#define ABI DEVQ_PLUGIN_ABI_VERSION
#endif
#ifndef SIZE
#define SIZE sizeof(struct devq_backend_ops)
#endif

static const struct devq_backend_ops ops = {
    .abi_version = ABI,
    .size = SIZE,
    .name = KIND,
    STUB_REQUIRED_OPS,
#if defined(BROKEN_HALFKERNEL)
    .kernel_load = stub_kernel_load,
#endif
#if defined(BROKEN_OLD)
    /* Past `size`: the loader must not see these. */
    .kernel_load = stub_kernel_load,
    .kernel_destroy = stub_kernel_destroy,
    .launch = stub_launch,
#endif
};

int devq_plugin_init(const struct devq_host *host, uint32_t host_abi, const struct devq_backend_ops **out)
{
    (void)host_abi;
    stub_host = host;
#if defined(BROKEN_INITFAIL)
    (void)out;
    (void)ops;
    return host->error(-EIO, "initfail: refusing to start on purpose (test plugin)");
#elif defined(BROKEN_NULLTABLE)
    (void)ops;
    *out = NULL;
    return 0;
#else
    *out = &ops;
    return 0;
#endif
}
#endif

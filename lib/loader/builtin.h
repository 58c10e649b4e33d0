/* SPDX-License-Identifier: MIT */
/* Backends compiled into libdevq.  The cpu backend is the embedded
 * default: it is always there, even when no plugin folder is found, and it
 * talks to lib only through the same ABI table as any plugin. */
#ifndef DEVQ_LIB_BUILTIN_H
#define DEVQ_LIB_BUILTIN_H
#include <devq/devq_plugin.h>
int devq__cpu_plugin_init(const struct devq_host *host, uint32_t host_abi,
                          const struct devq_backend_ops **ops);
#endif

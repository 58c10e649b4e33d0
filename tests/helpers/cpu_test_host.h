/* SPDX-License-Identifier: MIT */
/* A stand-alone host table for driving the cpu backend's ops directly,
 * without libdevq (tests/unit/test_cpu_plugin.c, bench/bench_cpu_ops.c). */
#ifndef DEVQ_CPU_TEST_HOST_H
#define DEVQ_CPU_TEST_HOST_H
#include <devq/devq_plugin.h>

extern const struct devq_host cpu_test_host;
/* The calling thread's last host->error() message ("" if none). */
const char *cpu_test_errmsg(void);
void cpu_test_errmsg_clear(void);
/* Initialise the embedded cpu backend with cpu_test_host. */
const struct devq_backend_ops *cpu_test_ops(void);

int devq__cpu_plugin_init(const struct devq_host *host, uint32_t host_abi,
                          const struct devq_backend_ops **ops);
#endif

/* SPDX-License-Identifier: MIT */
/* Shared helpers for the backend-agnostic conformance suites.
 *
 * The same test binary runs against every backend: DEVQ_TEST_DEVICE
 * names the device ("cpu" by default, "cuda", "hip").  Test kernels are
 * written once as bodies over resolved arguments and exported twice: as
 * cpu kernels (args[i] is the pointer) and as kernels of the emulated
 * GPU drivers (CUDA-style params: params[i] points at the argument). */
#ifndef DEVQ_CONF_H
#define DEVQ_CONF_H

#include <check.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <devq/devq.h>

#define MS (1000000ull)
#define SEC (1000000000ull)

#define CONF_KERNEL(name, sig)                                       \
    static int name##_body(void *const *a, const devq_cpu_group *g); \
    int conf_cpu_##name(void *const *a, const devq_cpu_group *g);    \
    int conf_cpu_##name(void *const *a, const devq_cpu_group *g)     \
    {                                                                \
        return name##_body(a, g);                                    \
    }                                                                \
    int conf_emu_##name(void **p, const devq_cpu_group *g);          \
    int conf_emu_##name(void **p, const devq_cpu_group *g)           \
    {                                                                \
        void *a[16];                                                 \
        for (size_t i = 0; (sig)[i]; i++)                            \
            a[i] = (sig)[i] == 'b' ? *(void **)p[i] : p[i];          \
        return name##_body(a, g);                                    \
    }                                                                \
    static int name##_body(void *const *a, const devq_cpu_group *g)

/* Global index of work-item i of group g (1-D). */
#define CONF_GID(g, i) ((g)->group_id[0] * (g)->local_size[0] + (i))

devq_device *conf_open(void);
/* devq_device_open(conf_backend()) with var=value in the environment
 * for the call only (the old value, or its absence, is restored): the
 * result, *out set when 0. */
int conf_open_env(const char *var, const char *value, devq_device **out);
/* Memory cases shared by the memory and memidle suites; q is the queue
 * the buffers are allocated and freed on, or NULL for none. */
void conf_mem_budget_case(devq_device *dev, devq_queue *q);
void conf_mem_guard_case(devq_device *dev, devq_queue *q);
const char *conf_backend(void);
/* Load test kernel `name` on dev; ck_abort on failure. */
devq_kernel *conf_kernel(devq_device *dev, const char *name);
devq_queue *conf_queue(devq_device *dev);
devq_buffer *conf_buffer(devq_device *dev, size_t bytes);
devq_signal *conf_signal(uint64_t initial);
devq_launch conf_launch1(uint32_t global, uint32_t local);
/* Host <-> buffer through a queue, finished before returning. */
void conf_upload(devq_queue *q, devq_buffer *b, const void *src, size_t n);
void conf_download(devq_queue *q, void *dst, devq_buffer *b, size_t n);
void conf_sleep_ms(unsigned ms);

Suite *conf_queue_suite(void);
Suite *conf_failure_suite(void);
Suite *conf_failmodel_suite(void);
Suite *conf_deferral_suite(void);
Suite *conf_hazards_suite(void);
Suite *conf_memory_suite(void);
Suite *conf_mem_idle_suite(void);
Suite *conf_tracker_suite(void);
Suite *conf_timing_suite(void);
Suite *conf_race_suite(void);
Suite *conf_names_suite(void);
Suite *conf_inline_suite(void);
Suite *conf_kcheck_suite(void);
Suite *conf_graph_suite(void);
Suite *conf_fork_suite(void);
/* conf_names.c: the scenario run in a fresh process (CONF_NAMES_CHILD). */
int conf_names_child(void);

#endif

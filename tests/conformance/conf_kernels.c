/* SPDX-License-Identifier: MIT */
/* Test kernels, shared by every suite and every backend.  Each cpu
 * entry declares its parameters (DEVQ_CPU_KERNEL_SIGNATURE), so every
 * launch of the suites is checked on cpu too (devq-cpu(7)). */
#include <devq/devq_cpu.h>
#include "conf.h"
#include <stdatomic.h>

/* x[i] *= a */
CONF_KERNEL(scale, "bv")
{
    float *x = a[0];
    float s = *(const float *)a[1];
    for (uint32_t i = 0; i < g->local_size[0]; i++) {
        uint32_t j = CONF_GID(g, i);
        if (j < g->global_size[0])
            x[j] *= s;
    }
    return 0;
}
DEVQ_CPU_KERNEL_SIGNATURE(conf_cpu_scale, DEVQ_CPU_BUFFER, DEVQ_CPU_VALUE(float));

/* y[i] += x[i] */
CONF_KERNEL(add, "bb")
{
    const float *x = a[0];
    float *y = a[1];
    for (uint32_t i = 0; i < g->local_size[0]; i++) {
        uint32_t j = CONF_GID(g, i);
        if (j < g->global_size[0])
            y[j] += x[j];
    }
    return 0;
}
DEVQ_CPU_KERNEL_SIGNATURE(conf_cpu_add, DEVQ_CPU_BUFFER, DEVQ_CPU_BUFFER);

/* One step of a chain: v[0] must be `expect`, becomes expect + 1. */
CONF_KERNEL(step, "bv")
{
    uint32_t *v = a[0];
    uint32_t expect = *(const uint32_t *)a[1];
    if (g->group_id[0] != 0)
        return 0;
    if (v[0] != expect)
        return -EILSEQ;
    v[0] = expect + 1;
    return 0;
}
DEVQ_CPU_KERNEL_SIGNATURE(conf_cpu_step, DEVQ_CPU_BUFFER, DEVQ_CPU_VALUE(uint32_t));

/* Always fails with the given (negative) code. */
CONF_KERNEL(fail, "v")
{
    (void)g;
    return *(const int32_t *)a[0];
}
DEVQ_CPU_KERNEL_SIGNATURE(conf_cpu_fail, DEVQ_CPU_VALUE(int32_t));

/* Sleep, then copy n bytes src -> dst: a slow reader. */
CONF_KERNEL(slow_copy, "bbvv")
{
    if (g->group_id[0] != 0)
        return 0;
    conf_sleep_ms(*(const uint32_t *)a[2]);
    memcpy(a[1], a[0], *(const uint32_t *)a[3]);
    return 0;
}
DEVQ_CPU_KERNEL_SIGNATURE(conf_cpu_slow_copy, DEVQ_CPU_BUFFER, DEVQ_CPU_BUFFER, DEVQ_CPU_VALUE(uint32_t),
                          DEVQ_CPU_VALUE(uint32_t));

/* v[i] += n for every work-item. */
CONF_KERNEL(add_u32, "bv")
{
    uint32_t *v = a[0];
    uint32_t n = *(const uint32_t *)a[1];
    for (uint32_t i = 0; i < g->local_size[0]; i++) {
        uint32_t j = CONF_GID(g, i);
        if (j < g->global_size[0])
            v[j] += n;
    }
    return 0;
}
DEVQ_CPU_KERNEL_SIGNATURE(conf_cpu_add_u32, DEVQ_CPU_BUFFER, DEVQ_CPU_VALUE(uint32_t));

/* The tracker oracle's op (see conf_tracker.c): up to three buffers with
 * access modes; reads check the version they see, writes stamp theirs. */
struct conf_op_args {
    uint32_t modes[3];  /* 0 unused, else DEVQ_READ/WRITE/READ_WRITE */
    uint32_t expect[3]; /* version a read must see */
    uint32_t me;        /* this op's version stamp */
    uint32_t delay_us;
};

CONF_KERNEL(oracle_op, "bbbv")
{
    const struct conf_op_args *o = a[3];
    if (g->group_id[0] != 0)
        return 0;
    for (int k = 0; k < 3; k++)
        if ((o->modes[k] & DEVQ_READ) && *(volatile uint32_t *)a[k] != o->expect[k])
            return -EILSEQ;
    if (o->delay_us) {
        struct timespec ts = { 0, (long)o->delay_us * 1000L };
        nanosleep(&ts, NULL);
    }
    for (int k = 0; k < 3; k++) {
        if ((o->modes[k] & DEVQ_READ) && *(volatile uint32_t *)a[k] != o->expect[k])
            return -EILSEQ; /* overwritten while we read: a missed WAR */
        if (o->modes[k] & DEVQ_WRITE)
            *(volatile uint32_t *)a[k] = o->me;
    }
    return 0;
}
DEVQ_CPU_KERNEL_SIGNATURE(conf_cpu_oracle_op, DEVQ_CPU_BUFFER, DEVQ_CPU_BUFFER, DEVQ_CPU_BUFFER,
                          DEVQ_CPU_VALUE(struct conf_op_args));

/* Sleep for the given number of milliseconds (group 0 only). */
CONF_KERNEL(sleep_ms, "v")
{
    if (g->group_id[0] == 0)
        conf_sleep_ms(*(const uint32_t *)a[0]);
    return 0;
}
DEVQ_CPU_KERNEL_SIGNATURE(conf_cpu_sleep_ms, DEVQ_CPU_VALUE(uint32_t));

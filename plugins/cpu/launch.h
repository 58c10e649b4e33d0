/* SPDX-License-Identifier: MIT */
/* cpu backend: a launch as the worker runs it, shared by kernel.c (one
 * launch, launch lists) and graph.c (prebuilt graphs). */
#ifndef DEVQ_CPU_LAUNCH_H
#define DEVQ_CPU_LAUNCH_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include "cpu.h"

/* A launch as queued: dimensions and a private copy of the arguments. */
struct cpu_launch {
    struct cpu_launch *next; /* in a stream's recycle stack */
    uint32_t small;          /* CPU_LAUNCH_SMALL bytes: recyclable */
    _Atomic uint32_t depth;  /* records from here to the bottom of the stack */
    devq_pl_kernel *k;
    devq_pl_kernel *drop; /* the stream's previous kernel: unref it here */
    uint32_t global[3], local[3], groups[3];
    uint64_t total;       /* groups[0] * groups[1] * groups[2] */
    _Atomic int positive; /* a positive return of some group, for the message */
    size_t nargs;
    void *args[]; /* then the copied value bytes */
};

#define CPU_VALUE_ALIGN 16u

/* cl's groups from l; 0, or -EINVAL with the host's message. */
int cpu_launch_dims(struct cpu_launch *cl, const devq_launch *l, const char *entry);
/* Run every group of cl (here or on the pool); 0 or the first failure. */
int cpu_launch_exec(devq_pl_stream *s, struct cpu_launch *cl);
/* cl failed with err: latch it on s with its message; `where` says
 * which launch of a list or graph, or "". */
void cpu_launch_latch(devq_pl_stream *s, struct cpu_launch *cl, int err, const char *where);
void cpu_kernel_ref(devq_pl_kernel *k);
void cpu_kernel_unref(devq_pl_kernel *k); /* the last frees it */
const char *cpu_kernel_entry(const devq_pl_kernel *k);
devq_cpu_kernel_fn cpu_kernel_fn(const devq_pl_kernel *k);
/* Group g of cl returned r (not 0): logged, and the error it is (a
 * positive r is kept for the message and becomes -EIO). */
int cpu_group_failed(struct cpu_launch *cl, const devq_cpu_group *g, int r);

#endif

/* SPDX-License-Identifier: MIT */
/* Kernels: a backend program entry point, kept alive by the batches
 * that launch it (kernel.c). */
#ifndef DEVQ_LIB_KERNEL_H
#define DEVQ_LIB_KERNEL_H

#include <devq/devq_plugin.h>
#include "device.h"
#include "object.h"
#include "name.h"

#define DEVQ_MAGIC_KERNEL 0x4b45524eu  /* "KERN" */

struct devq_kernel {
    struct devq_object obj;        /* refs: user + batches in flight */
    struct devq_device *dev;
    devq_pl_kernel *pl;
    char name[64];                 /* the entry point */
    struct devq_name label_name;   /* "kernel #1 (entry saxpy)": per process */
};

int  devq__kernel_check(const devq_kernel *k, const char *fn);
/* How every message names k: `kernel #1 (entry saxpy)`, named
 * `kernel "axpy" (#1, entry saxpy)` (name.h, devq(7) NAMES). */
struct devq_label devq__kernel_label(const devq_kernel *k);
/* The name a trace slice of k carries: the user's name, else the entry. */
void devq__kernel_slice_name(const devq_kernel *k, char *out, size_t cap);

#endif

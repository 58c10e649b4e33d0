/* SPDX-License-Identifier: MIT */
/* Kernels: a backend program entry point, kept alive by the batches
 * that launch it (kernel.c). */
#ifndef DEVQ_LIB_KERNEL_H
#define DEVQ_LIB_KERNEL_H

#include <devq/devq_plugin.h>
#include "device.h"
#include "object.h"
#include "name.h"

#define DEVQ_MAGIC_KERNEL 0x4b45524eu /* "KERN" */

struct devq_kernel {
    struct devq_object obj; /* refs: user + batches in flight */
    struct devq_device *dev;
    devq_pl_kernel *pl;
    char name[64];               /* the entry point */
    struct devq_name label_name; /* "kernel #1 (entry saxpy)": per process */
    /* The declared interface (the plugin's kernel_iface), copied at load;
     * iface.params is this kernel's own array.  Unchecked (0) when the
     * backend has no kernel_iface or does not know this kernel's. */
    int checked;
    struct devq_pl_kernel_iface iface;
};

int devq__kernel_check(const devq_kernel *k, const char *fn);
/* How every message names k: `kernel #1 (entry saxpy)`, named
 * `kernel "axpy" (#1, entry saxpy)` (name.h, devq(7) NAMES). */
struct devq_label devq__kernel_label(const devq_kernel *k);
/* The name a trace slice of k carries: the user's name, else the entry. */
void devq__kernel_slice_name(const devq_kernel *k, char *out, size_t cap);

/* kernel_args.c: after kernel_load, ask the backend for k's declared
 * interface and keep a validated copy (0, or a negative errno with
 * devq_errmsg set when the backend's answer is malformed). */
int devq__kernel_iface_load(devq_kernel *k, const char *fn);
/* devq_queue_exec's check of args against k's declared interface: 0 when
 * they match or k is unchecked, else -EINVAL naming the kernel, the
 * argument, what the kernel declares and what was passed. */
int devq__kernel_args_check(const devq_kernel *k, const devq_arg *args, size_t nargs, const char *fn);

#endif

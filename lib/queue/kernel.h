/* Kernels: a backend program entry point, kept alive by the batches
 * that launch it (kernel.c). */
#ifndef DEVQ_LIB_KERNEL_H
#define DEVQ_LIB_KERNEL_H

#include <devq/devq_plugin.h>
#include "device.h"
#include "object.h"

#define DEVQ_MAGIC_KERNEL 0x4b45524eu  /* "KERN" */

struct devq_kernel {
    struct devq_object obj;        /* refs: user + batches in flight */
    struct devq_device *dev;
    devq_pl_kernel *pl;
    char name[64];
};

int  devq__kernel_check(const devq_kernel *k, const char *fn);

#endif

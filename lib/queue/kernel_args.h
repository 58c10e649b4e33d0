/* SPDX-License-Identifier: MIT */
/* kernel_args.c: a kernel's declared interface, copied at load, and
 * devq_queue_exec's check of arguments against it. */
#ifndef DEVQ_LIB_KERNEL_ARGS_H
#define DEVQ_LIB_KERNEL_ARGS_H

#include <stddef.h>
#include <devq/devq.h>

int devq__kernel_iface_load(devq_kernel *k, const char *fn);
int devq__kernel_args_check(const devq_kernel *k, const devq_arg *args, size_t nargs, const char *fn);

#endif

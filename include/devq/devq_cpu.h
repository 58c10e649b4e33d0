/* SPDX-License-Identifier: MIT */
/* clang-format off */ /* hand-aligned tables, read as documentation */
/* devq - cpu kernels that declare their parameters (devq-cpu(7) CHECKED
 * LAUNCHES).  Optional: a kernel without a declaration is launched
 * unchecked, as before. */
#ifndef DEVQ_CPU_KERNEL_SIGNATURE_H
#define DEVQ_CPU_KERNEL_SIGNATURE_H

#include <stdint.h>
#include <devq/devq.h>

#ifdef __cplusplus
extern "C" {
#endif

/* A cpu kernel's declared parameters (devq-cpu(7) CHECKED LAUNCHES), in
 * argument order: DEVQ_CPU_BUFFER, or DEVQ_CPU_VALUE(type) for a value.
 * Written next to the kernel, at file scope:
 *     DEVQ_CPU_KERNEL_SIGNATURE(saxpy, DEVQ_CPU_VALUE(float), DEVQ_CPU_BUFFER, DEVQ_CPU_BUFFER);
 * It exports `devq_cpu_signature_<fn>`, which the cpu backend looks up
 * next to the entry point at devq_kernel_load; devq_queue_exec then
 * refuses a launch that does not match it.  A kernel without one is
 * launched unchecked, as before.  DEVQ_CPU_KERNEL_NO_ARGS(fn) declares a
 * kernel that takes no arguments.  C only (the list is a compound literal). */
#define DEVQ_CPU_BUFFER      0u
#define DEVQ_CPU_VALUE(type) ((uint32_t)sizeof(type))
#define DEVQ_CPU_SIGNATURE_MAGIC 0x44515331u  /* "DQS1": the layout below */
typedef struct devq_cpu_signature {
    uint32_t magic;              /* DEVQ_CPU_SIGNATURE_MAGIC */
    uint32_t nparams;
    const uint32_t *params;      /* per argument: DEVQ_CPU_BUFFER or a value's byte size */
    devq_cpu_kernel_fn fn;       /* the kernel it describes (checked at load) */
} devq_cpu_signature;
#define DEVQ_CPU_SIGNATURE__DEF(fn, n, list)                                              \
    extern const devq_cpu_signature devq_cpu_signature_##fn;                              \
    __attribute__((visibility("default"), used))                                          \
    const devq_cpu_signature devq_cpu_signature_##fn = { DEVQ_CPU_SIGNATURE_MAGIC, (n), (list), (fn) }
#define DEVQ_CPU_KERNEL_SIGNATURE(fn, ...)                                                \
    DEVQ_CPU_SIGNATURE__DEF(fn, (uint32_t)(sizeof((const uint32_t[]){ __VA_ARGS__ }) / sizeof(uint32_t)), \
                            ((const uint32_t[]){ __VA_ARGS__ }))
#define DEVQ_CPU_KERNEL_NO_ARGS(fn) DEVQ_CPU_SIGNATURE__DEF(fn, 0u, (const uint32_t *)0)

/* A cpu kernel given by function pointer (devq_kernel_load_fn(3)): no
 * symbol lookup, so a kernel in a program or library that exports nothing
 * (no -rdynamic, a static function, a Rust rlib) loads all the same.  The
 * signature is not looked up by name either (a function that is not
 * exported has no name to look up): pass its DEVQ_CPU_KERNEL_SIGNATURE,
 * &devq_cpu_signature_<fn>, to have launches checked, or NULL to launch
 * unchecked.  name names the kernel in messages and traces (NULL: the
 * function's symbol when dladdr finds one, else "fn@<address>").  Other
 * backends: -ENOTSUP. */
DEVQ_API int devq_kernel_load_fn(devq_device *dev, devq_cpu_kernel_fn fn, const devq_cpu_signature *sig,
                                 const char *name, devq_kernel **out);

#ifdef __cplusplus
}
#endif

#endif

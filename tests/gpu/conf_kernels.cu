/* SPDX-License-Identifier: MIT */
/* The conformance kernels of tests/conformance/conf_kernels.c for a real
 * NVIDIA GPU, compiled once to PTX (tests/gpu/conf_kernels.ptx, committed,
 * because CI has no nvcc; `make gpu-ptx` regenerates it where nvcc is):
 *
 *   nvcc -ptx -arch=compute_60 -o tests/gpu/conf_kernels.ptx tests/gpu/conf_kernels.cu
 *
 * compute_60 PTX is JIT-compiled by the driver for any GPU since Pascal.
 *
 * Each CONF_KERNEL(name, sig) there is `conf_<name>` here, with the same
 * arguments in the same order: a 'b' is a device pointer, a 'v' the value
 * itself.  conf_kernel() in tests/conformance/conf_util.c loads this file
 * on a real cuda device (see CONF_KERNEL_MODULE there).
 *
 * What the C bodies do per group, with a loop over the group's items,
 * each thread does for its item here: thread j is CONF_GID = group *
 * local_size + item.  The C kernels bound j by global_size, which the
 * drivers round up to whole blocks, so every thread of the grid is in
 * range: there is nothing to check here either.  A body that works "in
 * group 0 only" runs in one thread (block 0, thread 0), the one that
 * would see the group's results in order on the cpu.
 *
 * A C kernel fails by returning a negative errno; a GPU kernel can only
 * trap, which the driver reports as CUDA_ERROR_LAUNCH_FAILED and which
 * loses the context (the suites skip the kernel-failure tests on backends
 * without DEVQ_CAP_SKIP_ON_ERROR).
 *
 * Sleeps spin on %globaltimer (nanoseconds, every GPU since Kepler):
 * __nanosleep needs sm_70, and clock64() counts cycles of an unknown
 * clock. */
#include <stdint.h>

/* enum devq_access in include/devq/devq.h */
#define CONF_READ 1u
#define CONF_WRITE 2u

static __device__ __forceinline__ uint64_t conf_now_ns(void)
{
    uint64_t t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

static __device__ void conf_spin_ns(uint64_t ns)
{
    uint64_t start = conf_now_ns();
    while (conf_now_ns() - start < ns)
        ;
}

static __device__ __forceinline__ bool conf_first_thread(void)
{
    return blockIdx.x == 0 && threadIdx.x == 0;
}

static __device__ __forceinline__ uint32_t conf_gid(void)
{
    return blockIdx.x * blockDim.x + threadIdx.x;
}

/* x[i] *= a */
extern "C" __global__ void conf_scale(float *x, float s)
{
    x[conf_gid()] *= s;
}

/* y[i] += x[i] */
extern "C" __global__ void conf_add(const float *x, float *y)
{
    uint32_t j = conf_gid();
    y[j] += x[j];
}

/* One step of a chain: v[0] must be `expect`, becomes expect + 1. */
extern "C" __global__ void conf_step(uint32_t *v, uint32_t expect)
{
    if (!conf_first_thread())
        return;
    if (v[0] != expect)
        __trap();                       /* -EILSEQ on the cpu */
    v[0] = expect + 1;
}

/* Fails: the cpu returns `code` (a negative errno; 0 succeeds). */
extern "C" __global__ void conf_fail(int32_t code)
{
    if (code != 0)
        __trap();
}

/* Sleep, then copy n bytes src -> dst: a slow reader. */
extern "C" __global__ void conf_slow_copy(const uint8_t *src, uint8_t *dst, uint32_t ms, uint32_t n)
{
    if (!conf_first_thread())
        return;
    conf_spin_ns((uint64_t)ms * 1000000u);
    for (uint32_t i = 0; i < n; i++)
        dst[i] = src[i];
}

/* v[i] += n for every work-item. */
extern "C" __global__ void conf_add_u32(uint32_t *v, uint32_t n)
{
    v[conf_gid()] += n;
}

/* The tracker oracle's op (see conf_tracker.c): up to three buffers with
 * access modes; reads check the version they see, writes stamp theirs.
 * The same 32 bytes as struct conf_op_args in conf_kernels.c. */
struct conf_op_args {
    uint32_t modes[3];        /* 0 unused, else DEVQ_READ/WRITE/READ_WRITE */
    uint32_t expect[3];       /* version a read must see */
    uint32_t me;              /* this op's version stamp */
    uint32_t delay_us;
};

extern "C" __global__ void conf_oracle_op(uint32_t *b0, uint32_t *b1, uint32_t *b2,
                                          struct conf_op_args o)
{
    if (!conf_first_thread())
        return;
    /* volatile: the second look must read memory again, to see a write
     * that raced with this op (a missed WAR) */
    volatile uint32_t *b[3] = { b0, b1, b2 };
    for (int k = 0; k < 3; k++)
        if ((o.modes[k] & CONF_READ) && *b[k] != o.expect[k])
            __trap();                   /* -EILSEQ on the cpu */
    if (o.delay_us)
        conf_spin_ns((uint64_t)o.delay_us * 1000u);
    for (int k = 0; k < 3; k++) {
        if ((o.modes[k] & CONF_READ) && *b[k] != o.expect[k])
            __trap();                   /* overwritten while we read: a missed WAR */
        if (o.modes[k] & CONF_WRITE)
            *b[k] = o.me;
    }
}

/* Sleep for the given number of milliseconds (group 0 only). */
extern "C" __global__ void conf_sleep_ms(uint32_t ms)
{
    if (conf_first_thread())
        conf_spin_ns((uint64_t)ms * 1000000u);
}

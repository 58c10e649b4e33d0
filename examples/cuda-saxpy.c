/* SPDX-License-Identifier: MIT */
/* cuda-saxpy: y = a*x + y on an NVIDIA GPU through devq, with the kernel
 * given as PTX text, and the result checked against the host.
 *
 *   cuda-saxpy [DEVICE] [N]      (default: cuda:0, 1000003 elements)
 *
 * Needs a GPU of compute capability 5.0 or newer and its driver: the
 * driver JIT-compiles the PTX below.  Built on request (`make
 * examples/cuda-saxpy`); tests/gpu/run.sh builds and runs it. */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <devq/devq.h>

/* extern "C" __global__ void saxpy(float a, const float *x, float *y,
 *                                  unsigned n)
 * { unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
 *   if (i < n) y[i] = fmaf(a, x[i], y[i]); }
 * written out as PTX ISA 6.0 for sm_50, 64-bit addresses. */
static const char saxpy_ptx[] = ".version 6.0\n"
                                ".target sm_50\n"
                                ".address_size 64\n"
                                "\n"
                                ".visible .entry saxpy(\n"
                                "    .param .f32 saxpy_a,\n"
                                "    .param .u64 saxpy_x,\n"
                                "    .param .u64 saxpy_y,\n"
                                "    .param .u32 saxpy_n\n"
                                ")\n"
                                "{\n"
                                "    .reg .pred %p<2>;\n"
                                "    .reg .f32  %f<5>;\n"
                                "    .reg .b32  %r<6>;\n"
                                "    .reg .b64  %rd<8>;\n"
                                "\n"
                                "    ld.param.f32        %f1, [saxpy_a];\n"
                                "    ld.param.u64        %rd1, [saxpy_x];\n"
                                "    ld.param.u64        %rd2, [saxpy_y];\n"
                                "    ld.param.u32        %r2, [saxpy_n];\n"
                                "    mov.u32             %r3, %ctaid.x;\n"
                                "    mov.u32             %r4, %ntid.x;\n"
                                "    mov.u32             %r5, %tid.x;\n"
                                "    mad.lo.u32          %r1, %r3, %r4, %r5;\n"
                                "    setp.ge.u32         %p1, %r1, %r2;\n"
                                "    @%p1 bra            DONE;\n"
                                "    cvta.to.global.u64  %rd3, %rd1;\n"
                                "    cvta.to.global.u64  %rd4, %rd2;\n"
                                "    mul.wide.u32        %rd5, %r1, 4;\n"
                                "    add.s64             %rd6, %rd3, %rd5;\n"
                                "    add.s64             %rd7, %rd4, %rd5;\n"
                                "    ld.global.f32       %f2, [%rd6];\n"
                                "    ld.global.f32       %f3, [%rd7];\n"
                                "    fma.rn.f32          %f4, %f1, %f2, %f3;\n"
                                "    st.global.f32       [%rd7], %f4;\n"
                                "DONE:\n"
                                "    ret;\n"
                                "}\n";

static int fail(const char *what, int err)
{
    fprintf(stderr, "cuda-saxpy: %s: %s (%s)\n", what, strerror(-err), devq_errmsg());
    return 1;
}

int main(int argc, char **argv)
{
    const char *spec = argc > 1 ? argv[1] : "cuda:0";
    uint32_t n = argc > 2 ? (uint32_t)strtoul(argv[2], NULL, 0) : 1000003u;
    if (n == 0) {
        fprintf(stderr, "usage: cuda-saxpy [DEVICE] [N > 0]\n");
        return 2;
    }
    size_t bytes = (size_t)n * sizeof(float);
    float *x = malloc(bytes), *y = malloc(bytes), *out = malloc(bytes);
    if (!x || !y || !out) {
        fprintf(stderr, "cuda-saxpy: out of memory for %u elements\n", n);
        return 1;
    }
    for (uint32_t i = 0; i < n; i++) {
        x[i] = (float)(i % 1000) * 0.5f;
        y[i] = (float)(i % 77) - 30.0f;
    }
    const float a = 1.75f;

    devq_device *dev;
    devq_kernel *k;
    devq_queue *q;
    devq_buffer *bx, *by;
    int err;
    if ((err = devq_device_open(spec, &dev)))
        return fail(spec, err);
    devq_device_info info;
    if (devq_device_info_get(dev, &info) == 0)
        printf("cuda-saxpy: %s:%d %s\n", info.backend, info.ordinal, info.name);
    if ((err = devq_kernel_load(dev, saxpy_ptx, strlen(saxpy_ptx), "saxpy", &k)))
        return fail("devq_kernel_load", err);
    if ((err = devq_queue_create(dev, NULL, &q)))
        return fail("devq_queue_create", err);
    if ((err = devq_buffer_alloc(dev, bytes, NULL, 0, &bx)) ||
        (err = devq_buffer_alloc(dev, bytes, NULL, 0, &by)))
        return fail("devq_buffer_alloc", err);

    devq_arg args[4] = {
        DEVQ_ARG_VAL(&a),
        DEVQ_ARG_BUF(bx, DEVQ_READ),
        DEVQ_ARG_BUF(by, DEVQ_READ_WRITE),
        DEVQ_ARG_VAL(&n),
    };
    devq_launch l = { .global = { n, 1, 1 }, .local = { 256, 1, 1 } };
    devq_queue_write(q, bx, 0, x, bytes);
    devq_queue_write(q, by, 0, y, bytes);
    devq_queue_exec(q, k, args, 4, &l);
    devq_queue_read(q, out, by, 0, bytes);
    if ((err = devq_queue_submit(q)))
        return fail("devq_queue_submit", err);
    if ((err = devq_queue_finish(q, 30ull * 1000000000ull)))
        return fail("devq_queue_finish", err);

    /* fma.rn.f32 rounds once, like fmaf: results must match exactly. */
    uint32_t bad = 0;
    for (uint32_t i = 0; i < n; i++) {
        float want = fmaf(a, x[i], y[i]);
        if (out[i] != want && bad++ < 5)
            fprintf(stderr, "cuda-saxpy: y[%u] = %g, want %g\n", i, out[i], want);
    }
    devq_buffer_free(bx, NULL);
    devq_buffer_free(by, NULL);
    devq_queue_destroy(q);
    devq_kernel_destroy(k);
    devq_device_close(dev);
    free(x);
    free(y);
    free(out);
    if (bad) {
        fprintf(stderr, "cuda-saxpy: %u of %u elements wrong\n", bad, n);
        return 1;
    }
    printf("cuda-saxpy: %u elements OK\n", n);
    return 0;
}

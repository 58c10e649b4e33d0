/* SPDX-License-Identifier: MIT */
/* saxpy-vulkan: y = a*x + y on a Vulkan device through devq, with the
 * kernel as SPIR-V (examples/saxpy.comp, compiled to examples/saxpy.spv),
 * and the result checked against the same computation in C.
 *
 *   saxpy-vulkan [SPV] [N] [DEVICE]
 *       SPV     default $top_srcdir/examples/saxpy.spv (top_srcdir: ".")
 *       N       elements, default 1000003 (not a multiple of the group)
 *       DEVICE  default vulkan:0
 *
 * Exits 77 (skipped) when there is no Vulkan device. */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <devq/devq.h>

#define CHECK(x)                                                                 \
    do {                                                                         \
        int r_ = (x);                                                            \
        if (r_ < 0) {                                                            \
            fprintf(stderr, "saxpy-vulkan: %s: %d %s\n", #x, r_, devq_errmsg()); \
            exit(1);                                                             \
        }                                                                        \
    } while (0)

static void *read_file(const char *path, size_t *size)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "saxpy-vulkan: %s: %s\n", path, strerror(errno));
        exit(1);
    }
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    rewind(f);
    void *p = malloc(n > 0 ? (size_t)n : 1);
    if (!p || n <= 0 || fread(p, 1, (size_t)n, f) != (size_t)n) {
        fprintf(stderr, "saxpy-vulkan: cannot read %s\n", path);
        exit(1);
    }
    fclose(f);
    *size = (size_t)n;
    return p;
}

int main(int argc, char **argv)
{
    char def[4096];
    const char *top = getenv("top_srcdir");
    snprintf(def, sizeof def, "%s/examples/saxpy.spv", top && *top ? top : ".");
    const char *spv = argc > 1 ? argv[1] : def;
    uint32_t n = argc > 2 ? (uint32_t)strtoul(argv[2], NULL, 10) : 1000003u;
    const char *spec = argc > 3 ? argv[3] : "vulkan:0";

    devq_device *dev;
    int r = devq_device_open(spec, &dev);
    if (r == -ENODEV) {
        printf("SKIP: no Vulkan device: %s\n", devq_errmsg());
        return 77;
    }
    CHECK(r);
    devq_device_info info;
    CHECK(devq_device_info_get(dev, &info));
    size_t size;
    void *image = read_file(spv, &size);
    devq_kernel *k;
    CHECK(devq_kernel_load(dev, image, size, "main", &k));
    free(image);

    float a = 2.5f, *x = malloc(n * sizeof *x), *y = malloc(n * sizeof *y), *want = malloc(n * sizeof *want);
    if (!x || !y || !want)
        return 1;
    for (uint32_t i = 0; i < n; i++) {
        x[i] = (float)(i % 1000) * 0.5f;
        y[i] = (float)(i % 7) - 3.0f;
        want[i] = fmaf(a, x[i], y[i]);
    }
    devq_queue *q;
    devq_buffer *bx, *by;
    CHECK(devq_queue_create(dev, NULL, &q));
    CHECK(devq_buffer_alloc(dev, n * sizeof *x, q, 0, &bx));
    CHECK(devq_buffer_alloc(dev, n * sizeof *y, q, 0, &by));
    CHECK(devq_queue_write(q, bx, 0, x, n * sizeof *x));
    CHECK(devq_queue_write(q, by, 0, y, n * sizeof *y));
    devq_arg args[] = { DEVQ_ARG_BUF(bx, DEVQ_READ), DEVQ_ARG_BUF(by, DEVQ_READ_WRITE), DEVQ_ARG_VAL(&a),
                        DEVQ_ARG_VAL(&n) };
    devq_launch l = { { n, 1, 1 }, { 64, 1, 1 }, 0 };
    CHECK(devq_queue_exec(q, k, args, 4, &l));
    CHECK(devq_queue_read(q, y, by, 0, n * sizeof *y));
    CHECK(devq_queue_submit(q));
    CHECK(devq_queue_finish(q, 60ull * 1000000000ull));
    uint32_t bad = 0;
    for (uint32_t i = 0; i < n; i++)
        if (y[i] != want[i] && bad++ < 5)
            fprintf(stderr, "saxpy-vulkan: y[%u] = %g, want %g\n", i, y[i], want[i]);
    printf("saxpy-vulkan: %u elements on %s:%d (%s): %s\n", n, info.backend, info.ordinal, info.name,
           bad ? "WRONG" : "match C");
    CHECK(devq_buffer_free(bx, NULL));
    CHECK(devq_buffer_free(by, NULL));
    devq_kernel_destroy(k);
    devq_queue_destroy(q);
    devq_device_close(dev);
    free(x);
    free(y);
    free(want);
    return bad ? 1 : 0;
}

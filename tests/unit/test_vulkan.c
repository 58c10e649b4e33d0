/* SPDX-License-Identifier: MIT */
/* The vulkan backend's own behaviour, beyond the conformance suite: what
 * kernel_load refuses and says, fills and copies at any alignment, and a
 * launch with more groups than the device's maxComputeWorkGroupCount
 * (split by the plugin, invisible to the shader); corrupt SPIR-V refused at
 * load by the validator; a double and an int64 push constant.  Runs through
 * tests/scripts/vulkan-run (validation layer on); skips (77) without a device. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <devq/devq.h>
#include <devq/devq_cpu.h>

#include "../helpers/plain_expect.h"
#define CHECK(x) CHECK_MSG(x, devq_errmsg())

static int host_kernel(void *const *args, const devq_cpu_group *g)
{
    (void)args;
    (void)g;
    return 0;
}

static void kernel_load_refusals(devq_device *dev)
{
    devq_kernel *k = NULL;
    /* A host function is no vulkan kernel: -ENOTSUP, pointing at images. */
    int rf = devq_kernel_load_fn(dev, host_kernel, NULL, "host", &k);
    EXPECT(rf == -ENOTSUP && strstr(devq_errmsg(), "devq_kernel_load") && !k, "devq_kernel_load_fn: %d %s",
           rf, devq_errmsg());
    const char text[] = "this is not SPIR-V at all";
    int r = devq_kernel_load(dev, text, sizeof text - 1, "main", &k);
    EXPECT(r == -EINVAL && strstr(devq_errmsg(), "SPIR-V"), "text image: %d %s", r, devq_errmsg());
    size_t size;
    void *spv = plain_read_src("tests/conformance/add_u32.spv", &size);
    r = devq_kernel_load(dev, spv, size, "nosuch", &k);
    EXPECT(r == -ENOENT && strstr(devq_errmsg(), "nosuch") && strstr(devq_errmsg(), "main"),
           "missing entry: %d %s", r, devq_errmsg());
    free(spv);
}

/* Corrupt SPIR-V (tests/vulkan-spirv-bad) never reaches the driver: each
 * module is -EINVAL at load with the validator's own words. */
static void bad_spirv_corpus(devq_device *dev)
{
    static const struct {
        const char *file, *says;
    } bad[] = {
        { "truncated", "End of input" },        { "bad-id-bound", "ID bound" },
        { "bad-magic", "magic number" },        { "wrong-version", "header" },
        { "missing-entry", "No OpEntryPoint" }, { "unknown-capability", "capability" },
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char rel[256];
        snprintf(rel, sizeof rel, "tests/vulkan-spirv-bad/%s.spv", bad[i].file);
        size_t size;
        void *spv = plain_read_src(rel, &size);
        devq_kernel *k = NULL;
        int r = devq_kernel_load(dev, spv, size, "main", &k);
        EXPECT(r == -EINVAL && strstr(devq_errmsg(), "invalid SPIR-V") && strstr(devq_errmsg(), bad[i].says),
               "%s: %d %s", rel, r, devq_errmsg());
        if (r == 0)
            devq_kernel_destroy(k);
        free(spv);
    }
}

/* A double and an int64 push constant (shaderFloat64, shaderInt64),
 * with the padding argument std430 needs before the double. */
static void double_push_constant(devq_device *dev, devq_queue *q)
{
    enum { N = 1000 };
    size_t size;
    void *spv = plain_read_src("tests/vulkan-shaders/f64_i64.spv", &size);
    devq_kernel *k;
    int r = devq_kernel_load(dev, spv, size, "main", &k);
    free(spv);
    if (r == -ENOTSUP) {
        printf("double_push_constant: skipped: %s\n", devq_errmsg());
        return;
    }
    CHECK(r);
    devq_buffer *d, *qb;
    CHECK(devq_buffer_alloc(dev, N * 8, NULL, 0, &d));
    CHECK(devq_buffer_alloc(dev, N * 8, NULL, 0, &qb));
    uint32_t n = N, pad = 0;
    double scale = 0.5;
    int64_t add = (1ll << 40) + 3;
    devq_arg args[] = { DEVQ_ARG_BUF(d, DEVQ_WRITE), DEVQ_ARG_BUF(qb, DEVQ_WRITE), DEVQ_ARG_VAL(&n),
                        DEVQ_ARG_VAL(&pad),          DEVQ_ARG_VAL(&scale),         DEVQ_ARG_VAL(&add) };
    devq_launch l = { { N, 1, 1 }, { 64, 1, 1 }, 0 };
    CHECK(devq_queue_exec(q, k, args, 6, &l));
    double *gd = malloc(N * 8);
    int64_t *gq = malloc(N * 8);
    CHECK(devq_queue_read(q, gd, d, 0, N * 8));
    CHECK(devq_queue_read(q, gq, qb, 0, N * 8));
    CHECK(devq_queue_submit(q));
    CHECK(devq_queue_finish(q, 60000000000ull));
    for (int64_t i = 0, bad = 0; i < N; i++)
        if ((gd[i] != (double)i * 0.5 || gq[i] != i * add - 1) && bad++ == 0)
            EXPECT(0, "f64_i64[%lld] = %g, %lld; want %g, %lld", (long long)i, gd[i], (long long)gq[i],
                   (double)i * 0.5, (long long)(i * add - 1));
    free(gd);
    free(gq);
    CHECK(devq_buffer_free(d, NULL));
    CHECK(devq_buffer_free(qb, NULL));
    devq_kernel_destroy(k);
}

/* Fills and copies at every offset 0..8 and length 1..9 around word edges. */
static void unaligned_fill_and_copy(devq_device *dev, devq_queue *q)
{
    enum { N = 64 };
    devq_buffer *a, *b;
    CHECK(devq_buffer_alloc(dev, N, NULL, 0, &a));
    CHECK(devq_buffer_alloc(dev, N, NULL, 0, &b));
    unsigned char want[N], got[N];
    for (size_t off = 0; off < 9; off++)
        for (size_t len = 1; len < 10; len++) {
            memset(want, 0x11, N);
            memset(want + off, 0xc3, len);
            CHECK(devq_queue_fill(q, a, 0, N, 0x11));
            CHECK(devq_queue_fill(q, a, off, len, 0xc3));
            CHECK(devq_queue_fill(q, b, 0, N, 0x22));
            /* b[off+3 ..] = a[off ..], len bytes */
            CHECK(devq_queue_copy(q, b, off + 3, a, off, len));
            CHECK(devq_queue_read(q, got, a, 0, N));
            CHECK(devq_queue_submit(q));
            CHECK(devq_queue_finish(q, 10000000000ull));
            EXPECT(!memcmp(got, want, N), "fill off %zu len %zu", off, len);
            CHECK(devq_queue_read(q, got, b, 0, N));
            CHECK(devq_queue_submit(q));
            CHECK(devq_queue_finish(q, 10000000000ull));
            for (size_t i = 0; i < N; i++) {
                unsigned char w = i >= off + 3 && i < off + 3 + len ? 0xc3 : 0x22;
                if (got[i] != w) {
                    EXPECT(0, "copy off %zu len %zu: byte %zu is %#x, want %#x", off, len, i, got[i], w);
                    break;
                }
            }
        }
    CHECK(devq_buffer_free(a, NULL));
    CHECK(devq_buffer_free(b, NULL));
}

/* add_u32 over more groups than one dispatch may have (local size 1). */
static void launch_past_the_group_limit(devq_device *dev, devq_queue *q)
{
    const uint32_t n = 150001; /* > 2 * 65535, lavapipe's limit; odd */
    size_t size;
    void *spv = plain_read_src("tests/conformance/add_u32.spv", &size);
    devq_kernel *k;
    CHECK(devq_kernel_load(dev, spv, size, "main", &k));
    free(spv);
    devq_buffer *v;
    CHECK(devq_buffer_alloc(dev, n * 4, NULL, 0, &v));
    CHECK(devq_queue_fill(q, v, 0, n * 4, 0));
    uint32_t add = 7;
    devq_arg args[2] = { DEVQ_ARG_BUF(v, DEVQ_READ_WRITE), DEVQ_ARG_VAL(&add) };
    devq_launch l = { { n, 1, 1 }, { 1, 1, 1 }, 0 };
    CHECK(devq_queue_exec(q, k, args, 2, &l));
    uint32_t *got = malloc(n * 4);
    CHECK(devq_queue_read(q, got, v, 0, n * 4));
    CHECK(devq_queue_submit(q));
    CHECK(devq_queue_finish(q, 60000000000ull));
    uint32_t bad = 0;
    for (uint32_t i = 0; i < n; i++)
        if (got[i] != 7 && bad++ == 0)
            EXPECT(0, "v[%u] = %u after one launch of %u groups, want 7", i, got[i], n);
    free(got);
    CHECK(devq_buffer_free(v, NULL));
    devq_kernel_destroy(k);
}

/* A device emulated on the host CPU (lavapipe) says so, and
 * devq_device_open(NULL) prefers the cpu backend to it; asked for
 * without cpu, it is chosen. */
static void software_device_after_cpu(devq_device *dev)
{
    devq_device_info info;
    CHECK(devq_device_info_get(dev, &info));
    if (!(info.caps & DEVQ_CAP_SOFTWARE)) {
        printf("software_device_after_cpu: skipped: %s is not a software device\n", info.name);
        return;
    }
    char *saved = getenv("DEVQ_BACKEND") ? strdup(getenv("DEVQ_BACKEND")) : NULL;
    unsetenv("DEVQ_BACKEND");
    devq_device *d = NULL;
    CHECK(devq_device_open(NULL, &d));
    CHECK(devq_device_info_get(d, &info));
    EXPECT(!strcmp(info.backend, "cpu"), "devq_device_open(NULL) chose %s, not cpu, over a software device",
           info.backend);
    devq_device_close(d);
    setenv("DEVQ_BACKEND", "^cpu", 1);
    int r = devq_device_open(NULL, &d);
    EXPECT(r == 0, "DEVQ_BACKEND=^cpu: %d %s", r, devq_errmsg());
    if (r == 0) {
        CHECK(devq_device_info_get(d, &info));
        EXPECT(!strcmp(info.backend, "vulkan"), "DEVQ_BACKEND=^cpu chose %s, not the software device",
               info.backend);
        devq_device_close(d);
    }
    if (saved)
        setenv("DEVQ_BACKEND", saved, 1);
    else
        unsetenv("DEVQ_BACKEND");
    free(saved);
}

int main(void)
{
    devq_device *dev;
    int r = devq_device_open("vulkan", &dev);
    if (r < 0) {
        printf("SKIP: no vulkan device: %s\n", devq_errmsg());
        return 77;
    }
    devq_queue *q;
    CHECK(devq_queue_create(dev, NULL, &q));
    software_device_after_cpu(dev);
    kernel_load_refusals(dev);
    bad_spirv_corpus(dev);
    double_push_constant(dev, q);
    unaligned_fill_and_copy(dev, q);
    launch_past_the_group_limit(dev, q);
    devq_queue_destroy(q);
    devq_device_close(dev);
    printf("%s\n", failures ? "FAILED" : "ok");
    return failures ? 1 : 0;
}

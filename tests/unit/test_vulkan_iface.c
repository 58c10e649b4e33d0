/* SPDX-License-Identifier: MIT */
/* The vulkan plugin on its own (dlopen'd, driven through its ops table
 * with the stand-alone test host, no libdevq):
 *   - kernel_iface of several shaders: buffer counts, push-constant
 *     member offsets and sizes, the block size;
 *   - the plugin's own launch checks (the second line of defence behind
 *     libdevq's): too few or too many buffers, no arguments, too few
 *     push-constant bytes, an 8-byte member reached without padding, a
 *     local size the shader fixes;
 *   - a feature the device lacks (DEVQ_VULKAN_HIDE_FEATURES) is -ENOTSUP
 *     at load, naming it.
 * Runs through tests/scripts/vulkan-run (validation layer on); 77 without a device. */
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "../helpers/host_fns.h"

static int host_log_level(void)
{
    return getenv("DEVQ_LOG") ? DEVQ_LOG_BASIC : DEVQ_LOG_OFF;
}
static const struct devq_host host = HOST_FNS_TABLE;

#include "../helpers/plain_expect.h"
#define CHECK(x) CHECK_MSG(x, host_errbuf)

static const struct devq_backend_ops *ops;

static int load(devq_pl_device *d, const char *rel, devq_pl_kernel **k)
{
    size_t size;
    void *spv = plain_read_src(rel, &size);
    host_errbuf[0] = 0;
    int r = ops->kernel_load(d, spv, size, "main", k);
    free(spv);
    return r;
}

struct want {
    const char *spv;
    uint32_t nbuf, nval, block;
    struct devq_pl_param val[6];
};
#define V(size, off)                      \
    {                                     \
        DEVQ_PL_PARAM_VALUE, size, off, 0 \
    }

static const struct want shapes[] = {
    { "tests/conformance/add_u32.spv", 1, 1, 4, { V(4, 0) } },
    { "tests/conformance/scale.spv", 1, 1, 4, { V(4, 0) } },
    /* Two views of each buffer (uint and uvec4): two bindings. */
    { "tests/conformance/slow_copy.spv", 2, 2, 8, { V(4, 0), V(4, 4) } },
    { "tests/conformance/oracle_op.spv", 3, 4, 32, { V(12, 0), V(12, 12), V(4, 24), V(4, 28) } },
    { "tests/vulkan-shaders/f64_i64.spv", 2, 4, 24, { V(4, 0), V(4, 4), V(8, 8), V(8, 16) } },
    { "tests/vulkan-shaders/iface_mixed.spv", 2, 3, 24, { V(4, 0), V(12, 4), V(8, 16) } },
    { "tests/vulkan-shaders/pad_implicit.spv", 1, 2, 16, { V(4, 0), V(8, 8) } },
    { "tests/vulkan-shaders/fixed_local.spv", 3, 0, 0, { { 0 } } },
    { "tests/vulkan-shaders/no_args.spv", 0, 0, 0, { { 0 } } },
};

static void iface_shapes(devq_pl_device *d)
{
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        const struct want *w = &shapes[s];
        devq_pl_kernel *k;
        int r = load(d, w->spv, &k);
        EXPECT(r == 0, "%s: kernel_load %d %s", w->spv, r, host_errbuf);
        if (r)
            continue;
        struct devq_pl_kernel_iface f;
        memset(&f, 0xa5, sizeof f);
        CHECK(ops->kernel_iface(k, &f));
        EXPECT(f.flags == 0, "%s: flags %#x: vulkan is not positional", w->spv, f.flags);
        EXPECT(f.nparams == w->nbuf + w->nval, "%s: %u params, want %u", w->spv, f.nparams,
               w->nbuf + w->nval);
        EXPECT(f.value_block == w->block, "%s: value_block %u, want %u", w->spv, f.value_block, w->block);
        EXPECT(f.reserved == 0, "%s: reserved %u", w->spv, f.reserved);
        for (uint32_t i = 0; i < f.nparams && i < w->nbuf + w->nval; i++) {
            const struct devq_pl_param *p = &f.params[i];
            if (i < w->nbuf) {
                EXPECT(p->kind == DEVQ_PL_PARAM_BUFFER && p->size == 0 && p->offset == UINT32_MAX &&
                           !p->reserved,
                       "%s: param %u: kind %u size %u offset %u, want a buffer", w->spv, i, p->kind, p->size,
                       p->offset);
                continue;
            }
            const struct devq_pl_param *v = &w->val[i - w->nbuf];
            EXPECT(p->kind == v->kind && p->size == v->size && p->offset == v->offset && !p->reserved,
                   "%s: param %u: kind %u size %u offset %u, want value %u at %u", w->spv, i, p->kind,
                   p->size, p->offset, v->size, v->offset);
        }
        ops->kernel_destroy(k);
    }
}

/* Outside devq's ABI: refused at load with the reason. */
static void abi_refusals(devq_pl_device *d)
{
    devq_pl_kernel *k;
    int r = load(d, "tests/vulkan-shaders/uniform_buffer.spv", &k);
    EXPECT(r == -EINVAL && strstr(host_errbuf, "uniform buffer"), "uniform buffer: %d %s", r, host_errbuf);
    r = load(d, "tests/vulkan-shaders/binding_gap.spv", &k);
    EXPECT(r == -EINVAL && strstr(host_errbuf, "none at binding 1"), "binding gap: %d %s", r, host_errbuf);
}

static int launch(devq_pl_stream *s, devq_pl_kernel *k, const struct devq_pl_arg *a, size_t n, uint32_t local)
{
    devq_launch l = { { 64, 1, 1 }, { local, 1, 1 }, 0 };
    host_errbuf[0] = 0;
    return ops->launch(s, k, &l, a, n);
}

static void launch_checks(devq_pl_device *d)
{
    devq_pl_stream *s;
    CHECK(ops->stream_create(d, NULL, &s));
    void *buf, *host_ptr;
    CHECK(ops->mem_alloc(d, 4096, &buf, &host_ptr));
    uint32_t u = 1, pad = 0;
    double x = 2;
    int64_t q = 3;
    struct devq_pl_arg B = { 1, buf, NULL, 0 };
    struct devq_pl_arg U = { 0, NULL, &u, 4 }, PAD = { 0, NULL, &pad, 4 }, X = { 0, NULL, &x, 8 },
                       Q = { 0, NULL, &q, 8 };
    devq_pl_kernel *k;
    CHECK(load(d, "tests/vulkan-shaders/f64_i64.spv", &k));
    struct devq_pl_arg few_bufs[] = { B, U, PAD, X, Q };
    int r = launch(s, k, few_bufs, 5, 1);
    EXPECT(r == -EINVAL && strstr(host_errbuf, "declares 2 storage buffers") &&
               strstr(host_errbuf, "1 buffer"),
           "too few buffers: %d %s", r, host_errbuf);
    struct devq_pl_arg many_bufs[] = { B, B, B, U, PAD, X, Q };
    r = launch(s, k, many_bufs, 7, 1);
    EXPECT(r == -EINVAL && strstr(host_errbuf, "3 buffer"), "too many buffers: %d %s", r, host_errbuf);
    r = launch(s, k, NULL, 0, 1);
    EXPECT(r == -EINVAL && strstr(host_errbuf, "declares 2"), "no arguments: %d %s", r, host_errbuf);
    struct devq_pl_arg few_bytes[] = { B, B, U, PAD, X };
    r = launch(s, k, few_bytes, 5, 1);
    EXPECT(r == -EINVAL && strstr(host_errbuf, "24-byte push-constant block") &&
               strstr(host_errbuf, "16 bytes"),
           "too few push-constant bytes: %d %s", r, host_errbuf);
    struct devq_pl_arg no_pad[] = { B, B, U, X, Q };
    r = launch(s, k, no_pad, 5, 1);
    EXPECT(r == -EINVAL && strstr(host_errbuf, "offset 4") && strstr(host_errbuf, "padding"),
           "8-byte value without padding: %d %s", r, host_errbuf);
    struct devq_pl_arg too_many_bytes[] = { B, B, U, PAD, X, Q, U };
    r = launch(s, k, too_many_bytes, 7, 1);
    EXPECT(r == -EINVAL && strstr(host_errbuf, "offset 24"), "too many push-constant bytes: %d %s", r,
           host_errbuf);
    ops->kernel_destroy(k);
    /* { uint n; double scale; }: scale at 8 (std430), so a padding value. */
    CHECK(load(d, "tests/vulkan-shaders/pad_implicit.spv", &k));
    struct devq_pl_arg padded[] = { B, U, PAD, X };
    r = launch(s, k, padded, 4, 1);
    EXPECT(r == 0, "a padding argument in the gap before a double: %d %s", r, host_errbuf);
    /* That launch ran: wait for it before the stream goes. */
    devq_pl_event *e;
    CHECK(ops->event_create(d, 0, &e));
    CHECK(ops->event_record(e, s));
    CHECK(ops->event_wait(e, 30000000000ull));
    ops->event_destroy(e);
    struct devq_pl_arg unpadded[] = { B, U, X };
    r = launch(s, k, unpadded, 3, 1);
    EXPECT(r == -EINVAL && strstr(host_errbuf, "offset 4") && strstr(host_errbuf, "padding"),
           "a double right after a uint: %d %s", r, host_errbuf);
    struct devq_pl_arg wide_pad[] = { B, U, X, X };
    r = launch(s, k, wide_pad, 4, 1);
    EXPECT(r == -EINVAL, "an 8-byte value across the gap and the double: %d %s", r, host_errbuf);
    ops->kernel_destroy(k);
    CHECK(load(d, "tests/vulkan-shaders/fixed_local.spv", &k));
    struct devq_pl_arg three[] = { B, B, B };
    r = launch(s, k, three, 3, 32);
    EXPECT(r == -EINVAL && strstr(host_errbuf, "fixed local size 64"),
           "local 32 on a local_size_x = 64 "
           "shader: %d %s",
           r, host_errbuf);
    ops->kernel_destroy(k);
    ops->stream_destroy(s);
    ops->mem_free(d, buf);
}

/* A module declaring Float64 on a device without shaderFloat64. */
static void missing_feature(void)
{
    setenv("DEVQ_VULKAN_HIDE_FEATURES", "shaderInt16,shaderFloat64", 1);
    devq_pl_device *d;
    CHECK(ops->device_open(0, &d));
    devq_pl_kernel *k;
    int r = load(d, "tests/vulkan-shaders/f64_i64.spv", &k);
    EXPECT(r == -ENOTSUP && strstr(host_errbuf, "Float64") && strstr(host_errbuf, "shaderFloat64"),
           "Float64 without shaderFloat64: %d %s", r, host_errbuf);
    if (r == 0)
        ops->kernel_destroy(k);
    /* One without it still loads. */
    r = load(d, "tests/conformance/add_u32.spv", &k);
    EXPECT(r == 0, "add_u32 with shaderFloat64 hidden: %d %s", r, host_errbuf);
    if (r == 0)
        ops->kernel_destroy(k);
    ops->device_close(d);
    unsetenv("DEVQ_VULKAN_HIDE_FEATURES");
}

int main(void)
{
    char path[4096];
    const char *top = getenv("top_builddir");
    snprintf(path, sizeof path, "%s/plugins/vulkan/.libs/devq-vulkan.so", top && *top ? top : ".");
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        fprintf(stderr, "FAIL: dlopen %s: %s\n", path, dlerror());
        return 1;
    }
    devq_plugin_init_fn init = (devq_plugin_init_fn)dlsym(h, DEVQ_PLUGIN_INIT_SYMBOL);
    CHECK(init ? init(&host, DEVQ_HOST_ABI_VERSION, &ops) : -ENOENT);
    uint32_t n = 0;
    if (ops->device_count(&n) < 0 || !n) {
        printf("SKIP: no vulkan device: %s\n", host_errbuf);
        return 77;
    }
    EXPECT(ops->size >= offsetof(struct devq_backend_ops, kernel_iface) + sizeof ops->kernel_iface &&
               ops->kernel_iface,
           "the plugin has no kernel_iface op");
    devq_pl_device *d;
    CHECK(ops->device_open(0, &d));
    devq_device_info info;
    memset(&info, 0, sizeof info);
    CHECK(ops->device_info(d, &info));
    EXPECT((info.caps & DEVQ_CAP_KERNELS) && (info.caps & DEVQ_CAP_KERNEL_CHECK),
           "caps %#llx lack "
           "DEVQ_CAP_KERNEL_CHECK",
           (unsigned long long)info.caps);
    iface_shapes(d);
    abi_refusals(d);
    launch_checks(d);
    ops->device_close(d);
    missing_feature();
    if (ops->fini)
        ops->fini();
    printf("%s\n", failures ? "FAILED" : "ok");
    return failures ? 1 : 0;
}

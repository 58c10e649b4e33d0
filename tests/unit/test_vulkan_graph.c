/* SPDX-License-Identifier: MIT */
/* The vulkan plugin's native graph ops (graph_create, graph_update,
 * graph_launch, graph_destroy: a run of launches recorded once into a
 * reusable command buffer), the plugin alone (dlopen'd, driven through
 * its ops table with the stand-alone test host, no libdevq):
 *   - the ops and DEVQ_CAP_GRAPH_NATIVE are there;
 *   - a graph launched N times gives what N rounds of the same launches
 *     give (a chain of `step`s checks the order inside the run and from
 *     one launch to the next);
 *   - graph_update changes only launches queued after it: launches held
 *     behind a host callback keep their arguments;
 *   - graph_destroy with launches queued: they run, then it is freed;
 *   - many launches of one graph in flight at once (one submission each,
 *     on two streams, updated every few launches);
 *   - launches after a failed host callback are skipped (the next
 *     callback gets the error) and the graph runs again after it;
 *   - bad input (no launches, memory of no device, an update past the
 *     end) and device loss are errors with a message.
 * Runs through tests/scripts/vulkan-run: the Khronos validation layer is
 * on and any message fails, so resubmitting, re-recording and destroying
 * while pending must all be valid Vulkan.  77 without a device. */
#include <dlfcn.h>
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "../helpers/host_fns.h"

static int host_log_level(void)
{
    return getenv("DEVQ_LOG") ? DEVQ_LOG_FULL : DEVQ_LOG_OFF;
}
static const struct devq_host host = HOST_FNS_TABLE;

#include "../helpers/plain_expect.h"
#define CHECK(x) CHECK_MSG(x, host_errbuf)

#define SEC 1000000000ull
enum { N = 256 }; /* uint32 elements per buffer */

static const struct devq_backend_ops *ops;
static devq_pl_kernel *k_add, *k_step;

static devq_pl_kernel *load(devq_pl_device *d, const char *rel)
{
    size_t size;
    void *spv = plain_read_src(rel, &size);
    devq_pl_kernel *k;
    CHECK(ops->kernel_load(d, spv, size, "main", &k));
    free(spv);
    return k;
}

/* A launch of add_u32 (v[i] += n over N elements) or step (v[0] must be
 * expect and becomes expect + 1): one buffer, one 4-byte value. */
struct call {
    struct devq_pl_arg a[2];
    uint32_t value;
};
static void call_init(struct call *c, void *buf, uint32_t value)
{
    c->value = value;
    c->a[0] = (struct devq_pl_arg){ 1, buf, NULL, 0 };
    c->a[1] = (struct devq_pl_arg){ 0, NULL, &c->value, 4 };
}
static struct devq_pl_launch_entry entry(devq_pl_kernel *k, struct call *c)
{
    return (struct devq_pl_launch_entry){ k, c->a, 2, { { N, 1, 1 }, { 64, 1, 1 }, 0 } };
}

static void wait_stream(devq_pl_device *d, devq_pl_stream *s)
{
    devq_pl_event *e;
    CHECK(ops->event_create(d, 0, &e));
    CHECK(ops->event_record(e, s));
    CHECK(ops->event_wait(e, 60 * SEC));
    ops->event_destroy(e);
}

static void read_back(devq_pl_device *d, devq_pl_stream *s, void *buf, uint32_t *out)
{
    CHECK(ops->copy(s, out, buf, N * 4, DEVQ_COPY_D2H));
    wait_stream(d, s);
}

static void *zeroed(devq_pl_device *d, devq_pl_stream *s)
{
    void *buf, *host_ptr;
    CHECK(ops->mem_alloc(d, N * 4, &buf, &host_ptr));
    CHECK(ops->fill(s, buf, 0, N * 4));
    return buf;
}

/* A host callback that holds its stream (everything queued after it
 * stays in the plugin) until the gate opens; bounded, never a hang. */
static atomic_int gate;
static int hold(void *arg, int status)
{
    (void)arg;
    uint64_t until = host_now_ns() + 60 * SEC;
    while (!atomic_load(&gate) && host_now_ns() < until) {
        struct timespec ts = { 0, 1000000 };
        nanosleep(&ts, NULL);
    }
    return status;
}

/* The graph of these tests: step(v, 0), step(v, 1), step(v, 2),
 * add(v, -3) (v[0] back to 0: the next launch's steps match again),
 * add(a, add_a).  Out of order, v[0] ends 0xffffffff + .... */
struct g5 {
    struct call c[5];
    struct devq_pl_launch_entry e[5];
};
static void g5_init(struct g5 *g, void *v, void *a, uint32_t add_a)
{
    for (int i = 0; i < 3; i++) {
        call_init(&g->c[i], v, (uint32_t)i);
        g->e[i] = entry(k_step, &g->c[i]);
    }
    call_init(&g->c[3], v, (uint32_t)-3);
    g->e[3] = entry(k_add, &g->c[3]);
    call_init(&g->c[4], a, add_a);
    g->e[4] = entry(k_add, &g->c[4]);
}

static void expect_v(const uint32_t *h, uint32_t launches, const char *what)
{
    EXPECT(h[0] == 0, "%s: v[0] = %#x after %u launches: the steps ran out of order", what, h[0], launches);
    for (int i = 1; i < N; i++)
        if (h[i] != (uint32_t)(-3 * (int64_t)launches)) {
            EXPECT(0, "%s: v[%d] = %#x, want %#x", what, i, h[i], (uint32_t)(-3 * (int64_t)launches));
            return;
        }
}
static void expect_all(const uint32_t *h, uint32_t want, const char *what)
{
    for (int i = 0; i < N; i++)
        if (h[i] != want) {
            EXPECT(0, "%s: [%d] = %u, want %u", what, i, h[i], want);
            return;
        }
}

/* Launched N times = N rounds of the same launches made one by one. */
static void launch_many_times(devq_pl_device *d)
{
    enum { ROUNDS = 40 };
    devq_pl_stream *s;
    CHECK(ops->stream_create(d, NULL, &s));
    void *v = zeroed(d, s), *a = zeroed(d, s), *v2 = zeroed(d, s), *a2 = zeroed(d, s);
    struct g5 g, one;
    g5_init(&g, v, a, 7);
    g5_init(&one, v2, a2, 7);
    devq_pl_graph *pg;
    CHECK(ops->graph_create(d, g.e, 5, &pg));
    for (int r = 0; r < ROUNDS; r++) {
        CHECK(ops->graph_launch(s, pg, NULL));
        for (int i = 0; i < 5; i++)
            CHECK(ops->launch(s, one.e[i].k, &one.e[i].l, one.e[i].args, one.e[i].nargs));
    }
    uint32_t hv[N], ha[N], hv2[N], ha2[N];
    read_back(d, s, v, hv);
    read_back(d, s, a, ha);
    read_back(d, s, v2, hv2);
    read_back(d, s, a2, ha2);
    expect_v(hv, ROUNDS, "graph");
    expect_all(ha, 7 * ROUNDS, "graph: a");
    EXPECT(!memcmp(hv, hv2, sizeof hv) && !memcmp(ha, ha2, sizeof ha),
           "the graph's results differ from the same launches one by one");
    ops->graph_destroy(pg);
    ops->stream_destroy(s);
    void *bufs[] = { v, a, v2, a2 };
    for (int i = 0; i < 4; i++)
        ops->mem_free(d, bufs[i]);
}

/* Launches held behind a host callback keep their arguments; only those
 * queued after graph_update see the new ones.  Also: an update to the
 * same arguments, a refused update (the graph keeps what it had). */
static void update_affects_later_launches(devq_pl_device *d)
{
    devq_pl_stream *s;
    CHECK(ops->stream_create(d, NULL, &s));
    void *v = zeroed(d, s), *a = zeroed(d, s), *b = zeroed(d, s);
    struct g5 g;
    g5_init(&g, v, a, 7);
    devq_pl_graph *pg;
    CHECK(ops->graph_create(d, g.e, 5, &pg));
    atomic_store(&gate, 0);
    CHECK(ops->host_fn(s, hold, NULL));
    for (int i = 0; i < 3; i++) /* held: they must run with add(a, 7) */
        CHECK(ops->graph_launch(s, pg, NULL));
    CHECK(ops->graph_update(pg, 4, &g.e[4])); /* the same arguments */
    CHECK(ops->graph_launch(s, pg, NULL));    /* 4 launches of add(a, 7) */
    g.c[4].value = 100;
    CHECK(ops->graph_update(pg, 4, &g.e[4]));
    CHECK(ops->graph_launch(s, pg, NULL));
    CHECK(ops->graph_launch(s, pg, NULL)); /* 2 of add(a, 100) */
    /* Refused: memory of no device.  The graph keeps add(a, 100). */
    int bogus;
    struct call bad;
    call_init(&bad, &bogus, 1);
    struct devq_pl_launch_entry be = entry(k_add, &bad);
    host_errbuf[0] = 0;
    int r = ops->graph_update(pg, 4, &be);
    EXPECT(r == -EINVAL && strstr(host_errbuf, "not device memory"), "update to host memory: %d %s", r,
           host_errbuf);
    host_errbuf[0] = 0;
    r = ops->graph_update(pg, 5, &g.e[4]);
    EXPECT(r == -EINVAL && strstr(host_errbuf, "launch 5 of a graph of 5"), "update past the end: %d %s", r,
           host_errbuf);
    CHECK(ops->graph_launch(s, pg, NULL)); /* 3 of add(a, 100) */
    /* Rebinding a buffer: add(b, 100) from here on. */
    g.c[4].a[0].device_ptr = b;
    CHECK(ops->graph_update(pg, 4, &g.e[4]));
    CHECK(ops->graph_launch(s, pg, NULL));
    atomic_store(&gate, 1);
    uint32_t hv[N], ha[N], hb[N];
    read_back(d, s, v, hv);
    read_back(d, s, a, ha);
    read_back(d, s, b, hb);
    expect_v(hv, 8, "update: v");
    expect_all(ha, 4 * 7 + 3 * 100, "update: a");
    expect_all(hb, 100, "update: b (rebound)");
    ops->graph_destroy(pg);
    ops->stream_destroy(s);
    ops->mem_free(d, v);
    ops->mem_free(d, a);
    ops->mem_free(d, b);
}

/* graph_destroy with launches queued (held behind a host callback, then
 * in flight): they run with their results; the graph goes after them. */
static void destroy_while_queued(devq_pl_device *d)
{
    devq_pl_stream *s;
    CHECK(ops->stream_create(d, NULL, &s));
    void *v = zeroed(d, s), *a = zeroed(d, s);
    struct g5 g;
    g5_init(&g, v, a, 5);
    devq_pl_graph *pg;
    CHECK(ops->graph_create(d, g.e, 5, &pg));
    atomic_store(&gate, 0);
    CHECK(ops->host_fn(s, hold, NULL));
    for (int i = 0; i < 6; i++) {
        CHECK(ops->graph_launch(s, pg, NULL));
        if (i == 2) { /* a second recording, also queued */
            g.c[4].value = 1;
            CHECK(ops->graph_update(pg, 4, &g.e[4]));
        }
    }
    ops->graph_destroy(pg);
    atomic_store(&gate, 1);
    uint32_t hv[N], ha[N];
    read_back(d, s, v, hv);
    read_back(d, s, a, ha);
    expect_v(hv, 6, "destroyed while queued: v");
    expect_all(ha, 3 * 5 + 3 * 1, "destroyed while queued: a");
    /* Destroyed with one in flight (not held): nothing waits for it. */
    g5_init(&g, v, a, 1);
    CHECK(ops->graph_create(d, g.e, 5, &pg));
    CHECK(ops->graph_launch(s, pg, NULL));
    devq_pl_event *e;
    CHECK(ops->event_create(d, 0, &e));
    CHECK(ops->event_record(e, s));
    ops->graph_destroy(pg);
    CHECK(ops->event_wait(e, 60 * SEC));
    ops->event_destroy(e);
    read_back(d, s, a, ha);
    expect_all(ha, 3 * 5 + 3 * 1 + 1, "destroyed in flight: a");
    ops->stream_destroy(s);
    ops->mem_free(d, v);
    ops->mem_free(d, a);
}

/* Many launches of one graph in flight at once: each in a submission of
 * its own (an event after it), on two streams (the second after the
 * first), updated every 8 launches, so several recordings are pending
 * in several primaries at a time. */
static void many_in_flight(devq_pl_device *d)
{
    enum { LAUNCHES = 96, EVERY = 8 };
    devq_pl_stream *s[2];
    CHECK(ops->stream_create(d, NULL, &s[0]));
    CHECK(ops->stream_create(d, NULL, &s[1]));
    void *v = zeroed(d, s[0]), *a = zeroed(d, s[0]);
    wait_stream(d, s[0]);
    struct g5 g;
    g5_init(&g, v, a, 1);
    devq_pl_graph *pg;
    CHECK(ops->graph_create(d, g.e, 5, &pg));
    devq_pl_event *ev[LAUNCHES];
    uint32_t want = 0;
    for (int i = 0; i < LAUNCHES; i++) {
        devq_pl_stream *on = s[i >= LAUNCHES / 2];
        if (i == LAUNCHES / 2) /* the second stream after the first's launches */
            CHECK(ops->stream_wait_event(on, ev[i - 1]));
        if (i && i % EVERY == 0) {
            g.c[4].value = (uint32_t)i;
            CHECK(ops->graph_update(pg, 4, &g.e[4]));
        }
        want += g.c[4].value;
        CHECK(ops->graph_launch(on, pg, NULL));
        CHECK(ops->event_create(d, 0, &ev[i]));
        CHECK(ops->event_record(ev[i], on));
    }
    ops->graph_destroy(pg);
    for (int i = 0; i < LAUNCHES; i++) {
        CHECK(ops->event_wait(ev[i], 60 * SEC));
        ops->event_destroy(ev[i]);
    }
    uint32_t hv[N], ha[N];
    read_back(d, s[1], v, hv);
    read_back(d, s[1], a, ha);
    expect_v(hv, LAUNCHES, "many in flight: v");
    expect_all(ha, want, "many in flight: a");
    ops->stream_destroy(s[0]);
    ops->stream_destroy(s[1]);
    ops->mem_free(d, v);
    ops->mem_free(d, a);
}

/* A host callback that fails latches its error: the graph launches
 * queued after it, up to the next callback, are skipped (that callback
 * gets the error), and the graph runs again after it. */
static int fail_cb(void *arg, int status)
{
    (void)arg;
    (void)status;
    return -EIO;
}
static int seen_status(void *arg, int status)
{
    *(int *)arg = status;
    return 0;
}
static void skipped_after_error(devq_pl_device *d)
{
    devq_pl_stream *s;
    CHECK(ops->stream_create(d, NULL, &s));
    void *v = zeroed(d, s), *a = zeroed(d, s);
    struct g5 g;
    g5_init(&g, v, a, 3);
    devq_pl_graph *pg;
    CHECK(ops->graph_create(d, g.e, 5, &pg));
    int status = 1;
    CHECK(ops->host_fn(s, fail_cb, NULL));
    CHECK(ops->graph_launch(s, pg, NULL));
    CHECK(ops->graph_launch(s, pg, NULL));
    CHECK(ops->host_fn(s, seen_status, &status));
    CHECK(ops->graph_launch(s, pg, NULL)); /* runs */
    uint32_t hv[N], ha[N];
    read_back(d, s, v, hv);
    read_back(d, s, a, ha);
    EXPECT(status == -EIO, "the callback after the skipped launches got %d, want -EIO", status);
    expect_v(hv, 1, "after a failed callback: v");
    expect_all(ha, 3, "after a failed callback: a (two launches skipped, one ran)");
    ops->graph_destroy(pg);
    ops->stream_destroy(s);
    ops->mem_free(d, v);
    ops->mem_free(d, a);
}

static void bad_input(devq_pl_device *d)
{
    devq_pl_graph *pg = NULL;
    host_errbuf[0] = 0;
    int r = ops->graph_create(d, NULL, 0, &pg);
    EXPECT(r == -EINVAL && strstr(host_errbuf, "no launches"), "no launches: %d %s", r, host_errbuf);
    int bogus;
    struct call c;
    call_init(&c, &bogus, 1);
    struct devq_pl_launch_entry e = entry(k_add, &c);
    host_errbuf[0] = 0;
    r = ops->graph_create(d, &e, 1, &pg);
    EXPECT(r == -EINVAL && strstr(host_errbuf, "not device memory"), "host memory: %d %s", r, host_errbuf);
    /* The plugin's own launch checks hold for graphs too. */
    void *buf, *host_ptr;
    CHECK(ops->mem_alloc(d, N * 4, &buf, &host_ptr));
    call_init(&c, buf, 1);
    e = entry(k_add, &c);
    e.nargs = 1; /* no push constant for a 4-byte block */
    host_errbuf[0] = 0;
    r = ops->graph_create(d, &e, 1, &pg);
    EXPECT(r == -EINVAL && strstr(host_errbuf, "push-constant block"), "too few values: %d %s", r,
           host_errbuf);
    ops->mem_free(d, buf);
}

/* A lost device (DEVQ_VULKAN_INJECT_DEVICE_LOST=1: the first submission
 * fails): launches and creates say so; destroy still frees. */
static void device_lost(void)
{
    setenv("DEVQ_VULKAN_INJECT_DEVICE_LOST", "1", 1);
    devq_pl_device *d;
    CHECK(ops->device_open(0, &d));
    unsetenv("DEVQ_VULKAN_INJECT_DEVICE_LOST");
    devq_pl_kernel *k = load(d, "tests/conformance/add_u32.spv");
    devq_pl_stream *s;
    CHECK(ops->stream_create(d, NULL, &s));
    void *buf, *host_ptr;
    CHECK(ops->mem_alloc(d, N * 4, &buf, &host_ptr));
    struct call c;
    call_init(&c, buf, 1);
    struct devq_pl_launch_entry e = entry(k, &c);
    devq_pl_graph *pg, *pg2 = NULL;
    CHECK(ops->graph_create(d, &e, 1, &pg));
    CHECK(ops->graph_launch(s, pg, NULL));
    devq_pl_event *ev;
    CHECK(ops->event_create(d, 0, &ev));
    CHECK(ops->event_record(ev, s)); /* the submission, refused: lost */
    int r = ops->event_wait(ev, 60 * SEC);
    EXPECT(r == -ENODEV, "event after the lost submission: %d %s", r, host_errbuf);
    host_errbuf[0] = 0;
    r = ops->graph_launch(s, pg, NULL);
    EXPECT(r == -ENODEV && strstr(host_errbuf, "lost"), "launch on a lost device: %d %s", r, host_errbuf);
    host_errbuf[0] = 0;
    r = ops->graph_create(d, &e, 1, &pg2);
    EXPECT(r == -ENODEV && strstr(host_errbuf, "lost"), "create on a lost device: %d %s", r, host_errbuf);
    c.value = 2;
    r = ops->graph_update(pg, 0, &e); /* only prepares: the next launch fails */
    EXPECT(r == 0 || r == -ENODEV, "update on a lost device: %d %s", r, host_errbuf);
    ops->graph_destroy(pg);
    ops->event_destroy(ev);
    ops->stream_destroy(s);
    ops->mem_free(d, buf);
    ops->kernel_destroy(k);
    ops->device_close(d);
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
    if (ops->size < offsetof(struct devq_backend_ops, graph_destroy) + sizeof ops->graph_destroy ||
        !ops->graph_create || !ops->graph_update || !ops->graph_launch || !ops->graph_destroy) {
        fprintf(stderr, "FAIL: the plugin has no graph ops\n");
        return 1;
    }
    devq_pl_device *d;
    CHECK(ops->device_open(0, &d));
    devq_device_info info;
    memset(&info, 0, sizeof info);
    CHECK(ops->device_info(d, &info));
    EXPECT(info.caps & DEVQ_CAP_GRAPH_NATIVE, "caps %#llx lack DEVQ_CAP_GRAPH_NATIVE",
           (unsigned long long)info.caps);
    k_add = load(d, "tests/conformance/add_u32.spv");
    k_step = load(d, "tests/conformance/step.spv");
    launch_many_times(d);
    update_affects_later_launches(d);
    destroy_while_queued(d);
    many_in_flight(d);
    skipped_after_error(d);
    bad_input(d);
    ops->kernel_destroy(k_add);
    ops->kernel_destroy(k_step);
    ops->device_close(d);
    device_lost();
    if (ops->fini)
        ops->fini();
    printf("%s\n", failures ? "FAILED" : "ok");
    return failures ? 1 : 0;
}

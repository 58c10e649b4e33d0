/* SPDX-License-Identifier: MIT */
/* clang-format off */ /* hand-aligned tables, read as documentation */
/* Ops that do nothing, for test plugins whose point is to be refused (or
 * accepted) by the loader's table checks, never to run work. */
#ifndef DEVQ_TEST_STUB_OPS_H
#define DEVQ_TEST_STUB_OPS_H

#include <errno.h>
#include <devq/devq_plugin.h>

#define STUB static __attribute__((unused))

static const struct devq_host *stub_host;

STUB int stub_device_count(uint32_t *count) { *count = 1; return 0; }
STUB int stub_device_open(uint32_t ordinal, devq_pl_device **out)
{
    (void)ordinal; (void)out;
    return stub_host->error(-ENOTSUP, "stub backend: device_open is not implemented");
}
STUB void stub_device_close(devq_pl_device *d) { (void)d; }
STUB int stub_device_info(devq_pl_device *d, devq_device_info *i) { (void)d; (void)i; return -ENOTSUP; }
STUB int stub_stream_create(devq_pl_device *d, const devq_queue_desc *q, devq_pl_stream **o)
{ (void)d; (void)q; (void)o; return -ENOTSUP; }
STUB void stub_stream_destroy(devq_pl_stream *s) { (void)s; }
STUB int stub_event_create(devq_pl_device *d, uint32_t f, devq_pl_event **o)
{ (void)d; (void)f; (void)o; return -ENOTSUP; }
STUB void stub_event_destroy(devq_pl_event *e) { (void)e; }
STUB int stub_event_record(devq_pl_event *e, devq_pl_stream *s) { (void)e; (void)s; return -ENOTSUP; }
STUB int stub_event_query(devq_pl_event *e) { (void)e; return 0; }
STUB int stub_event_wait(devq_pl_event *e, uint64_t t) { (void)e; (void)t; return 0; }
STUB int stub_stream_wait_event(devq_pl_stream *s, devq_pl_event *e) { (void)s; (void)e; return -ENOTSUP; }
STUB int stub_host_fn(devq_pl_stream *s, devq_pl_host_fn fn, void *arg)
{ (void)s; (void)fn; (void)arg; return -ENOTSUP; }
STUB int stub_mem_alloc(devq_pl_device *d, size_t n, void **dp, void **hp)
{ (void)d; (void)n; (void)dp; (void)hp; return -ENOTSUP; }
STUB void stub_mem_free(devq_pl_device *d, void *p) { (void)d; (void)p; }
STUB int stub_copy(devq_pl_stream *s, void *d, const void *src, size_t n, enum devq_copy_dir dir)
{ (void)s; (void)d; (void)src; (void)n; (void)dir; return -ENOTSUP; }
STUB int stub_fill(devq_pl_stream *s, void *d, uint8_t b, size_t n)
{ (void)s; (void)d; (void)b; (void)n; return -ENOTSUP; }
STUB int stub_kernel_load(devq_pl_device *d, const void *img, size_t n, const char *e, devq_pl_kernel **o)
{ (void)d; (void)img; (void)n; (void)e; (void)o; return -ENOTSUP; }
STUB void stub_kernel_destroy(devq_pl_kernel *k) { (void)k; }
STUB int stub_launch(devq_pl_stream *s, devq_pl_kernel *k, const devq_launch *l,
                       const struct devq_pl_arg *a, size_t n)
{ (void)s; (void)k; (void)l; (void)a; (void)n; return -ENOTSUP; }

/* Every required op, for a designated initializer (a test may define
 * STUB_EVENT_WAIT as NULL first). */
#ifndef STUB_EVENT_WAIT
#define STUB_EVENT_WAIT stub_event_wait
#endif
#define STUB_REQUIRED_OPS                                                        \
    .device_count = stub_device_count, .device_open = stub_device_open,          \
    .device_close = stub_device_close, .device_info = stub_device_info,          \
    .stream_create = stub_stream_create, .stream_destroy = stub_stream_destroy,  \
    .event_create = stub_event_create, .event_destroy = stub_event_destroy,      \
    .event_record = stub_event_record, .event_query = stub_event_query,          \
    .event_wait = STUB_EVENT_WAIT, .stream_wait_event = stub_stream_wait_event,  \
    .host_fn = stub_host_fn, .mem_alloc = stub_mem_alloc,                        \
    .mem_free = stub_mem_free, .copy = stub_copy, .fill = stub_fill

#endif

/* TEMPORARY: direct-allocation fallbacks so the tree links while the
 * memory stack (lib/mem_*.c, mk/mem.mk) is being written.  The real
 * definitions are strong and replace these; this file goes away once
 * mk/mem.mk is included. */
#include "config.h"
#include <stddef.h>
#include "device.h"
#include "mem.h"
#include "stream.h"

__attribute__((weak)) int devq__mem_create(struct devq_device *dev) { (void)dev; return 0; }
__attribute__((weak)) void devq__mem_destroy(struct devq_device *dev) { (void)dev; }
__attribute__((weak)) int devq__mem_alloc(struct devq_device *dev, size_t bytes, struct devq_stream *st,
                                          uint32_t tag, void **d, void **h)
{
    (void)st; (void)tag;
    return dev->ops->mem_alloc(dev->pl, bytes, d, h);
}
__attribute__((weak)) int devq__mem_free(struct devq_device *dev, void *d, size_t bytes,
                                         struct devq_stream *st, uint32_t tag)
{
    (void)bytes; (void)tag;
    if (st) {
        /* Without the pool, a stream-ordered free must wait for the stream. */
        devq_pl_event *e;
        if (dev->ops->event_create(dev->pl, 0, &e) == 0) {
            dev->ops->event_record(e, st->pl);
            dev->ops->event_wait(e, UINT64_MAX);
            dev->ops->event_destroy(e);
        }
    }
    dev->ops->mem_free(dev->pl, d);
    return 0;
}
__attribute__((weak)) void devq__mem_stream_gone(struct devq_device *dev, struct devq_stream *st)
{
    (void)dev; (void)st;
}

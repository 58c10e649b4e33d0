/* What an op uses: each buffer with its access mode.  Pure: reads the
 * op and its batch's argument array, nothing else. */
#include "config.h"
#include "queue.h"

int devq__op_each_buffer(const struct batch *b, const struct op *o,
                         int (*fn)(void *ctx, devq_buffer *buf, enum devq_access acc), void *ctx)
{
    int r = 0;
    switch (o->kind) {
    case OP_EXEC:
        for (uint32_t a = 0; a < o->u.exec.nargs && !r; a++) {
            const struct batch_arg *ba = &b->args[o->u.exec.first_arg + a];
            if (ba->buf)
                r = fn(ctx, ba->buf, ba->access);
        }
        return r;
    case OP_COPY:
        if ((r = fn(ctx, o->u.copy.src, DEVQ_READ)) == 0)
            r = fn(ctx, o->u.copy.dst, DEVQ_WRITE);
        return r;
    case OP_FILL:
        return fn(ctx, o->u.fill.dst, DEVQ_WRITE);
    case OP_WRITE:
        return fn(ctx, o->u.xfer.buf, DEVQ_WRITE);
    case OP_READ:
        return fn(ctx, o->u.xfer.buf, DEVQ_READ);
    default:
        return 0;
    }
}

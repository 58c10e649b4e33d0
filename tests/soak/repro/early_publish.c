/* SPDX-License-Identifier: MIT */
/* A deferred batch that fails publishes its buffer failures at once, out
 * of submission order: a reader submitted BEFORE it, still deferred,
 * then reads the buffer as failed (DESIGN 5a: a reader sees its last
 * writer in submission order, here the clean initial write, and must
 * succeed).  cpu backend.
 *   qA: wait hold (unset: deferred); read b -> out; submit
 *   qB: wait f; fill b; submit            (submitted after A: WAR on b)
 *   fail f; finish qB (fails, right); set hold; finish qA -> expect 0. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <devq/devq.h>
#define SEC 1000000000ull
int main(void)
{
    devq_device *d;
    devq_queue *qa, *qb, *qi;
    devq_buffer *b;
    devq_signal *hold, *f;
    devq_queue_desc desc = { DEVQ_QUEUE_COMPUTE, 0 };
    if (devq_device_open("cpu", &d))
        return 2;
    devq_queue_create(d, &desc, &qa);
    devq_queue_create(d, &desc, &qb);
    devq_queue_create(d, &desc, &qi);
    devq_buffer_alloc(d, 256, NULL, 0, &b);
    devq_signal_create(0, &hold);
    devq_signal_create(0, &f);
    unsigned char init[256], out[256];
    memset(init, 7, sizeof init);
    memset(out, 0, sizeof out);
    devq_queue_write(qi, b, 0, init, 256);
    devq_queue_submit(qi);
    if (devq_queue_finish(qi, 10 * SEC))
        return 2;
    devq_queue_wait(qa, hold, 1);
    devq_queue_read(qa, out, b, 0, 256);
    devq_queue_submit(qa);
    devq_queue_wait(qb, f, 1);
    devq_queue_fill(qb, b, 0, 256, 0x55);
    devq_queue_submit(qb);
    devq_signal_fail(f, -EIO);
    int rb = devq_queue_finish(qb, 10 * SEC);
    devq_signal_set(hold, 1);
    int ra = devq_queue_finish(qa, 10 * SEC);
    printf("qB finish %d (expect <0); qA finish %d (expect 0): %s\n", rb, ra, ra ? devq_errmsg() : "");
    printf("out[0] = %d (expect 7: the read ran before the fill, as submitted)\n", out[0]);
    return ra != 0;
}

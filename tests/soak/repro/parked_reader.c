/* SPDX-License-Identifier: MIT */
/* A reader parked behind a deferred writer (hazard) whose wait then
 * fails: the reader must fail (its last writer in submission order was
 * skipped), but it sometimes succeeds and returns the OLD contents:
 * silent stale data.  cpu backend.
 *   qw: wait h (unset: deferred); fill b 0x55; submit
 *   qr: read b -> out; submit       (parked: RAW on the deferred fill)
 *   fail h; finish qr -> expect < 0.   Racy: run it a few hundred times. */
#include <errno.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <devq/devq.h>
#define SEC 1000000000ull
int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 200, bad = 0;
    devq_device *d;
    devq_queue *qw, *qr;
    devq_buffer *b;
    devq_queue_desc desc = { DEVQ_QUEUE_COMPUTE, 0 };
    if (devq_device_open("cpu", &d))
        return 2;
    devq_queue_create(d, &desc, &qw);
    devq_queue_create(d, &desc, &qr);
    devq_buffer_alloc(d, 256, NULL, 0, &b);
    for (int i = 0; i < n; i++) {
        devq_signal *h;
        devq_signal_create(0, &h);
        unsigned char init[256], out[256];
        memset(init, 7, sizeof init);
        memset(out, 0, sizeof out);
        devq_queue_write(qr, b, 0, init, 256);
        devq_queue_submit(qr);
        if (devq_queue_finish(qr, 10 * SEC))
            return 2;
        devq_queue_wait(qw, h, 1);
        devq_queue_fill(qw, b, 0, 256, 0x55);
        devq_queue_submit(qw);
        devq_queue_read(qr, out, b, 0, 256);
        devq_queue_submit(qr);
        devq_signal_fail(h, -EIO);
        int rr = devq_queue_finish(qr, 10 * SEC), rw = devq_queue_finish(qw, 10 * SEC);
        if (rr == 0) {
            if (!bad)
                printf("iteration %d: writer %d, reader %d (expect <0), out[0] 0x%02x (stale)\n", i, rw, rr,
                       out[0]);
            bad++;
        }
        devq_signal_destroy(h);
    }
    printf("%d of %d reads of a buffer whose last writer was skipped succeeded\n", bad, n);
    return bad != 0;
}

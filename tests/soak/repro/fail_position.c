/* SPDX-License-Identifier: MIT */
/* A kernel failure spoils buffers written by ops that ran BEFORE it in
 * the same batch (DESIGN 5a: only a failed or skipped op's destinations
 * fail).  cpu backend.  q1: fill b; exec kernel returning -EIO; submit.
 * Then devq_buffer_status(b) must be 0 and a read of b on q2 must succeed
 * (the fill ran: out[] holds 0x55). */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <devq/devq.h>
#define SEC 1000000000ull
int repro_fail(void *const *a, const devq_cpu_group *g);
int repro_fail(void *const *a, const devq_cpu_group *g)
{
    (void)a;
    (void)g;
    return -EIO;
}
int main(void)
{
    devq_device *d;
    devq_queue *q1, *q2;
    devq_buffer *b;
    devq_kernel *k;
    devq_queue_desc desc = { DEVQ_QUEUE_COMPUTE, 0 };
    if (devq_device_open("cpu", &d))
        return 2;
    devq_queue_create(d, &desc, &q1);
    devq_queue_create(d, &desc, &q2);
    devq_buffer_alloc(d, 256, NULL, 0, &b);
    if (devq_kernel_load(d, NULL, 0, "repro_fail", &k)) {
        printf("load: %s\n", devq_errmsg());
        return 2;
    }
    devq_launch l = { { 1, 1, 1 }, { 1, 1, 1 }, 0 };
    devq_queue_fill(q1, b, 0, 256, 0x55);
    devq_queue_exec(q1, k, NULL, 0, &l);
    devq_queue_submit(q1);
    int r1 = devq_queue_finish(q1, 10 * SEC);
    int st = devq_buffer_status(b);
    printf("q1 finish %d (expect -5); devq_buffer_status(b) %d (expect 0) %s\n", r1, st,
           st ? devq_errmsg() : "");
    unsigned char out[256] = { 0 };
    devq_queue_read(q2, out, b, 0, 256);
    devq_queue_submit(q2);
    int r2 = devq_queue_finish(q2, 10 * SEC);
    printf("q2 read finish %d (expect 0) %s; out[0] 0x%02x (the fill ran)\n", r2, r2 ? devq_errmsg() : "",
           out[0]);
    return st != 0 || r2 != 0;
}

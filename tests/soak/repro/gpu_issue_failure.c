/* SPDX-License-Identifier: MIT */
/* cuda-emu, DEVQ_EMU_FAIL=cuMemcpyDtoHAsync:1:CUDA_ERROR_INVALID_VALUE:
 * a driver call that fails while a batch is issued fails that op; the
 * ops after it are skipped, so what they would have written is failed,
 * and a read of it on another queue must fail.  lib marks the buffer
 * failed only in the batch's last callback, and the reader, not ordered
 * behind the never-issued fill, runs first: it succeeds with the old
 * contents (silent stale data), every time.
 *   q1: wait h (host, unset: a device-side wait); read a -> host (the
 *       DtoH call fails at submit); fill b 0x55; submit  (returns -22)
 *   q2: read b -> out; submit
 *   set h; finish q1 (<0), finish q2 -> expect < 0.
 * Run: DEVQ_PLUGIN_PATH=<build>/plugins/cuda/.libs
 *      DEVQ_CUDA_LIBRARY=<build>/tests/emu/.libs/libcuda-emu.so
 *      DEVQ_EMU_FAIL=cuMemcpyDtoHAsync:1:CUDA_ERROR_INVALID_VALUE ./gpu_issue_failure */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <devq/devq.h>
#define SEC 1000000000ull
int main(void)
{
    devq_device *gpu;
    devq_queue *q1, *q2;
    devq_buffer *a, *b;
    devq_queue_desc desc = { DEVQ_QUEUE_COMPUTE, 0 };
    if (devq_device_open("cuda", &gpu)) {
        printf("open: %s\n", devq_errmsg());
        return 2;
    }
    devq_queue_create(gpu, &desc, &q1);
    devq_queue_create(gpu, &desc, &q2);
    devq_buffer_alloc(gpu, 256, NULL, 0, &a);
    devq_buffer_alloc(gpu, 256, NULL, 1, &b);
    unsigned char init[256], host[256], out[256];
    memset(init, 7, sizeof init);
    memset(out, 0, sizeof out);
    devq_queue_write(q1, a, 0, init, 256);
    devq_queue_write(q1, b, 0, init, 256);
    devq_queue_submit(q1);
    if (devq_queue_finish(q1, 10 * SEC))
        return 2;
    devq_signal *h;
    devq_signal_create(0, &h);
    devq_queue_wait(q1, h, 1); /* deferred: issued later, by devq_signal_set */
    devq_queue_read(q1, host, a, 0, 256);
    devq_queue_fill(q1, b, 0, 256, 0x55);
    int rs = devq_queue_submit(q1);
    devq_queue_read(q2, out, b, 0, 256); /* submitted after the producer, before it is finished */
    devq_queue_submit(q2);
    devq_signal_set(h, 1);
    int r1 = devq_queue_finish(q1, 10 * SEC);
    printf("producer: submit %d, finish %d (expect <0); status b %d (expect <0)\n", rs, r1,
           devq_buffer_status(b));
    int r2 = devq_queue_finish(q2, 10 * SEC);
    printf("read of b: finish %d (expect <0) %s; out[0] 0x%02x\n", r2, r2 ? devq_errmsg() : "", out[0]);
    return r2 == 0;
}

/* SPDX-License-Identifier: MIT */
/* cuda-emu, DEVQ_EMU_FAIL=cuStreamAddCallback:1:CUDA_ERROR_INVALID_VALUE:
 * batch A waits on the device for a host value (its gate callback cannot
 * be queued: A fails), then fills b; batch B, on another queue, reads b.
 * B must fail (b's last writer failed); lib lets it succeed 8 times in 10:
 * silent stale data (A completes at once, its buffer marks come late).
 *   q : wait h; fill b; signal sa; submit      (A, fails at submit)
 *   q2: read b; signal sb; submit              (B)
 *   set h; wait sa (<0), wait sb -> expect <0.
 * Run: DEVQ_PLUGIN_PATH=<build>/plugins/cuda/.libs
 *      DEVQ_CUDA_LIBRARY=<build>/tests/emu/.libs/libcuda-emu.so
 *      DEVQ_EMU_FAIL=cuStreamAddCallback:1:CUDA_ERROR_INVALID_VALUE ./gpu_callback_stale */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <devq/devq.h>
#define SEC 1000000000ull
int main(void)
{
    devq_device *gpu;
    devq_queue *q, *q2;
    devq_buffer *b;
    devq_signal *h, *sa, *sb;
    devq_queue_desc desc = { DEVQ_QUEUE_COMPUTE, 0 };
    if (devq_device_open("cuda", &gpu)) {
        printf("open: %s\n", devq_errmsg());
        return 2;
    }
    devq_queue_create(gpu, &desc, &q);
    devq_queue_create(gpu, &desc, &q2);
    devq_buffer_alloc(gpu, 256, NULL, 0, &b);
    devq_signal_create(0, &h);
    devq_signal_create(0, &sa);
    devq_signal_create(0, &sb);
    unsigned char out[256];
    devq_queue_wait(q, h, 1);
    devq_queue_fill(q, b, 0, 256, 1);
    devq_queue_signal(q, sa, 1);
    int ra = devq_queue_submit(q);
    devq_queue_read(q2, out, b, 0, 256);
    devq_queue_signal(q2, sb, 1);
    int rb = devq_queue_submit(q2);
    devq_signal_set(h, 1);
    int bad = 0;
    int wa = devq_signal_wait(sa, 1, 10 * SEC);
    printf("A: submit %d wait %d %s\n", ra, wa, wa ? devq_errmsg() : "");
    bad += wa && !strstr(devq_errmsg(), "cuStreamAddCallback");
    int wb = devq_signal_wait(sb, 1, 10 * SEC);
    printf("B: submit %d wait %d %s\n", rb, wb, wb ? devq_errmsg() : "");
    bad += wa && !wb; /* read a failed buffer and succeeded */
    bad += wb && !strstr(devq_errmsg(), "cuStreamAddCallback");
    devq_queue_finish(q, 10 * SEC);
    devq_queue_finish(q2, 10 * SEC);
    return bad != 0;
}

/* SPDX-License-Identifier: MIT */
/* Device loss on the vulkan backend (lavapipe cannot lose a device, so
 * DEVQ_VULKAN_INJECT_DEVICE_LOST=1 fails the first submission with
 * VK_ERROR_DEVICE_LOST): every pending signal of two queues and every
 * buffer they would have written fail with -ENODEV and the root cause,
 * nothing hangs (every wait bounded), later calls say the device is
 * lost, and teardown is safe.  77 without a device. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <devq/devq.h>

#define SEC 1000000000ull
#include "../helpers/plain_expect.h"
#define CHECK(x) CHECK_MSG(x, devq_errmsg())

int main(void)
{
    setenv("DEVQ_VULKAN_INJECT_DEVICE_LOST", "1", 1);
    devq_device *dev;
    if (devq_device_open("vulkan", &dev) < 0) {
        printf("SKIP: no vulkan device: %s\n", devq_errmsg());
        return 77;
    }
    enum { N = 4096, BATCHES = 4 };
    devq_queue *q[2];
    CHECK(devq_queue_create(dev, NULL, &q[0]));
    CHECK(devq_queue_create(dev, NULL, &q[1]));
    devq_buffer *b[2][BATCHES];
    devq_signal *s[2];
    CHECK(devq_signal_create(0, &s[0]));
    CHECK(devq_signal_create(0, &s[1]));
    static uint8_t host[N];
    memset(host, 7, sizeof host);
    /* Each queue: batches that write a buffer each and signal; the
     * second queue also copies from the first's buffers. */
    for (int i = 0; i < BATCHES; i++)
        for (int k = 0; k < 2; k++) {
            CHECK(devq_buffer_alloc(dev, N, NULL, 0, &b[k][i]));
            if (k == 0)
                CHECK(devq_queue_write(q[k], b[k][i], 0, host, N));
            else
                CHECK(devq_queue_copy(q[k], b[k][i], 0, b[0][i], 0, N));
            CHECK(devq_queue_signal(q[k], s[k], (uint64_t)i + 1));
            int r = devq_queue_submit(q[k]);
            EXPECT(r == 0 || r == -ENODEV || r == -EIO, "submit %d/%d: %d %s", k, i, r, devq_errmsg());
        }
    for (int k = 0; k < 2; k++) {
        int r = devq_signal_wait(s[k], BATCHES, 20 * SEC);
        EXPECT(r == -ENODEV && strstr(devq_errmsg(), "lost"), "queue %d: wait: %d %s", k, r, devq_errmsg());
        EXPECT(devq_signal_status(s[k]) == -ENODEV, "queue %d: signal status %d", k,
               devq_signal_status(s[k]));
        /* The signal fails with its first batch; finish waits for all. */
        r = devq_queue_finish(q[k], 20 * SEC);
        EXPECT(r == -ENODEV, "queue %d: finish: %d %s", k, r, devq_errmsg());
        for (int i = 0; i < BATCHES; i++) {
            int st = devq_buffer_status(b[k][i]);
            EXPECT(st == -ENODEV, "queue %d buffer %d: status %d", k, i, st);
        }
    }
    devq_queue *q3;
    int r = devq_queue_create(dev, NULL, &q3);
    EXPECT(r == -ENODEV && strstr(devq_errmsg(), "lost"), "queue_create after the loss: %d %s", r,
           devq_errmsg());
    if (r == 0)
        devq_queue_destroy(q3);
    for (int k = 0; k < 2; k++) {
        devq_queue_destroy(q[k]);
        devq_signal_destroy(s[k]);
        for (int i = 0; i < BATCHES; i++)
            devq_buffer_free(b[k][i], NULL);
    }
    devq_device_close(dev);
    printf("%s\n", failures ? "FAILED" : "ok");
    return failures ? 1 : 0;
}

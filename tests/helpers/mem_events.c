/* SPDX-License-Identifier: MIT */
/* A small run for tests/scripts/test_mem_trace.sh: a buffer allocated on queue 1,
 * written there, read on queue 2, freed in stream order; then one
 * allocation past DEVQ_MEM_BUDGET (the script sets it), which must fail
 * with -ENOMEM.  Prints "ok" when every call did what it should. */
#include <errno.h>
#include <stdio.h>
#include <devq/devq.h>

#define CHECK(x)                                                               \
    do {                                                                       \
        int r_ = (x);                                                          \
        if (r_ < 0) {                                                          \
            fprintf(stderr, "mem_events: %s: %d %s\n", #x, r_, devq_errmsg()); \
            return 1;                                                          \
        }                                                                      \
    } while (0)

int main(void)
{
    devq_device *dev;
    devq_queue *q1, *q2;
    devq_buffer *buf, *dst, *big = NULL;
    CHECK(devq_device_open("cpu", &dev));
    CHECK(devq_queue_create(dev, NULL, &q1));
    CHECK(devq_queue_create(dev, NULL, &q2));
    CHECK(devq_buffer_alloc(dev, 64 << 10, q1, 5, &buf));
    CHECK(devq_buffer_alloc(dev, 64 << 10, NULL, 6, &dst));
    CHECK(devq_queue_fill(q1, buf, 0, 64 << 10, 1));
    CHECK(devq_queue_submit(q1));
    CHECK(devq_queue_copy(q2, dst, 0, buf, 0, 64 << 10));
    CHECK(devq_queue_submit(q2));
    CHECK(devq_buffer_free(buf, q2));
    CHECK(devq_queue_finish(q1, 5000000000ull));
    CHECK(devq_queue_finish(q2, 5000000000ull));
    int r = devq_buffer_alloc(dev, 1 << 20, q1, 7, &big);
    if (r != -ENOMEM) {
        fprintf(stderr, "mem_events: an allocation past the budget gave %d, not -ENOMEM\n", r);
        return 1;
    }
    CHECK(devq_buffer_free(dst, NULL));
    devq_queue_destroy(q1);
    devq_queue_destroy(q2);
    devq_device_close(dev);
    printf("ok\n");
    return 0;
}

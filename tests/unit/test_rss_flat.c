/* SPDX-License-Identifier: MIT */
/* No growth with the number of batches completed (issue 19): after a
 * warm-up of 1.2 * 10^6 batches, another 10^6 (empty ones, and one in eight with a
 * fill) must leave the malloc heap where it was, give or take a few
 * recycled chunks.  A batch, op, tracker record or cached handle kept
 * per completed batch would add >= 10^6 * 8 bytes and fail here.
 *
 * Not timed.  Skipped (77) under sanitizers and valgrind, whose
 * allocators keep freed memory on purpose (quarantines). */
#define _GNU_SOURCE
#include <malloc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <devq/devq.h>

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define UNDER_SANITIZER 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) || __has_feature(memory_sanitizer)
#define UNDER_SANITIZER 1
#endif
#endif

#define TIMEOUT_NS (60ull * 1000000000ull)
#define WARM 200000L
#define MORE 1000000L
#define SLACK (256 * 1024L) /* heap bytes: far below 1 byte per batch */

#define CHECK(x)                                                                  \
    do {                                                                          \
        int r_ = (x);                                                             \
        if (r_ < 0) {                                                             \
            fprintf(stderr, "test_rss_flat: %s: %d %s\n", #x, r_, devq_errmsg()); \
            exit(1);                                                              \
        }                                                                         \
    } while (0)

static void run(devq_queue *q, devq_signal *s, devq_buffer *buf, uint64_t *v, long n)
{
    for (long i = 0; i < n; i++) {
        if (i % 8 == 0)
            CHECK(devq_queue_fill(q, buf, 0, 64, (uint8_t)i));
        CHECK(devq_queue_signal(q, s, ++*v));
        CHECK(devq_queue_submit(q));
        if (i % 256 == 255) /* at most 256 in flight: a bounded high-water mark */
            CHECK(devq_queue_finish(q, TIMEOUT_NS));
    }
    CHECK(devq_queue_finish(q, TIMEOUT_NS));
}

int main(void)
{
#ifdef UNDER_SANITIZER
    puts("test_rss_flat: skipped under a sanitizer (its allocator keeps freed memory)");
    return 77;
#endif
    const char *pre = getenv("LD_PRELOAD");
    if ((pre && strstr(pre, "vgpreload")) || getenv("DEVQ_TEST_UNDER_VALGRIND")) {
        puts("test_rss_flat: skipped under valgrind");
        return 77;
    }
    devq_device *dev;
    devq_queue *q;
    devq_signal *s;
    devq_buffer *buf;
    CHECK(devq_device_open("cpu", &dev));
    CHECK(devq_queue_create(dev, NULL, &q));
    CHECK(devq_signal_create(0, &s));
    CHECK(devq_buffer_alloc(dev, 4096, NULL, 0, &buf));
    uint64_t v = 0;
    /* Pools grow to their high-water mark (how far the recording thread
     * gets ahead of the stream), so the warm-up runs as many batches as
     * the measured part. */
    run(q, s, buf, &v, WARM);
    run(q, s, buf, &v, MORE);
    long warm = (long)mallinfo2().uordblks;
    run(q, s, buf, &v, MORE);
    long after = (long)mallinfo2().uordblks;
    int ok = after - warm <= SLACK && devq_signal_value(s) == v;
    printf(
        "test_rss_flat: heap %ld bytes after %ld batches, %ld after %ld more (%+ld, limit %+ld); signal at %llu "
        "of %llu: %s\n",
        warm, WARM + MORE, after, MORE, after - warm, SLACK, (unsigned long long)devq_signal_value(s),
        (unsigned long long)v, ok ? "ok" : "FAIL");
    devq_signal_destroy(s);
    CHECK(devq_buffer_free(buf, NULL));
    devq_queue_destroy(q);
    devq_device_close(dev);
    return ok ? 0 : 1;
}

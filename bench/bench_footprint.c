/* SPDX-License-Identifier: MIT */
/* bench_footprint: memory per object on the cpu backend, through the
 * public API, and the heap over 10^7 completed batches.  Issue 19 asks
 * for bytes per batch, per op and per buffer handle, and for no growth
 * with the number of batches completed.
 *
 * Heap bytes are glibc's mallinfo2() uordblks (bytes handed out by
 * malloc, which is where devq keeps its objects); RSS is
 * /proc/self/statm.  In-flight batches are measured held behind a wait
 * on a signal nobody has set, so they stay recorded and submitted (the
 * deferred state a busy queue's batches are in) until it is set.
 *
 *   bench_footprint [BATCHES]     (default 10^7; make bench runs 10^7) */
#define _GNU_SOURCE
#include <malloc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <devq/devq.h>

#define CHECK(x)                                                                    \
    do {                                                                            \
        int r_ = (x);                                                               \
        if (r_ < 0) {                                                               \
            fprintf(stderr, "bench_footprint: %s: %d %s\n", #x, r_, devq_errmsg()); \
            exit(1);                                                                \
        }                                                                           \
    } while (0)
#define TIMEOUT_NS (60ull * 1000000000ull)

static long heap(void)
{
    return (long)mallinfo2().uordblks;
}

static long rss_kib(void)
{
    long pages = 0, res = 0;
    FILE *f = fopen("/proc/self/statm", "r");
    if (f) {
        if (fscanf(f, "%ld %ld", &pages, &res) != 2)
            res = 0;
        fclose(f);
    }
    return res * (sysconf(_SC_PAGESIZE) / 1024);
}

/* Heap bytes per batch of `fills` fills and one signal, held in flight. */
static double per_batch(devq_device *dev, devq_buffer *buf, int fills, int n)
{
    devq_queue *q;
    devq_signal *gate, *s;
    CHECK(devq_queue_create(dev, NULL, &q));
    CHECK(devq_signal_create(0, &gate));
    CHECK(devq_signal_create(0, &s));
    CHECK(devq_queue_wait(q, gate, 1));
    CHECK(devq_queue_submit(q));
    long before = heap();
    for (int i = 0; i < n; i++) {
        for (int k = 0; k < fills; k++)
            CHECK(devq_queue_fill(q, buf, 0, 64, (uint8_t)k));
        CHECK(devq_queue_signal(q, s, (uint64_t)i + 1));
        CHECK(devq_queue_submit(q));
    }
    long held = heap() - before;
    CHECK(devq_signal_set(gate, 1));
    CHECK(devq_queue_finish(q, TIMEOUT_NS));
    devq_signal_destroy(s);
    devq_signal_destroy(gate);
    devq_queue_destroy(q);
    return (double)held / n;
}

int main(int argc, char **argv)
{
    long batches = argc > 1 ? atol(argv[1]) : 10000000L;
    if (batches < 2000000)
        batches = 2000000;
    devq_device *dev;
    CHECK(devq_device_open("cpu", &dev));
    devq_buffer *buf;
    CHECK(devq_buffer_alloc(dev, 4096, NULL, 0, &buf));

    enum { N = 20000 };
    per_batch(dev, buf, 1, N); /* warm the caches once */
    double b0 = per_batch(dev, buf, 0, N);
    double b1 = per_batch(dev, buf, 1, N);
    double b8 = per_batch(dev, buf, 8, N);

    /* Handles: small buffers, so the handle is most of it. */
    enum { H = 100000 };
    devq_buffer **hs = malloc(H * sizeof *hs);
    long h0 = heap(), r0 = rss_kib();
    for (int i = 0; i < H; i++)
        CHECK(devq_buffer_alloc(dev, 256, NULL, 0, &hs[i]));
    double hheap = (double)(heap() - h0) / H, hrss = (double)(rss_kib() - r0) * 1024 / H;
    for (int i = 0; i < H; i++)
        CHECK(devq_buffer_free(hs[i], NULL));
    free(hs);

    enum { S = 100000 };
    devq_signal **ss = malloc(S * sizeof *ss);
    long s0 = heap();
    for (int i = 0; i < S; i++)
        CHECK(devq_signal_create(0, &ss[i]));
    double sheap = (double)(heap() - s0) / S;
    for (int i = 0; i < S; i++)
        devq_signal_destroy(ss[i]);
    free(ss);

    enum { Q = 64 };
    devq_queue *qs[Q];
    long q0 = heap();
    for (int i = 0; i < Q; i++)
        CHECK(devq_queue_create(dev, NULL, &qs[i]));
    double qheap = (double)(heap() - q0) / Q;
    for (int i = 0; i < Q; i++)
        devq_queue_destroy(qs[i]);

    printf("memory per object, cpu backend (heap: malloc'd bytes; RSS: resident pages)\n");
    printf("  batch in flight, one signal op         %8.0f heap bytes\n", b0);
    printf("  batch in flight, a fill and a signal   %8.0f heap bytes\n", b1);
    printf("  op (fill), recorded in a batch          %8.0f heap bytes (from 8 fills: %.0f)\n", b1 - b0,
           (b8 - b0) / 8);
    printf("  buffer handle (256 B buffer)           %8.0f heap bytes, %.0f RSS bytes with its 256 B\n",
           hheap, hrss);
    printf("  signal                                 %8.0f heap bytes\n", sheap);
    printf("  queue (with its cpu stream)            %8.0f heap bytes\n", qheap);

    /* 10^7 batches to completion: the heap and RSS must stay flat. */
    devq_queue *q;
    devq_signal *s;
    CHECK(devq_queue_create(dev, NULL, &q));
    CHECK(devq_signal_create(0, &s));
    long step = batches / 10, heap_warm = 0, rss_warm = 0;
    printf("batches completed      heap bytes    RSS KiB\n");
    for (long i = 1; i <= batches; i++) {
        if (i % 8 == 0)
            CHECK(devq_queue_fill(q, buf, 0, 64, (uint8_t)i));
        CHECK(devq_queue_signal(q, s, (uint64_t)i));
        CHECK(devq_queue_submit(q));
        if (i % 4096 == 0)
            CHECK(devq_queue_finish(q, TIMEOUT_NS));
        if (i % step == 0) {
            CHECK(devq_queue_finish(q, TIMEOUT_NS));
            if (i == step) {
                heap_warm = heap();
                rss_warm = rss_kib();
            }
            printf("%17ld  %12ld  %9ld\n", i, heap(), rss_kib());
        }
    }
    printf("growth after the first %ld batches: heap %+ld bytes, RSS %+ld KiB\n", step, heap() - heap_warm,
           rss_kib() - rss_warm);
    devq_signal_destroy(s);
    devq_queue_destroy(q);
    CHECK(devq_buffer_free(buf, NULL));
    devq_device_close(dev);
    return 0;
}

/* SPDX-License-Identifier: MIT */
/* Tracker cost per binding and per batch (issue 5), for 1..64 bindings
 * and 1..16 streams, with a no-op align so only bookkeeping is measured.
 * Target: at most 50 ns per binding and no growth with the stream count. */
#include <string.h>
#include "bench_util.h"
#include "tracker.h"

static int noop_align(void *ctx, uint32_t dst, uint32_t src, uint64_t need, uint64_t *synced, const char *why)
{
    (void)ctx;
    (void)dst;
    (void)src;
    (void)need;
    (void)synced;
    (void)why;
    return 0;
}

static const struct devq_tracker_ops ops = { .align = noop_align };

int main(int argc, char **argv)
{
    int quick = argc > 1 && !strcmp(argv[1], "--quick");
    static const int nb[] = { 1, 4, 16, 64 };
    static const int ns[] = { 1, 2, 4, 16 };
    printf("\ntracker bookkeeping (ns per binding, median of 5; batch = one unit with N bindings)\n");
    printf("%-10s", "bindings");
    for (size_t j = 0; j < 4; j++)
        printf("   %2d stream(s)", ns[j]);
    printf("   per batch @16 streams\n");
    double worst = 0;
    for (size_t i = 0; i < 4; i++) {
        printf("%-10d", nb[i]);
        double per_batch = 0;
        for (size_t j = 0; j < 4; j++) {
            double v[5];
            for (int r = 0; r < 5; r++) {
                struct devq_tracker *t;
                devq__tracker_create(&ops, NULL, &t);
                uint32_t ids[16];
                for (int s = 0; s < ns[j]; s++)
                    devq__tracker_stream_add(t, &ids[s]);
                struct devq_buffer_track bufs[64];
                for (int b = 0; b < 64; b++)
                    devq__tracker_buffer_init(&bufs[b]);
                int batches = quick ? 2000 : 20000;
                uint64_t t0 = bench_now();
                for (int k = 0; k < batches; k++) {
                    uint32_t s = ids[k % ns[j]];
                    devq__tracker_begin(t, s);
                    for (int b = 0; b < nb[i]; b++)
                        devq__tracker_bind(t, s, &bufs[(k + b) & 63], (b & 3) == 0 ? DEVQ_WRITE : DEVQ_READ);
                }
                v[r] = (double)(bench_now() - t0) / ((double)batches * nb[i]);
                if (j == 3)
                    per_batch = (double)(bench_now() - t0) / batches;
                for (int b = 0; b < 64; b++)
                    devq__tracker_buffer_fini(&bufs[b]);
                devq__tracker_destroy(t);
            }
            double m = bench_median(v, 5);
            worst = m > worst ? m : worst;
            printf("   %10.1f ns", m);
        }
        printf("   %10.1f ns\n", per_batch);
    }
    printf("worst per-binding cost: %.1f ns (target <= 50 ns)\n", worst);
    return 0;
}

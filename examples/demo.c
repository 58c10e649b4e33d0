/* SPDX-License-Identifier: MIT */
/* devq demo: a three-stage pipeline on two queues connected by timeline
 * signals, over 256 MiB of generated image data.
 *
 *   copy queue:    upload chunk i                      -> signal `uploaded` = i
 *   compute queue: wait uploaded >= i; blur; histogram -> signal `computed` = i
 *   copy queue:    wait computed >= i; read the blurred rows back
 *
 * While chunk i is blurred, chunk i+1 is uploaded: the two queues overlap.
 * Buffers are reused across chunks with no explicit waits: the tracker
 * orders each reuse after the previous readers from the access modes.
 * The result is checked against a plain C reference, and timings printed.
 * The kernels are plain C functions in this program (cpu backend). */
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <devq/devq.h>

#define WIDTH 8192u
#define ROWS_PER_CHUNK 4096u
#define CHUNKS 8u
#define CHUNK_BYTES ((size_t)WIDTH * ROWS_PER_CHUNK)
#define ROWS_PER_GROUP 16u

#define CHECK(call)                                                                  \
    do {                                                                             \
        int r_ = (call);                                                             \
        if (r_ < 0) {                                                                \
            fprintf(stderr, "demo: %s failed: %d (%s)\n", #call, r_, devq_errmsg()); \
            exit(1);                                                                 \
        }                                                                            \
    } while (0)

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* 5-tap horizontal box blur of one pixel row, edges clamped. */
static void blur_row(const uint8_t *in, uint8_t *out)
{
    for (uint32_t x = 0; x < WIDTH; x++) {
        unsigned sum = 0;
        for (int d = -2; d <= 2; d++) {
            int xx = (int)x + d;
            xx = xx < 0 ? 0 : xx >= (int)WIDTH ? (int)WIDTH - 1 : xx;
            sum += in[xx];
        }
        out[x] = (uint8_t)(sum / 5);
    }
}

/* Kernels: one work-group handles ROWS_PER_GROUP rows. */
int demo_blur(void *const *args, const devq_cpu_group *g);
int demo_blur(void *const *args, const devq_cpu_group *g)
{
    const uint8_t *in = args[0];
    uint8_t *out = args[1];
    uint32_t row0 = g->group_id[0] * ROWS_PER_GROUP;
    for (uint32_t r = row0; r < row0 + ROWS_PER_GROUP && r < ROWS_PER_CHUNK; r++)
        blur_row(in + (size_t)r * WIDTH, out + (size_t)r * WIDTH);
    return 0;
}

int demo_histogram(void *const *args, const devq_cpu_group *g);
int demo_histogram(void *const *args, const devq_cpu_group *g)
{
    const uint8_t *img = args[0];
    uint32_t *hist = args[1];
    uint32_t local[256] = { 0 };
    uint32_t row0 = g->group_id[0] * ROWS_PER_GROUP;
    for (uint32_t r = row0; r < row0 + ROWS_PER_GROUP && r < ROWS_PER_CHUNK; r++)
        for (uint32_t x = 0; x < WIDTH; x++)
            local[img[(size_t)r * WIDTH + x]]++;
    for (int b = 0; b < 256; b++)
        if (local[b])
            __atomic_fetch_add(&hist[b], local[b], __ATOMIC_RELAXED);
    return 0;
}

static void upload(devq_queue *copy, devq_buffer *slot, const uint8_t *src, devq_signal *uploaded,
                   uint64_t value)
{
    CHECK(devq_queue_write(copy, slot, 0, src, CHUNK_BYTES));
    CHECK(devq_queue_signal(copy, uploaded, value));
    CHECK(devq_queue_submit(copy));
}

static uint8_t pixel(size_t i)
{
    /* Cheap deterministic "image": gradients plus noise. */
    uint32_t h = (uint32_t)i * 2654435761u;
    return (uint8_t)(((i % WIDTH) >> 5) + (h >> 27));
}

int main(void)
{
    /* The demo's kernels are C functions in this program: the cpu backend. */
    devq_device *dev;
    CHECK(devq_device_open("cpu", &dev));
    devq_device_info info;
    CHECK(devq_device_info_get(dev, &info));
    printf("devq %s: device %s:%d \"%s\", %u compute units\n", devq_version(), info.backend, info.ordinal,
           info.name, info.compute_units);
    printf("pipeline: %u chunks x %zu MiB (%zu MiB total), blur + histogram, 2 queues\n", CHUNKS,
           CHUNK_BYTES >> 20, (CHUNK_BYTES * CHUNKS) >> 20);

    uint8_t *image = malloc(CHUNK_BYTES * CHUNKS), *result = malloc(CHUNK_BYTES * CHUNKS);
    if (!image || !result)
        return 1;
    for (size_t i = 0; i < CHUNK_BYTES * CHUNKS; i++)
        image[i] = pixel(i);

    devq_queue *copy, *compute;
    devq_queue_desc copy_desc = { DEVQ_QUEUE_COPY, 0 }, compute_desc = { DEVQ_QUEUE_COMPUTE, 1 };
    CHECK(devq_queue_create(dev, &copy_desc, &copy));
    CHECK(devq_queue_create(dev, &compute_desc, &compute));
    devq_kernel *blur, *histogram;
    CHECK(devq_kernel_load(dev, NULL, 0, "demo_blur", &blur));
    CHECK(devq_kernel_load(dev, NULL, 0, "demo_histogram", &histogram));
    devq_signal *uploaded, *computed;
    CHECK(devq_signal_create(0, &uploaded));
    CHECK(devq_signal_create(0, &computed));

    /* Two slots per stage so chunk i+1 uploads while chunk i computes. */
    devq_buffer *in[2], *out[2], *hist;
    for (int s = 0; s < 2; s++) {
        CHECK(devq_buffer_alloc(dev, CHUNK_BYTES, NULL, 1, &in[s]));
        CHECK(devq_buffer_alloc(dev, CHUNK_BYTES, NULL, 2, &out[s]));
    }
    CHECK(devq_buffer_alloc(dev, 256 * sizeof(uint32_t), NULL, 3, &hist));
    CHECK(devq_queue_fill(compute, hist, 0, 256 * sizeof(uint32_t), 0));
    CHECK(devq_queue_submit(compute));

    /* One work-item per row, ROWS_PER_GROUP rows per work-group. */
    devq_launch launch = { { ROWS_PER_CHUNK, 1, 1 }, { ROWS_PER_GROUP, 1, 1 }, 0 };
    double t0 = now_s();
    /* Copy-queue order: up0, up1, down0, up2, down1, ...  Uploading chunk
     * i+1 before reading chunk i back lets the upload overlap the blur;
     * reusing a slot is ordered after its last readers by the tracker. */
    upload(copy, in[0], image, uploaded, 1);
    for (uint32_t i = 0; i < CHUNKS; i++) {
        int s = i % 2;
        devq_arg blur_args[2] = { DEVQ_ARG_BUF(in[s], DEVQ_READ), DEVQ_ARG_BUF(out[s], DEVQ_WRITE) };
        devq_arg hist_args[2] = { DEVQ_ARG_BUF(out[s], DEVQ_READ), DEVQ_ARG_BUF(hist, DEVQ_READ_WRITE) };
        CHECK(devq_queue_wait(compute, uploaded, i + 1));
        CHECK(devq_queue_exec(compute, blur, blur_args, 2, &launch));
        CHECK(devq_queue_exec(compute, histogram, hist_args, 2, &launch));
        CHECK(devq_queue_signal(compute, computed, i + 1));
        CHECK(devq_queue_submit(compute));
        if (i + 1 < CHUNKS)
            upload(copy, in[(i + 1) % 2], image + (i + 1) * CHUNK_BYTES, uploaded, i + 2);
        CHECK(devq_queue_wait(copy, computed, i + 1));
        CHECK(devq_queue_read(copy, result + i * CHUNK_BYTES, out[s], 0, CHUNK_BYTES));
        CHECK(devq_queue_submit(copy));
    }
    uint32_t h[256];
    CHECK(devq_queue_read(copy, h, hist, 0, sizeof h));
    CHECK(devq_queue_submit(copy));
    CHECK(devq_queue_finish(copy, 60ull * 1000000000ull));
    double t_devq = now_s() - t0;

    /* Plain C reference, single thread. */
    uint8_t *ref = malloc(CHUNK_BYTES);
    uint32_t ref_hist[256] = { 0 };
    size_t mismatches = 0;
    double t1 = now_s();
    for (uint32_t i = 0; i < CHUNKS; i++) {
        for (uint32_t r = 0; r < ROWS_PER_CHUNK; r++)
            blur_row(image + i * CHUNK_BYTES + (size_t)r * WIDTH, ref + (size_t)r * WIDTH);
        for (size_t p = 0; p < CHUNK_BYTES; p++)
            ref_hist[ref[p]]++;
        mismatches += memcmp(ref, result + i * CHUNK_BYTES, CHUNK_BYTES) != 0;
    }
    double t_ref = now_s() - t1;
    int hist_ok = memcmp(ref_hist, h, sizeof h) == 0;

    devq_stats st;
    CHECK(devq_stats_get(dev, &st));
    printf("devq pipeline:     %7.1f ms (%.2f GB/s through the pipeline)\n", t_devq * 1e3,
           (double)CHUNK_BYTES * CHUNKS / t_devq / 1e9);
    printf("plain C reference: %7.1f ms (single thread)\n", t_ref * 1e3);
    printf("speed-up:          %7.2fx\n", t_ref / t_devq);
    printf("batches: %llu submitted, %llu completed; cross-queue waits: %llu inserted by the tracker, "
           "%llu elided, %llu signal waits aligned on the device\n",
           (unsigned long long)st.batches_submitted, (unsigned long long)st.batches_completed,
           (unsigned long long)st.waits_inserted, (unsigned long long)st.waits_elided,
           (unsigned long long)st.signal_waits_aligned);
    int mode = 0;
    for (int b = 1; b < 256; b++)
        mode = h[b] > h[mode] ? b : mode;
    printf("blurred image: %s; histogram: %s (most common value %d, %u pixels)\n",
           mismatches ? "MISMATCH" : "matches the reference", hist_ok ? "matches the reference" : "MISMATCH",
           mode, h[mode]);

    for (int s = 0; s < 2; s++) {
        devq_buffer_free(in[s], NULL);
        devq_buffer_free(out[s], NULL);
    }
    devq_buffer_free(hist, NULL);
    devq_kernel_destroy(blur);
    devq_kernel_destroy(histogram);
    devq_signal_destroy(uploaded);
    devq_signal_destroy(computed);
    devq_queue_destroy(copy);
    devq_queue_destroy(compute);
    devq_device_close(dev);
    free(image);
    free(result);
    free(ref);
    return mismatches || !hist_ok ? 1 : 0;
}

/* SPDX-License-Identifier: MIT */
/* Host copies on the vulkan backend, whatever path the device takes
 * (devq-vulkan(7) HOST COPIES: import, mapping, staging; forced by
 * tests/scripts/vulkan-copies through DEVQ_VULKAN_NO_HOST_IMPORT and
 * DEVQ_VULKAN_FORCE_STAGING): writes and reads of several sizes at
 * unaligned offsets, from heap and stack memory, around device-side
 * copies and fills, checked byte for byte against the same steps done
 * in C.  Usage: test_vulkan_copies OUT_FILE (the bytes read back, for
 * tests/scripts/vulkan-copies to compare across paths).  77 without a device. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <devq/devq.h>

#define SEC 1000000000ull
#include "../helpers/plain_expect.h"
#define CHECK(x) CHECK_MSG(x, devq_errmsg())

static uint8_t byte_at(size_t i, unsigned seed)
{
    return (uint8_t)(i * 131u + seed * 29u + (i >> 9));
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: %s OUT_FILE\n", argv[0]);
        return 2;
    }
    devq_device *dev;
    if (devq_device_open("vulkan", &dev) < 0) {
        printf("SKIP: no vulkan device: %s\n", devq_errmsg());
        return 77;
    }
    devq_device_info info;
    CHECK(devq_device_info_get(dev, &info));
    const char *staging = getenv("DEVQ_VULKAN_FORCE_STAGING");
    if (staging && !strcmp(staging, "1"))
        EXPECT(!(info.caps & DEVQ_CAP_HOST_VISIBLE), "forced staging, yet DEVQ_CAP_HOST_VISIBLE");
    devq_queue *q;
    CHECK(devq_queue_create(dev, NULL, &q));
    FILE *out = fopen(argv[1], "wb");
    if (!out) {
        fprintf(stderr, "FAIL: %s: %s\n", argv[1], strerror(errno));
        return 1;
    }
    static const size_t sizes[] = { 1, 3, 4, 7, 4096, 4099, 65536 + 5, (1u << 20) + 13 };
    for (size_t si = 0; si < sizeof sizes / sizeof sizes[0]; si++) {
        size_t n = sizes[si], off = si % 5, cap = n + 16;
        devq_buffer *a, *b;
        CHECK(devq_buffer_alloc(dev, cap, NULL, 0, &a));
        CHECK(devq_buffer_alloc(dev, cap, NULL, 0, &b));
        uint8_t *src = malloc(n + 3), *got = malloc(cap), *want = malloc(cap);
        uint8_t stack_src[8], stack_got[8];
        for (size_t i = 0; i < n + 3; i++)
            src[i] = byte_at(i, (unsigned)si);
        /* a = fill 0x5a, then src[1..n+1) at off; b = fill 0xa5, then
         * a[off .. off+n) at 16 - off - 1 (another unaligned offset). */
        CHECK(devq_queue_fill(q, a, 0, cap, 0x5a));
        CHECK(devq_queue_write(q, a, off, src + 1, n));
        CHECK(devq_queue_fill(q, b, 0, cap, 0xa5));
        size_t boff = 16 - off - 1;
        CHECK(devq_queue_copy(q, b, boff, a, off, n));
        CHECK(devq_queue_read(q, got, b, 0, cap));
        /* Small copies from and to the stack, read at execution time. */
        memcpy(stack_src, "stackcpy", 8);
        CHECK(devq_queue_write(q, a, 1, stack_src, 7));
        CHECK(devq_queue_read(q, stack_got, a, 0, 8));
        CHECK(devq_queue_submit(q));
        CHECK(devq_queue_finish(q, 60 * SEC));
        memset(want, 0xa5, cap);
        memcpy(want + boff, src + 1, n);
        EXPECT(!memcmp(got, want, cap), "size %zu: the bytes read back differ", n);
        /* a[0]: the fill, or src[1] where the write began at 0. */
        uint8_t swant[8] = { off ? 0x5a : src[1], 's', 't', 'a', 'c', 'k', 'c', 'p' };
        EXPECT(!memcmp(stack_got, swant, 8), "size %zu: stack copy reads %.8s", n, (const char *)stack_got);
        fwrite(got, 1, cap, out);
        fwrite(stack_got, 1, 8, out);
        CHECK(devq_buffer_free(a, NULL));
        CHECK(devq_buffer_free(b, NULL));
        free(src);
        free(got);
        free(want);
    }
    fclose(out);
    devq_queue_destroy(q);
    devq_device_close(dev);
    printf("%s\n", failures ? "FAILED" : "ok");
    return failures ? 1 : 0;
}

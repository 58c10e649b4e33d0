#include "conf.h"
#include <time.h>

const char *conf_backend(void)
{
    const char *d = getenv("DEVQ_TEST_DEVICE");
    return d && *d ? d : "cpu";
}

devq_device *conf_open(void)
{
    devq_device *dev = NULL;
    int r = devq_device_open(conf_backend(), &dev);
    ck_assert_msg(r == 0, "devq_device_open(%s): %d %s", conf_backend(), r, devq_errmsg());
    return dev;
}

devq_kernel *conf_kernel(devq_device *dev, const char *name)
{
    devq_device_info info;
    ck_assert_int_eq(devq_device_info_get(dev, &info), 0);
    char entry[128];
    devq_kernel *k = NULL;
    int r;
    if (!strcmp(info.backend, "cpu")) {
        snprintf(entry, sizeof entry, "conf_cpu_%s", name);
        r = devq_kernel_load(dev, NULL, 0, entry, &k);
    } else {
        /* The emulated drivers resolve entry points in this process; the
         * module text names each kernel with its parameter sizes. */
        static const struct { const char *name, *sizes; } params[] = {
            { "scale", "8 4" },     { "add", "8 8" },           { "step", "8 4" },
            { "fail", "4" },        { "slow_copy", "8 8 4 4" }, { "add_u32", "8 4" },
            { "oracle_op", "8 8 8 32" }, { "sleep_ms", "4" },
        };
        const char *sizes = NULL;
        for (size_t i = 0; i < sizeof params / sizeof params[0]; i++)
            if (!strcmp(params[i].name, name))
                sizes = params[i].sizes;
        ck_assert_msg(sizes, "no emulator signature for kernel %s", name);
        char image[256];
        snprintf(entry, sizeof entry, "conf_emu_%s", name);
        snprintf(image, sizeof image, "devq-emu-module\n%s %s\n", entry, sizes);
        r = devq_kernel_load(dev, image, strlen(image) + 1, entry, &k);
    }
    ck_assert_msg(r == 0, "devq_kernel_load(%s): %d %s", entry, r, devq_errmsg());
    return k;
}

devq_queue *conf_queue(devq_device *dev)
{
    devq_queue *q = NULL;
    int r = devq_queue_create(dev, NULL, &q);
    ck_assert_msg(r == 0, "devq_queue_create: %d %s", r, devq_errmsg());
    return q;
}

devq_buffer *conf_buffer(devq_device *dev, size_t bytes)
{
    devq_buffer *b = NULL;
    int r = devq_buffer_alloc(dev, bytes, NULL, 0, &b);
    ck_assert_msg(r == 0, "devq_buffer_alloc(%zu): %d %s", bytes, r, devq_errmsg());
    return b;
}

devq_signal *conf_signal(uint64_t initial)
{
    devq_signal *s = NULL;
    ck_assert_int_eq(devq_signal_create(initial, &s), 0);
    return s;
}

devq_launch conf_launch1(uint32_t global, uint32_t local)
{
    return (devq_launch){ { global, 1, 1 }, { local, 1, 1 }, 0 };
}

void conf_upload(devq_queue *q, devq_buffer *b, const void *src, size_t n)
{
    ck_assert_int_eq(devq_queue_write(q, b, 0, src, n), 0);
    ck_assert_int_eq(devq_queue_submit(q), 0);
    int r = devq_queue_finish(q, 10 * SEC);
    ck_assert_msg(r == 0, "finish: %d %s", r, devq_errmsg());
}

void conf_download(devq_queue *q, void *dst, devq_buffer *b, size_t n)
{
    ck_assert_int_eq(devq_queue_read(q, dst, b, 0, n), 0);
    ck_assert_int_eq(devq_queue_submit(q), 0);
    int r = devq_queue_finish(q, 10 * SEC);
    ck_assert_msg(r == 0, "finish: %d %s", r, devq_errmsg());
}

void conf_sleep_ms(unsigned ms)
{
    struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };
    while (nanosleep(&ts, &ts) == -1 && errno == EINTR)
        ;
}

/* SPDX-License-Identifier: MIT */
#include "conf.h"
#include <time.h>

const char *conf_backend(void)
{
    const char *d = getenv("DEVQ_TEST_DEVICE");
    return d && *d ? d : "cpu";
}

int conf_open_env(const char *var, const char *value, devq_device **out)
{
    char *saved = getenv(var) ? strdup(getenv(var)) : NULL;
    setenv(var, value, 1);
    *out = NULL;
    int r = devq_device_open(conf_backend(), out);
    if (saved)
        setenv(var, saved, 1);
    else
        unsetenv(var);
    free(saved);
    return r;
}

devq_device *conf_open(void)
{
    devq_device *dev = NULL;
    int r = devq_device_open(conf_backend(), &dev);
    ck_assert_msg(r == 0, "devq_device_open(%s): %d %s", conf_backend(), r, devq_errmsg());
    return dev;
}

/* Where a real GPU gets the test kernels.  The emulated drivers (their
 * devices are named "devq emulated ...") run the C bodies of
 * conf_kernels.c, named in a devq-emu-module text image; a real device
 * needs code for itself:
 *
 *   CONF_KERNEL_MODULE=path   the image to load on a real cuda or hip
 *                             device (entry points conf_<name>);
 *   unset, on real cuda       $top_srcdir/tests/gpu/conf_kernels.ptx
 *                             (top_srcdir as `make check` exports it,
 *                             else the current directory), the PTX
 *                             made from tests/gpu/conf_kernels.cu.
 *
 * tests/gpu/run.sh sets CONF_KERNEL_MODULE.  Returns NULL for the
 * emulators; for real hip without CONF_KERNEL_MODULE, reports that there
 * is no module and aborts the test. */
static const char *real_gpu_module(const devq_device_info *info, char *buf, size_t n)
{
    if (!strncmp(info->name, "devq emulated", strlen("devq emulated")))
        return NULL;
    const char *path = getenv("CONF_KERNEL_MODULE");
    if (path && *path)
        return path;
    ck_assert_msg(!strcmp(info->backend, "cuda"),
                  "no test kernels for a real %s device (%s): set CONF_KERNEL_MODULE to a "
                  "module with the conf_<name> kernels of tests/conformance/conf_kernels.c",
                  info->backend, info->name);
    const char *top = getenv("top_srcdir");
    snprintf(buf, n, "%s/tests/gpu/conf_kernels.ptx", top && *top ? top : ".");
    return buf;
}

/* The whole file, NUL-terminated (PTX is text); *size counts the NUL. */
static char *read_module(const char *path, size_t *size)
{
    FILE *f = fopen(path, "rb");
    ck_assert_msg(f,
                  "test kernels %s: %s (set CONF_KERNEL_MODULE to "
                  "tests/gpu/conf_kernels.ptx of the source tree)",
                  path, strerror(errno));
    char *image = NULL;
    size_t len = 0, cap = 0, got;
    do {
        if (cap - len < 4096) {
            cap = cap ? cap * 2 : 16384;
            image = realloc(image, cap);
            ck_assert_msg(image, "test kernels %s: out of memory", path);
        }
        got = fread(image + len, 1, cap - len - 1, f);
        len += got;
    } while (got > 0);
    ck_assert_msg(!ferror(f), "test kernels %s: read error", path);
    fclose(f);
    image[len] = '\0';
    *size = len + 1;
    return image;
}

devq_kernel *conf_kernel(devq_device *dev, const char *name)
{
    devq_device_info info;
    ck_assert_int_eq(devq_device_info_get(dev, &info), 0);
    char entry[128], path[4096];
    devq_kernel *k = NULL;
    int r;
    const char *module;
    if (!strcmp(info.backend, "cpu")) {
        snprintf(entry, sizeof entry, "conf_cpu_%s", name);
        r = devq_kernel_load(dev, NULL, 0, entry, &k);
    } else if (!strcmp(info.backend, "vulkan")) {
        /* tests/conformance/<name>.spv, compiled from <name>.comp. */
        const char *top = getenv("top_srcdir");
        snprintf(path, sizeof path, "%s/tests/conformance/%s.spv", top && *top ? top : ".", name);
        size_t size;
        char *image = read_module(path, &size);
        snprintf(entry, sizeof entry, "main");
        r = devq_kernel_load(dev, image, size - 1, entry, &k);
        free(image);
    } else if ((module = real_gpu_module(&info, path, sizeof path))) {
        size_t size;
        char *image = read_module(module, &size);
        snprintf(entry, sizeof entry, "conf_%s", name);
        r = devq_kernel_load(dev, image, size, entry, &k);
        free(image);
        ck_assert_msg(r == 0, "devq_kernel_load(%s from %s): %d %s", entry, module, r, devq_errmsg());
    } else {
        /* The emulated drivers resolve entry points in this process; the
         * module text names each kernel with its parameter sizes. */
        static const struct {
            const char *name, *sizes;
        } params[] = {
            { "scale", "8 4" },          { "add", "8 8" },
            { "step", "8 4" },           { "fail", "4" },
            { "slow_copy", "8 8 4 4" },  { "add_u32", "8 4" },
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

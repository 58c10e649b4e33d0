/* SPDX-License-Identifier: MIT */
/* devq-hip.so over the real ROCm runtime (libamdhip64.so.5), as CI has
 * it: installed by libamdhip64-dev, without an AMD GPU.  The plugin must
 * load it, report 0 devices with the runtime's own reason, and make
 * devq_device_open("hip") fail with -ENODEV and that reason.  On a
 * machine with a GPU the open succeeds instead and the device is checked.
 * Skips (77) only when the runtime is absent.  Bounded: an alarm kills a
 * runtime that hangs, which fails the test rather than the CI job. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <devq/devq.h>

#define RUNTIME "libamdhip64.so.5"

static int failures;

#define EXPECT(cond, ...)                                                   \
    do {                                                                    \
        if (!(cond)) {                                                      \
            fprintf(stderr, "FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond); \
            fprintf(stderr, __VA_ARGS__);                                   \
            fputc('\n', stderr);                                            \
            failures++;                                                     \
        }                                                                   \
    } while (0)

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(void)
{
    alarm(60);
    unsetenv("DEVQ_HIP_LIBRARY");
    void *rt = dlopen(RUNTIME, RTLD_NOW | RTLD_LOCAL);
    if (!rt) {
        const char *e = dlerror();
        printf("SKIP: the ROCm HIP runtime is not installed (%s)\n", e ? e : RUNTIME);
        return 77;
    }
    /* Left loaded: the plugin's dlopen finds this same copy. */

    double t0 = now_s();
    size_t n = 0;
    EXPECT(devq_backends_report(NULL, 0, &n) == 0, "%s", devq_errmsg());
    devq_backend_report *reps = calloc(n ? n : 1, sizeof *reps);
    EXPECT(devq_backends_report(reps, n, &n) == 0, "%s", devq_errmsg());
    const devq_backend_report *hip = NULL;
    for (size_t i = 0; i < n; i++)
        if (!strcmp(reps[i].name, "hip"))
            hip = &reps[i];
    EXPECT(hip != NULL, "devq-hip.so was not found (DEVQ_PLUGIN_PATH=%s)",
           getenv("DEVQ_PLUGIN_PATH") ? getenv("DEVQ_PLUGIN_PATH") : "");
    if (!hip)
        return 1;
    EXPECT(hip->status == 0, "the plugin itself failed to load: %d %s", hip->status, hip->reason);
    printf("report: hip %s: %u device(s); %s\n", hip->path, hip->devices, hip->reason);

    devq_device *dev = NULL;
    int r = devq_device_open("hip", &dev);
    double took = now_s() - t0;
    printf("devq_device_open(\"hip\") = %d (%s) after %.3f s\n", r, r ? devq_errmsg() : "ok", took);
    if (hip->devices == 0) {
        /* No AMD GPU: ROCm 5.2 says hipErrorNoDevice from
         * hipGetDeviceCount (and hipErrorInvalidDevice from hipInit). */
        EXPECT(r == -ENODEV, "got %d", r);
        EXPECT(strstr(devq_errmsg(), "hip: hipGetDeviceCount: hipError") != NULL, "%s", devq_errmsg());
        EXPECT(strstr(devq_errmsg(), "runtime 5.") || strstr(devq_errmsg(), "runtime 6."),
               "no runtime version in: %s", devq_errmsg());
        EXPECT(strstr(hip->reason, "hipGetDeviceCount") != NULL, "report reason: %s", hip->reason);
        /* asked again: the same answer, no second probe */
        r = devq_device_open("hip:0", &dev);
        EXPECT(r == -ENODEV && strstr(devq_errmsg(), "hipGetDeviceCount"), "%d %s", r, devq_errmsg());
    } else {
        EXPECT(r == 0, "%s", devq_errmsg());
        if (r == 0) {
            devq_device_info info;
            EXPECT(devq_device_info_get(dev, &info) == 0, "%s", devq_errmsg());
            EXPECT(!strcmp(info.backend, "hip"), "%s", info.backend);
            EXPECT(info.total_memory > 0 && info.compute_units > 0, "%s", info.name);
            printf("device: %s, %u CUs, caps 0x%llx\n", info.name, info.compute_units,
                   (unsigned long long)info.caps);
            devq_device_close(dev);
        }
    }
    /* Loading and probing the runtime must stay cheap: it runs in every
     * devq-info and every devq_device_open(NULL). */
    EXPECT(took < 20.0, "took %.1f s", took);
    free(reps);
    return failures ? 1 : 0;
}

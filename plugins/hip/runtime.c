/* SPDX-License-Identifier: MIT */
/* Loading the HIP runtime: dlopen libamdhip64.so.5 (or DEVQ_HIP_LIBRARY),
 * every entry point by name with dlsym, hipInit, the device count, and
 * the error descriptions (the hipError_t -> errno table is
 * gpu_common/calls.h's, shared with CUDA).
 *
 * Nothing here runs at plugin init: the runtime is loaded at the first
 * device_count/device_open, so a machine without ROCm, or with ROCm and
 * no AMD GPU, still loads the plugin and reports why. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdarg.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "hip_plugin.h"

struct hip_runtime hip_rt;

static struct {
    void *lib;
} rt;

/* ---- errors ---- */

const char *hip_err_name(hipError_t r)
{
    const char *s = hip_rt.GetErrorName ? hip_rt.GetErrorName(r) : NULL;
    return s && *s ? s : "hipError?";
}

const char *hip_err_desc(hipError_t r, char *buf, size_t n)
{
    const char *name = hip_err_name(r);
    const char *text = hip_rt.GetErrorString ? hip_rt.GetErrorString(r) : NULL;
    if (text && *text && strcmp(text, name) != 0)
        snprintf(buf, n, "%s (%s)", name, text);
    else
        snprintf(buf, n, "%s (hipError_t %d)", name, (int)r);
    return buf;
}


/* HIP_VERSION style: major * 10^7 + minor * 10^5 + patch. */
void hip_version_str(int v, char *buf, size_t n)
{
    snprintf(buf, n, "%d.%d.%d", v / 10000000, v / 100000 % 100, v % 100000);
}

/* ---- entry points ---- */

struct entry {
    const char *name;
    void **slot;
    int group; /* enum gpu_entry_group */
};

#define ENTRY(field, group) { "hip" #field, (void **)&hip_rt.field, group },
static const struct entry entries[] = { HIP_ENTRY_POINTS(ENTRY) };
#undef ENTRY
#define NENTRIES (sizeof entries / sizeof entries[0])

static void clear_group(int group)
{
    for (size_t i = 0; i < NENTRIES; i++)
        if (entries[i].group == group)
            *entries[i].slot = NULL;
}

/* Why a runtime found no device: the HIP error, plus the kernel side
 * when that is the cause (ROCm needs the amdgpu driver's /dev/kfd). */
static const char *no_device_hint(void)
{
    if (access("/dev/kfd", F_OK) != 0)
        return "; /dev/kfd is absent: no AMD GPU with the amdgpu kernel driver";
    if (access("/dev/kfd", R_OK | W_OK) != 0)
        return "; /dev/kfd is not accessible: add the user to the 'render' group";
    return "";
}

int hip_runtime_load(void)
{
    const char *path;
    int err = gpu_load_library("DEVQ_HIP_LIBRARY", "libamdhip64.so.5",
                               "install the ROCm HIP runtime (libamdhip64)", &path, &rt.lib);
    if (err)
        return err;
    char missing[512] = "";
    for (size_t i = 0; i < NENTRIES; i++) {
        const struct entry *e = &entries[i];
        *e->slot = dlsym(rt.lib, e->name);
        if (*e->slot)
            continue;
        if (e->group == GPU_REQUIRED) {
            size_t len = strlen(missing);
            snprintf(missing + len, sizeof missing - len, "%s%s", len ? ", " : "", e->name);
        } else {
            char *dst = e->group == GPU_OPT_ASYNC   ? gpu_missing.async
                        : e->group == GPU_OPT_GRAPH ? gpu_missing.graph
                                                    : gpu_missing.memops;
            if (!*dst)
                snprintf(dst, sizeof gpu_missing.async, "%s lacks %s", path, e->name);
            gpu_host->log(DEVQ_LOG_BASIC, "hip: %s lacks %s: feature off", path, e->name);
        }
    }
    if (!hip_rt.Init && !hip_rt.GetDeviceCount)
        return gpu_load_fail(-ENODEV, "hip: %s is not a HIP runtime (no hipInit, hipGetDeviceCount, ...)",
                             path);
    if (*missing)
        return gpu_load_fail(-ENODEV, "hip: %s lacks required entry points: %s; install ROCm 5.2 or newer",
                             path, missing);
    if (*gpu_missing.async)
        clear_group(GPU_OPT_ASYNC);
    if (*gpu_missing.memops)
        clear_group(GPU_OPT_MEMOPS);
    if (*gpu_missing.graph)
        clear_group(GPU_OPT_GRAPH);

    if (hip_rt.RuntimeGetVersion(&hip_rt.version) != hipSuccess)
        hip_rt.version = 0;
    char ver[32], what[160];
    hip_version_str(hip_rt.version, ver, sizeof ver);
    /* Both calls are cheap and give the reason when there is no GPU: ROCm
     * 5.2 answers hipInit with hipErrorInvalidDevice and
     * hipGetDeviceCount with hipErrorNoDevice. */
    hipError_t r = hip_rt.Init(0);
    int count = 0;
    hipError_t rc = hip_rt.GetDeviceCount(&count);
    if (rc != hipSuccess || count <= 0) {
        char init_what[160] = "";
        if (r != hipSuccess) {
            char d[128];
            snprintf(init_what, sizeof init_what, "; hipInit: %s", hip_err_desc(r, d, sizeof d));
        }
        if (rc != hipSuccess)
            hip_err_desc(rc, what, sizeof what);
        else
            snprintf(what, sizeof what, "no devices");
        return gpu_load_fail(-ENODEV, "hip: hipGetDeviceCount: %s%s; runtime %s%s", what, init_what, ver,
                             no_device_hint());
    }
    if (r != hipSuccess)
        return gpu_load_fail(gpu_drv.to_errno(r) == -ENODEV ? -ENODEV : -EIO, "hip: hipInit: %s; runtime %s",
                             hip_err_desc(r, what, sizeof what), ver);
    return gpu_load_devices(count, path, ver);
}

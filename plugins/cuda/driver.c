/* SPDX-License-Identifier: MIT */
/* Loading the CUDA driver: dlopen, cuInit, every entry point through
 * cuGetProcAddress at the ABI version this plugin calls it with, and the
 * error names and texts (the CUresult -> errno table is
 * gpu_common/calls.h's, shared with HIP). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cuda_plugin.h"

struct cu_driver cu_drv;

static struct {
    void *lib;
} drv;

/* ---- errors ---- */

/* Names of the errors a host callback may be handed.  Callbacks must not
 * call the driver (CUDA_ERROR_NOT_PERMITTED), cuGetErrorName included,
 * so these are looked up here first. */
static const struct {
    CUresult code;
    const char *name, *text;
} known[] = {
    { CUDA_ERROR_ILLEGAL_ADDRESS, "CUDA_ERROR_ILLEGAL_ADDRESS", "an illegal memory access was encountered" },
    { CUDA_ERROR_LAUNCH_FAILED, "CUDA_ERROR_LAUNCH_FAILED", "unspecified launch failure" },
    { CUDA_ERROR_LAUNCH_TIMEOUT, "CUDA_ERROR_LAUNCH_TIMEOUT", "the launch timed out and was terminated" },
    { CUDA_ERROR_HARDWARE_STACK_ERROR, "CUDA_ERROR_HARDWARE_STACK_ERROR", "hardware stack error" },
    { CUDA_ERROR_ILLEGAL_INSTRUCTION, "CUDA_ERROR_ILLEGAL_INSTRUCTION",
      "an illegal instruction was encountered" },
    { CUDA_ERROR_MISALIGNED_ADDRESS, "CUDA_ERROR_MISALIGNED_ADDRESS", "misaligned address" },
    { CUDA_ERROR_INVALID_ADDRESS_SPACE, "CUDA_ERROR_INVALID_ADDRESS_SPACE",
      "operation not supported on global/shared address space" },
    { CUDA_ERROR_INVALID_PC, "CUDA_ERROR_INVALID_PC", "invalid program counter" },
    { CUDA_ERROR_ASSERT, "CUDA_ERROR_ASSERT", "device-side assert triggered" },
    { CUDA_ERROR_ECC_UNCORRECTABLE, "CUDA_ERROR_ECC_UNCORRECTABLE", "uncorrectable ECC error encountered" },
    { CUDA_ERROR_CONTEXT_IS_DESTROYED, "CUDA_ERROR_CONTEXT_IS_DESTROYED", "context is destroyed" },
};

static int known_index(CUresult r)
{
    for (size_t i = 0; i < sizeof known / sizeof known[0]; i++)
        if (known[i].code == r)
            return (int)i;
    return -1;
}

/* r's name (text false) or description: the table first, then the
 * driver, then fallback. */
static const char *err_lookup(CUresult r, bool text, const char *fallback)
{
    int i = known_index(r);
    if (i >= 0)
        return text ? known[i].text : known[i].name;
    const char *s = NULL;
    PFN_cuGetErrorName_v6000 get = text ? cu_drv.GetErrorString : cu_drv.GetErrorName;
    if (get && get(r, &s) == CUDA_SUCCESS && s)
        return s;
    return fallback;
}

const char *cu_err_name(CUresult r)
{
    return err_lookup(r, false, "CUDA_ERROR_?");
}

const char *cu_err_text(CUresult r)
{
    return err_lookup(r, true, "unknown error code");
}

const char *cu_err_desc(CUresult r, char *buf, size_t n)
{
    snprintf(buf, n, "%s (%s)", cu_err_name(r), cu_err_text(r));
    return buf;
}


/* ---- entry points ---- */

typedef CUresult (*get_proc_v2_fn)(const char *, void **, int, cuuint64_t, CUdriverProcAddressQueryResult *);
typedef CUresult (*get_proc_v1_fn)(const char *, void **, int, cuuint64_t);

static get_proc_v2_fn get_proc_v2;
static get_proc_v1_fn get_proc_v1;

struct entry {
    const char *name;
    int version; /* cudaVersion of the ABI we call */
    void **slot;
    int group; /* enum gpu_entry_group */
    int newer; /* same signature, newer ABI: used when the driver has it */
};

#define ENTRY(field, abi, group, newer) { "cu" #field, abi, (void **)&cu_drv.field, group, newer },
static struct entry entries[] = { CU_ENTRY_POINTS(ENTRY) };
#undef ENTRY

static void version_str(int v, char *buf, size_t n)
{
    snprintf(buf, n, "%d.%d (%d)", v / 1000, v % 1000 / 10, v);
}

/* Resolve one entry; on failure write why into why[]. */
static bool resolve(const struct entry *e, char *why, size_t n)
{
    CUdriverProcAddressQueryResult status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    CUresult r;
    *e->slot = NULL;
    if (e->version > cu_drv.version) {
        snprintf(why, n, "%s needs CUDA %d.%d", e->name, e->version / 1000, e->version % 1000 / 10);
        return false;
    }
    if (get_proc_v2) {
        r = get_proc_v2(e->name, e->slot, e->version, CU_GET_PROC_ADDRESS_LEGACY_STREAM, &status);
    } else {
        r = get_proc_v1(e->name, e->slot, e->version, CU_GET_PROC_ADDRESS_LEGACY_STREAM);
        status = *e->slot ? CU_GET_PROC_ADDRESS_SUCCESS : CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    }
    if (r != CUDA_SUCCESS || !*e->slot) {
        *e->slot = NULL;
        snprintf(why, n, "%s %s", e->name,
                 r != CUDA_SUCCESS                                      ? cu_err_name(r)
                 : status == CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT ? "(version not sufficient)"
                                                                        : "(not found)");
        return false;
    }
    return true;
}

static void clear_group(int group)
{
    for (size_t i = 0; i < sizeof entries / sizeof entries[0]; i++)
        if (entries[i].group == group)
            *entries[i].slot = NULL;
}

int cu_driver_load(void)
{
    const char *path;
    int err =
        gpu_load_library("DEVQ_CUDA_LIBRARY", "libcuda.so.1", "install the NVIDIA driver", &path, &drv.lib);
    if (err)
        return err;
    PFN_cuInit_v2000 init = (PFN_cuInit_v2000)dlsym(drv.lib, "cuInit");
    PFN_cuDriverGetVersion_v2020 getver = (PFN_cuDriverGetVersion_v2020)dlsym(drv.lib, "cuDriverGetVersion");
    cu_drv.GetErrorName = (PFN_cuGetErrorName_v6000)dlsym(drv.lib, "cuGetErrorName");
    cu_drv.GetErrorString = (PFN_cuGetErrorString_v6000)dlsym(drv.lib, "cuGetErrorString");
    get_proc_v2 = (get_proc_v2_fn)dlsym(drv.lib, "cuGetProcAddress_v2");
    if (!get_proc_v2)
        get_proc_v1 = (get_proc_v1_fn)dlsym(drv.lib, "cuGetProcAddress");
    if (!init || !getver)
        return gpu_load_fail(-ENODEV, "cuda: %s is not a CUDA driver (no cuInit/cuDriverGetVersion)%s", path,
                             "");
    if (getver(&cu_drv.version) != CUDA_SUCCESS)
        cu_drv.version = 0;
    char ver[32];
    version_str(cu_drv.version, ver, sizeof ver);
    if (!get_proc_v2 && !get_proc_v1)
        return gpu_load_fail(
            -ENODEV, "cuda: driver %s has no cuGetProcAddress; devq needs a CUDA 11.3 or newer driver%s", ver,
            "");
    CUresult r = init(0);
    if (r != CUDA_SUCCESS) {
        char what[160];
        snprintf(what, sizeof what, "%s (%s)", cu_err_name(r), cu_err_text(r));
        return gpu_load_fail(gpu_drv.to_errno(r) == -ENODEV ? -ENODEV : -EIO, "cuda: cuInit: %s; driver %s",
                             what, ver);
    }
    /* Stream memory operations became core ("_v2") in CUDA 11.7. */
    cu_drv.memops_v2 = cu_drv.version >= 11070;
    for (size_t i = 0; i < sizeof entries / sizeof entries[0]; i++)
        if (entries[i].newer && cu_drv.version >= entries[i].newer)
            entries[i].version = entries[i].newer;

    char missing[384] = "", why[128];
    for (size_t i = 0; i < sizeof entries / sizeof entries[0]; i++) {
        struct entry *e = &entries[i];
        if (resolve(e, why, sizeof why))
            continue;
        if (e->group == GPU_REQUIRED) {
            size_t len = strlen(missing);
            snprintf(missing + len, sizeof missing - len, "%s%s", len ? ", " : "", why);
        } else if (e->group == GPU_OPT_PARAMS) {
            /* No DEVQ_CAP_KERNEL_CHECK: launches go unchecked, as before 12.4. */
            gpu_host->log(DEVQ_LOG_BASIC,
                          "cuda: driver %s lacks %s: launches are not checked "
                          "against their kernels",
                          ver, why);
        } else {
            char *dst = e->group == GPU_OPT_ASYNC   ? gpu_missing.async
                        : e->group == GPU_OPT_GRAPH ? gpu_missing.graph
                                                    : gpu_missing.memops;
            if (!*dst)
                snprintf(dst, sizeof gpu_missing.async, "driver %s lacks %s", ver, why);
            gpu_host->log(DEVQ_LOG_BASIC, "cuda: driver %s lacks %s: feature off", ver, why);
        }
    }
    if (*missing)
        return gpu_load_fail(-ENODEV,
                             "cuda: driver %s lacks required entry points: %s; update the NVIDIA driver", ver,
                             missing);
    if (*gpu_missing.async)
        clear_group(GPU_OPT_ASYNC);
    if (*gpu_missing.memops)
        clear_group(GPU_OPT_MEMOPS);
    if (*gpu_missing.graph)
        clear_group(GPU_OPT_GRAPH);

    int count = 0;
    r = cu_drv.DeviceGetCount(&count);
    if (r != CUDA_SUCCESS || count <= 0) {
        char what[160];
        snprintf(what, sizeof what, "%s (%s)", r ? cu_err_name(r) : "no devices", r ? cu_err_text(r) : "");
        return gpu_load_fail(-ENODEV, "cuda: cuDeviceGetCount: %s; driver %s", what, ver);
    }
    return gpu_load_devices(count, path, ver);
}

void cu_driver_fini(void)
{
    /* Devices stay allocated: lib closed them all before fini, and
     * driver threads may still deliver a late callback into them. */
}

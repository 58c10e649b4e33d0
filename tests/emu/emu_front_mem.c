/* SPDX-License-Identifier: MIT */
/* The shared front of the emulated drivers (emu_face.h), part three:
 * device and host memory, copies, value waits and writes, modules and
 * kernel launches. */
#define _GNU_SOURCE
#include "emu_face.h"

#define INVALID_VALUE FACE(CUDA_ERROR_INVALID_VALUE, hipErrorInvalidValue)
#define NOT_SUPPORTED FACE(CUDA_ERROR_NOT_SUPPORTED, hipErrorNotSupported)

static emu_stream *stream_of(face_stream s)
{
    return (emu_stream *)s;
}

/* ---- memory ---- */

/* An allocation of the current context into *out (checked by the caller). */
static face_result alloc(face_dptr *out, size_t bytes)
{
    void *p;
    int st = emu_mem_alloc(face_current(), bytes, &p);
    RETURN_MADE(st, out, DPTR(p));
}

EXPORT face_result FACE(cuMemAlloc, hipMalloc)(face_dptr *dptr, size_t bytesize)
{
    CHECK(FACE_STR(cuMemAlloc, hipMalloc));
    return dptr ? alloc(dptr, bytesize) : INVALID_VALUE;
}

EXPORT face_result FACE(cuMemFree, hipFree)(face_dptr dptr)
{
    CHECK(FACE_STR(cuMemFree, hipFree));
    return emu_front_status(emu_mem_free(HPTR(dptr))); /* NULL: nothing to do */
}

#if FACE_HAS_OPTIONAL
static const struct emu_device_attrs *current_attrs(void)
{
    return emu_device_attrs(emu_ctx_ordinal(face_current()));
}

static bool pools_supported(void)
{
    const struct emu_device_attrs *a = current_attrs();
    return a && a->memory_pools;
}

EXPORT face_result FACE(cuMemAllocAsync, hipMallocAsync)(face_dptr *dptr, size_t bytesize, face_stream h)
{
    CHECK(FACE_STR(cuMemAllocAsync, hipMallocAsync));
    if (!pools_supported())
        return NOT_SUPPORTED;
    if (!dptr || !emu_stream_valid(stream_of(h)))
        return INVALID_VALUE;
    /* The pool hands out memory at once; the stream orders its first use. */
    return alloc(dptr, bytesize);
}

EXPORT face_result FACE(cuMemFreeAsync, hipFreeAsync)(face_dptr dptr, face_stream h)
{
    CHECK(FACE_STR(cuMemFreeAsync, hipFreeAsync));
    if (!pools_supported())
        return NOT_SUPPORTED;
    return emu_front_status(emu_enqueue_free(stream_of(h), HPTR(dptr)));
}
#endif

/* The copies: the engine's copy, with DEVQ_EMU_FAIL's sticky errors
 * raised when it runs. */
static face_result copy(const char *func, void *dst, const void *src, size_t n, face_stream h)
{
    ASYNC_INJECT(func, later);
    return emu_front_status(emu_enqueue_copy(stream_of(h), dst, src, n, later));
}

/* HIP's host source is not const. */
typedef FACE(const void, void) host_src;

/* A copy to or from pageable (unregistered) host memory synchronizes
 * with the stream, as the real drivers' do: one to pageable memory
 * returns only once it has run, one from it "may synchronize with the
 * stream" to stage -- the emulator always does.  So a caller that
 * queues such a copy behind a wait nobody has satisfied hangs here as
 * it would on a GPU. */
static face_result host_copy(const char *func, void *dst, const void *src, size_t n, face_stream h,
                             const void *host)
{
    face_result r = copy(func, dst, src, n, h);
    if (r == 0 && n && !emu_host_registered(host, n))
        r = emu_front_status(emu_stream_synchronize(stream_of(h)));
    return r;
}

EXPORT face_result FACE(cuMemcpyHtoDAsync, hipMemcpyHtoDAsync)(face_dptr dst, host_src *src, size_t n,
                                                               face_stream h)
{
    return host_copy(FACE_STR(cuMemcpyHtoDAsync, hipMemcpyHtoDAsync), HPTR(dst), src, n, h, src);
}

EXPORT face_result FACE(cuMemcpyDtoHAsync, hipMemcpyDtoHAsync)(void *dst, face_dptr src, size_t n,
                                                               face_stream h)
{
    return host_copy(FACE_STR(cuMemcpyDtoHAsync, hipMemcpyDtoHAsync), dst, HPTR(src), n, h, dst);
}

EXPORT face_result FACE(cuMemcpyDtoDAsync, hipMemcpyDtoDAsync)(face_dptr dst, face_dptr src, size_t n,
                                                               face_stream h)
{
    return copy(FACE_STR(cuMemcpyDtoDAsync, hipMemcpyDtoDAsync), HPTR(dst), HPTR(src), n, h);
}

EXPORT face_result FACE(cuMemsetD8Async, hipMemsetD8Async)(face_dptr dst, unsigned char uc, size_t n,
                                                           face_stream h)
{
    ASYNC_INJECT(FACE_STR(cuMemsetD8Async, hipMemsetD8Async), later);
    return emu_front_status(emu_enqueue_fill(stream_of(h), HPTR(dst), uc, n, later));
}

EXPORT face_result FACE(cuMemHostRegister, hipHostRegister)(void *p, size_t bytesize, unsigned int flags)
{
    CHECK(FACE_STR(cuMemHostRegister, hipHostRegister));
    const unsigned known = FACE(CU_MEMHOSTREGISTER_PORTABLE | CU_MEMHOSTREGISTER_DEVICEMAP,
                                hipHostRegisterPortable | hipHostRegisterMapped);
    if (flags & ~known)
        return INVALID_VALUE;
    return emu_front_status(emu_host_register(p, bytesize));
}

EXPORT face_result FACE(cuMemHostUnregister, hipHostUnregister)(void *p)
{
    CHECK(FACE_STR(cuMemHostUnregister, hipHostUnregister));
    return emu_front_status(emu_host_unregister(p));
}

EXPORT face_result FACE(cuMemHostGetDevicePointer, hipHostGetDevicePointer)(face_dptr *pdptr, void *p,
                                                                            unsigned int flags)
{
    CHECK(FACE_STR(cuMemHostGetDevicePointer, hipHostGetDevicePointer));
    if (!pdptr || flags != 0)
        return INVALID_VALUE;
    void *d;
    int st = emu_host_device_pointer(p, &d);
    RETURN_MADE(st, pdptr, DPTR(d));
}

/* ---- 64-bit value waits and writes ---- */

#if FACE_HAS_OPTIONAL
static bool memops_supported(void)
{
    const struct emu_device_attrs *a = current_attrs();
    return a && a->stream_memops;
}

/* Each driver's wait takes other flags (HIP's a mask too): its face checks
 * them.  HIP's >= is unsigned, the engine's cyclic: the same for values
 * that only grow. */
face_result emu_front_wait_value(const char *func, face_stream h, void *addr, uint64_t value, bool supported)
{
    CHECK(func);
    if (!memops_supported() || !supported)
        return NOT_SUPPORTED; /* only what devq uses */
    return emu_front_status(emu_enqueue_wait_value(stream_of(h), addr, value));
}

EXPORT face_result FACE(cuStreamWriteValue64, hipStreamWriteValue64)(face_stream h, face_dptr addr,
                                                                     uint64_t value, unsigned int flags)
{
    CHECK(FACE_STR(cuStreamWriteValue64, hipStreamWriteValue64));
    if (!memops_supported() || flags != FACE(CU_STREAM_WRITE_VALUE_DEFAULT, 0))
        return NOT_SUPPORTED;
    return emu_front_status(emu_enqueue_write_value(stream_of(h), HPTR(addr), value));
}
#endif

/* ---- modules: "devq-emu-module" text images (emu_module.c) ----
 *
 * A kernel is a function of this process, found with dlsym:
 *   int name(void **kernelParams, const devq_cpu_group *g)
 * run once per block; nonzero is a launch failure.  Parameters are CUDA
 * style: kernelParams[i] points at the value (at the device pointer for
 * a pointer), unless the module asks for devq's cpu-kernel convention
 * ("devq-emu-module cpu-args"). */

_Static_assert(sizeof(face_dptr) == sizeof(void *), "emu_module.c sizes a ptr parameter as a host pointer");

EXPORT face_result FACE(cuModuleLoadData, hipModuleLoadData)(face_module *module, const void *image)
{
    CHECK(FACE_STR(cuModuleLoadData, hipModuleLoadData));
    if (!module || !image)
        return INVALID_VALUE;
    emu_kmodule *m;
    int st = emu_module_parse(image, &m);
    RETURN_MADE(st, module, (face_module)m);
}

EXPORT face_result FACE(cuModuleUnload, hipModuleUnload)(face_module module)
{
    CHECK_CALL();
    return emu_front_status(emu_module_unload((emu_kmodule *)module));
}

EXPORT face_result FACE(cuModuleGetFunction, hipModuleGetFunction)(face_function *hfunc, face_module module,
                                                                   const char *name)
{
    CHECK(FACE_STR(cuModuleGetFunction, hipModuleGetFunction));
    /* CUDA reports a bad module before a missing hfunc; HIP the other way */
    if (FACE(false, !hfunc))
        return INVALID_VALUE;
    struct emu_kfunc *f;
    int st = emu_module_function((emu_kmodule *)module, name, hfunc ? &f : NULL);
    RETURN_MADE(st, hfunc, (face_function)f);
}

#if FACE_HAS_REQUIRED
EXPORT face_result FACE(cuLaunchKernel,
                        hipModuleLaunchKernel)(face_function f, unsigned int gx, unsigned int gy,
                                               unsigned int gz, unsigned int bx, unsigned int by,
                                               unsigned int bz, unsigned int sharedMemBytes, face_stream h,
                                               void **kernelParams, void **extra)
{
    ASYNC_INJECT(FACE_STR(cuLaunchKernel, hipModuleLaunchKernel), later);
    struct emu_kfunc *fn = (struct emu_kfunc *)f;
    if (!fn || !fn->fn)
        return FACE(CUDA_ERROR_INVALID_HANDLE, hipErrorInvalidHandle);
    if (extra)
        return NOT_SUPPORTED;
    if ((uint64_t)bx * by * bz > FACE_MAX_THREADS || sharedMemBytes > FACE_MAX_SHARED)
        return INVALID_VALUE;
    if (fn->nparams && !kernelParams)
        return INVALID_VALUE;
    const uint32_t grid[3] = { gx, gy, gz }, block[3] = { bx, by, bz };
    return emu_front_status(emu_enqueue_kernel(stream_of(h), fn->fn, grid, block, kernelParams, fn->sizes,
                                               fn->deref, fn->nparams, later));
}
#endif
